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

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from graph import topology, types
from graph.netpol import Graph, Network, Pod, Recorded, network, rule_ports

IAP_RANGE = "35.235.240.0/20"
"""Identity-Aware Proxy's TCP forwarding range (components/network.py states it too; this
module reads graphs only and imports no component)."""
TEAM_LABEL = topology.TEAM_LABEL
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
    """Who sends or receives: VMs (by network, tags and account), pods (by namespace), a range,
    or a Filestore share."""

    name: str
    kind: str
    """`vm`, `pods`, `range` or `share`."""
    network: str = ""
    """The VPC's name; empty for a range, which reaches any network it is admitted to."""
    cidr: str = ""
    """Its addresses; empty or unreadable when unknown until deploy (never paired then)."""
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
    account: str = ""
    """The VMs' service account, which rules may name instead of tags."""
    teams: tuple[str, ...] = ()
    """DCN hosts: the teams whose queues list the group's flavor, whose pods take a NIC here."""

    @property
    def known(self) -> bool:
        """Whether its addresses are known (a range's, a share's); VMs and pods are always
        placed, by tag and by their network's ranges."""
        return self.kind in ("vm", "pods") or _net(self.cidr) is not None


class _Ranges:
    """A set of address ranges as sorted merged integer intervals, per IP version, so that
    whether a range overlaps any of them is a binary search, not a scan of every source."""

    def __init__(self, cidrs: Iterable[str]) -> None:
        spans: dict[int, list[tuple[int, int]]] = {4: [], 6: []}
        for cidr in cidrs:
            span = _span(cidr)
            if span is not None:
                spans[span[0]].append(span[1:])
        self._starts: dict[int, list[int]] = {}
        self._ends: dict[int, list[int]] = {}
        for version, found in spans.items():
            merged = _merge(found)
            self._starts[version] = [a for a, _ in merged]
            self._ends[version] = [b for _, b in merged]

    def overlaps(self, cidr: str) -> bool:
        span = _span(cidr)
        if span is None:
            return False
        version, low, high = span
        starts, ends = self._starts[version], self._ends[version]
        i = bisect_right(starts, high) - 1
        return i >= 0 and ends[i] >= low

    def __bool__(self) -> bool:
        return any(self._starts.values())


@cache
def _net(cidr: str) -> Network | None:
    return network(cidr) if cidr else None


@cache
def _span(cidr: str) -> tuple[int, int, int] | None:
    """(IP version, first address, last address) of a range, as integers."""
    net = _net(cidr)
    if net is None:
        return None
    return net.version, int(net.network_address), int(net.broadcast_address)


@dataclass(frozen=True)
class _Rule:
    network: str
    egress: bool
    priority: int
    allow: bool
    ports: Ports
    sources: _Ranges = field(default_factory=lambda: _Ranges(()))
    source_tags: frozenset[str] = frozenset()
    source_accounts: frozenset[str] = frozenset()
    targets: frozenset[str] = frozenset()
    target_accounts: frozenset[str] = frozenset()
    destinations: _Ranges = field(default_factory=lambda: _Ranges(()))


EVERYWHERE = ("0.0.0.0/0",)
"""What a rule without a source (ingress) or destination (egress) range admits: Compute API
`Firewall.sourceRanges`/`destinationRanges` ("if not specified, 0.0.0.0/0")."""


def _rules(graph: Graph) -> list[_Rule]:
    found = []
    for r in graph.of_type(FIREWALL):
        i = r.inputs
        if i.get("disabled") is True:
            continue  # Compute API `Firewall.disabled`: "the rule is not enforced"
        egress = i.get("direction") == "EGRESS"
        sources = tuple(i.get("sourceRanges") or ())
        by_peer = i.get("sourceTags") or i.get("sourceServiceAccounts")
        if not egress and not sources and not by_peer:
            sources = EVERYWHERE
        destinations = tuple(str(d) for d in i.get("destinationRanges") or ()) or EVERYWHERE
        common = {
            "network": topology.last(i.get("network")),
            "egress": egress,
            "priority": int(i.get("priority", 1000)),
            "sources": _Ranges(sources),
            "source_tags": frozenset(i.get("sourceTags") or ()),
            "source_accounts": frozenset(i.get("sourceServiceAccounts") or ()),
            "targets": frozenset(i.get("targetTags") or ()),
            "target_accounts": frozenset(i.get("targetServiceAccounts") or ()),
            "destinations": _Ranges(destinations),
        }
        for key, allow in (("allows", True), ("denies", False)):
            for entry in i.get(key) or []:
                ports = Ports.of(entry["protocol"], entry.get("ports"))
                found.append(_Rule(**common, allow=allow, ports=ports))
    return found


