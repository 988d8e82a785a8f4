"""Where a team's job runs, resolved from the stack's config and the graph its program registers:
the team's namespace, Kubernetes service account and LocalQueue, the flavor its pods are
admitted on (node labels and tolerations as the ResourceFlavor carries them), the slice shape
or GPU node, how many of them exist (as graph.capacity counts them for the plan), and the node
networks their NICs are in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalog.gpu import GPU_RESOURCE, Transport
from catalog.tpu import TPU_RESOURCE, TpuShape
from components.gke import (
    PROVISIONER_NAMESPACE,
    PROVISIONER_SOURCE,
    TRANSPORTS,
    NodeShape,
    TeamConfig,
    gpu_node,
    provisioned_queue,
    shape_flavor_name,
    tpu_flavor_name,
    tpu_node,
)
from graph import types
from graph.capacity import Machines
from graph.stack import Stack
from workload.request import FlagError

SLICE_LABEL = "ai-infra/slice"
"""The node label every pool of a `tpuSlices` entry carries (tpu_slices.py)."""
NETWORKS_ENV = "GCP_NODE_ADDITIONAL_NETWORKS"
"""The provisioner's `manager` ConfigMap key listing its pools' extra NICs as vpc:subnet."""


@dataclass(frozen=True)
class Target:
    """A team and the capacity one of its jobs runs on."""

    team: TeamConfig
    service_account: str
    """The team's Kubernetes service account, bound to its Google one."""
    local_queue: str
    cluster_queue: str
    flavor: str
    node_labels: dict[str, str]
    """What the flavor selects, as its ResourceFlavor in the graph says."""
    tolerations: list[dict[str, Any]]
    resource: str
    """`google.com/tpu` or `nvidia.com/gpu`."""
    per_node: int
    """Chips or GPUs of one node, all of which one pod takes."""
    nodes_per_slice: int
    """Pods of one replica: the hosts of a TPU slice; 1 for a GPU node."""
    available: int
    """TPU slices of the entry (or that the provisioner may create), or the GPU pool's nodes."""
    source: str
    """The config key the capacity comes from (`tpuSlices[1] v6e-tune`)."""
    shape: TpuShape | None = None
    pin: dict[str, str] = field(default_factory=dict)
    """Node labels that keep the pods on this entry's pools among others of the flavor."""
    networks: list[str] = field(default_factory=list)
    """GKE `Network` objects of the nodes' extra NICs, in NIC order (eth1, eth2, ...)."""
    provisioned: bool = False
    provisioner: bool = False
    """Whether the stack runs the TPU provisioner."""
    machine_type: str = ""
    node: NodeShape | None = None
    """What one node offers pods; None where the catalog cannot size the machine."""
    first_interface: int = 1
    """The pod interface the first of `networks` becomes (RDMA's start at eth2)."""
    transport: Transport | None = None
    """A GPU pool's GPUDirect or RDMA transport, when its nodes have their GPU NICs."""
    local_ssd: bool = False
    """Whether the nodes' ephemeral storage (emptyDir) is on local SSD, as their pool says."""
    boot_disk_gib: int | None = None
    """The nodes' boot disk, which holds emptyDir otherwise; None where no pool says."""

    @property
    def namespace(self) -> str:
        return self.team.name

    @property
    def tpu(self) -> bool:
        return self.resource == TPU_RESOURCE

    @property
    def multi_host(self) -> bool:
        return self.shape is not None and self.shape.multi_host


def team_of(stack: Stack, name: str) -> TeamConfig:
    teams = {t.name: t for t in stack.config.teams}
    if name not in teams:
        known = ", ".join(teams) or "none"
        raise FlagError("--team", f"stack '{stack.name}' has no team '{name}' (teams: {known})")
    return teams[name]


