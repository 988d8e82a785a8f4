"""`uv run python -m plan <stack>`: the command line is `plan.args`, the plan `plan.cli`."""

import sys

# Cache the SDKs' bytecode on the first run even where PYTHONDONTWRITEBYTECODE is set: without
# it every plan recompiles them (benchmarks/README.md). It must precede their import.
sys.dont_write_bytecode = False

from plan.args import EXIT_ERROR, UsageError, arguments, usage_failure  # noqa: E402

# The flags first: `--help` and a wrong flag answer before the SDKs are imported. A wrong
# flag exits 1, as no plan: never argparse's 2, which a gate reads as "changes".
try:
    args = arguments(sys.argv[1:])
except UsageError as error:
    out, err = usage_failure(sys.argv[1:], error)
    if out:
        print(out)
    print(err, file=sys.stderr)
    sys.exit(EXIT_ERROR)

from plan.cli import run_args  # noqa: E402
from prices import PLAN_COSTING  # noqa: E402

# The composition of the command: the plan and the cost each read the graph, and neither
# imports the other (graph/ is below both).
sys.exit(run_args(args, costing=PLAN_COSTING))
