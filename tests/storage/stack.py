"""One stack that uses every kind of volume: a dataset bucket read by two teams, a checkpoint
bucket one team owns, a Lustre scratch instance, a Filestore share and an existing instance of
each kind; the storage tests build it and its edits."""

from __future__ import annotations

import copy
from typing import Any

from tests.conftest import with_config

REGION = {"gcp:region": "us-central1", "gcp:zone": "us-central1-a"}
RANGE = "10.200.0.0/20"
TEAMS = [{"name": "pretrain"}, {"name": "research"}]
BUCKETS = [{"name": "datasets"}, {"name": "checkpoints", "hierarchicalNamespace": True}]
VOLUMES: list[dict[str, Any]] = [
    {"name": "data", "bucket": "datasets", "teams": {"pretrain": "read", "research": "read"}},
    {
        "name": "ckpt",
        "bucket": "checkpoints",
        "profile": "checkpoint",
        "owner": "pretrain",
        "teams": {"pretrain": "write", "research": "read"},
    },
    {
        "name": "scratch",
        "lustre": {"capacityGib": 18000, "throughput": 500},
        "owner": "pretrain",
        "teams": {"pretrain": "write"},
    },
    {"name": "shared", "filestore": {"capacityGib": 1024}, "teams": {"research": "write"}},
    {"name": "old-nfs", "existingFilestore": {"instance": "legacy-nfs"}},
    {"name": "old-lustre", "existingLustre": {"instance": "legacy-lustre"}},
]


def storage(**overrides: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"privateServiceRange": RANGE, "volumes": copy.deepcopy(VOLUMES)}
    return found | overrides


def config(**overrides: Any) -> dict[str, Any]:
    """The stack, with `ai-infra:` keys overridden as `with_config` takes them."""
    keys: dict[str, Any] = {
        "teams": copy.deepcopy(TEAMS),
        "buckets": copy.deepcopy(BUCKETS),
        "storage": storage(),
        **REGION,
    }
    return with_config(**(keys | overrides))
