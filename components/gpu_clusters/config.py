"""What the user writes for `ai-infra:gpuClusters`: one managed instance group of GPU VMs per
entry, with its image, network, mounts and orchestrator. The defaults are the cluster Google's
AI infra cluster provisioning tool made by default.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from catalog import gpu as gpu_catalog
from components.base import MAX_METADATA_ENTRIES, ConfigModel, at_most
from components.logins import MAX_LOGINS, Login
from components.network import consecutive_ranges
from components.startup import GUEST_RESERVED_METADATA, ScriptText
from components.storage import StorageMount
from components.types import (
    Cidr,
    DnsLabel,
    GceName,
    ImageProject,
    Labels,
    MachineType,
    MetadataKey,
    MountPath,
    Reservation,
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

RESERVED_METADATA = GUEST_RESERVED_METADATA | {"install-nvidia-driver", "proxy-mode"}
"""Metadata keys a cluster's `metadata` may not set: those of every VM (`components.startup`)
and the Deep Learning VM's driver and Jupyter proxy switches, which the program sets."""
MAX_INSTANCES = 1000
"""A zonal managed instance group "can have up to 1000 VM instances" (Compute Engine API,
instanceGroupManagers.insert); compact placement may allow fewer (`gpu_catalog.compact_limit`)."""
MAX_NICS = gpu_catalog.MAX_VNICS
"""VMs take at most 8 NICs, fewer on small machines (`gpu_catalog.max_nics`); the GPUDirect
and RDMA layouts are fixed by the catalog instead."""
DEFAULT_NICS = 5
MAX_RUN_HOURS = 168
"""Flex-start VMs run for 10 minutes to 7 days (Compute Engine, "About resize requests in a
MIG": requestedRunDuration)."""
IMAGE_DIRS = ("/opt", "/snap")
"""Where Deep Learning VM images keep conda, and Ubuntu images gcloud, both on the PATH of the
program's root services (`boot.SERVICE_PATH`), beside the OS's (`types.SYSTEM_DIRS`): no mount
at or under these."""
MAX_MOUNTS = 64
"""A guard, not an API limit, on each list of mounts (`gcsMounts`, `nfsShares`, `storage`):
each is a step of the startup script, run one after another; raise it deliberately."""
BUCKET_NAME = re.compile(r"[a-z0-9][-_.a-z0-9]{1,220}[a-z0-9]")


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


class DataDisk(ConfigModel):
    """A persistent disk per VM that the group keeps when it recreates the VM (a stateful
    disk), formatted on first use and mounted on every boot: where users keep what must
    outlive a new image."""

    size_gb: int = Field(default=1000, ge=10, le=65536)
    """Size in GiB."""
    type: Literal["pd-ssd", "pd-balanced", "hyperdisk-balanced"] | None = None
    """Disk type; defaults to the cluster's `diskType`, and must be one the machine takes."""
    mount_path: MountPath = "/data"
    """Where it is mounted; its root is world-writable with the sticky bit, like /tmp."""


