"""The reachability section equals an independent evaluation of the rendered rules, for every
shipped stack and docs example: each pair of principals is probed port by port, reading the
registered Firewall inputs as Compute applies them (highest priority first, a deny wins a tie,
no source or destination meaning 0.0.0.0/0, disabled rules skipped, ingress denied and egress
allowed by default), GKE's own node rules, the Cluster's NetworkPolicy enforcement and each
NetworkPolicy one port at a time (`netpol.egress_allowed`/`ingress_allowed`), never the
model's interval arithmetic."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from graph import netpol, reachability, types
from graph.engine import Graph
from graph.reachability import Ports, Principal
from tests.conftest import build_graph
from tests.graph.test_reachability import ALL, graph_of

Probe = tuple[str, int]
PORTLESS = ("icmp", "esp", "ah")


def _net(text: str) -> Any:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _overlap(a: str, b: str) -> bool:
    first, second = _net(a), _net(b)
    return first is not None and second is not None and first.overlaps(second)


def _hits(entry: Mapping[str, Any], probe: Probe) -> bool:
    protocol, port = probe
    if entry["protocol"] not in ("all", protocol):
        return False
    if protocol in PORTLESS or not entry.get("ports"):
        return True
    for text in entry["ports"]:
        low, _, high = str(text).partition("-")
        if int(low) <= port <= int(high or low):
            return True
    return False


def _firewall_rules(graph: Graph) -> list[dict[str, Any]]:
    """The registered rules, plus GKE's own ingress rules for its nodes."""
    rules = [dict(r.inputs) for r in graph.of_type(types.FIREWALL) if not r.inputs.get("disabled")]
    cluster = graph.of_type(types.CLUSTER)
    if not cluster:
        return rules
    subnet = next(
        r.inputs
        for r in graph.of_type(types.SUBNETWORK)
        if any(s["rangeName"] == "pods" for s in r.inputs.get("secondaryIpRanges") or [])
    )
    pods = next(s["ipCidrRange"] for s in subnet["secondaryIpRanges"] if s["rangeName"] == "pods")
    master = cluster[0].inputs["privateClusterConfig"]["masterIpv4CidrBlock"]
    tags = sorted(
        {t for p in graph.of_type(types.NODE_POOL) for t in p.inputs["nodeConfig"]["tags"]}
    )
    base = {"network": subnet["network"], "targetTags": tags}
    every = [{"protocol": p} for p in ("tcp", "udp", "icmp", "sctp", "esp", "ah")]
    return [
        *rules,
        {**base, "sourceRanges": [pods], "allows": every},
        {**base, "sourceRanges": [subnet["ipCidrRange"]], "allows": every[:3]},
        {
            **base,
            "sourceRanges": [master],
            "allows": [{"protocol": "tcp", "ports": ["443", "10250"]}],
        },
    ]


def _applies(rule: Mapping[str, Any], vm: Principal) -> bool:
    if rule.get("targetTags"):
        return bool(set(rule["targetTags"]) & vm.tags)
    if rule.get("targetServiceAccounts"):
        return vm.account in rule["targetServiceAccounts"]
    return True


def _verdict(rules: list[dict[str, Any]], probe: Probe, default: bool) -> bool:
    matching = [
        (int(r.get("priority", 1000)), key == "allows")
        for r in rules
        for key in ("denies", "allows")
        if any(_hits(e, probe) for e in r.get(key) or [])
    ]
    return min(matching)[1] if matching else default


def _last(link: object) -> str:
    return str(link or "").rsplit("/", 1)[-1]


