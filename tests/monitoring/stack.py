"""One stack with something of every kind monitoring watches: a multi-host and a single-host
TPU slice, a flex-start slice, a GPU pool with a floor, a TPU VM queued resource, two teams
(one routed to its own channel), a Filestore volume, and monitoring enabled."""

from __future__ import annotations

import copy
from typing import Any

from stacks.config import StackConfig
from stacks.loading import parse
from tests.conftest import with_config

SLICES: list[dict[str, Any]] = [
    {"name": "train", "accelerator": "v5p-16", "count": 2},
    {"name": "small", "accelerator": "v6e-4", "provisioning": "spot"},
    {"name": "burst", "accelerator": "v6e-16", "provisioning": "flex-start"},
]
GPU_POOLS: list[dict[str, Any]] = [
    {
        "name": "l4",
        "machineType": "g2-standard-24",
        "acceleratorType": "nvidia-l4",
        "acceleratorCount": 2,
        "minNodes": 1,
        "maxNodes": 2,
    }
]
TPU_VMS: list[dict[str, Any]] = [{"name": "sweep", "accelerator": "v5p-8", "nodeCount": 2}]
TEAMS: list[dict[str, Any]] = [{"name": "pretrain"}, {"name": "research"}]
STORAGE: dict[str, Any] = {
    "privateServiceRange": "10.200.0.0/20",
    "volumes": [
        {"name": "shared", "filestore": {"capacityGib": 1024}, "teams": {"research": "write"}}
    ],
}
MONITORING: dict[str, Any] = {
    "enabled": True,
    "channels": [
        {"name": "oncall", "email": "oncall@example.com"},
        {"name": "pretrain-pager", "pubsubTopic": "projects/test-project/topics/pretrain-pager"},
    ],
    "stackChannels": ["oncall"],
    "teams": [{"team": "pretrain", "channels": ["pretrain-pager"], "pendingMinutes": 20}],
}


def raw(**overrides: Any) -> dict[str, Any]:
    """The stack's config map, with `ai-infra:` keys overridden."""
    keys: dict[str, Any] = {
        "tpuSlices": copy.deepcopy(SLICES),
        "gpuPools": copy.deepcopy(GPU_POOLS),
        "tpuVms": copy.deepcopy(TPU_VMS),
        "teams": copy.deepcopy(TEAMS),
        "storage": copy.deepcopy(STORAGE),
        "monitoring": copy.deepcopy(MONITORING),
    }
    return with_config(**(keys | overrides))


def monitoring(**fields: Any) -> dict[str, Any]:
    return copy.deepcopy(MONITORING) | fields


def config(**overrides: Any) -> StackConfig:
    return parse(raw(**overrides), "test")
