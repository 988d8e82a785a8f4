"""`uv run python -m hosts <stack> <tpuVms|gpuClusters> <name> -- COMMAND`: see `hosts.cli`."""

import sys

from hosts.cli import main

sys.exit(main())
