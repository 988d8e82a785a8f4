"""The registry of systems (`stacks/registry.py`): every config key has one owner, every reader
loops over the registry, and a new system added there is picked up by every reader with no
other edit; the readers keyed by system name (the reachability model, `hosts`) name the system
they miss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pytest
import yaml

from components.base import Problem, Source
from components.storage import StorageMount
from components.system import (
    Claim,
    ClaimKind,
    Handles,
    Mounted,
    StackView,
    Stage,
    Step,
    System,
)
from graph import reachability
from hosts.targets import LISTERS
from plan import cli as plan_cli
from prices import PLAN_COSTING, stack_cost
from prices.render import cost_section
from stacks import environment, registry
from stacks.config import StackConfig, stack_keys
from stacks.loading import parse
from stacks.messages import GCP_KEYS, ConfigError
from tests.conftest import build_graph
from tests.storage.stack import config as storage_stack


def _keys() -> set[str]:
    """Every config key a stack file may set, as the registry names them."""
    return set(GCP_KEYS) | set(stack_keys())


def missing_readers(systems: tuple[System, ...]) -> list[str]:
    """The readers keyed by system or by config key that do not know a registered system."""
    found = []
    owned = [key for system in systems for key in system.keys]
    if set(owned) != _keys() or len(owned) != len(set(owned)):
        found.append("stacks.config.StackConfig (a field per key, each owned once)")
    if {s.name for s in systems if s.reachable} != set(reachability.VMS):
        found.append("graph.reachability.VMS")
    if {s.name for s in systems if s.hosts} != set(LISTERS):
        found.append("hosts.targets.LISTERS")
    return found


def test_every_registered_system_is_known_to_every_keyed_reader():
    assert missing_readers(registry.SYSTEMS) == []
    assert len({s.name for s in registry.SYSTEMS}) == len(registry.SYSTEMS)


def test_what_no_key_names_is_stack_wide():
    assert registry.SYSTEMS[0].name == "stack"
    assert registry.owner_of("") is registry.SYSTEMS[0]
    assert registry.owner_of("gcp:project").name == "stack"
    assert registry.owner_of("tpuProvisioner").name == "tpu-provisioner"


# A system no reader has heard of: each of its functions leaves a mark a reader must show.

MARK = "fake-mark"


def _problems(view: StackView) -> list[Problem]:
    return [Problem(("fake",), f"{MARK} problem")] if view.config.prefix == "ai-bad" else []


def _warnings(view: StackView) -> list[Problem]:
    return [Problem(("fake",), f"{MARK} warning")]


def _claims(config: StackConfig) -> list[Claim]:
    if config.prefix != "ai-clash":
        return []
    # The GKE nodes' account, claimed again: the generic check reports it here.
    return [Claim(ClaimKind.ACCOUNT, config.gke.node_account_id, ("fake", 0))]


def _mounts(config: StackConfig) -> list[Mounted]:
    return [
        Mounted(
            f"{MARK} VMs",
            StorageMount.model_validate({"volume": "shared", "mountPath": "/fake"}),
            ("fake",),
        )
    ]


def _services(config: StackConfig) -> tuple[str, ...]:
    return ("fake.googleapis.com",)


def _build(view: StackView, handles: Handles, source: Source) -> gcp.compute.Disk:
    ctx = view.config.context
    return gcp.compute.Disk(
        source("fake-disk", "fake"),
        name=ctx.name("fake"),
        project=ctx.project,
        zone=ctx.zone,
        size=100,
        type="pd-balanced",
        opts=pulumi.ResourceOptions(depends_on=[handles["stack"].services]),
    )


def _describe(view: StackView) -> list[tuple[str, list[str]]]:
    return [("Fake", [f"  {MARK} section"])]


def _outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    return {"fake": handles["fake"].name}


FAKE = System(
    name="fake",
    title="Fake system",
    keys=("fake",),
    problems=_problems,
    warnings=_warnings,
    claims=_claims,
    mounts=_mounts,
    services=_services,
    builds=(Step(Stage.MACHINES, "fake", _build),),
    describe=_describe,
    outputs=_outputs,
    tpu_chips=lambda config: 7,
    vms_in_vpc=lambda config: [f"{MARK} VMs"],
    reachable=True,
    hosts=True,
)


@pytest.fixture
def with_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "SYSTEMS", (*registry.SYSTEMS, FAKE))


def test_the_keyed_readers_name_what_a_new_system_misses(with_fake: None):
    assert missing_readers(registry.SYSTEMS) == [
        "stacks.config.StackConfig (a field per key, each owned once)",
        "graph.reachability.VMS",
        "hosts.targets.LISTERS",
    ]


def test_a_new_system_is_checked_with_the_others(with_fake: None):
    raw = storage_stack(**{"ai-infra:prefix": "ai-bad"})
    with pytest.raises(ConfigError) as refused:
        parse(raw, "test")
    assert dict(refused.value.rendered)["ai-infra:fake"] == f"{MARK} problem"

    with pytest.raises(ConfigError) as clashed:
        parse(storage_stack(**{"ai-infra:prefix": "ai-clash"}), "test")
    assert "already belongs to cluster" in dict(clashed.value.rendered)["ai-infra:fake[0].name"]


def test_a_new_system_is_built_described_exported_and_costed(with_fake: None):
    raw = storage_stack()
    config = parse(raw, "test")
    graph = build_graph(raw)

    disk = graph.named("fake-disk")
    assert graph.config_keys()[disk.urn] == "ai-infra:fake"
    services = {r.inputs["service"] for r in graph.of_type("gcp:projects/service:Service")}
    assert "fake.googleapis.com" in services
    assert graph.outputs is not None and graph.outputs["fake"] == "ai-test-fake"
    without = parse(raw, "test")
    assert graph.outputs["tpuChips"] == sum(s.tpu_chips(without) for s in registry.SYSTEMS)
    assert FAKE.tpu_chips(without) == 7

    sections = dict(environment.describe(config))
    assert sections["Fake"] == [f"  {MARK} section"]
    assert f"  ai-infra:fake: {MARK} warning" in sections["Warnings"]
    assert f"    {MARK} VMs: /fake (rw)" in sections["Storage"]
    # The VMs that mount a volume are let through to it by their tags.
    rules = [r.inputs for r in graph.of_type("gcp:compute/firewall:Firewall")]
    tagged = [r for r in rules if "fake" in [*r.get("sourceTags", []), *r.get("targetTags", [])]]
    assert tagged, json.dumps(rules)[:2000]

    costed = "\n".join(cost_section(stack_cost(config, graph)))
    assert "Fake system" in costed

    mtu = environment.diff_notices(config, {config.network.vpc_name(config.prefix): (1460, 8896)})
    assert any(f"{MARK} VMs" in notice for notice in mtu)


def test_the_plan_shows_a_new_system(
    with_fake: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    path = tmp_path / "Pulumi.fake.yaml"
    path.write_text(yaml.safe_dump({"config": storage_stack(**{"ai-infra:prefix": "ai-fake"})}))
    assert plan_cli.main([str(path)], costing=PLAN_COSTING) == 0
    out = capsys.readouterr().out
    assert f"{MARK} section" in out and "Fake system" in out
