"""`uv run python -m plan <stack>`: the command line is `plan.args`, the plan `plan.cli`."""

import sys

# Cache the SDKs' bytecode on the first run even where PYTHONDONTWRITEBYTECODE is set: without
# it every plan recompiles them (benchmarks/README.md). It must precede their import.
sys.dont_write_bytecode = False

from plan.args import arguments  # noqa: E402

# The flags first: `--help` and a wrong flag answer before the SDKs are imported.
args = arguments(sys.argv[1:])

from plan.cli import run_args  # noqa: E402
from prices import PLAN_COSTING  # noqa: E402

# The composition of the command: the plan and the cost each read the graph, and neither
# imports the other (graph/ is below both).
sys.exit(run_args(args, costing=PLAN_COSTING))
