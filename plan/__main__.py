"""`uv run python -m plan <stack>`: see `plan.cli`."""

import sys

from plan.cli import main

sys.exit(main())
