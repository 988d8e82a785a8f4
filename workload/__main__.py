"""`uv run python -m workload <stack> ...`: see workload/cli.py."""

import sys

from workload.cli import main

sys.exit(main())
