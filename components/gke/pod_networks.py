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
mode, DPDK-VFIO, is for user-space drivers (GKENetworkParamSet `deviceMode`)."""


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
            network = handle.network
            params = k8s.apiextensions.CustomResource(
                f"{name}-{network.name}-params",
                api_version=NETWORKING_API,
                kind="GKENetworkParamSet",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=network.name),
                spec={
                    "vpc": handle.vpc_name,
                    "vpcSubnet": handle.subnet_name,
                    "deviceMode": DEVICE_MODE,
                },
                opts=self.child_opts(),
            )
            k8s.apiextensions.CustomResource(
                f"{name}-{network.name}",
                api_version=NETWORKING_API,
                kind="Network",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=network.name),
                spec={
                    "type": "Device",
                    "parametersRef": {
                        "group": NETWORKING_API.split("/")[0],
                        "kind": "GKENetworkParamSet",
                        "name": network.name,
                    },
                },
                opts=self.child_opts(depends_on=[params]),
            )
        self.register_outputs({"networks": [h.network.name for h in args.networks]})