def _range_sources(graph: Graph) -> Iterator[str]:
    for r in graph.of_type(FIREWALL):
        yield from (str(s) for s in r.inputs.get("sourceRanges") or ())


def _gke(graph: Graph, stack: topology.Stack) -> list[Principal]:
    """GKE's nodes, the control plane, each team's pods (and a host-network team's pods on
    its own nodes), kube-dns and every other pod."""
    node_range = topology.subnet_of(stack, "")[1]
    unenforced = "" if stack.enforced else " (NetworkPolicies not enforced)"
    found = [
        Principal("GKE nodes", "vm", stack.vpc, node_range, stack.gke_tags),
        Principal("GKE control plane", "range", cidr=stack.master),
    ]
    hosted = topology.host_network_teams(graph)
    for namespace, team in topology.teams(graph).items():
        found.append(
            Principal(
                f"team {team} pods{unenforced}", "pods", stack.vpc, stack.pods, namespace=namespace
            )
        )
        if team in hosted:
            found.append(_host_network(stack, team, node_range))
    kube_dns = {"k8s-app": "kube-dns"}
    found.append(
        Principal(
            "kube-dns", "pods", stack.vpc, stack.pods, namespace="kube-system", labels=kube_dns
        )
    )
    found.append(Principal("other pods", "pods", stack.vpc, stack.pods, namespace="*"))
    return found


def _host_network(stack: topology.Stack, team: str, node_range: str) -> Principal:
    """A host-network team's pods as the VMs they run on: the node's network namespace, so no
    NetworkPolicy selects them (Kubernetes "Network Policies": hostNetwork traffic is treated
    as the node IP's) and the firewall alone judges them, with their own pools' tags and
    account (`ai-infra/dedicated=<team>`, the only nodes their pods may use)."""
    own = [p for p in stack.pools if p.labels.get(topology.DEDICATED_LABEL) == team]
    return Principal(
        f"team {team} host-network pods",
        "vm",
        stack.vpc,
        node_range,
        frozenset(t for p in own for t in p.tags),
        account=next((p.account for p in own), ""),
    )


def principals(graph: Graph) -> list[Principal]:
    """Every principal the graph holds, in a stable order; those whose addresses are unknown
    until deploy are among them, and `matrix` pairs none of them."""
    stack = topology.read(graph)
    own = topology.subnet_of(stack, "")
    found: list[Principal] = []
    if graph.of_type(types.CLUSTER):
        found += _gke(graph, stack)
    found.append(Principal("IAP", "range", cidr=IAP_RANGE))
    found += _vms(graph, stack)
    found += _dcn(graph, stack)
    for r in graph.of_type(types.FILESTORE):
        network = (r.inputs.get("networks") or [{}])[0]
        reserved = _share_range((r.outputs.get("networks") or [{}])[0])
        options = (r.inputs.get("fileShares") or {}).get("nfsExportOptions")
        exports = tuple(ip for o in options for ip in o.get("ipRanges", [])) if options else None
        found.append(
            Principal(
                f"Filestore {r.inputs.get('name')}",
                "share",
                topology.last(network.get("network")),
                reserved or "",  # unknown until GCP picks it (a preview): never paired
                exports=exports,
            )
        )
    known = {p.cidr for p in found}
    for cidr in _range_sources(graph):
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