class GpuClusterConfig(ConfigModel):
    """One entry of `ai-infra:gpuClusters`: a managed instance group of GPU VMs. The defaults are
    the provisioning tool's default cluster: one a2-highgpu-2g with two A100s."""

    name: DnsLabel
    """The tool's NAME_PREFIX: names the VMs, the `aiinfra-cluster` label and every derived
    resource (`<prefix>-<name>-...`); the service account `<prefix>-<name>-vm` must fit in 30
    characters."""
    instance_count: int = Field(default=1, ge=1, le=MAX_INSTANCES)
    """VMs in the group. With `provisioning: flex-start` too it is the group's size: each
    `pulumi up` asks, with a new resize request, for the VMs the group lacks (all of them once
    a run has ended), and cancels or removes what exceeds it."""
    machine_type: MachineType = "a2-highgpu-2g"
    """An a2, a3, a4, a4x, g2 or g4 machine type (GPUs built in) or n1 with attachable GPUs
    (within the vCPUs its GPUs allow)."""
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
    """Boot disk size. The boot disk is rebuilt from the image whenever the group recreates a
    VM; keep what must last on `dataDisk` or `nfsShares`."""
    disk_type: Literal["pd-ssd", "pd-balanced", "pd-standard", "hyperdisk-balanced"] = "pd-ssd"
    """Boot disk type; must be one the machine type boots from."""
    data_disk: DataDisk | None = None
    """A disk per VM kept across recreation (new image, repair), mounted at `/data` by
    default."""
    zone: Zone | None = None
    """Zone of the VMs and Filestore shares; defaults to `gcp:zone`."""
    network: Literal["default", "new", "multi-nic"] = "default"
    """`default`: the stack's VPC (with its NAT, IAP SSH and internal firewall rules), not the
    project's auto-mode `default` VPC. `new`: a VPC, subnet, router and NAT of its own.
    `multi-nic`: one VPC per NIC (`nicCount`, 5 by default); a3-highgpu-8g and a3-megagpu-8g
    get their GPUDirect layout (1 + 4 or 1 + 8 NICs, GPU VPCs at MTU 8244), a3-ultragpu-8g,
    a4-highgpu-8g and a4x-highgpu-4g their RDMA layout (2 host NICs + 8 or 4 MRDMA NICs on one
    VPC with the zone's RoCE network profile)."""
    nic_count: int | None = Field(default=None, ge=2, le=MAX_NICS)
    """NICs (and VPCs) with `network: multi-nic`; 5 unless the machine fixes it, and at most
    one per vCPU (`n1-standard-2` takes 2, `g2-standard-4` 4)."""
    subnet_cidr: Cidr = "10.130.0.0/20"
    """The first subnet of `new` and `multi-nic`, a /8 to /29; further NICs take the following
    ranges of the same size."""
    gpu_direct: bool = False
    """NCCL over the GPU NICs of `network: multi-nic`: on a3-highgpu-8g and a3-megagpu-8g
    Google's GPUDirect-TCPX / TCPXO receive daemon and NCCL plugin (the image must be one
    prepared for them, not a Deep Learning VM image), on a3-ultragpu-8g and a4-highgpu-8g the
    NCCL gIB plugin for RDMA."""
    metadata: Annotated[
        dict[MetadataKey, ScriptText],
        at_most(MAX_METADATA_ENTRIES, "a bound of this program's, not Compute Engine's"),
    ] = Field(default_factory=dict)
    """Extra instance metadata; cannot override enable-oslogin, startup-script and the other
    keys the program sets, nor set SSH keys, script URLs or cloud-init `user-data`."""
    labels: Labels = Field(default_factory=dict)
    """Extra labels on the VMs, disks and Filestore instances (beside the stack's and
    `aiinfra-cluster=<name>`)."""
    startup_command: ScriptText = ""
    """Shell command run last on every boot, as root, after mounts and Ray."""
    gcs_mounts: list[GcsMount] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """Buckets mounted with gcsfuse (`implicit_dirs`) on every VM."""
    nfs_shares: list[NfsShare] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """A Filestore instance per entry, mounted on every VM."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """Volumes of `ai-infra:storage` mounted on every VM, by name: buckets through gcsfuse
    with the volume's profile (and its file cache on local SSD scratch where there is one),
    Filestore over NFS, Managed Lustre with its client."""
    local_ssd_scratch: bool = True
    """On machine types that bundle local SSD (a3-highgpu-8g, a3-megagpu-8g, a3-ultragpu-8g,
    a4-highgpu-8g): one RAID0 ext4 file system of all of them at `/mnt/localssd`, open to
    every user like /tmp, and the gcsfuse file cache of `storage` buckets on it. Its data is
    lost when the VM stops or its host fails. `false` leaves the disks raw."""
    orchestrator: str = "none"
    """`none` or `ray`: a Ray cluster under systemd, its head elected among the group's
    running VMs. For Kubernetes, use `ai-infra:gpuPools`."""
    ops_agent: bool = True
    """Install the Ops Agent (logs, NVML and DCGM GPU metrics, the cluster's GPU dashboard)
    with retries and random back-off; a failure never blocks the rest of the startup
    script."""
    jupyter_proxy: bool = False
    """The Deep Learning VM's Jupyter proxy (`proxy-mode: project_editors`): every principal
    with Editor (or Owner) on the project gets a notebook, and so a root-capable terminal, on
    every VM, outside OS Login. The stack output `gpuClusters.<name>.jupyterUrls` prints the
    command that lists the URLs."""
    provisioning: gpu_catalog.Provisioning = "on-demand"
    """`on-demand`, `spot` (preemptible at any time), `flex-start` (a resize request that
    creates all VMs at once when capacity frees up, for at most `maxRunHours`) or `reservation`
    (`reservation` names it; unset consumes any matching one); what the machine type is sold
    under decides."""
    reservation: Reservation | None = None
    """The reservation `provisioning: reservation` consumes, by name or
    `projects/P/reservations/R`."""
    reservation_bound: bool | None = None
    """Consume the reservation with the reservation-bound model, as calendar-mode and
    capacity-block reservations need; A4X always does."""
    max_run_hours: int | None = Field(default=None, ge=1, le=MAX_RUN_HOURS)
    """With `flex-start`: how long the VMs run before Compute Engine deletes them; 168 (seven
    days) by default."""
    placement_max_distance: int | None = Field(default=None, ge=1, le=3)
    """How close the VMs must be. With a compact placement policy: 1 (same rack, up to 22
    VMs, not on A3), 2 (up to 150, 256 on A3) or 3 (up to 1,500); unset places them as close
    as capacity allows. With a workload policy (A3 8-GPU, A3 Mega, A3 Ultra, A4): the policy's
    `maxTopologyDistance`, 1 SUBBLOCK, 2 BLOCK, 3 CLUSTER (the default, as Slurm-GCP's); a
    boundary capacity cannot meet leaves VMs uncreated. A4X takes none: its policy carries
    its NVLink topology."""
    ready_timeout_minutes: int = Field(default=30, ge=5, le=360)
    """How long `pulumi up` waits for the group's VMs to be created (and for an update to
    settle) before it fails; the group's errors say why (`gcloud compute instance-groups
    managed list-errors`)."""
    startup_timeout_minutes: int = Field(default=30, ge=0, le=360)
    """How long `pulumi up` waits, once the VMs exist, for every VM's startup script to report
    done (its guest attribute `ai-infra/startup`); a step that fails fails `pulumi up` with
    the VM's and the step's name. 0 skips the wait (where an organization policy disables
    guest attributes). Flex-start groups are not waited for: their VMs come when capacity
    does."""
    ssh_among_vms: bool = False
    """Passwordless SSH from any of the cluster's VMs to the others (torchrun, `mpirun`), off
    by default as in Cluster Toolkit. Host-based authentication among the group's running
    members only, as each user's own OS Login identity: no shared key. Each VM keeps the
    members' host keys and the MPI hostfile `/etc/ai-infra/hostfile` fresh every minute. Any
    process on a VM can rewrite the host keys it publishes, so every `logins` member must
    have `sudo: true`."""
    logins: list[Login] = Field(default_factory=list, max_length=MAX_LOGINS)
    """Who may log in to this cluster's VMs and nothing else: each member gets OS Login
    (`roles/compute.osAdminLogin` with `sudo: true`, else `roles/compute.osLogin`) on the
    cluster's VMs only, `roles/iam.serviceAccountUser` on their service account only, IAP
    tunnels to port 22, and reading the cluster's VMs and group (what `gcloud compute ssh` and
    `python -m hosts` read)."""
    threads_per_core: int | None = Field(default=None, ge=1, le=2)
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
    def scratch_disks(self) -> int:
        """The local SSDs made into scratch at `/mnt/localssd`; 0 for none."""
        return gpu_catalog.bundled_local_ssds(self.machine_type) if self.local_ssd_scratch else 0

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
            return layout.nics
        return self.nic_count or DEFAULT_NICS

    @property
    def bound(self) -> bool:
        """Whether the VMs consume their reservation with the reservation-bound model."""
        if self.provisioning != "reservation":
            return False
        if self.reservation_bound is not None:
            return self.reservation_bound
        capacity = gpu_catalog.series_capacity(self.machine_type)
        return capacity is not None and capacity.reservation_bound == "required"

    @property
    def placement(self) -> gpu_catalog.PlacementKind | None:
        """The group's placement policy, if any: only groups of more than one VM get one."""
        if self.instance_count < 2:
            return None
        return gpu_catalog.group_placement(self.machine_type, self.provisioning)

    @property
    def run_seconds(self) -> int:
        return (self.max_run_hours or MAX_RUN_HOURS) * 3600

    def nic_cidrs(self) -> list[str]:
        return consecutive_ranges(self.subnet_cidr, self.nics)

    @property
    def gpus(self) -> int:
        return self.instance_count * self.gpu_count
