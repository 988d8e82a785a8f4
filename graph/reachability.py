"""Who reaches what, computed from a recorded graph: the firewall rules and NetworkPolicies the
program registers, and the rules GKE creates for a cluster it registers ("Automatically
created firewall rules": `-all` pods range to nodes, `-vms` subnet to nodes, `-master`
control plane to nodes on 443 and 10250), never from the config.

Principals are what the graph holds: GKE nodes, each team's pods and every other pod, the
control plane, IAP, the Slurm controller, login VMs, CPU and TPU nodes, each GPU cluster's
VMs, each TPU VM entry, each Filestore share, and any other source range a rule names. For
each pair the model intersects the destination's ingress rules, the source's egress rules
(a pod's are its node's), both sides' NetworkPolicies when pods are involved, and a share's
NFS exports. The plan's section, `--json`, the diff's "opens a path" lines and the policy
pack all call `matrix()`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from graph import types
from graph.netpol import Graph, Pod, Recorded, network, rule_ports

IAP_RANGE = "35.235.240.0/20"
"""Identity-Aware Proxy's TCP forwarding range (components/network.py states it too; this
module reads graphs only and imports no component)."""
TEAM_LABEL = "ai-infra/team"
FIREWALL = types.FIREWALL
PROTOCOLS = ("tcp", "udp", "sctp", "icmp", "esp", "ah")
_PORTED = ("tcp", "udp", "sctp")
_FULL = ((1, 65535),)

Intervals = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Ports:
    """Ports by protocol, as sorted disjoint intervals (icmp, esp, ah: (0, 0) when open)."""

    by_protocol: Mapping[str, Intervals] = field(default_factory=dict)

    @staticmethod
    def every() -> Ports:
        return Ports({p: _FULL if p in _PORTED else ((0, 0),) for p in PROTOCOLS})

    @staticmethod
    def of(protocol: str, ports: Sequence[str] | None) -> Ports:
        """A firewall `allows`/`denies` entry: `all`, or a protocol with optional ports."""
        if protocol == "all":
            return Ports.every()
        if protocol not in _PORTED:
            return Ports({protocol: ((0, 0),)})
        if not ports:
            return Ports({protocol: _FULL})
        spans = []
        for port in ports:
            low, _, high = str(port).partition("-")
            spans.append((int(low), int(high or low)))
        return Ports({protocol: _merge(spans)})

    def __or__(self, other: Ports) -> Ports:
        keys = set(self.by_protocol) | set(other.by_protocol)
        return Ports(
            {k: _merge([*self.by_protocol.get(k, ()), *other.by_protocol.get(k, ())]) for k in keys}
        )

    def __and__(self, other: Ports) -> Ports:
        found = {}
        for k in set(self.by_protocol) & set(other.by_protocol):
            spans = [
                (max(a, c), min(b, d))
                for a, b in self.by_protocol[k]
                for c, d in other.by_protocol[k]
                if max(a, c) <= min(b, d)
            ]
            if spans:
                found[k] = _merge(spans)
        return Ports(found)

    def __sub__(self, other: Ports) -> Ports:
        found = {}
        for k, spans in self.by_protocol.items():
            rest = list(spans)
            for c, d in other.by_protocol.get(k, ()):
                rest = [
                    piece
                    for a, b in rest
                    for piece in ((a, min(b, c - 1)), (max(a, d + 1), b))
                    if piece[0] <= piece[1]
                ]
            if rest:
                found[k] = _merge(rest)
        return Ports(found)

    def __bool__(self) -> bool:
        return any(self.by_protocol.values())

    def __str__(self) -> str:
        if self == Ports.every():
            return "all"
        parts = []
        for protocol in PROTOCOLS:
            spans = self.by_protocol.get(protocol)
            if not spans:
                continue
            if protocol not in _PORTED or spans == _FULL:
                parts.append(protocol)
            else:
                shown = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
                parts.append(f"{protocol}:{shown}")
        return " ".join(parts)


def _merge(spans: Iterable[tuple[int, int]]) -> Intervals:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return tuple(merged)


@dataclass(frozen=True)
class Principal:
    """Who sends or receives: VMs (by network and tags), pods (by namespace), a range, or a
    Filestore share."""

    name: str
    kind: str
    """`vm`, `pods`, `range` or `share`."""
    network: str = ""
    """The VPC's name; empty for a range, which reaches any network it is admitted to."""
    cidr: str = ""
    tags: frozenset[str] = frozenset()
    namespace: str | None = None
    """Pods' namespace; `*` for pods of every namespace without a policy of the program's."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Pods' labels, which policies select peers by."""
    exports: tuple[str, ...] | None = None
    """A share's export ranges; None when it exports to its whole network."""
    system: str = ""
    """The registry name of the system whose VMs these are (`VMS`); empty for GKE, pods,
    ranges and shares."""


