"""Public IPs on a network the stack does not manage are warned of in the plan and by `pulumi
up`: its firewall, not the stack's, decides who reaches sshd (a default VPC admits SSH from
every address). On the stack's own network, `network.allow` is judged instead."""

from __future__ import annotations

from stacks import environment
from stacks.loading import parse
from tests.tpu_vms.test_vms import stack, vm

ELSEWHERE = {
    "network": "projects/net-proj/global/networks/default",
    "subnetwork": "projects/net-proj/regions/us-central2/subnetworks/default",
}


def _warned(*entries: dict) -> list[str]:
    config = parse(stack(tpuVms=list(entries)), "test")
    return [w for w in environment.warnings(config) if "enablePublicIps" in w]


def test_public_ips_on_a_foreign_network_are_warned_of_at_the_entry():
    found = _warned(vm(name="a"), vm(name="b", enablePublicIps=True, network=ELSEWHERE))
    assert len(found) == 1 and found[0].startswith("ai-infra:tpuVms[1].enablePublicIps")
    assert "0.0.0.0/0" in found[0] and ELSEWHERE["network"] in found[0]


def test_no_warning_on_the_stacks_network_or_without_public_ips():
    assert _warned(vm(name="a", enablePublicIps=True)) == []
    assert _warned(vm(name="b", network=ELSEWHERE)) == []
