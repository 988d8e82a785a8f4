"""GKE GPU pools on their machine's fast path: A3 High with GPUDirect-TCPX, A3 Mega with
GPUDirect-TCPXO, A3 Ultra and A4 with RDMA over RoCE. Each such pool's nodes take the GPU NICs
of the machine's layout (catalog/gpu.py) as additional node networks; each of those
networks gets GKE's `GKENetworkParamSet` and `Network`, which pods name to take the NIC; and
GKE's NCCL plugin installer for the transport runs on the pools' nodes.

The installers, and what a pod needs beside them, are GKE's own (GoogleCloudPlatform/
container-engine-accelerators at `INSTALLERS_COMMIT`: gpudirect-tcpx/, gpudirect-tcpxo/,
gpudirect-rdma/ and nri_device_injector/, which GKE's "Maximize GPU network bandwidth" guides
apply). The manifests are fetched at deploy time from that commit, so their content cannot
move; the images inside them are tags, as GKE publishes them: no digest of them is published
in any of Google's sources read here, and this machine cannot ask the registry.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
from pydantic import InstanceOf

from catalog.gpu import GpuNicLayout, Transport, nic_layout
from components.base import Component, WiringModel
from components.gke.pod_networks import pod_network

INSTALLERS_REPOSITORY = "GoogleCloudPlatform/container-engine-accelerators"
INSTALLERS_COMMIT = "992db81257553607f1477945f1b3219632991829"
"""The commit GKE's installer manifests are fetched at."""
GPU_DIRECT_MACHINES = ("a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g")
"""The machines whose GKE fast path is built here; A4X's needs NVIDIA's DRA driver and compute
domains beside its RDMA NICs, which this program does not install."""
NVIDIA_LIBRARIES = "/home/kubernetes/bin/nvidia"
"""Where GKE puts the NVIDIA driver's libraries on a node, and the installers NCCL."""


def manifest_url(path: str) -> str:
    return f"https://raw.githubusercontent.com/{INSTALLERS_REPOSITORY}/{INSTALLERS_COMMIT}/{path}"


@dataclass(frozen=True)
class Sidecar:
    """The receive-datapath manager a TCPX or TCPXO pod runs beside its workload, as a native
    sidecar (an init container that keeps running), so the Job completes when the workload
    does."""

    name: str
    image: str
    command: tuple[str, ...]
    capabilities: tuple[str, ...]
    mounts: tuple[tuple[str, str], ...]
    """(volume, mount path)."""


@dataclass(frozen=True)
class TransportStack:
    """What GKE runs for one transport on the nodes, and what a pod needs to use it."""

    transport: Transport
    manifests: tuple[str, ...]
    """Paths in the installers repository, applied in order."""
    pod_networks: slice
    """Which of the pool's GPU networks a pod takes: all for TCPX and TCPXO; the RDMA ones for
    RDMA, whose second gVNIC stays with the node (gpudirect-rdma/nccl-test.yaml)."""
    first_interface: int
    """The pod interface the first of them becomes (eth1, or eth2 for RDMA)."""
    volumes: tuple[tuple[str, str], ...]
    """(name, host path) volumes of the pod."""
    mounts: tuple[tuple[str, str], ...]
    """(volume, mount path) of the workload container."""
    env: tuple[tuple[str, str], ...]
    sidecar: Sidecar | None = None
    device_annotation: tuple[str, ...] = ()
    """Device files the sidecar needs (`devices.gke.io/container.<sidecar>`)."""
    setup: str = ""
    """What the workload's command runs first, as GKE's examples do."""


