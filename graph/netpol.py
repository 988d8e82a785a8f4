"""A NetworkPolicy evaluator for the policies a plan registers, as the API defines them: a pod
selected by any policy of a direction is isolated in it, and a connection is allowed when some
rule of a selecting policy matches both the peer and the port. Peers are pods (namespace,
namespace labels, pod labels) or addresses outside the cluster, which an `ipBlock` matches
(pod addresses are left to pod selectors, as the API leaves ipBlock to external addresses).
The tests of teams and the reachability model (`graph/reachability.py`) read it."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

from graph import types


class Recorded(Protocol):
    """A registered resource as the model reads it: a `graph.engine.Registration`, or the
    policy pack's view of a resource under `pulumi preview`."""

    @property
    def type(self) -> str: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...
    @property
    def outputs(self) -> Mapping[str, Any]: ...


class Graph(Protocol):
    """What the model reads of a recorded graph (`graph.engine.Graph` is one)."""

    def of_type(self, type_: str) -> Sequence[Recorded]: ...


TYPE = types.NETWORK_POLICY
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def network(text: object) -> Network | None:
    """An address range, or None where there is none to read: a Filestore share's range is an
    output, which the policy pack sees only once the share exists (under `pulumi preview` it
    is unknown, or absent from a new resource's properties). A range written with host bits
    (`10.1.2.3/0`) is read as the range it covers, not as none: the firewall and NetworkPolicy
    APIs are not this reader, and `no-internet-ingress` must see such a /0."""
    return _parse(str(text))


@cache
def _parse(text: str) -> Network | None:
    """Parsed once per text: the reachability model asks about the same ranges per pair."""
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str] = field(default_factory=dict)
    namespace_labels: dict[str, str] = field(default_factory=dict)

    @property
    def all_namespace_labels(self) -> dict[str, str]:
        # The API server sets this label on every namespace.
        return {**self.namespace_labels, "kubernetes.io/metadata.name": self.namespace}


Peer = Pod | str
"""A pod, or an IP address (or range) outside the cluster."""


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, selector  # matchExpressions are not rendered
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _peer_matches(peer_rule: dict[str, Any], policy_namespace: str, peer: Peer) -> bool:
    if "ipBlock" in peer_rule:
        if not isinstance(peer, str):
            return False  # ipBlock is for addresses outside the cluster
        block = peer_rule["ipBlock"]
        address, allowed = network(peer), network(block["cidr"])
        if address is None or allowed is None or not address.subnet_of(allowed):  # type: ignore[arg-type]
            return False
        excepted = (network(c) for c in block.get("except", []))
        return not any(e is None or address.overlaps(e) for e in excepted)
    if isinstance(peer, str):
        return False
    if "namespaceSelector" in peer_rule:
        if not _selects(peer_rule["namespaceSelector"], peer.all_namespace_labels):
            return False
    elif peer.namespace != policy_namespace:
        return False
    return _selects(peer_rule.get("podSelector", {}), peer.labels)


def _port_matches(ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
    if not ports:
        return True
    return any(int(p["port"]) == port and p.get("protocol", "TCP") == protocol for p in ports)


def _policies(graph: Graph, pod: Pod, direction: str) -> list[dict[str, Any]]:
    found = []
    for r in graph.of_type(TYPE):
        if r.inputs["metadata"]["namespace"] != pod.namespace:
            continue
        spec = r.inputs["spec"]
        if direction in spec["policyTypes"] and _selects(spec["podSelector"], pod.labels):
            found.append(spec)
    return found


def _allowed(graph: Graph, pod: Pod, peer: Peer, port: int, protocol: str, egress: bool) -> bool:
    direction, rules, peers = (
        ("Egress", "egress", "to") if egress else ("Ingress", "ingress", "from")
    )
    policies = _policies(graph, pod, direction)
    if not policies:
        return True
    return any(
        _port_matches(rule.get("ports"), port, protocol)
        and any(_peer_matches(p, pod.namespace, peer) for p in rule.get(peers, []))
        for spec in policies
        for rule in spec.get(rules, [])
    )


def egress_allowed(graph: Graph, pod: Pod, peer: Peer, port: int, protocol: str = "TCP") -> bool:
    return _allowed(graph, pod, peer, port, protocol, egress=True)


def ingress_allowed(graph: Graph, pod: Pod, peer: Peer, port: int, protocol: str = "TCP") -> bool:
    return _allowed(graph, pod, peer, port, protocol, egress=False)


def connects(graph: Graph, source: Pod, target: Pod, port: int, protocol: str = "TCP") -> bool:
    """Pod to pod: the source's egress and the target's ingress must both allow it."""
    return egress_allowed(graph, source, target, port, protocol) and ingress_allowed(
        graph, target, source, port, protocol
    )


def rule_ports(
    graph: Graph, pod: Pod, peer: Peer, *, egress: bool
) -> list[tuple[str, str | None]] | None:
    """The (protocol, port) pairs `pod`'s policies allow with `peer` in one direction, a port
    `N` or a range `N-M` (`endPort`), None meaning every port of the protocol and ("*", None)
    every protocol; None when no policy isolates the pod in that direction."""
    direction, rules, peers = (
        ("Egress", "egress", "to") if egress else ("Ingress", "ingress", "from")
    )
    policies = _policies(graph, pod, direction)
    if not policies:
        return None
    found: list[tuple[str, str | None]] = []
    for spec in policies:
        for rule in spec.get(rules, []):
            if not any(_peer_matches(p, pod.namespace, peer) for p in rule.get(peers, [])):
                continue
            if not rule.get("ports"):
                return [("*", None)]
            found += [
                (
                    p.get("protocol", "TCP").lower(),
                    f"{int(p['port'])}-{int(p['endPort'])}"
                    if p.get("endPort")
                    else str(int(p["port"])),
                )
                for p in rule["ports"]
            ]
    return found