@dataclass(frozen=True)
class _Rule:
    network: str
    egress: bool
    priority: int
    allow: bool
    ports: Ports
    sources: tuple[str, ...] = ()
    source_tags: frozenset[str] = frozenset()
    targets: frozenset[str] = frozenset()
    destinations: tuple[str, ...] = ()


def _last(link: Any) -> str:
    return str(link or "").rstrip("/").rsplit("/", 1)[-1]


def _overlaps(a: str, b: str) -> bool:
    first, second = network(a), network(b)
    return first is not None and second is not None and first.overlaps(second)


def _rules(graph: Graph) -> list[_Rule]:
    found = []
    for r in graph.of_type(FIREWALL):
        i = r.inputs
        for key, allow in (("allows", True), ("denies", False)):
            for entry in i.get(key) or []:
                found.append(
                    _Rule(
                        network=_last(i.get("network")),
                        egress=i.get("direction") == "EGRESS",
                        priority=int(i.get("priority", 1000)),
                        allow=allow,
                        ports=Ports.of(entry["protocol"], entry.get("ports")),
                        sources=tuple(i.get("sourceRanges") or ()),
                        source_tags=frozenset(i.get("sourceTags") or ()),
                        targets=frozenset(i.get("targetTags") or ()),
                        destinations=tuple(str(d) for d in i.get("destinationRanges") or ()),
                    )
                )
    return found


@dataclass
class _Stack:
    """What the graph says about the stack's network and cluster."""

    subnets: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Subnet name -> (VPC name, primary range)."""
    pods: str = ""
    vpc: str = ""
    master: str = ""
    gke_tags: frozenset[str] = frozenset()


def _stack(graph: Graph) -> _Stack:
    stack = _Stack()
    for r in graph.of_type(types.SUBNETWORK):
        vpc = _last(r.inputs.get("network"))
        stack.subnets[str(r.inputs.get("name"))] = (vpc, str(r.inputs.get("ipCidrRange")))
        for secondary in r.inputs.get("secondaryIpRanges") or []:
            if secondary.get("rangeName") == "pods":
                stack.pods, stack.vpc = secondary["ipCidrRange"], vpc
    for r in graph.of_type(types.CLUSTER):
        stack.master = (r.inputs.get("privateClusterConfig") or {}).get("masterIpv4CidrBlock", "")
        stack.vpc = _last(r.inputs.get("network")) or stack.vpc
    tags: set[str] = set()
    for r in graph.of_type(types.NODE_POOL):
        tags |= set((r.inputs.get("nodeConfig") or {}).get("tags") or ())
    stack.gke_tags = frozenset(tags)
    return stack


def _subnet_of(stack: _Stack, link: Any) -> tuple[str, str]:
    """(VPC, range) of the subnet a self link or name points at; the stack's by default."""
    name = _last(link)
    for subnet, found in stack.subnets.items():
        if subnet == name or name.endswith(subnet):
            return found
    return stack.vpc, next((cidr for vpc, cidr in stack.subnets.values() if vpc == stack.vpc), "")


