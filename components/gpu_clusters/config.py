"""What the user writes for `ai-infra:gpuClusters`: one managed instance group of GPU VMs per
entry, with its image, network, mounts and orchestrator. The defaults are the cluster Google's
AI infra cluster provisioning tool made by default.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from components import gpu_catalog
from components.base import ConfigModel
from components.types import (
    Cidr,
    DnsLabel,
    GceName,
    ImageProject,
    Labels,
    MachineType,
    MetadataKey,
    MountPath,
    Zone,
)

CLUSTER_LABEL = "aiinfra-cluster"
"""The provisioning tool's billing label: Billing Reports filter a cluster's cost by it."""
DLVM_PROJECTS = ("deeplearning-platform-release", "ml-images")
"""Image projects of Deep Learning VM images, which install the NVIDIA driver from metadata and
run the Jupyter proxy agent."""
DEFAULT_IMAGE_FAMILY = "pytorch-2-9-cu129-ubuntu-2404-nvidia-580"
"""A current PyTorch GPU family (Deep Learning VM "Choose an image", 2026-09: PyTorch 2.9, CUDA
12.9, driver 580, supported to 2028-08; "Debian images have all been deprecated")."""
END_OF_LIFE_FAMILIES = {
    "pytorch-1-12-gpu-debian-10": "PyTorch 1.12 on Debian 10, the provisioning tool's default, "
    "is end of life: it gets no security fixes and no gVNIC driver, so its VMs fall back to "
    f"VirtIO networking; use {DEFAULT_IMAGE_FAMILY}",
}
_NO_GVNIC = re.compile(r".*debian-10.*")
"""Images without a gVNIC driver: the provisioning tool's instance template refused gVNIC on
anything but Debian 11 or newer ("GVNIC is only supported in debian 11 image")."""

RESERVED_METADATA = frozenset(
    {
        "enable-oslogin",
        "block-project-ssh-keys",
        "ssh-keys",
        "serial-port-enable",
        "startup-script",
        "startup-script-url",
        "install-nvidia-driver",
        "proxy-mode",
    }
)
"""Metadata keys the program sets for security or function; a cluster's `metadata` may not
override them."""
FILESTORE_CAPACITY_GB: dict[str, tuple[int, int]] = {
    "BASIC_HDD": (1024, 65433),
    "BASIC_SSD": (2560, 65433),
    "HIGH_SCALE_SSD": (10240, 102400),
    "ENTERPRISE": (1024, 10240),
}
"""Capacity range per tier in GiB (Filestore "Service tiers": 1, 2.5, 10 and 1 TiB minimum;
63.9, 63.9, 100 and 10 TiB maximum)."""
MAX_INSTANCES = 150
"""A compact placement policy holds at most 150 VMs (Compute Engine, placement policies)."""
MAX_NICS = 8
"""VMs take at most 8 NICs, fewer on small machines (Compute Engine, multiple network
interfaces); the A3 GPUDirect layouts are fixed by the catalog instead."""
PROTECTED_PATHS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
)
"""Mounting over these would hide the system, or the image's conda under /opt."""
BUCKET_NAME = re.compile(r"[a-z0-9][-_.a-z0-9]{1,220}[a-z0-9]")


def _no_control_characters(value: str) -> str:
    if any(ord(c) < 32 and c not in "\t\n" for c in value) or "\x7f" in value:
        raise ValueError("must not contain control characters")
    return value


class GcsMount(ConfigModel):
    bucket: str
    """A bucket of this stack's `ai-infra:buckets` by its name there, or any bucket's full
    name. The cluster's service account is granted object access on it, per member."""
    mount_path: MountPath
    """Absolute path on every VM, e.g. `/gcs/data`."""
    read_only: bool = False
    """Mount read-only and grant objectViewer instead of objectUser."""


class NfsShare(ConfigModel):
    mount_path: MountPath
    """Absolute path on every VM, e.g. `/nfs/home`."""
    tier: Literal["BASIC_HDD", "BASIC_SSD", "HIGH_SCALE_SSD", "ENTERPRISE"] = "BASIC_SSD"
    """Filestore tier; ENTERPRISE instances are regional, the others sit in the cluster's zone."""
    size_gb: int = 2560
    """Capacity in GiB, at least the tier's minimum: BASIC_HDD 1024, BASIC_SSD 2560,
    HIGH_SCALE_SSD 10240, ENTERPRISE 1024."""


