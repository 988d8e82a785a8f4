"""What a recorded graph says about the stack's networks, nodes and queues, as the
reachability model (`graph/reachability.py`) reads it: subnets, the cluster's NetworkPolicy
enforcement, node pools (labels, taints, tags, account, extra networks), team namespaces, the
queues that list each flavor and the TPU provisioner's networks. Standard library only (the
policy pack runs it), besides the TPU catalog's host table."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catalog import tpu as tpu_catalog
from graph import types
from graph.netpol import Graph, Recorded

TEAM_LABEL = "ai-infra/team"
HOST_NETWORK_LABEL = "ai-infra/tpu-host-network"
"""On a team's namespace: its Kueue TPU pods may use the node's network (components/gke)."""
DEDICATED_LABEL = "ai-infra/dedicated"
"""On a team's own nodes (label and taint), the only ones its host-network pods land on."""
CAPACITY_LABEL, PROVISIONED = "ai-infra/capacity", "provisioned"
"""The TPU provisioner's flavors carry this node label (components/gke/quota.py)."""


def last(link: Any) -> str:
    return str(link or "").rstrip("/").rsplit("/", 1)[-1]


@dataclass
class Pool:
    """A GKE node pool as the firewall and Kueue see its nodes."""

    name: str
    labels: Mapping[str, str]
    """Node labels: the pool's own and those GKE sets on TPU nodes (accelerator, topology)."""
    tags: frozenset[str]
    account: str
    networks: tuple[tuple[str, str], ...]
    """(VPC, subnet) of each additional node network."""
    taints: tuple[Mapping[str, Any], ...] = ()


@dataclass
class Stack:
    """What the graph says about the stack's network and cluster."""

    subnets: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Subnet name -> (VPC name, primary range)."""
    pods: str = ""
    vpc: str = ""
    master: str = ""
    gke_tags: frozenset[str] = frozenset()
    enforced: bool = False
    """Whether the cluster enforces NetworkPolicies."""
    pools: list[Pool] = field(default_factory=list)


def enforces(cluster: Mapping[str, Any]) -> bool:
    """GKE enforces NetworkPolicies with Dataplane V2 (`datapathProvider: ADVANCED_DATAPATH`,
    "GKE Dataplane V2": "built-in network policy enforcement") or with the Calico add-on
    (`networkPolicy.enabled`); without either, the API stores them and nothing applies them."""
    policy = cluster.get("networkPolicy") or {}
    return cluster.get("datapathProvider") == "ADVANCED_DATAPATH" or policy.get("enabled") is True


def pool(r: Recorded) -> Pool:
    node = r.inputs.get("nodeConfig") or {}
    labels = dict(node.get("labels") or {})
    host = tpu_catalog.TPU_HOSTS.get(str(node.get("machineType", "")))
    topology = (r.inputs.get("placementPolicy") or {}).get("tpuTopology")
    if host is not None:
        labels[tpu_catalog.ACCELERATOR_LABEL] = host.family.gke_accelerator
    if host is not None and topology:
        labels[tpu_catalog.TOPOLOGY_LABEL] = str(topology)
    extra = (r.inputs.get("networkConfig") or {}).get("additionalNodeNetworkConfigs") or []
    return Pool(
        name=str(r.inputs.get("name", "")),
        labels=labels,
        tags=frozenset(node.get("tags") or ()),
        account=str(node.get("serviceAccount") or ""),
        networks=tuple((last(n.get("network")), last(n.get("subnetwork"))) for n in extra),
        taints=tuple(node.get("taints") or ()),
    )


def read(graph: Graph) -> Stack:
    stack = Stack()
    for r in graph.of_type(types.SUBNETWORK):
        vpc = last(r.inputs.get("network"))
        stack.subnets[str(r.inputs.get("name"))] = (vpc, str(r.inputs.get("ipCidrRange")))
        for secondary in r.inputs.get("secondaryIpRanges") or []:
            if secondary.get("rangeName") == "pods":
                stack.pods, stack.vpc = secondary["ipCidrRange"], vpc
    for r in graph.of_type(types.CLUSTER):
        stack.master = (r.inputs.get("privateClusterConfig") or {}).get("masterIpv4CidrBlock", "")
        stack.vpc = last(r.inputs.get("network")) or stack.vpc
        stack.enforced = enforces(r.inputs)
    stack.pools = [pool(r) for r in graph.of_type(types.NODE_POOL)]
    stack.gke_tags = frozenset(t for p in stack.pools for t in p.tags)
    return stack


def subnet_of(stack: Stack, link: Any) -> tuple[str, str]:
    """(VPC, range) of the subnet a self link or name points at; the stack's by default."""
    name = last(link)
    for subnet, found in stack.subnets.items():
        if subnet == name or name.endswith(subnet):
            return found
    return stack.vpc, next((cidr for vpc, cidr in stack.subnets.values() if vpc == stack.vpc), "")