def principals(graph: Graph) -> list[Principal]:
    """Every principal the graph holds, in a stable order."""
    stack = _stack(graph)
    own = _subnet_of(stack, "")
    found: list[Principal] = []
    if graph.of_type(types.CLUSTER):
        found.append(Principal("GKE nodes", "vm", stack.vpc, own[1], stack.gke_tags))
        found.append(Principal("GKE control plane", "range", cidr=stack.master))
        for r in graph.of_type(types.NAMESPACE):
            labels = (r.inputs.get("metadata") or {}).get("labels") or {}
            if TEAM_LABEL in labels:
                team = labels[TEAM_LABEL]
                # Host-network pods are outside every NetworkPolicy: they reach as nodes do.
                hosted = labels.get("ai-infra/tpu-host-network") == "true"
                name = f"team {team} pods"
                name += " (host-network ones: as GKE nodes)" if hosted else ""
                found.append(Principal(name, "pods", stack.vpc, stack.pods, namespace=team))
        found.append(
            Principal(
                "kube-dns",
                "pods",
                stack.vpc,
                stack.pods,
                namespace="kube-system",
                labels={"k8s-app": "kube-dns"},
            )
        )
        found.append(Principal("other pods", "pods", stack.vpc, stack.pods, namespace="*"))
    found.append(Principal("IAP", "range", cidr=IAP_RANGE))
    found += _vms(graph, stack)
    for r in graph.of_type(types.FILESTORE):
        network = (r.inputs.get("networks") or [{}])[0]
        reserved = _share_range((r.outputs.get("networks") or [{}])[0])
        if reserved is None:
            continue  # its address is unknown until GCP picks it (a preview): no pair to judge
        options = (r.inputs.get("fileShares") or {}).get("nfsExportOptions")
        exports = tuple(ip for o in options for ip in o.get("ipRanges", [])) if options else None
        found.append(
            Principal(
                f"Filestore {r.inputs.get('name')}",
                "share",
                _last(network.get("network")),
                reserved,
                exports=exports,
            )
        )
    known = {p.cidr for p in found}
    for rule in _rules(graph):
        for cidr in rule.sources:
            if cidr not in known and cidr not in (stack.pods, own[1]):
                known.add(cidr)
                found.append(Principal(f"range {cidr}", "range", cidr=cidr))
    return found


def _share_range(share_network: Mapping[str, Any]) -> str | None:
    """Where a Filestore share's clients reach it: its reserved range, or, where that names a
    private services allocation instead of a range, its address; None when neither is known."""
    reserved = network(share_network.get("reservedIpRange") or "")
    if reserved is not None:
        return str(reserved)
    addresses = share_network.get("ipAddresses") or []
    return f"{addresses[0]}/32" if addresses else None


VmReader = Callable[[Recorded, "_Stack", Sequence[Principal]], Principal | None]
"""Whether a registered resource is VMs of one system, and which: the resource, the stack's
network as the graph shows it, and the principals found before it."""


def _slurm(r: Recorded, stack: _Stack, found: Sequence[Principal]) -> Principal | None:
    """The controller and login VMs (instances), the CPU nodes (their template) and the TPU
    nodes the controller creates (a nodeset's TPU config object in the cluster's bucket)."""
    labels = r.inputs.get("labels") or {}
    if r.type == types.INSTANCE and "slurm_instance_role" in labels:
        nic = (r.inputs.get("networkInterfaces") or [{}])[0]
        vpc, cidr = _subnet_of(stack, nic.get("subnetwork"))
        name = f"Slurm {labels['slurm_cluster_name']} {labels['slurm_instance_role']}"
        return Principal(name, "vm", vpc, cidr, frozenset(r.inputs.get("tags") or ()))
    if r.type == types.INSTANCE_TEMPLATE and labels.get("slurm_instance_role") == "compute":
        nic = (r.inputs.get("networkInterfaces") or [{}])[0]
        vpc, cidr = _subnet_of(stack, nic.get("subnetwork"))
        name = f"Slurm {labels['slurm_cluster_name']} CPU nodes"
        return Principal(name, "vm", vpc, cidr, frozenset(r.inputs.get("tags") or ()))
    if r.type == types.BUCKET_OBJECT:
        path = str(r.inputs.get("name", ""))
        cluster = path.split("-files/", 1)[0]
        ours = any(p.name.startswith(f"Slurm {cluster} ") for p in found)
        if "/nodeset_tpu_configs/" in path and ours:
            # Upstream's tpu.py tags the TPU VMs it creates with the cluster's name only.
            vpc, cidr = _subnet_of(stack, "")
            return Principal(f"Slurm {cluster} TPU nodes", "vm", vpc, cidr, frozenset({cluster}))
    return None


