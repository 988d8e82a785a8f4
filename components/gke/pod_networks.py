"""GKE's pod network objects for the additional node networks: a `GKENetworkParamSet` naming
each network's VPC and subnet, and a `Network` of type `Device` that pods name to take the
node's NIC in it. Pods on the host network (`hostNetwork: true`, as the multislice JobSets
run) use the NICs directly and need neither.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from pydantic import InstanceOf

from components.base import Component, WiringModel
from components.network import NodeNetworkHandle

NETWORKING_API = "networking.gke.io/v1"
"""GKE's multi-network API group and version (kubernetes/cloud-provider-gcp crd/config/crds:
networks.networking.gke.io, gkenetworkparamsets.networking.gke.io; both cluster-scoped)."""
DEVICE_MODE = "NetDevice"
"""The whole NIC moves into one pod as a kernel network device, what a gVNIC takes; the other
modes are DPDK-VFIO, for user-space drivers, and RDMA, for the MRDMA NICs of A3 Ultra and A4
(GKENetworkParamSet `deviceMode`; GKE "Run RDMA workloads on A3 Ultra and A4")."""
RDMA_DEVICE_MODE = "RDMA"


class PodNetworksArgs(WiringModel):
    networks: list[InstanceOf[NodeNetworkHandle]]


class PodNetworks(Component):
    """A `GKENetworkParamSet` and a `Network` per additional node network, each named after
    the network; the `Network` name is what a pod's `networking.gke.io/interfaces` annotation
    lists."""

    def __init__(
        self, name: str, args: PodNetworksArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:gke:PodNetworks", name, opts)
        for handle in args.networks:
            pod_network(
                self,
                f"{name}-{handle.network.name}",
                handle.network.name,
                vpc=handle.vpc_name,
                subnet=handle.subnet_name,
            )
        self.register_outputs({"networks": [h.network.name for h in args.networks]})


def pod_network(
    parent: Component,
    resource_name: str,
    name: str,
    *,
    vpc: pulumi.Input[str],
    subnet: pulumi.Input[str],
    device_mode: str = DEVICE_MODE,
) -> k8s.apiextensions.CustomResource:
    """A `GKENetworkParamSet` for a VPC's subnet and the `Device` `Network` pods name to take
    a node's NIC in it, both called `name`."""
    params = k8s.apiextensions.CustomResource(
        f"{resource_name}-params",
        api_version=NETWORKING_API,
        kind="GKENetworkParamSet",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name),
        spec={"vpc": vpc, "vpcSubnet": subnet, "deviceMode": device_mode},
        opts=parent.child_opts(),
    )
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=NETWORKING_API,
        kind="Network",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name),
        spec={
            "type": "Device",
            "parametersRef": {
                "group": NETWORKING_API.split("/")[0],
                "kind": "GKENetworkParamSet",
                "name": name,
            },
        },
        opts=parent.child_opts(depends_on=[params]),
    )