def _dcn(graph: Graph, stack: topology.Stack) -> list[Principal]:
    """The hosts on each additional node network, one principal per group of them: the same
    tags in the same VPC (a DCN group's rule names its tag as source and target). Named with
    the tags the VPC's rules name, and the teams whose queues list a flavor landing there."""
    flavors = graph.of_type(types.RESOURCE_FLAVOR)
    listed = topology.queue_teams(graph)
    groups: dict[tuple[str, frozenset[str]], tuple[str, str, list[str]]] = {}
    for pool in stack.pools:
        taints = [t for t in pool.taints if t.get("effect") in ("NO_SCHEDULE", "NO_EXECUTE")]
        names = [
            str((f.inputs.get("metadata") or {}).get("name", ""))
            for f in flavors
            if topology.lands(f.inputs, pool.labels, taints)
        ]
        for vpc, subnet in pool.networks:
            groups.setdefault((vpc, pool.tags), (subnet, pool.account, []))[2].extend(names)
    for vpc, subnet, tags, account in topology.provisioner_networks(graph):
        # The provisioner serves the flavors labelled for it (components/gke/quota.py).
        names = [
            str((f.inputs.get("metadata") or {}).get("name", ""))
            for f in flavors
            if ((f.inputs.get("spec") or {}).get("nodeLabels") or {}).get(topology.CAPACITY_LABEL)
            == topology.PROVISIONED
        ]
        groups.setdefault((vpc, tags), (subnet, account, []))[2].extend(names)
    named: dict[str, set[str]] = {}
    for rule in _rules(graph):
        named.setdefault(rule.network, set()).update(rule.source_tags | rule.targets)
    found = []
    for (vpc, tags), (subnet, account, names) in groups.items():
        teams = tuple(dict.fromkeys(t for f in names for t in listed.get(f, ())))
        shown = ", ".join(sorted(tags & named.get(vpc, set()))) or "untagged hosts"
        who = ", ".join(teams) or "no team"
        found.append(
            Principal(
                f"DCN {shown} on {vpc} (pods of {who})",
                "vm",
                vpc,
                stack.subnets.get(subnet, (vpc, ""))[1],
                tags,
                account=account,
                teams=teams,
            )
        )
    return found


VmReader = Callable[[Recorded, "topology.Stack", Sequence[Principal]], Principal | None]
"""Whether a registered resource is VMs of one system, and which: the resource, the stack's
network as the graph shows it, and the principals found before it."""


def _slurm(r: Recorded, stack: topology.Stack, found: Sequence[Principal]) -> Principal | None:
    """The controller and login VMs (instances), the CPU nodes (their template) and the TPU
    nodes the controller creates (a nodeset's TPU config object in the cluster's bucket)."""
    labels = r.inputs.get("labels") or {}
    if r.type == types.INSTANCE and "slurm_instance_role" in labels:
        nic = (r.inputs.get("networkInterfaces") or [{}])[0]
        vpc, cidr = topology.subnet_of(stack, nic.get("subnetwork"))
        name = f"Slurm {labels['slurm_cluster_name']} {labels['slurm_instance_role']}"
        return Principal(name, "vm", vpc, cidr, frozenset(r.inputs.get("tags") or ()))
    if r.type == types.INSTANCE_TEMPLATE and labels.get("slurm_instance_role") == "compute":
        nic = (r.inputs.get("networkInterfaces") or [{}])[0]
        vpc, cidr = topology.subnet_of(stack, nic.get("subnetwork"))
        name = f"Slurm {labels['slurm_cluster_name']} CPU nodes"
        return Principal(name, "vm", vpc, cidr, frozenset(r.inputs.get("tags") or ()))
    if r.type == types.BUCKET_OBJECT:
        path = str(r.inputs.get("name", ""))
        cluster = path.split("-files/", 1)[0]
        ours = any(p.name.startswith(f"Slurm {cluster} ") for p in found)
        if "/nodeset_tpu_configs/" in path and ours:
            # Upstream's tpu.py tags the TPU VMs it creates with the cluster's name only.
            vpc, cidr = topology.subnet_of(stack, "")
            return Principal(f"Slurm {cluster} TPU nodes", "vm", vpc, cidr, frozenset({cluster}))
    return None