def _gpu_cluster(r: Recorded, stack: _Stack, found: Sequence[Principal]) -> Principal | None:
    """A GPU cluster's VMs, by its group's template."""
    labels = r.inputs.get("labels") or {}
    if r.type != types.INSTANCE_TEMPLATE or "aiinfra-cluster" not in labels:
        return None
    nic = (r.inputs.get("networkInterfaces") or [{}])[0]
    vpc, cidr = _subnet_of(stack, nic.get("subnetwork"))
    name = f"GPU cluster {labels['aiinfra-cluster']} VMs"
    return Principal(name, "vm", vpc, cidr, frozenset(r.inputs.get("tags") or ()))


def _tpu_vms(r: Recorded, stack: _Stack, found: Sequence[Principal]) -> Principal | None:
    """A TPU VM entry's slices, by its queued resource."""
    if r.type != types.QUEUED_RESOURCE:
        return None
    vpc, cidr = _subnet_of(stack, r.inputs.get("subnetwork"))
    return Principal(
        f"TPU VMs {r.inputs.get('queuedResourceId')}",
        "vm",
        _last(r.inputs.get("network")) or vpc,
        cidr,
        frozenset(r.inputs.get("tags") or ()),
    )


VMS: dict[str, VmReader] = {"slurm": _slurm, "gpu-clusters": _gpu_cluster, "tpu-vms": _tpu_vms}
"""Registry name -> how the model finds that system's VMs in a graph. This module imports no
system (the policy pack runs it with the standard library alone), so a test holds these keys
to the registry's entries that declare `reachable`."""
VM_TYPES = (types.INSTANCE, types.INSTANCE_TEMPLATE, types.BUCKET_OBJECT, types.QUEUED_RESOURCE)
"""What VMs are read from, in this order: instances, the templates of groups and nodesets,
Slurm's nodeset configs, queued resources."""


def _vms(graph: Graph, stack: _Stack) -> list[Principal]:
    """The VMs of every system in `VMS`, one principal per group of them."""
    found: list[Principal] = []
    for type_ in VM_TYPES:
        for r in graph.of_type(type_):
            for system, read in VMS.items():
                vm = read(r, stack, found)
                if vm is not None and vm.name not in {p.name for p in found}:
                    found.append(replace(vm, system=system))
    return found


def _gke_rules(stack: _Stack) -> list[_Rule]:
    """The ingress rules GKE creates for its nodes, at priority 1000."""
    if not stack.master:
        return []
    own = _subnet_of(stack, "")[1]
    base = {"network": stack.vpc, "egress": False, "priority": 1000, "allow": True}
    tcp_udp_icmp = Ports.of("tcp", None) | Ports.of("udp", None) | Ports.of("icmp", None)
    return [
        _Rule(**base, ports=Ports.every(), sources=(stack.pods,), targets=stack.gke_tags),
        _Rule(**base, ports=tcp_udp_icmp, sources=(own,), targets=stack.gke_tags),
        _Rule(
            **base,
            ports=Ports.of("tcp", ["443", "10250"]),
            sources=(stack.master,),
            targets=stack.gke_tags,
        ),
    ]


def _decide(rules: Iterable[_Rule], default: Ports) -> Ports:
    """What the highest-priority matching rules allow, port by port (a deny wins a tie); the
    rest falls to `default`."""
    allowed, decided = Ports(), Ports()
    for rule in sorted(rules, key=lambda r: (r.priority, r.allow)):
        fresh = rule.ports - decided
        if rule.allow:
            allowed = allowed | fresh
        decided = decided | rule.ports
    return allowed | (default - decided)


def _host(source: Principal, gke: Principal | None) -> Principal:
    """The VM whose NIC a principal's traffic leaves by: a pod's node."""
    return gke if source.kind == "pods" and gke is not None else source


def _targets(rule: _Rule, vm: Principal) -> bool:
    return not rule.targets or bool(rule.targets & vm.tags)