_GPUS = (*(f"/dev/nvidia{i}" for i in range(8)), "/dev/nvidiactl", "/dev/nvidia-uvm")
TRANSPORTS: dict[Transport, TransportStack] = {
    "tcpx": TransportStack(
        transport="tcpx",
        manifests=("gpudirect-tcpx/nccl-tcpx-installer.yaml",),
        pod_networks=slice(None),
        first_interface=1,
        volumes=(
            ("libraries", f"{NVIDIA_LIBRARIES}/lib64"),
            ("tcpx-socket", "/run/tcpx"),
            ("sys", "/sys"),
            ("proc-sys", "/proc/sys"),
        ),
        mounts=(("libraries", "/usr/local/nvidia/lib64"), ("tcpx-socket", "/tmp")),
        env=(("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"),),
        sidecar=Sidecar(
            name="tcpx-daemon",
            image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12",
            command=(
                "/tcpgpudmarxd/build/app/tcpgpudmarxd",
                "--gpu_nic_preset",
                "a3vm",
                "--gpu_shmem_type",
                "fd",
                "--uds_path",
                "/run/tcpx",
            ),
            capabilities=("NET_ADMIN",),
            mounts=(
                ("libraries", "/usr/local/nvidia/lib64"),
                ("tcpx-socket", "/run/tcpx"),
                ("sys", "/hostsysfs"),
                ("proc-sys", "/hostprocsysfs"),
            ),
        ),
        device_annotation=_GPUS,
    ),
    "tcpxo": TransportStack(
        transport="tcpxo",
        manifests=(
            "nri_device_injector/nri-device-injector.yaml",
            "gpudirect-tcpxo/nccl-tcpxo-installer.yaml",
        ),
        pod_networks=slice(None),
        first_interface=1,
        volumes=(
            ("libraries", f"{NVIDIA_LIBRARIES}/lib64"),
            ("sys", "/sys"),
            ("proc-sys", "/proc/sys"),
            ("aperture-devices", "/dev/aperture_devices"),
        ),
        mounts=(
            ("libraries", "/usr/local/nvidia/lib64"),
            ("aperture-devices", "/dev/aperture_devices"),
        ),
        env=(
            ("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"),
            ("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices"),
        ),
        sidecar=Sidecar(
            name="tcpxo-daemon",
            image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
            command=(
                "/bin/sh",
                "-c",
                "chmod 755 /fts/entrypoint_rxdm_container.sh && "
                "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= "
                "--alsologtostderr",
            ),
            capabilities=("NET_ADMIN", "NET_BIND_SERVICE"),
            mounts=(
                ("libraries", "/usr/local/nvidia/lib64"),
                ("sys", "/hostsysfs"),
                ("proc-sys", "/hostprocsysfs"),
            ),
        ),
        device_annotation=(*_GPUS, "/dev/dmabuf_import_helper"),
        # The installer writes the profile into /var/lib/tcpxo/lib64 and copies that directory
        # into the node's NVIDIA libraries, which the pod mounts at /usr/local/nvidia/lib64.
        setup="source /usr/local/nvidia/lib64/nccl-env-profile.sh",
    ),
    "rdma": TransportStack(
        transport="rdma",
        manifests=("gpudirect-rdma/nccl-rdma-installer.yaml",),
        pod_networks=slice(1, None),
        first_interface=2,
        volumes=(("library-dir-host", NVIDIA_LIBRARIES), ("gib", "/home/kubernetes/bin/gib")),
        mounts=(("library-dir-host", "/usr/local/nvidia"), ("gib", "/usr/local/gib")),
        env=(("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"),),
        setup="source /usr/local/gib/scripts/set_nccl_env.sh",
    ),
}


def fast_path(machine_type: str) -> GpuNicLayout | None:
    """The GPU NIC layout GKE pools of this machine are built with, or None."""
    layout = nic_layout(machine_type)
    return layout if layout is not None and machine_type in GPU_DIRECT_MACHINES else None


def network_names(pool: str, layout: GpuNicLayout) -> list[str]:
    """The GKE `Network` names of a pool's GPU NICs, in NIC order: `<pool>-gpu<k>` for the
    gVNIC ones, `<pool>-rdma<j>` for RDMA's."""
    own = layout.gpu_nics if not layout.rdma else layout.host_nics - 1
    names = [f"{pool}-gpu{k}" for k in range(own)]
    if layout.rdma:
        names += [f"{pool}-rdma{j}" for j in range(layout.gpu_nics)]
    return names


@dataclass(frozen=True)
class GpuNetwork:
    """One GPU NIC's network as GKE's pod network objects name it."""

    name: str
    vpc: pulumi.Output[str]
    subnet: pulumi.Output[str]
    device_mode: str


class GpuDirectArgs(WiringModel):
    transports: list[str]
    networks: list[InstanceOf[GpuNetwork]]


class GpuDirect(Component):
    """GKE's pod network objects for the GPU pools' GPU NICs, and the NCCL plugin installer of
    each transport the pools use."""

    def __init__(self, name: str, args: GpuDirectArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:GpuDirect", name, opts)
        for network in args.networks:
            pod_network(
                self,
                f"{name}-{network.name}",
                network.name,
                vpc=network.vpc,
                subnet=network.subnet,
                device_mode=network.device_mode,
            )
        for transport in args.transports:
            for path in TRANSPORTS[transport].manifests:  # type: ignore[index]
                k8s.yaml.v2.ConfigFile(
                    f"{name}-{path.rsplit('/', 1)[1].removesuffix('.yaml')}",
                    file=manifest_url(path),
                    opts=self.child_opts(),
                )
        self.register_outputs(
            {"transports": args.transports, "networks": [n.name for n in args.networks]}
        )
