"""`uv run python -m plan <stack>`: see `plan.cli`."""

import sys

# Cache the SDKs' bytecode on the first run even where PYTHONDONTWRITEBYTECODE is set: without
# it every plan recompiles them (benchmarks/README.md). It must precede their import.
sys.dont_write_bytecode = False

from plan.cli import main  # noqa: E402
from prices import PLAN_COSTING  # noqa: E402

# The composition of the command: the plan and the cost each read the graph, and neither
# imports the other (graph/ is below both).
sys.exit(main(costing=PLAN_COSTING))
