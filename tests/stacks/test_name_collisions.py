"""Names that collide after derivation are refused at the config path that gives them, before
anything registers: a `network.allow` entry named like one of the stack's own rules registered
one URN twice (`<prefix>-allow-internal`), and names joined across systems (a share's
`<instance>-clients` rule, a TPU VM's `<tag>-internal`, an opening's `<prefix>-allow-<name>`)
gave two firewall rules one name. The search in `tests/stacks/collisions.py` finds such
configs from a seed; here a bounded run of it holds that none the validation accepts collides.
"""

from __future__ import annotations

from typing import Any

import pytest

from graph.engine import engine_config, record_program
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import with_mega_pool
from tests.stacks.collisions import accepted, candidates, collisions, judge, set_path

TEAMS = [{"name": "pretrain"}, {"name": "research"}]
SEED: dict[str, Any] = {
    "gcp:project": "test-project",
    "gcp:region": "us-central1",
    "gcp:zone": "us-central1-a",
    "ai-infra:protect": False,
    "ai-infra:network": {
        "allow": [{"name": "ray", "to": "tpuVms", "sources": ["pods"], "ports": ["tcp:8265"]}]
    },
    "ai-infra:teams": TEAMS,
    "ai-infra:storage": {
        "privateServiceRange": "10.200.0.0/20",
        "volumes": [
            {
                "name": "scratch",
                "lustre": {"capacityGib": 18000, "throughput": 500},
                "owner": "pretrain",
                "teams": {"pretrain": "write"},
            },
            {"name": "shared", "filestore": {"capacityGib": 1024}, "teams": {"research": "write"}},
        ],
    },
    "ai-infra:tpuVms": [{"name": "exp", "accelerator": "v5litepod-8"}],
    "ai-infra:gpuClusters": [
        {
            "name": "demo",
            "machineType": "a2-highgpu-2g",
            "gpuType": "nvidia-tesla-a100",
            "gpuCount": 2,
            "nfsShares": [{"sizeGb": 2560, "mountPath": "/shared"}],
        }
    ],
}
"""A stack with a rule of every system that names firewall rules on the stack's network."""

ALLOW = ("network", "allow", 0, "name")
VOLUME = ("storage", "volumes", 1, "name")
TPU_VM = ("tpuVms", 0, "name")
GPU_CLUSTER = ("gpuClusters", 0, "name")


def edited(*edits: tuple[tuple[str | int, ...], str]) -> dict[str, Any]:
    config = SEED
    for path, value in edits:
        config = set_path(config, path, value)
    return config


def refusal(config: dict[str, Any]) -> dict[str, str]:
    """Every message at each refused path, joined."""
    with pytest.raises(ConfigError) as refused:
        parse(engine_config(config), "test")
    found: dict[str, str] = {}
    for path, message in refused.value.rendered:
        found[path] = f"{found[path]}\n{message}" if path in found else message
    return found


def key(path: tuple[str | int, ...]) -> str:
    head, *rest = path
    return f"ai-infra:{head}" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest)


@pytest.mark.parametrize(
    ("edits", "at", "rule"),
    [
        # An opening named like the stack's own rules: one URN twice before (network-allow-*).
        ([(ALLOW, "internal")], ALLOW, "ai-test-allow-internal"),
        ([(ALLOW, "webhooks")], ALLOW, "ai-test-allow-webhooks"),
        ([(ALLOW, "iap-ssh")], ALLOW, "ai-test-allow-iap-ssh"),
        # ... or like storage's Lustre clients' rule: two URNs, one cloud name.
        ([(ALLOW, "lustre")], ALLOW, "ai-test-allow-lustre"),
        # Names joined across systems: a share's `-clients`, a TPU VM's and a GPU cluster's
        # `-internal` rule spelt by an opening.
        ([(VOLUME, "allow-x"), (ALLOW, "x-clients")], VOLUME, "ai-test-allow-x-clients"),
        ([(TPU_VM, "allow-y"), (ALLOW, "y-tpu-vm-internal")], TPU_VM, "-y-tpu-vm-internal"),
        ([(GPU_CLUSTER, "allow-z"), (ALLOW, "z-gpu-vm-internal")], GPU_CLUSTER, "-internal"),
    ],
)
def test_a_firewall_rule_name_derived_twice_is_refused_at_its_path(edits, at, rule):
    found = refusal(edited(*edits))
    message = found[key(at)]
    assert "firewall rule" in message and rule in message, message
    assert "choose another name" in message


