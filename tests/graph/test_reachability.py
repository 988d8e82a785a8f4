"""Who reaches what, for every shipped stack and docs example, computed from what the program
registers (graph/reachability.py): the intended matrix holds, and an edit that opens a port
says so in the diff."""

from __future__ import annotations

import json
from functools import cache

import pytest
import yaml

from graph import reachability
from graph.engine import Graph, list_stacks, load_stack_config
from graph.reachability import Ports, matrix
from plan.cli import main
from tests.conftest import build_graph, with_config
from tests.test_docs import examples

SYSTEMS = ("Slurm ", "GPU cluster ", "TPU VMs ")
PODS = ("team ", "other pods", "kube-dns")


@cache
def graph_of(name: str) -> Graph:
    if name in list_stacks():
        return build_graph(load_stack_config(name), stack=name)
    return build_graph(examples()[name].config, stack=name)


ALL = [*list_stacks(), *sorted(examples())]


def _system(name: str) -> str:
    """`Slurm tpu controller` -> `Slurm tpu`; a system's principals share it."""
    for prefix in SYSTEMS:
        if name.startswith(prefix):
            return " ".join(name.split()[: 3 if prefix == "GPU cluster " else 2])
    return name


def _storage_shares(graph: Graph) -> set[str]:
    """The Filestore instances of `ai-infra:storage` volumes."""
    return {
        r.inputs["name"]
        for r in graph.of_type("gcp:filestore/instance:Instance")
        if ":StorageInstances::" in r.parent
    }


@pytest.mark.parametrize("name", ALL)
def test_the_intended_matrix_holds(name: str):
    graph = graph_of(name)
    opened = {
        rule.inputs["name"]
        for rule in graph.of_type(reachability.FIREWALL)
        if "-allow-" in rule.inputs["name"]
        and rule.inputs["name"].rsplit("-allow-", 1)[1] not in ("internal", "webhooks", "iap-ssh")
    }
    found = matrix(graph)
    for (source, target), ports in found.items():
        pair = f"{name}: {source} -> {target}: {ports}"
        # Host-network pods are reached as their nodes are, never more.
        if target.endswith("host-network pods"):
            assert not ports - found.get((source, "GKE nodes"), Ports()), pair
            continue
        # No pod reaches another system's VMs unless network.allow opened a port of it.
        if source.startswith(PODS) and target.startswith(SYSTEMS):
            assert opened, pair
        # No other system's VM reaches GKE nodes or pods.
        if source.startswith(SYSTEMS):
            assert not target.startswith(("GKE nodes", *PODS)), pair
            # ... nor another system's VMs, nor its shares.
            if target.startswith(SYSTEMS):
                assert _system(source) == _system(target), pair
        # A team's pods reach no other team's pods.
        if source.startswith("team ") and target.startswith("team "):
            assert source.split()[1] == target.split()[1], pair
        # IAP is SSH, and reaches nothing else.
        if source == "IAP":
            assert str(ports) == "tcp:22", pair
        # The control plane reaches no team's pods (host-network ones are their nodes).
        if source == "GKE control plane":
            assert not target.startswith("team ") or "host-network" in target, pair
        # A system's share is reached by its own system only; a storage volume's by the VMs
        # that mount it (GKE's nodes for a team's, a system's VMs for its storage lists).
        if target.startswith("Filestore "):
            if target.removeprefix("Filestore ") in _storage_shares(graph):
                assert source.startswith(("GKE nodes", *SYSTEMS)), pair
            else:
                assert source.startswith(SYSTEMS), pair


def test_the_matrix_of_an_opening_example_is_exactly_this():
    graph = graph_of("network-allow")
    shown = {f"{a} -> {b}": str(p) for (a, b), p in matrix(graph).items()}
    systems = {k: v for k, v in shown.items() if "TPU VMs" in k}
    assert systems == {
        "kube-dns -> TPU VMs exp": "tcp:8476",
        "other pods -> TPU VMs exp": "tcp:8476",
        "IAP -> TPU VMs exp": "tcp:22",
        "TPU VMs exp -> TPU VMs exp": "tcp udp icmp",
    }