def resolve(stack: Stack, team_name: str, capacity: str) -> Target:
    """The target of `--team` and `--slice` (a `tpuSlices` name, `tpuProvisioner.<type>`, or a
    `gpuPools` name)."""
    team = team_of(stack, team_name)
    gke = stack.config.gke
    common: dict[str, Any] = {"team": team, "provisioner": gke.tpu_provisioner.enabled}
    slices = {s.name: (i, s) for i, s in enumerate(gke.tpu_slices)}
    pools = {p.name: (i, p) for i, p in enumerate(gke.gpu_pools)}
    if capacity.startswith(PROVISIONER_SOURCE) and capacity in gke.provisioned():
        shape, _ = gke.provisioned()[capacity]
        accelerator = capacity.removeprefix(PROVISIONER_SOURCE)
        key = f"tpuProvisioner.quota.{accelerator}"
        spec = {
            "flavor": shape_flavor_name(shape, provisioned=True),
            "queue": provisioned_queue(team.name),
            "resource": TPU_RESOURCE,
            "per_node": shape.chips_per_host,
            "nodes_per_slice": shape.hosts,
            "available": sum(m.slices.count for m in _machines(stack, key) if m.slices),
            "source": key,
            "shape": shape,
            "networks": _provisioner_networks(stack),
            "provisioned": True,
            "machine_type": shape.machine_type,
            "node": tpu_node(shape),
        }
    elif capacity in slices:
        i, entry = slices[capacity]
        shape = entry.shape
        spec = {
            "flavor": tpu_flavor_name(entry),
            "queue": team.name,
            "resource": TPU_RESOURCE,
            "per_node": shape.chips_per_host,
            "nodes_per_slice": shape.hosts,
            # A node pool per slice.
            "available": len(_machines(stack, f"tpuSlices[{i}]")),
            "source": f"tpuSlices[{i}] {entry.name}",
            "shape": shape,
            "pin": {SLICE_LABEL: entry.name},
            "networks": _pool_networks(stack, _pools_of_slice(stack, entry.name)),
            **_disks(_pools_of_slice(stack, entry.name)),
            "machine_type": shape.machine_type,
            "node": tpu_node(shape),
        }
    elif capacity in pools:
        i, pool = pools[capacity]
        layout = pool.fast_path
        stack_of = TRANSPORTS[layout.transport] if layout else None
        networks = _pool_networks(stack, _pool_named(stack, pool.name))
        spec = {
            "flavor": f"gpu-{pool.name}",
            "queue": team.name,
            "resource": GPU_RESOURCE,
            "per_node": pool.accelerator_count,
            "nodes_per_slice": 1,
            "available": sum(m.full for m in _machines(stack, f"gpuPools[{i}]")),
            "source": f"gpuPools[{i}] {pool.name}",
            "networks": networks[stack_of.pod_networks] if stack_of else networks,
            "first_interface": stack_of.first_interface if stack_of else 1,
            "transport": layout.transport if layout else None,
            **_disks(_pool_named(stack, pool.name)),
            "machine_type": pool.machine_type,
            "node": gpu_node(pool.machine_type, pool.accelerator_count),
        }
    else:
        known = [*slices, *pools, *gke.provisioned()]
        raise FlagError(
            "--slice",
            f"stack '{stack.name}' has no TPU slice, provisioner shape or GPU pool "
            f"'{capacity}' (known: {', '.join(known) or 'none'})",
        )
    return _from_graph(stack, common, spec)