class Evaluation:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.rules = _firewall_rules(graph)
        self.found = [p for p in reachability.principals(graph) if p.known]
        self.gke = next((p for p in self.found if p.name == "GKE nodes"), None)
        cluster = graph.of_type(types.CLUSTER)
        inputs = cluster[0].inputs if cluster else {}
        self.enforced = inputs.get("datapathProvider") == "ADVANCED_DATAPATH" or bool(
            (inputs.get("networkPolicy") or {}).get("enabled")
        )
        self.teams = {
            r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"]["ai-infra/team"]
            for r in graph.of_type(types.NAMESPACE)
            if "ai-infra/team" in ((r.inputs.get("metadata") or {}).get("labels") or {})
        }

    def host(self, p: Principal) -> Principal:
        return self.gke if p.kind == "pods" and self.gke is not None else p

    def firewall(self, source: Principal, target: Principal, probe: Probe) -> bool:
        sender, receiver = self.host(source), self.host(target)
        if source.kind != "range" and sender.network != receiver.network:
            return False
        if sender.kind == "vm":
            egress = [
                r
                for r in self.rules
                if r.get("direction") == "EGRESS"
                and _last(r.get("network")) == sender.network
                and _applies(r, sender)
                and any(
                    _overlap(d, target.cidr) for d in r.get("destinationRanges") or ["0.0.0.0/0"]
                )
            ]
            if not _verdict(egress, probe, default=True):
                return False
        if target.kind == "share":
            return True
        ingress = [
            r
            for r in self.rules
            if r.get("direction") != "EGRESS"
            and _last(r.get("network")) == receiver.network
            and _applies(r, receiver)
            and self._from(r, source)
        ]
        return _verdict(ingress, probe, default=False)

    @staticmethod
    def _from(rule: Mapping[str, Any], source: Principal) -> bool:
        ranges = rule.get("sourceRanges") or []
        by_peer = rule.get("sourceTags") or rule.get("sourceServiceAccounts")
        if not ranges and not by_peer:
            ranges = ["0.0.0.0/0"]
        if any(_overlap(s, source.cidr) for s in ranges):
            return True
        return source.kind == "vm" and (
            bool(set(rule.get("sourceTags") or ()) & source.tags)
            or source.account in (rule.get("sourceServiceAccounts") or ())
        )

    def pod(self, p: Principal) -> netpol.Pod:
        labels = (
            {"ai-infra/team": p.namespace} if p.name.startswith("team ") and p.namespace else {}
        )
        return netpol.Pod(p.namespace or "*", labels=dict(p.labels), namespace_labels=labels)

    def policy(self, pod: Principal, peer: Principal, probe: Probe, *, egress: bool) -> bool:
        if not self.enforced:
            return True
        other: netpol.Peer = self.pod(peer) if peer.kind == "pods" else peer.cidr
        check = netpol.egress_allowed if egress else netpol.ingress_allowed
        return check(self.graph, self.pod(pod), other, probe[1], probe[0].upper())

    def dcn(self, source: Principal, target: Principal, probe: Probe) -> bool:
        def hosts(pods: Principal, vpc: str) -> list[Principal]:
            team = self.teams.get(pods.namespace or "")
            return [d for d in self.found if d.teams and d.network == vpc and team in d.teams]

        if source.kind == "pods" and target.teams:
            return any(self.firewall(h, target, probe) for h in hosts(source, target.network))
        if target.kind == "pods" and source.teams:
            return any(self.firewall(source, h, probe) for h in hosts(target, source.network))
        return False

    def open(self, source: Principal, target: Principal, probe: Probe) -> bool:
        reached = self.firewall(source, target, probe)
        if target.kind == "share" and target.exports is not None:
            reached = reached and any(_overlap(e, source.cidr) for e in target.exports)
        if source.kind == "pods":
            reached = reached and self.policy(source, target, probe, egress=True)
        if target.kind == "pods":
            reached = reached and self.policy(target, source, probe, egress=False)
        return reached or self.dcn(source, target, probe)


def _probes(graph: Graph) -> Iterator[Probe]:
    """Every port where a rule's or a policy's verdict can change, and its neighbours."""
    edges = {1, 65535, 53, 443, 10250}
    for r in graph.of_type(types.FIREWALL):
        for entry in [*(r.inputs.get("allows") or []), *(r.inputs.get("denies") or [])]:
            for text in entry.get("ports") or []:
                low, _, high = str(text).partition("-")
                edges |= {int(low) - 1, int(low), int(high or low), int(high or low) + 1}
    for r in graph.of_type(types.NETWORK_POLICY):
        for rule in [*r.inputs["spec"].get("ingress", []), *r.inputs["spec"].get("egress", [])]:
            for port in rule.get("ports") or []:
                end = int(port.get("endPort") or port["port"])
                edges |= {int(port["port"]) - 1, int(port["port"]), end, end + 1}
    for protocol in ("tcp", "udp", "sctp"):
        yield from ((protocol, p) for p in sorted(edges) if 1 <= p <= 65535)
    yield from ((protocol, 0) for protocol in PORTLESS)


def _holds(ports: Ports, probe: Probe) -> bool:
    protocol, port = probe
    return any(a <= port <= b for a, b in ports.by_protocol.get(protocol, ()))


def _differences(graph: Graph) -> list[str]:
    evaluation = Evaluation(graph)
    shown = reachability.matrix(graph)
    probes = list(_probes(graph))
    found = []
    for source in evaluation.found:
        if source.kind == "share":
            continue
        for target in evaluation.found:
            if target.kind == "range":
                continue
            ports = shown.get((source.name, target.name), Ports())
            for probe in probes:
                if evaluation.open(source, target, probe) != _holds(ports, probe):
                    found.append(f"{source.name} -> {target.name} {probe}: section says {ports}")
    return found


@pytest.mark.parametrize("name", ALL)
def test_the_section_equals_an_independent_evaluation(name: str):
    assert _differences(graph_of(name)) == []


class Edited:
    """A recorded graph with some resources' inputs replaced or added: what a Cluster without
    enforcement, or a share whose address is not known yet, would register."""

    def __init__(self, graph: Graph, edit: Any, extra: tuple[Any, ...] = ()) -> None:
        self.graph, self.edit, self.extra = graph, edit, extra

    def of_type(self, type_: str) -> list[Any]:
        found = [self.edit(r) for r in self.graph.of_type(type_)]
        return found + [r for r in self.extra if r.type == type_]


