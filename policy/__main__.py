"""Served to `pulumi preview --policy-pack policy`: the pack imports this repository's
`policy` and `plan` packages from the folder above."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import PolicyPack

from policy.pack import POLICIES

PolicyPack(name="ai-infra", policies=POLICIES)