def _firewall(
    rules: Sequence[_Rule], source: Principal, target: Principal, gke: Principal | None
) -> Ports:
    """Egress at the source's VM, then ingress at the target's, in the target's network."""
    sender = _host(source, gke)
    receiver = _host(target, gke)
    if source.kind != "range" and sender.network != receiver.network:
        return Ports()
    egress = Ports.every()
    if sender.kind == "vm":
        egress = _decide(
            (
                r
                for r in rules
                if r.egress
                and r.network == sender.network
                and _targets(r, sender)
                and any(_overlaps(d, target.cidr) for d in r.destinations)
            ),
            Ports.every(),
        )
    if target.kind == "share":
        return egress
    ingress = _decide(
        (
            r
            for r in rules
            if not r.egress
            and r.network == receiver.network
            and _targets(r, receiver)
            and (
                any(_overlaps(s, source.cidr) for s in r.sources)
                or (source.kind == "vm" and bool(r.source_tags & source.tags))
            )
        ),
        Ports(),
    )
    return egress & ingress


def _pod(p: Principal) -> Pod:
    labels = {TEAM_LABEL: p.namespace} if p.name.startswith("team ") and p.namespace else {}
    return Pod(p.namespace or "*", labels=dict(p.labels), namespace_labels=labels)


def _policy(graph: Graph, pod: Principal, peer: Principal, *, egress: bool) -> Ports:
    """What the pod's NetworkPolicies allow with `peer` in one direction."""
    other: Pod | str = _pod(peer) if peer.kind == "pods" else peer.cidr
    found = rule_ports(graph, _pod(pod), other, egress=egress)
    if found is None:
        return Ports.every()
    ports = Ports()
    for protocol, port in found:
        if protocol == "*":
            return Ports.every()
        ports = ports | Ports.of(protocol, None if port is None else [port])
    return ports


def _exports(share: Principal, source: Principal) -> bool:
    """Whether the share's NFS exports admit the source's addresses (a pod sends from the
    pods range: GKE does not masquerade traffic to private ranges)."""
    if share.exports is None:
        return True
    return any(_overlaps(e, source.cidr) for e in share.exports)


def matrix(graph: Graph) -> dict[tuple[str, str], Ports]:
    """(source, destination) -> the ports open from one to the other, for every pair with
    any; a principal to itself only where it is a group of several (VMs, pods)."""
    found_principals = principals(graph)
    gke = next((p for p in found_principals if p.name == "GKE nodes"), None)
    stack = _stack(graph)
    rules = [*_rules(graph), *_gke_rules(stack)]
    result: dict[tuple[str, str], Ports] = {}
    for source in found_principals:
        if source.kind == "share":
            continue
        for target in found_principals:
            if target.kind == "range":
                continue
            ports = _firewall(rules, source, target, gke)
            if target.kind == "share" and not _exports(target, source):
                ports = Ports()
            if source.kind == "pods":
                ports = ports & _policy(graph, source, target, egress=True)
            if target.kind == "pods":
                ports = ports & _policy(graph, target, source, egress=False)
            if ports:
                result[(source.name, target.name)] = ports
    return result


def lines(graph: Graph) -> list[str]:
    """The plan's section: each pair with the ports open between them."""
    shown = [f"  {a} -> {b}: {ports}" for (a, b), ports in matrix(graph).items()]
    return shown or ["  nothing reaches anything"]


def as_json(graph: Graph) -> list[dict[str, str]]:
    return [{"from": a, "to": b, "ports": str(p)} for (a, b), p in matrix(graph).items()]


def opened(before: Graph, after: Graph) -> list[str]:
    """The paths an edit opens or widens, and those it closes or narrows: what the diff says
    besides the resources."""
    old, new = matrix(before), matrix(after)
    found = []
    for pair, ports in new.items():
        added = ports - old.get(pair, Ports())
        if added:
            found.append(f"opens a path: {pair[0]} -> {pair[1]}: {added}")
    for pair, ports in old.items():
        removed = ports - new.get(pair, Ports())
        if removed:
            found.append(f"closes a path: {pair[0]} -> {pair[1]}: {removed}")
    return found