def _gpu_cluster(
    r: Recorded, stack: topology.Stack, found: Sequence[Principal]
) -> Principal | None:
    """A GPU cluster's VMs, by its group's template."""
    labels = r.inputs.get("labels") or {}
    if r.type != types.INSTANCE_TEMPLATE or "aiinfra-cluster" not in labels:
        return None
    nic = (r.inputs.get("networkInterfaces") or [{}])[0]
    vpc, cidr = topology.subnet_of(stack, nic.get("subnetwork"))
    name = f"GPU cluster {labels['aiinfra-cluster']} VMs"
    return Principal(name, "vm", vpc, cidr, frozenset(r.inputs.get("tags") or ()))


def _tpu_vms(r: Recorded, stack: topology.Stack, found: Sequence[Principal]) -> Principal | None:
    """A TPU VM entry's slices, by its queued resource."""
    if r.type != types.QUEUED_RESOURCE:
        return None
    vpc, cidr = topology.subnet_of(stack, r.inputs.get("subnetwork"))
    return Principal(
        f"TPU VMs {r.inputs.get('queuedResourceId')}",
        "vm",
        topology.last(r.inputs.get("network")) or vpc,
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


def _vms(graph: Graph, stack: topology.Stack) -> list[Principal]:
    """The VMs of every system in `VMS`, one principal per group of them."""
    found: list[Principal] = []
    for type_ in VM_TYPES:
        for r in graph.of_type(type_):
            for system, read in VMS.items():
                vm = read(r, stack, found)
                if vm is not None and vm.name not in {p.name for p in found}:
                    found.append(replace(vm, system=system))
    return found


def _gke_rules(stack: topology.Stack) -> list[_Rule]:
    """The ingress rules GKE creates for its nodes, at priority 1000."""
    if not stack.master:
        return []
    own = topology.subnet_of(stack, "")[1]
    base = {"network": stack.vpc, "egress": False, "priority": 1000, "allow": True}
    tcp_udp_icmp = Ports.of("tcp", None) | Ports.of("udp", None) | Ports.of("icmp", None)
    return [
        _Rule(**base, ports=Ports.every(), sources=_Ranges((stack.pods,)), targets=stack.gke_tags),
        _Rule(**base, ports=tcp_udp_icmp, sources=_Ranges((own,)), targets=stack.gke_tags),
        _Rule(
            **base,
            ports=Ports.of("tcp", ["443", "10250"]),
            sources=_Ranges((stack.master,)),
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


def _targets(rule: _Rule, vm: Principal) -> bool:
    """Target tags, else target accounts, else every VM of the network (Compute API)."""
    if rule.targets:
        return bool(rule.targets & vm.tags)
    if rule.target_accounts:
        return vm.account in rule.target_accounts
    return True


def _from(rule: _Rule, source: Principal) -> bool:
    if rule.sources.overlaps(source.cidr):
        return True
    return source.kind == "vm" and (
        bool(rule.source_tags & source.tags) or source.account in rule.source_accounts
    )


class _Indexed:
    """A graph's resources by type, read once (the model asks for the NetworkPolicies once
    per pair)."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._by_type: dict[str, Sequence[Recorded]] = {}

    def of_type(self, type_: str) -> Sequence[Recorded]:
        if type_ not in self._by_type:
            self._by_type[type_] = self._graph.of_type(type_)
        return self._by_type[type_]


class _Judge:
    """Judges one pair at a time. Each VM's ingress and egress rules are picked once, so a
    pair costs a search per rule of that VM, not a scan of every rule and range."""

    def __init__(self, graph: Graph, found: Sequence[Principal]) -> None:
        self.graph = _Indexed(graph)
        self.stack = topology.read(self.graph)
        self.gke = next((p for p in found if p.name == "GKE nodes"), None)
        self.dcn_hosts = [p for p in found if p.teams]
        self.teams = topology.teams(self.graph)
        rules = [*_rules(self.graph), *_gke_rules(self.stack)]
        self._by_network: dict[tuple[str, bool], list[_Rule]] = {}
        for rule in rules:
            self._by_network.setdefault((rule.network, rule.egress), []).append(rule)
        self._picked: dict[tuple[str, bool], list[_Rule]] = {}
        self._policies: dict[tuple[str, str, bool], Ports] = {}

    def _rules_of(self, vm: Principal, egress: bool) -> list[_Rule]:
        key = (vm.name, egress)
        if key not in self._picked:
            candidates = self._by_network.get((vm.network, egress), [])
            self._picked[key] = [r for r in candidates if _targets(r, vm)]
        return self._picked[key]

    def host(self, p: Principal) -> Principal:
        """The VM whose NIC a principal's traffic leaves by: a pod's node."""
        return self.gke if p.kind == "pods" and self.gke is not None else p

    def firewall(self, source: Principal, target: Principal) -> Ports:
        """Egress at the source's VM, then ingress at the target's, in the target's network."""
        sender, receiver = self.host(source), self.host(target)
        if source.kind != "range" and sender.network != receiver.network:
            return Ports()
        egress = Ports.every()
        if sender.kind == "vm":
            rules = self._rules_of(sender, egress=True)
            egress = _decide((r for r in rules if r.destinations.overlaps(target.cidr)), egress)
        if target.kind == "share":
            return egress
        rules = self._rules_of(receiver, egress=False)
        return egress & _decide((r for r in rules if _from(r, source)), Ports())

    def policy(self, pod: Principal, peer: Principal, *, egress: bool) -> Ports:
        """What the pod's NetworkPolicies allow with `peer` in one direction; every port when
        the cluster enforces none."""
        if not self.stack.enforced:
            return Ports.every()
        key = (pod.name, peer.name, egress)
        if key not in self._policies:
            self._policies[key] = _policy(self.graph, pod, peer, egress=egress)
        return self._policies[key]

    def dcn(self, source: Principal, target: Principal) -> Ports:
        """A team's pods on the extra networks: a pod of a flavor landing on DCN hosts takes
        their NIC whole (GKE multi-network, `NetDevice`), so it sends and receives there as
        those hosts, outside NetworkPolicy, judged by the firewall of that network."""
        ports = Ports()
        if source.kind == "pods" and target.teams:
            for host in self._hosts_of(source, target.network):
                ports = ports | self.firewall(host, target)
        if target.kind == "pods" and source.teams:
            for host in self._hosts_of(target, source.network):
                ports = ports | self.firewall(source, host)
        return ports

    def _hosts_of(self, pods: Principal, vpc: str) -> list[Principal]:
        team = self.teams.get(pods.namespace or "")
        return [d for d in self.dcn_hosts if d.network == vpc and team in d.teams]

    def judge(self, source: Principal, target: Principal) -> Ports:
        ports = self.firewall(source, target)
        if target.kind == "share" and not _exports(target, source):
            ports = Ports()
        if source.kind == "pods":
            ports = ports & self.policy(source, target, egress=True)
        if target.kind == "pods":
            ports = ports & self.policy(target, source, egress=False)
        return ports | self.dcn(source, target)


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
    return _Ranges(share.exports).overlaps(source.cidr)


def matrix(graph: Graph) -> dict[tuple[str, str], Ports]:
    """(source, destination) -> the ports open from one to the other, for every pair with
    any; a principal to itself only where it is a group of several (VMs, pods). A principal
    whose addresses are unknown is in no pair."""
    found = [p for p in principals(graph) if p.known]
    judge = _Judge(graph, found)
    targets = [p for p in found if p.kind != "range"]
    result: dict[tuple[str, str], Ports] = {}
    for source in found:
        if source.kind == "share":
            continue
        for target in targets:
            ports = judge.judge(source, target)
            if ports:
                result[(source.name, target.name)] = ports
    return result


def unknown(graph: Graph) -> list[str]:
    """The principals whose addresses are known only after deploy."""
    return [p.name for p in principals(graph) if not p.known]


def lines(graph: Graph) -> list[str]:
    """The plan's section: each pair with the ports open between them, then what it cannot
    judge yet."""
    shown = [f"  {a} -> {b}: {ports}" for (a, b), ports in matrix(graph).items()]
    shown = shown or ["  nothing reaches anything"]
    return shown + [
        f"  {name}: address unknown until deploy, not judged" for name in unknown(graph)
    ]


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