def _from_graph(stack: Stack, common: dict[str, Any], spec: dict[str, Any]) -> Target:
    """The team's objects as the program registers them: its service account, its LocalQueue
    and the ClusterQueue behind it, and the flavor's labels and tolerations."""
    team: TeamConfig = common["team"]
    queue = spec.pop("queue")
    local_queue = stack.object("LocalQueue", queue, team.name)
    flavor = stack.object("ResourceFlavor", spec["flavor"])
    accounts = [
        a["metadata"]["name"]
        for a in stack.objects("ServiceAccount")
        if a["metadata"].get("namespace") == team.name
    ]
    if local_queue is None or flavor is None or not accounts:
        raise FlagError(
            "--slice",
            f"team '{team.name}' has no queue '{queue}' with flavor '{spec['flavor']}' in the "
            "stack's graph",
        )
    flavor_spec = flavor.get("spec", {})
    return Target(
        **common,
        **spec,
        service_account=accounts[0],
        local_queue=queue,
        cluster_queue=local_queue["spec"]["clusterQueue"],
        # The graph's maps come in no particular order; a manifest reads the same every time.
        node_labels=dict(sorted(flavor_spec.get("nodeLabels", {}).items())),
        tolerations=[_toleration(t) for t in flavor_spec.get("tolerations", [])],
    )


def _machines(stack: Stack, key: str) -> list[Machines]:
    """The entry's machines as the plan reads them from the graph; an entry the graph builds
    nothing for cannot run a job."""
    found = stack.machines(key)
    if not found:
        raise FlagError("--slice", f"{key} brings up no nodes in the stack's graph")
    return found


def _toleration(toleration: dict[str, Any]) -> dict[str, Any]:
    order = ("key", "operator", "value", "effect", "tolerationSeconds")
    return {k: toleration[k] for k in order if k in toleration}


def _pools_of_slice(stack: Stack, name: str) -> list[dict[str, Any]]:
    return [
        r.inputs
        for r in stack.graph.of_type(types.NODE_POOL)
        if r.inputs.get("nodeConfig", {}).get("labels", {}).get(SLICE_LABEL) == name
    ]


def _pool_named(stack: Stack, name: str) -> list[dict[str, Any]]:
    return [r.inputs for r in stack.graph.of_type(types.NODE_POOL) if r.inputs.get("name") == name]


def _disks(pools: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the pools' nodes keep emptyDir: local SSD when the pool gives it to ephemeral
    storage (`ephemeralStorageLocalSsdConfig`), else the boot disk of `diskSizeGb`."""
    if not pools:
        return {}
    node = pools[0].get("nodeConfig", {})
    ssds = node.get("ephemeralStorageLocalSsdConfig", {}).get("localSsdCount", 0)
    size = node.get("diskSizeGb")
    return {"local_ssd": bool(ssds), "boot_disk_gib": None if size is None else int(size)}


def _network_names(stack: Stack) -> dict[tuple[str, str], str]:
    """(VPC, subnet) -> the GKE `Network` a pod names to take a NIC in it, from the
    `GKENetworkParamSet`s the program registers (RDMA's NICs share a VPC, not a subnet)."""
    params = {
        p["metadata"]["name"]: (p["spec"]["vpc"], p["spec"]["vpcSubnet"])
        for p in stack.objects("GKENetworkParamSet")
    }
    return {
        params[n["spec"]["parametersRef"]["name"]]: n["metadata"]["name"]
        for n in stack.objects("Network", "networking.gke.io/v1")
        if n["spec"]["parametersRef"]["name"] in params
    }


def _pool_networks(stack: Stack, pools: list[dict[str, Any]]) -> list[str]:
    """The `Network`s of the pools' extra NICs, in NIC order; every pool of an entry has the
    same."""
    if not pools:
        return []
    names = _network_names(stack)
    configs = pools[0].get("networkConfig", {}).get("additionalNodeNetworkConfigs", [])
    pairs = [(c["network"], c["subnetwork"]) for c in configs]
    return [names[pair] for pair in pairs if pair in names]


def _provisioner_networks(stack: Stack) -> list[str]:
    manager = stack.object("ConfigMap", "manager", PROVISIONER_NAMESPACE)
    listed = (manager or {}).get("data", {}).get(NETWORKS_ENV, "")
    names = _network_names(stack)
    pairs = [tuple(pair.split(":", 1)) for pair in listed.split(",") if ":" in pair]
    return [names[(vpc, subnet)] for vpc, subnet in pairs if (vpc, subnet) in names]