class Record:
    def __init__(self, type_: str, inputs: dict[str, Any], outputs: dict[str, Any] | None = None):
        self.type, self.inputs, self.outputs = type_, inputs, outputs or {}


def _legacy(r: Any) -> Any:
    if r.type != types.CLUSTER:
        return r
    return Record(r.type, {**r.inputs, "datapathProvider": "LEGACY_DATAPATH"}, r.outputs)


def test_without_enforcement_policies_count_for_nothing_and_the_section_says_so():
    graph = Edited(graph_of("prod"), _legacy)
    shown = {(a, b): str(p) for (a, b), p in reachability.matrix(graph).items()}  # type: ignore[arg-type]
    unenforced = " (NetworkPolicies not enforced)"
    assert shown[(f"team finetune pods{unenforced}", f"team research pods{unenforced}")] == "all"
    assert _differences(graph) == []  # type: ignore[arg-type]
    enforced = {(a, b) for a, b in reachability.matrix(graph_of("prod"))}
    assert ("team finetune pods", "team research pods") not in enforced


def test_host_network_pods_are_their_own_nodes():
    found = {p.name: p for p in reachability.principals(graph_of("prod"))}
    hosted = found["team pretrain host-network pods"]
    assert (hosted.kind, hosted.network) == ("vm", "ai-prod-vpc")
    assert hosted.account == "ai-prod-pretrain-nodes@ml-platform-prod.iam.gserviceaccount.com"
    assert hosted.tags == {"ai-prod-gke-node"}
    shown = {(a, b): str(p) for (a, b), p in reachability.matrix(graph_of("prod")).items()}
    # No NetworkPolicy of their own: they reach what their nodes' addresses reach, every pod
    # no policy isolates; a team's ingress policy admits no node address.
    assert shown[("team pretrain host-network pods", "other pods")] == "tcp udp icmp"
    assert shown[("team pretrain host-network pods", "GKE nodes")] == "tcp udp icmp"
    assert ("team pretrain host-network pods", "team finetune pods") not in shown


def test_each_dcn_group_is_shown_with_the_teams_that_land_there():
    found = [p for p in reachability.principals(graph_of("prod")) if p.teams]
    assert sorted(p.name for p in found) == [
        f"DCN ai-prod-dcn-{group} on ai-prod-dcn-{n}-vpc (pods of {teams})"
        for group, teams in (
            ("v6e-256", "pretrain, finetune, research"),
            ("v6e-64-flex-start", "pretrain, finetune, research"),
        )
        for n in (1, 2)
    ]
    shown = {(a, b): str(p) for (a, b), p in reachability.matrix(graph_of("prod")).items()}
    dcn = "DCN ai-prod-dcn-v6e-256 on ai-prod-dcn-1-vpc (pods of pretrain, finetune, research)"
    assert shown[(dcn, dcn)] == "tcp udp icmp"
    assert shown[("team research pods", dcn)] == "tcp udp icmp"
    other = dcn.replace("v6e-256", "v6e-64-flex-start")
    assert (dcn, other) not in shown


def test_an_unknown_address_is_shown_unknown_and_never_paired():
    share = Record(
        types.FILESTORE,
        {"name": "late", "networks": [{"network": "ai-prod-vpc"}], "fileShares": {}},
    )
    rule = Record(
        types.FIREWALL,
        {
            "name": "x",
            "network": "ai-prod-vpc",
            "sourceRanges": ["not-known-yet"],
            "allows": [{"protocol": "tcp"}],
        },
    )
    graph = Edited(graph_of("prod"), lambda r: r, (share, rule))
    lines = reachability.lines(graph)  # type: ignore[arg-type]
    assert "  Filestore late: address unknown until deploy, not judged" in lines
    assert "  range not-known-yet: address unknown until deploy, not judged" in lines
    assert not [
        pair
        for pair in reachability.matrix(graph)
        if {"Filestore late", "range not-known-yet"} & set(pair)
    ]  # type: ignore[arg-type]


def test_host_network_pods_reach_a_share_exported_to_the_subnet():
    """The known open path (docs/storage.md): research is granted the share, which exports to
    the node subnet and lets GKE's node tag reach it; pretrain's host-network pods send from
    their nodes' addresses with that tag, so they reach it on NFS too."""
    from tests.storage.stack import config

    graph = build_graph(
        config(
            teams=[{"name": "pretrain", "tpuHostNetwork": True}, {"name": "research"}],
            tpuSlices=[{"name": "own", "accelerator": "v5p-16", "team": "pretrain"}],
        )
    )
    shown = reachability.matrix(graph)
    ports = shown[("team pretrain host-network pods", "Filestore ai-test-shared")]
    assert _holds(ports, ("tcp", 2049)), ports
    assert _differences(graph) == []