def teams(graph: Graph) -> dict[str, str]:
    """Team namespace -> team, from the namespaces' team label."""
    found = {}
    for r in graph.of_type(types.NAMESPACE):
        metadata = r.inputs.get("metadata") or {}
        team = (metadata.get("labels") or {}).get(TEAM_LABEL)
        if team:
            found[str(metadata.get("name") or team)] = team
    return found


def host_network_teams(graph: Graph) -> list[str]:
    found = []
    for r in graph.of_type(types.NAMESPACE):
        labels = (r.inputs.get("metadata") or {}).get("labels") or {}
        if TEAM_LABEL in labels and labels.get(HOST_NETWORK_LABEL) == "true":
            found.append(labels[TEAM_LABEL])
    return found


def queue_teams(graph: Graph) -> dict[str, list[str]]:
    """Flavor -> the teams whose queues list it (a LocalQueue in the team's namespace pointing
    at a ClusterQueue whose resource groups name the flavor)."""
    listed: dict[str, set[str]] = {}
    for r in graph.of_type(types.CLUSTER_QUEUE):
        name = str((r.inputs.get("metadata") or {}).get("name", ""))
        for group in (r.inputs.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                listed.setdefault(name, set()).add(str(flavor.get("name")))
    by_namespace = teams(graph)
    found: dict[str, list[str]] = {}
    for r in graph.of_type(types.LOCAL_QUEUE):
        team = by_namespace.get(str((r.inputs.get("metadata") or {}).get("namespace", "")))
        queue = str((r.inputs.get("spec") or {}).get("clusterQueue", ""))
        for flavor in listed.get(queue, ()) if team else ():
            if team and team not in found.setdefault(flavor, []):
                found[flavor].append(team)
    return found


def tolerated(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    effect = "".join(w.capitalize() for w in str(taint.get("effect", "")).split("_"))
    return any(
        t.get("key") == taint.get("key")
        and (t.get("operator") == "Exists" or t.get("value") == taint.get("value"))
        and t.get("effect") in (None, "", effect)
        for t in tolerations
    )


def lands(flavor: Mapping[str, Any], labels: Mapping[str, str], taints: Sequence[Any]) -> bool:
    """Whether a flavor's pods land on nodes with these labels and taints (Kueue adds the
    flavor's nodeLabels as a node selector and its tolerations to the pod)."""
    spec = flavor.get("spec") or {}
    selected = all(labels.get(k) == v for k, v in (spec.get("nodeLabels") or {}).items())
    return selected and all(tolerated(t, spec.get("tolerations") or []) for t in taints)


def provisioner_networks(graph: Graph) -> Iterator[tuple[str, str, frozenset[str], str]]:
    """(VPC, subnet, tags, account) of each extra network of the provisioner's pools, from the
    ConfigMap its controller reads (`GCP_NODE_ADDITIONAL_NETWORKS` "vpc:subnet,...")."""
    for r in graph.of_type(types.CONFIG_MAP):
        data = r.inputs.get("data") or {}
        tags = frozenset(t for t in str(data.get("GCP_NODE_TAGS", "")).split(",") if t)
        for item in str(data.get("GCP_NODE_ADDITIONAL_NETWORKS") or "").split(","):
            vpc, _, subnet = item.partition(":")
            if vpc:
                account = str(data.get("GCP_NODE_SERVICE_ACCOUNT", ""))
                yield last(vpc), last(subnet), tags, account
