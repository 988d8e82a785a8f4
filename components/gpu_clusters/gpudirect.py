"""What NCCL needs to reach other VMs' GPUs at full speed, pinned in one place: the
GPUDirect-TCPX (A3 High) and GPUDirect-TCPXO (A3 Mega) receive-datapath-manager (RxDM) and
NCCL plugin containers Google publishes, and the NCCL gIB plugin package for RDMA (A3 Ultra,
A4). Google publishes no digest for any of these images (none in Cluster Toolkit, Slurm-GCP,
the provisioning tool or the GKE installers), so they are pinned by tag.

Non-goal: preparing the host. TCPX needs a kernel with Google's TCPX patches (Canonical's
private `linux-gcp-tcpx` PPA, or COS) and TCPXO the `dmabuf-import-helper` module and the
aperture-device udev rule; Google's tools bake those into an image (Cluster Toolkit v1.95.0
a3high/a3mega Slurm blueprints), which a startup script cannot do safely at boot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from catalog.gpu import Transport

REGISTRY = "us-docker.pkg.dev/gce-ai-infra"


@dataclass(frozen=True)
class GpuDirectStack:
    """The RxDM daemon and the NCCL plugin of one transport, as Slurm-GCP 6.13.0's prolog
    scripts run them on Ubuntu (tools/prologs-epilogs/receive-data-path-manager and
    receive-data-path-manager-mega)."""

    transport: Transport
    plugin_image: str
    plugin_args: tuple[str, ...]
    """The installer's arguments; it writes NCCL and the plugin under `/var/lib/<transport>`."""
    rxdm_image: str
    rxdm_docker_args: tuple[str, ...]
    rxdm_args: tuple[str, ...]
    host_file: str
    """What the prepared image must provide; the startup script refuses to start without it."""
    modules: tuple[str, ...] = ()
    """Kernel modules loaded before RxDM starts."""
    env: dict[str, str] = field(default_factory=dict)
    """NCCL's environment (Cluster Toolkit v1.95.0 a3-highgpu-8g / a3-megagpu-8g
    nccl-tests/run-nccl-tests.sh, with Ubuntu's interface names)."""
    profile: str | None = None
    """A shell profile the installer writes, sourced before `env`."""
    profile_lib_dir: str | None = None
    """`NCCL_LIB_DIR` while `profile` is sourced: the TCPXO installer's profile finds its
    libraries through it, and every Cluster Toolkit script sets it first (v1.95.0
    a3-megagpu-8g nccl-tests/run-nccl-tests.sh:34, `NCCL_LIB_DIR=/var/lib/tcpxo/lib64
    source .../nccl-env-profile.sh`)."""


_DOCKER_COMMON = (
    "--cap-add=NET_ADMIN",
    "--network=host",
    "--privileged",
    "--gpus",
    "all",
    "--volume",
    "/var/lib/nvidia/lib64:/usr/local/nvidia/lib64",
)
TCPX_TOPOLOGY = "/opt/tcpdirect_benchmark/gpu_rxq_configuration.textproto"
"""The GPU-to-NIC receive queue map Cluster Toolkit's A3 High image installs
(a3high-slurm-blueprint.yaml:338-415)."""
TCPX_SOCKETS = "/run/tcpx"