class GpuClusterConfig(ConfigModel):
    """One entry of `ai-infra:gpuClusters`: a managed instance group of GPU VMs. The defaults are
    the provisioning tool's default cluster: one a2-highgpu-2g with two A100s."""

    name: DnsLabel
    """The tool's NAME_PREFIX: names the VMs, the `aiinfra-cluster` label and every derived
    resource (`<prefix>-<name>-...`); the service account `<prefix>-<name>-vm` must fit in 30
    characters."""
    instance_count: int = Field(default=1, ge=1, le=MAX_INSTANCES)
    """VMs in the group."""
    machine_type: MachineType = "a2-highgpu-2g"
    """An a2, a3, a4, a4x or g2 machine type (GPUs built in) or n1 with attachable GPUs."""
    gpu_type: str = "nvidia-tesla-a100"
    """`guest_accelerator` type; must match the machine's built-in GPUs."""
    gpu_count: int = Field(default=2, ge=1, le=16)
    """GPUs per VM; must match the machine's built-in GPUs."""
    image_family: GceName | None = None
    """Image family; defaults to `pytorch-2-9-cu129-ubuntu-2404-nvidia-580` when `image` is
    unset. `pytorch-1-12-gpu-debian-10` (the tool's default) is accepted with a warning: it is
    end of life."""
    image: GceName | None = None
    """A specific image name, instead of `imageFamily`."""
    image_project: ImageProject = "deeplearning-platform-release"
    """Project of the image; Ray and the Jupyter proxy need a Deep Learning VM image
    (`deeplearning-platform-release` or `ml-images`)."""
    disk_size_gb: int = Field(default=2000, ge=50, le=65536)
    """Boot disk size."""
    disk_type: Literal["pd-ssd", "pd-balanced", "pd-standard", "hyperdisk-balanced"] = "pd-ssd"
    """Boot disk type; must be one the machine type boots from."""
    zone: Zone | None = None
    """Zone of the VMs and Filestore shares; defaults to `gcp:zone`."""
    network: Literal["default", "new", "multi-nic"] = "default"
    """`default`: the stack's VPC (with its NAT, IAP SSH and internal firewall rules), not the
    project's auto-mode `default` VPC. `new`: a VPC, subnet, router and NAT of its own.
    `multi-nic`: one VPC per NIC (`nicCount`, 5 by default); a3-highgpu-8g and a3-megagpu-8g
    get their GPUDirect layout (1 + 4 or 1 + 8 NICs, GPU VPCs at MTU 8244)."""
    nic_count: int | None = Field(default=None, ge=2, le=MAX_NICS)
    """NICs (and VPCs) with `network: multi-nic`; 5 unless the machine fixes it."""
    subnet_cidr: Cidr = "10.130.0.0/20"
    """The first subnet of `new` and `multi-nic`; further NICs take the following ranges of the
    same size."""
    metadata: dict[MetadataKey, Annotated[str, AfterValidator(_no_control_characters)]] = Field(
        default_factory=dict
    )
    """Extra instance metadata; cannot override enable-oslogin, startup-script and the other
    keys the program sets."""
    labels: Labels = Field(default_factory=dict)
    """Extra labels on the VMs, disks and Filestore instances (beside the stack's and
    `aiinfra-cluster=<name>`)."""
    startup_command: Annotated[str, AfterValidator(_no_control_characters)] = ""
    """Shell command run last on every boot, as root, after mounts and Ray."""
    gcs_mounts: list[GcsMount] = Field(default_factory=list)
    """Buckets mounted with gcsfuse (`implicit_dirs`) on every VM."""
    nfs_shares: list[NfsShare] = Field(default_factory=list)
    """A Filestore instance per entry, mounted on every VM."""
    orchestrator: str = "none"
    """`none` or `ray` (head on the first VM, the others join it). For Kubernetes, use
    `ai-infra:gpuPools`."""
    ops_agent: bool = True
    """Install the Ops Agent (logs, GPU metrics) with retries and random back-off; a failure
    never blocks the rest of the startup script."""
    jupyter_proxy: bool = True
    """The Deep Learning VM's Jupyter proxy (`proxy-mode: project_editors`); the stack output
    `gpuClusters.<name>.jupyterUrls` prints the command that lists the URLs."""
    spot: bool = False
    """Spot VMs: cheaper, preemptible at any time."""
    threads_per_core: Literal[1, 2] | None = None
    """SMT: unset keeps the platform's default (two threads per core on the x86 GPU families,
    one on A4X's Arm cores); 1 turns SMT off, halving the vCPUs, for CPU-bound data loaders
    that suffer from sibling threads."""

    @property
    def resolved_image_family(self) -> str | None:
        if self.image is None and self.image_family is None:
            return DEFAULT_IMAGE_FAMILY
        return self.image_family

    @property
    def image_ref(self) -> str:
        if self.image is not None:
            return f"projects/{self.image_project}/global/images/{self.image}"
        return f"projects/{self.image_project}/global/images/family/{self.resolved_image_family}"

    @property
    def dlvm(self) -> bool:
        return self.image_project in DLVM_PROJECTS

    @property
    def gvnic(self) -> bool:
        return not _NO_GVNIC.fullmatch(self.image or self.resolved_image_family or "")

    @property
    def nic_layout(self) -> gpu_catalog.GpuNicLayout | None:
        return gpu_catalog.nic_layout(self.machine_type) if self.network == "multi-nic" else None

    @property
    def nics(self) -> int:
        if self.network != "multi-nic":
            return 1
        layout = self.nic_layout
        if layout is not None:
            return 1 + layout.gpu_nics
        return self.nic_count or 5

    def nic_cidrs(self) -> list[str]:
        first = ipaddress.IPv4Network(self.subnet_cidr)
        return [
            str(
                ipaddress.IPv4Network(
                    (int(first.network_address) + k * first.num_addresses, first.prefixlen)
                )
            )
            for k in range(self.nics)
        ]

    @property
    def gpus(self) -> int:
        return self.instance_count * self.gpu_count