def test_a_share_named_like_another_is_refused_once_for_its_instance():
    # Its rules are named like the other's too; the instance's one owner says why.
    found = refusal(edited((VOLUME, "demo-nfs0")))
    message = found[key(VOLUME)]
    assert "Filestore instance 'ai-test-demo-nfs0' already belongs to gpuClusters[0]" in message
    assert "firewall rule" not in message


def test_nothing_registers_for_a_refused_name():
    graph, error = record_program(edited((ALLOW, "internal")))
    assert isinstance(error, ConfigError)
    assert graph.resources == []


@pytest.mark.parametrize(
    "edits",
    [
        [(ALLOW, "internal-ray")],
        [(ALLOW, "lustre-clients")],
        [(VOLUME, "allow-x")],
        [(VOLUME, "allow-x"), (ALLOW, "x")],
        [(TPU_VM, "allow-y"), (ALLOW, "y-tpu-vm")],
        [(GPU_CLUSTER, "internal")],
    ],
)
def test_names_that_stay_apart_after_derivation_are_accepted(edits):
    parse(engine_config(edited(*edits)), "test")


def test_the_seed_builds_without_collisions():
    outcome = judge(SEED)
    assert outcome.problems == {} and outcome.error == ""
    assert outcome.collisions == ()


def test_the_search_finds_the_collisions_validation_refuses():
    """The generator reaches the refused classes from the seed alone: a search that found
    nothing would prove nothing."""
    found = dict.fromkeys(candidates(SEED, equal=False))
    for value in ("internal", "webhooks", "iap-ssh", "lustre"):
        assert (ALLOW, value) in found, value
        assert key(ALLOW) in refusal(set_path(SEED, ALLOW, value))


RUNS = 6
"""Programs the property test runs (about 3 s each); benchmarks/name_collisions.py runs all."""


def test_no_generated_name_validation_accepts_collides():
    neighbours = accepted(SEED, candidates(SEED))
    assert neighbours, "the search produced no accepted neighbour to build"
    # The accepted ones spread over the fields, a bounded few built.
    step = max(1, len(neighbours) // RUNS)
    for path, value, config in neighbours[::step][:RUNS]:
        graph, error = record_program(config)
        assert error is None, (path, value, error)
        assert collisions(graph) == [], (path, value)


def _mega_pool(pool: str, opening: str) -> dict[str, Any]:
    allow = [{"name": opening, "to": "tpuVms", "sources": ["pods"], "ports": ["tcp:8265"]}]
    tpu_vms = [{"name": "exp", "accelerator": "v6e-8", "zone": "us-east5-b"}]
    config = with_mega_pool(tpuVms=tpu_vms, network={"allow": allow})
    config["ai-infra:gpuPools"][0]["name"] = pool
    return config


def test_a_gke_gpu_pools_nic_rule_spelt_by_an_opening_is_refused_at_the_pool():
    # The pool's first GPU NIC's VPC rule is `<prefix>-<pool>-gpu0-internal`.
    found = refusal(_mega_pool("allow-m", "m-gpu0-internal"))
    message = found["ai-infra:gpuPools[0].name"]
    assert "'ai-test-allow-m-gpu0-internal'" in message and "network.allow[0]" in message
    graph, error = record_program(_mega_pool("allow-m", "m-gpu0"))
    assert error is None and collisions(graph) == []