STACKS: dict[Transport, GpuDirectStack] = {
    "tcpx": GpuDirectStack(
        transport="tcpx",
        plugin_image=f"{REGISTRY}/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9-2.19.4-12.0",
        plugin_args=("install",),
        rxdm_image=f"{REGISTRY}/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12",
        rxdm_docker_args=(
            *_DOCKER_COMMON,
            "--volume",
            "/opt/tcpdirect_benchmark:/opt/tcpdirect_benchmark",
            "--volume",
            f"{TCPX_SOCKETS}:{TCPX_SOCKETS}",
            "--env",
            "LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/run/tcpx:/usr/lib/lib32:/usr/lib/x86_64-linux-gnu/",
            "--entrypoint",
            "/tcpgpudmarxd/build/app/tcpgpudmarxd",
            "--ulimit",
            "memlock=-1",
        ),
        rxdm_args=(
            "--gpu_nic_preset",
            "manual",
            "--gpu_nic_topology",
            TCPX_TOPOLOGY,
            "--gpu_shmem_type",
            "fd",
            "--uds_path",
            TCPX_SOCKETS,
        ),
        host_file=TCPX_TOPOLOGY,
        env={
            "NCCL_NET": "GPUDirectTCPX_v7",
            "NCCL_SOCKET_IFNAME": "enp0s12",
            "NCCL_GPUDIRECTTCPX_CTRL_DEV": "enp0s12",
            "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME": "enp6s0,enp12s0,enp134s0,enp140s0",
            "NCCL_CROSS_NIC": "0",
            "NCCL_ALGO": "Ring",
            "NCCL_PROTO": "Simple",
            "NCCL_NSOCKS_PERTHREAD": "4",
            "NCCL_SOCKET_NTHREADS": "1",
            "NCCL_DYNAMIC_CHUNK_SIZE": "524288",
            "NCCL_P2P_NET_CHUNKSIZE": "524288",
            "NCCL_P2P_PCI_CHUNKSIZE": "524288",
            "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
            "NCCL_BUFFSIZE": "4194304",
            "NCCL_NET_GDR_LEVEL": "PIX",
            "NCCL_P2P_PXN_LEVEL": "0",
            "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX": TCPX_SOCKETS,
            "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS": "500000",
            "NCCL_GPUDIRECTTCPX_TX_BINDINGS": (
                "enp6s0:8-21,112-125;enp12s0:8-21,112-125;"
                "enp134s0:60-73,164-177;enp140s0:60-73,164-177"
            ),
            "NCCL_GPUDIRECTTCPX_RX_BINDINGS": (
                "enp6s0:22-35,126-139;enp12s0:22-35,126-139;"
                "enp134s0:74-87,178-191;enp140s0:74-87,178-191"
            ),
            "LD_LIBRARY_PATH": "/var/lib/tcpx/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
        },
    ),
    "tcpxo": GpuDirectStack(
        transport="tcpxo",
        plugin_image=f"{REGISTRY}/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.17",
        plugin_args=("install", "--install-nccl"),
        rxdm_image=f"{REGISTRY}/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.23",
        rxdm_docker_args=(
            *_DOCKER_COMMON,
            "--volume",
            "/dev/dmabuf_import_helper:/dev/dmabuf_import_helper",
            "--env",
            "LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu",
        ),
        rxdm_args=("--num_hops=2", "--num_nics=8", "--uid=", "--alsologtostderr"),
        host_file="/dev/aperture_devices",
        modules=("import-helper",),
        profile="/var/lib/tcpxo/lib64/nccl-env-profile.sh",
        profile_lib_dir="/var/lib/tcpxo/lib64",
        env={
            "NCCL_FASTRAK_CTRL_DEV": "enp0s12",
            "NCCL_FASTRAK_IFNAME": (
                "enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0"
            ),
            "NCCL_SOCKET_IFNAME": "enp0s12",
            "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
            "LD_LIBRARY_PATH": "/var/lib/tcpxo/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
        },
    ),
}

GIB_VERSION = "1.1.0"
"""`nccl-gib` from Google's `gpudirect-gib-apt` repository, held at this version (Cluster
Toolkit v1.95.0 a3ultra-slurm-blueprint.yaml:43,495-530); x86 only."""
GIB_REPO = "ar+https://us-apt.pkg.dev/projects/gce-ai-infra gpudirect-gib-apt main"
AR_TRANSPORT_REPO = (
    "https://packages.cloud.google.com/apt apt-transport-artifact-registry-stable main"
)
GIB_PROFILE = "/usr/local/gib/scripts/set_nccl_env.sh"
"""The package's own NCCL settings, which Cluster Toolkit sources from /etc/profile.d."""
GIB_LIBRARIES = "/usr/local/gib/lib64"
