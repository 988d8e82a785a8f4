"""`uv run python -m preflight <stack>`: see `preflight.cli`."""

import sys

from preflight.cli import main

sys.exit(main())