def test_a_team_reaches_its_own_pods_dns_and_https_only():
    graph = build_graph(
        with_config(
            tpuSlices=[{"name": "s", "accelerator": "v5p-16"}], teams=[{"name": "a"}, {"name": "b"}]
        )
    )
    shown = {(a, b): str(p) for (a, b), p in matrix(graph).items() if a == "team a pods"}
    assert shown == {
        ("team a pods", "GKE nodes"): "tcp:443",
        ("team a pods", "team a pods"): "all",
        ("team a pods", "kube-dns"): "tcp:53 udp:53",
    }


def test_the_diff_says_when_an_edit_opens_a_path():
    tpu = {"name": "exp", "accelerator": "v4-8"}
    region = {"gcp:region": "us-central2", "gcp:zone": "us-central2-b"}
    before = build_graph(with_config(**region, tpuVms=[tpu]))
    opening = {"name": "jax", "to": "tpuVms", "sources": ["pods"], "ports": ["tcp:8476"]}
    after = build_graph(with_config(**region, tpuVms=[tpu], network={"allow": [opening]}))
    assert reachability.opened(before, after) == [
        "opens a path: kube-dns -> TPU VMs exp: tcp:8476",
        "opens a path: other pods -> TPU VMs exp: tcp:8476",
    ]
    assert reachability.opened(after, before) == [
        "closes a path: kube-dns -> TPU VMs exp: tcp:8476",
        "closes a path: other pods -> TPU VMs exp: tcp:8476",
    ]


def test_ports_subtract_and_print_as_ranges():
    every = Ports.every()
    some = Ports.of("tcp", ["22", "8000-8100"])
    assert str(some) == "tcp:22,8000-8100"
    assert str(every - Ports.of("udp", None) - Ports.of("tcp", ["1-21", "23-65535"])) == (
        "tcp:22 sctp icmp esp ah"
    )
    assert not (some & Ports.of("udp", None))


def test_the_plan_and_its_diff_show_it(tmp_path, capsys):
    config = {
        **with_config(
            **{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"},
            tpuVms=[{"name": "exp", "accelerator": "v4-8"}],
        )
    }
    base = tmp_path / "base" / "Pulumi.edit.yaml"
    base.parent.mkdir()
    base.write_text(yaml.safe_dump({"config": config}))
    opening = {"name": "jax", "to": "tpuVms", "sources": ["pods"], "ports": ["tcp:8476"]}
    edited = tmp_path / "Pulumi.edit.yaml"
    edited.write_text(
        yaml.safe_dump({"config": {**config, "ai-infra:network": {"allow": [opening]}}})
    )
    assert main([str(edited)]) == 0
    plan = capsys.readouterr().out
    assert "  other pods -> TPU VMs exp: tcp:8476" in plan.split("Reachability (", 1)[1]
    assert main([str(edited), "--base", str(base)]) == 2  # changes
    diff = capsys.readouterr().out
    assert "Reachability:\n  opens a path: kube-dns -> TPU VMs exp: tcp:8476" in diff
    assert main([str(edited), "--base", str(base), "--json"]) == 2
    document = json.loads(capsys.readouterr().out)
    assert "opens a path: other pods -> TPU VMs exp: tcp:8476" in document["diff"]["reachability"]
    assert {"from": "IAP", "to": "TPU VMs exp", "ports": "tcp:22"} in document["reachability"]


def test_a_team_uses_an_opening_through_its_egress_policy():
    opening = {"name": "jax", "to": "tpuVms", "sources": ["pods"], "ports": ["tcp:8476-8477"]}
    graph = build_graph(
        with_config(
            **{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"},
            tpuVms=[{"name": "exp", "accelerator": "v4-8"}],
            teams=[{"name": "a"}],
            network={"allow": [opening]},
        )
    )
    shown = {(a, b): str(p) for (a, b), p in matrix(graph).items()}
    assert shown[("team a pods", "TPU VMs exp")] == "tcp:8476-8477"
    # The egress rule names the subnet, where GKE's nodes also live: the same ports reach
    # them (GKE admits the pods range to its nodes), and no other system's VMs.
    assert shown[("team a pods", "GKE nodes")] == "tcp:443,8476-8477"
    assert not [pair for pair in shown if pair[0] == "team a pods" and "Slurm" in pair[1]]
