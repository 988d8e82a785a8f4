"""`uv run python -m plan <stack>`: see `plan.cli`."""

import sys

# Cache the SDKs' bytecode on the first run even where PYTHONDONTWRITEBYTECODE is set: without
# it every plan recompiles them (benchmarks/README.md). It must precede their import.
sys.dont_write_bytecode = False

from plan.cli import main  # noqa: E402

sys.exit(main())
