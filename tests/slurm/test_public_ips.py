"""TPU nodesets with public IPs in a subnet the stack does not manage are warned of in the plan
and by `pulumi up`: that network's firewall, not the stack's, decides who reaches sshd (a
default VPC admits SSH from every address). CPU nodesets are always in the stack's subnet,
whose ingress `network.allow` judges; they are not warned of."""

from __future__ import annotations

from typing import Any

from stacks import environment
from stacks.loading import parse
from tests.slurm.test_config import CPU_NODESET, NODESET, stack

ELSEWHERE = "default"


def _warned(**slurm_fields: Any) -> list[str]:
    config = parse(stack(home={"filestore": False}, **slurm_fields), "test")
    return [w for w in environment.warnings(config) if "enablePublicIps" in w]


def test_public_ips_in_a_foreign_subnet_are_warned_of_at_the_nodeset():
    found = _warned(
        tpuNodesets=[
            NODESET,
            {**NODESET, "name": "pub", "subnetwork": ELSEWHERE, "enablePublicIps": True},
        ],
        partitions=[{"name": "tpu", "nodesets": ["v4", "pub"], "default": True}],
    )
    assert len(found) == 1, found
    assert found[0].startswith("ai-infra:slurm.tpuNodesets[1].enablePublicIps: ")
    assert "subnetwork default" in found[0] and "0.0.0.0/0" in found[0]


def test_no_warning_in_the_stacks_subnet_or_without_public_ips():
    assert _warned(tpuNodesets=[{**NODESET, "enablePublicIps": True}]) == []
    # The stack's subnet named explicitly is the stack's.
    own = {**NODESET, "subnetwork": "ai-test-subnet", "enablePublicIps": True}
    assert _warned(tpuNodesets=[own]) == []
    cpu = {**CPU_NODESET, "enablePublicIps": True}
    partitions = [
        {"name": "tpu", "nodesets": ["v4"], "default": True},
        {"name": "cpu", "nodesets": ["cpu"]},
    ]
    assert _warned(cpuNodesets=[cpu], partitions=partitions) == []


def test_the_plan_lists_the_warning():
    config = parse(
        stack(
            home={"filestore": False},
            tpuNodesets=[{**NODESET, "subnetwork": ELSEWHERE, "enablePublicIps": True}],
        ),
        "test",
    )
    sections = dict(environment.describe(config))
    assert any("tpuNodesets[0].enablePublicIps" in line for line in sections["Warnings"])
