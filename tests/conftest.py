"""Shared fixtures: a minimal valid config and a builder that runs the real program on it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from graph.engine import Graph, run_program

BASE_CONFIG: dict[str, Any] = {
    "gcp:project": "test-project",
    "gcp:region": "us-east5",
    "gcp:zone": "us-east5-a",
    "ai-infra:protect": False,
}

Build = Callable[..., Graph]


def build_graph(config: dict[str, Any], stack: str = "test") -> Graph:
    """The graph of `config`; a URN registered twice raises in `run_program`
    (`graph.engine.DuplicateUrnError`), as `pulumi up` would refuse it."""
    graph = run_program(config, stack=stack)
    assert len(graph) > 0, "the mock engine recorded no resources: were mocks set too late?"
    return graph


def with_config(**overrides: Any) -> dict[str, Any]:
    """BASE_CONFIG plus `ai-infra:` keys given in snake-free form: with_config(tpuSlices=[...])."""
    config = copy.deepcopy(BASE_CONFIG)
    for key, value in overrides.items():
        config[key if ":" in key else f"ai-infra:{key}"] = value
    return config


def with_mega_pool(**overrides: Any) -> dict[str, Any]:
    """with_config with an A3 Mega pool `mega` on its fast path, in a zone that has them."""
    mega = {
        "name": "mega",
        "machineType": "a3-megagpu-8g",
        "acceleratorType": "nvidia-h100-mega-80gb",
        "acceleratorCount": 8,
        "maxNodes": 2,
        "gpuSubnetCidr": "10.140.0.0/28",
    }
    pools = [mega, *overrides.pop("gpuPools", [])]
    zone = {"gcp:region": "us-east5", "gcp:zone": "us-east5-a"}
    return with_config(**zone, gpuPools=pools, **overrides)


@pytest.fixture
def build() -> Build:
    def _build(stack: str = "test", **overrides: Any) -> Graph:
        return build_graph(with_config(**overrides), stack=stack)

    return _build
