"""What a nodeset of `ai-infra:slurm` is: TPU VMs (`tpuNodesets`) or Compute Engine VMs
(`cpuNodesets`) the controller creates on demand, after Toolkit's
`schedmd-slurm-gcp-v6-nodeset-tpu` and `-nodeset` modules.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from catalog import tpu as tpu_catalog
from catalog.gpu import GpuNicLayout, fixed_gpus, nic_layout
from components.base import ConfigModel, at_most
from components.context import StackContext
from components.network import consecutive_ranges
from components.slurm import scripts
from components.slurm.fields import (
    DEFAULT_SCOPES,
    MAX_ADDITIONAL_DISKS,
    MAX_DATA_DISKS,
    MAX_MOUNTS,
    MAX_NODES_PER_NODESET,
    MAX_SCOPES,
    MAX_ZONES,
    SCHEDMD_IMAGE_PROJECT,
    ConfKey,
    ConfValue,
    NetworkStorage,
    NodeImage,
    NodesetName,
    NodeType,
    Scope,
    ScriptText,
    Topology,
    not_reserved,
    pattern_of,
    tagged_image,
)
from components.slurm.slurm_conf import NODE_OPTIONS, node_option
from components.storage import StorageMount
from components.types import (
    Cidr,
    DiskPath,
    GceName,
    ImageReference,
    MachineType,
    MountPath,
    Reservation,
    ServiceAccountEmail,
    Zone,
    image_registry,
)

SLURM_FAMILIES = ("v2", "v3", "v4")
"""Slurm-GCP v6 creates TPU VMs of these generations only (slurm_files/scripts/tpu.py maps
`V2`, `V3`, `V4` to the TPU API's accelerator types)."""
CORES_PER_WORKER = 8
"""Toolkit's nodeset-tpu module wants one Slurm node per 8 TensorCores: the controller puts
four chips on each TPU VM (tpu.py TPUS_PER_VM = 4). Sizes, zones and TensorCores per chip
of each generation come from the TPU catalog (`catalog.tpu`)."""
SINGLE_HOST_TYPES = ("v2-8", "v3-8", "v4-8")
"""Toolkit passes `preemptible` and `preserve_tpu` on only for these (internal/slurm-gcp/
nodeset_tpu `simple_nodes`) and silently drops them for any other type."""
TF_RUNTIMES = (
    "2.10.0",
    "2.10.1",
    "2.11.0",
    "2.11.1",
    "2.12.0",
    "2.12.1",
    "2.13.0",
    "2.13.1",
    "2.14.0",
    "2.14.1",
)
"""TensorFlow versions with a TPU VM runtime named `tpu-vm-tf-<version>` (Cloud TPU "TPU
software versions"), the only name the controller requests (tpu.py). From TF 2.15 the
runtimes carry `-pjrt` or `-se`, which the controller cannot ask for."""
DEFAULT_IMAGE_TF_VERSIONS = ("2.12.1", "2.13.0", "2.13.1", "2.14.0", "2.14.1")
"""TF versions of SchedMD's published `tpu:slurm-gcp-6-9-tf-<version>` images (slurm-gcp
docs/images.md; it also lists 2.15.0, which has no runtime here) that have a runtime."""
DEFAULT_TF_VERSION = "2.14.0"
DEFAULT_DOCKER_IMAGE = "us-docker.pkg.dev/schedmd-slurm-public/tpu/slurm-gcp-6-9:tf-{tf}"
"""Toolkit's default slurmd image for TPU VMs (internal/slurm-gcp/nodeset_tpu)."""
CPU_RESUME_TIMEOUT = 300
TPU_RESUME_TIMEOUT = 600
"""Toolkit's ResumeTimeout for partitions of Compute Engine VMs and of TPU VMs
(schedmd-slurm-gcp-v6-partition main.tf `partition_conf`)."""
FLEX_RESUME_TIMEOUT = 65535
"""What Toolkit forces for a partition with a flex-start nodeset, whatever its
partition_conf says (the same file): the nodes come when the resize request gets capacity,
and at ResumeTimeout Slurm-GCP deletes the group still waiting (mig_flex.py, suspend).
65535 is a uint16 option's INFINITE (parse_value.c `s_p_handle_uint16`)."""
SLICE_CREATE_WAIT = 900
"""tpu.py creates a slice with `create_node(...).result()`, whose default polling stops
after 900 s (google-api-core future/polling.py `DEFAULT_POLLING`, at the 2.19.0 the scripts'
requirements.txt pins): a slice whose create operation runs longer never registers, however
long Slurm waits. Cloud TPU publishes no creation times by slice size (its "Create Cloud TPU
VMs" and "Manage queued resources" pages give none), so a multi-host nodeset is given all
of that wait, where Toolkit's 600 s covers one TPU VM."""
SETUP_WAIT = 300
"""After the create: the slurmd container's setup, whose custom scripts may take 300 s
(setup.py `_startup_script_timeout`, compute_startup_scripts_timeout's default)."""
NIC_TYPES: dict[str, str | None] = {
    "platform_default": None,
    "virtio_enabled": "VIRTIO_NET",
    "gvnic_enabled": "GVNIC",
    "tier_1_enabled": "GVNIC",
}
"""`bandwidth_tier` -> vNIC type, as Toolkit's internal/slurm-gcp/instance_template maps it;
`tier_1_enabled` also sets the egress bandwidth tier TIER_1."""


class AcceleratorConfig(ConfigModel):
    """A TPU by generation and chip topology, as the TPU API's AcceleratorConfig takes it."""

    version: Annotated[
        str,
        pattern_of(
            r"V[234]",
            "a TPU generation Slurm-GCP v6 can create (V2, V3 or V4); for newer TPUs use a GKE "
            "slice in ai-infra:tpuSlices",
        ),
    ]
    """TPU generation: `V2`, `V3` or `V4`."""
    topology: Topology
    """Chips along each axis: two axes for V2 and V3 (`2x2`), three for V4 (`2x2x1`)."""


class TpuNodesetConfig(ConfigModel):
    """One entry of `ai-infra:slurm.tpuNodesets`: TPU VMs the controller creates on demand."""

    name: NodesetName
    """Nodes are named `<clusterName>-<name>-<index>`."""
    node_type: NodeType | None = None
    """Accelerator type, e.g. `v2-8`, `v3-8`, `v4-8`, `v4-16`; or give `acceleratorConfig`."""
    accelerator_config: AcceleratorConfig | None = None
    """Generation and topology instead of `nodeType`."""
    tf_version: str | None = None
    """TensorFlow version of the TPU runtime `tpu-vm-tf-<tfVersion>` (default 2.14.0);
    2.10.0 to 2.14.1. SchedMD publishes slurmd images for 2.12.1 to 2.14.1 only: other
    versions need `dockerImage`."""
    runtime_version: str | None = None
    """The TPU runtime by its name, `tpu-vm-tf-<version>`, instead of `tfVersion`."""
    docker_image: Annotated[ImageReference, AfterValidator(tagged_image)] | None = None
    """The slurmd image each TPU VM runs, from Artifact Registry (any region's
    `REGION-docker.pkg.dev`, or `us-`, `europe-`, `asia-docker.pkg.dev`) or gcr.io; defaults
    to `us-docker.pkg.dev/schedmd-slurm-public/tpu/slurm-gcp-6-9:tf-<tfVersion>`."""
    preemptible: bool = False
    """Preemptible TPU VMs (single-host types only). The controller recreates a node Cloud
    TPU preempted, so static nodes come back by themselves."""
    preserve_tpu: bool = False
    """Stop rather than delete a TPU VM when Slurm suspends it (single-host types only)."""
    reserved: bool = False
    """Create the TPU VMs from the project's TPU reservation."""
    enable_public_ips: bool = False
    """Give each TPU VM an external IP. Off: the subnet's Private Google Access and Cloud NAT
    reach Google APIs and the image registry."""
    node_count_static: int = Field(default=0, ge=0, le=MAX_NODES_PER_NODESET)
    """Slurm nodes kept up at all times (a multiple of the workers per slice)."""
    node_count_dynamic_max: int = Field(default=0, ge=0, le=MAX_NODES_PER_NODESET)
    """Slurm nodes created on demand at most (a multiple of the workers per slice)."""
    data_disks: list[DiskPath] = Field(default_factory=list, max_length=MAX_DATA_DISKS)
    """Existing Balanced Persistent Disks to attach to each TPU VM, in the nodeset's zone:
    read-write on a nodeset of one TPU VM, read-only (the only mode several VMs may share)
    on a nodeset that may hold more."""
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """File systems to mount in each TPU VM's slurmd container, beside the cluster's."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """`ai-infra:storage` volumes to mount in each TPU VM's slurmd container, beside the
    cluster's."""
    service_account_email: ServiceAccountEmail | None = None
    """Defaults to the cluster's dedicated TPU node account."""
    service_account_scopes: list[Scope] = Field(
        default_factory=lambda: list(DEFAULT_SCOPES), min_length=1, max_length=MAX_SCOPES
    )
    """OAuth scopes of the TPU VMs' account; `cloud-platform` leaves access to IAM."""
    startup_script: ScriptText = ""
    """Shell Slurm-GCP's setup runs as root inside each TPU VM's slurmd container, before
    slurmd starts (within 300 s); not on the TPU VM host."""
    zone: Zone | None = None
    """One zone per nodeset; defaults to `gcp:zone`; must be in `gcp:region` and one where
    Cloud TPU offers the accelerator type."""
    allow_unlisted_zone: bool = False
    """Accept a zone the TPU catalog does not list for the accelerator type (one Google
    added since)."""
    subnetwork: GceName | None = None
    """Defaults to the stack's subnet (which has Private Google Access). Another subnet
    needs `enablePublicIps`, since its Private Google Access cannot be checked here."""

    @property
    def tf(self) -> str:
        """The TensorFlow version the runtime is named after."""
        if self.runtime_version is not None:
            return self.runtime_version.removeprefix("tpu-vm-tf-")
        return self.tf_version or DEFAULT_TF_VERSION

    @property
    def runtime(self) -> str:
        """The TPU runtime the controller asks for (tpu.py names it after the TF version)."""
        return f"tpu-vm-tf-{self.tf}"

    @property
    def image(self) -> str:
        return self.docker_image or DEFAULT_DOCKER_IMAGE.format(tf=self.tf)

    @property
    def registry(self) -> str:
        """The registry host the slurmd image is pulled from (Docker Hub without one)."""
        return image_registry(self.image) or "docker.io"

    @property
    def family(self) -> str | None:
        if self.accelerator_config is not None:
            return self.accelerator_config.version.lower()
        if self.node_type is not None:
            return self.node_type.split("-", 1)[0]
        return None

    @property
    def cores(self) -> int:
        """TensorCores per slice (Toolkit's nodeset-tpu `tpu_core_count`)."""
        if self.accelerator_config is not None:
            accelerator = self.accelerator_config
            chips = math.prod(int(d) for d in accelerator.topology.split("x"))
            return chips * tpu_family(accelerator.version.lower()).cores_per_chip
        assert self.node_type is not None
        return int(self.node_type.rsplit("-", 1)[1])

    @property
    def accelerator(self) -> str:
        """The accelerator type, `nodeType` or the one `acceleratorConfig` amounts to."""
        return self.node_type or f"{self.family}-{self.cores}"

    @property
    def shape(self) -> tpu_catalog.TpuShape:
        """The slice as the TPU catalog resolves it; call it once the checks pass."""
        topology = self.accelerator_config.topology if self.accelerator_config else None
        return tpu_catalog.resolve(self.accelerator, topology)

    @property
    def chips_per_worker(self) -> int:
        """Chips on each TPU VM, each a Slurm node."""
        assert self.family is not None
        return CORES_PER_WORKER // tpu_family(self.family).cores_per_chip

    @property
    def workers_per_slice(self) -> int:
        """TPU VMs per slice: tpu.py `vmcount`, the topology's chips over four per VM."""
        return max(1, self.cores // CORES_PER_WORKER)

    @property
    def max_vms(self) -> int:
        """TPU VMs the nodeset may hold at once: one per Slurm node."""
        return self.node_count_static + self.node_count_dynamic_max

    @property
    def data_disks_read_only(self) -> bool:
        """Whether the data disks attach read-only (the tpu.py addition decides it so)."""
        return bool(self.data_disks) and self.max_vms > 1

    @property
    def resume_timeout(self) -> int:
        """Seconds Slurm waits for a node of the nodeset to register (`ResumeTimeout`)."""
        if self.workers_per_slice == 1:
            return TPU_RESUME_TIMEOUT
        return SLICE_CREATE_WAIT + SETUP_WAIT


class GuestAccelerator(ConfigModel):
    """GPUs on each VM of a CPU nodeset (Toolkit's `guest_accelerator`, one entry)."""

    type: Annotated[
        str, pattern_of(r"nvidia-[a-z0-9-]{2,40}", "a GPU type such as nvidia-tesla-t4")
    ]
    """The Compute Engine accelerator type, e.g. `nvidia-tesla-t4`, `nvidia-l4`."""
    count: int = Field(ge=1, le=16)
    """GPUs per VM."""


FLEX_MIN_SECONDS = 600
FLEX_MAX_SECONDS = 604800
"""Toolkit's nodeset `dws_flex.max_run_duration`: at least 10 minutes, at most a week (its
variable's validation; a resize request's requestedRunDuration takes the same)."""


class DwsFlexConfig(ConfigModel):
    """Flex-start (Dynamic Workload Scheduler) capacity, as Toolkit's nodeset `dws_flex` with
    its default path: the controller asks for each job's nodes with a resize request on a
    managed instance group of its own (Slurm-GCP mig_flex.py), which creates them all at once
    when capacity frees up and deletes them after `maxRunDuration`."""

    enabled: bool = True
    """Provision the nodeset with flex-start."""
    max_run_duration: int = Field(
        default=FLEX_MAX_SECONDS, ge=FLEX_MIN_SECONDS, le=FLEX_MAX_SECONDS
    )
    """Seconds the nodes run before Compute Engine deletes them: 600 to 604800 (a week)."""
    use_job_duration: bool = False
    """Run the nodes for the job's time limit instead, when it has one of 10 minutes to a
    week."""


class AdditionalDisk(ConfigModel):
    """A persistent disk created with each node and deleted with it (Toolkit's nodeset
    `additional_disks` entry), at `/dev/disk/by-id/google-<deviceName>`."""

    device_name: GceName
    """The disk's device name on the node."""
    disk_type: Literal["pd-balanced", "pd-ssd", "pd-standard", "hyperdisk-balanced"] = "pd-balanced"
    """Disk type; must be one the machine type attaches."""
    disk_size_gb: int = Field(default=100, ge=10, le=65536)
    """Size in GB."""


class LocalSsdConfig(ConfigModel):
    """Local SSDs striped (RAID 0 when more than one), formatted ext4 and mounted on each node
    before slurmd starts, as Toolkit's startup-script `local_ssd_filesystem` does; their data
    goes with the node."""

    count: int | None = Field(default=None, ge=1, le=32)
    """Local SSD disks of 375 GB to attach; leave it unset on machine types that come with
    their own (A2 Ultra, A3, A4, and `-lssd` types), whose disks are mounted instead."""
    mount_path: Annotated[MountPath, AfterValidator(not_reserved)] = "/mnt/localssd"
    """Where the striped disks are mounted, world-writable with the sticky bit like /tmp:
    outside the system's and Slurm's directories, and apart from every file system the
    nodes mount."""


class GpuNetworksConfig(ConfigModel):
    """The NICs GPU-to-GPU traffic needs on the machine type, from the GPU catalog's NIC
    layouts, each in a network of the nodeset's own (Toolkit's blueprints give the nodeset
    `additional_networks` from `multivpc` or `gpu-rdma-vpc`): A3 High 4 and A3 Mega 8 GPU
    NICs, a VPC each at MTU 8244; A3 Ultra, A4 and A4X a second host NIC in a VPC at MTU
    8896 and 8 (A4X 4) MRDMA NICs in one VPC with the zone's RoCE network profile."""

    subnet_cidr: Cidr = "10.200.0.0/20"
    """The first NIC's subnet, a /8 to /29; each further NIC takes the next range of the
    same size. Must not overlap the stack's ranges or another nodeset's."""


class CpuNodesetConfig(ConfigModel):
    """One entry of `ai-infra:slurm.cpuNodesets`: Compute Engine VMs the controller creates on
    demand from an instance template (Toolkit's `schedmd-slurm-gcp-v6-nodeset`)."""

    name: NodesetName
    """Nodes are named `<clusterName>-<name>-<index>`; unique across CPU and TPU nodesets."""
    machine_type: MachineType = "c2-standard-60"
    """Machine type of the nodes (Toolkit's default `c2-standard-60`). Machine types with
    built-in GPUs (a2, a3, g2) carry them without `gpu`."""
    gpu: GuestAccelerator | None = None
    """GPUs to attach, e.g. `{type: nvidia-tesla-t4, count: 1}` on n1; must match a machine
    type that has them built in."""
    node_count_static: int = Field(default=0, ge=0, le=MAX_NODES_PER_NODESET)
    """Nodes kept up at all times."""
    node_count_dynamic_max: int = Field(default=10, ge=0, le=MAX_NODES_PER_NODESET)
    """Nodes created on demand at most (Toolkit's default 10); together with the static ones
    at least one."""
    disk_type: Literal["pd-standard", "pd-balanced", "pd-ssd", "hyperdisk-balanced"] = "pd-balanced"
    """Boot disk type. Toolkit's default `pd-standard` is refused by c3 and h3 VMs."""
    disk_size_gb: int = Field(default=50, ge=50, le=65536)
    """Boot disk size; SchedMD's image needs 50 GB."""
    image: NodeImage = Field(default_factory=lambda: NodeImage(family=scripts.IMAGE_FAMILY))
    """Boot image; defaults to the family the pinned scripts pair with,
    `schedmd-slurm-public/slurm-gcp-6-12-hpc-rocky-linux-8`."""
    spot: bool = False
    """Spot VMs: cheaper, but Compute Engine may reclaim them at any time."""
    zones: list[Zone] = Field(default_factory=list, max_length=MAX_ZONES)
    """Zones the controller may create nodes in (`zone_policy_allow`); defaults to
    `gcp:zone`. All in `gcp:region`."""
    zone_target_shape: Literal["ANY", "ANY_SINGLE_ZONE", "BALANCED"] = "ANY_SINGLE_ZONE"
    """How one resume spreads its nodes over `zones`."""
    reservation: Reservation | None = None
    """A specific reservation the nodes consume (Toolkit's `reservation_name`): its name, or
    `projects/P/reservations/R` for one shared from project P. It lives in one zone, which
    must be the nodeset's only zone."""
    enable_placement: bool = False
    """Compact placement: the controller creates a placement policy for each exclusive job's
    nodes (or each chunk of the nodeset) and deletes it after (Toolkit's
    `enable_placement`, which Toolkit turns on by default). Not on e2, n1, t2a, t2d, m1, m2
    or m3, which Slurm-GCP leaves unplaced."""
    placement_max_distance: int | None = Field(default=None, ge=1, le=3)
    """With `enablePlacement`: 1 (up to 22 nodes, not on A3), 2 (up to 150, 256 on A3) or 3
    (up to 1500); unset, as close as capacity allows (up to 1500)."""
    dws_flex: DwsFlexConfig | None = None
    """Flex-start capacity (Toolkit's `dws_flex`), for dynamic nodes in one zone, not with
    `spot` or `reservation`."""
    additional_disks: list[AdditionalDisk] = Field(
        default_factory=list, max_length=MAX_ADDITIONAL_DISKS
    )
    """Persistent disks each node gets beside its boot disk (Toolkit's `additional_disks`)."""
    threads_per_core: Literal[1, 2] = 1
    """Hardware threads per core: 1, as Toolkit's nodeset sets it (one Slurm CPU per core),
    or 2, the platform's own (what Toolkit's A3 and A4 blueprints ask for with
    `advanced_machine_features.threads_per_core: null`); Slurm-GCP counts the node's CPUs
    from it (util.py `template_machine_conf`)."""
    node_conf: Annotated[
        dict[ConfKey, ConfValue], at_most(len(NODE_OPTIONS), "each node option a nodeset sets once")
    ] = Field(default_factory=dict, max_length=len(NODE_OPTIONS))
    """slurm.conf options of the nodes written over what Slurm-GCP derives from the machine
    type (Toolkit's `node_conf`), e.g. `{CoresPerSocket: 52, ThreadsPerCore: 2}`: Boards,
    CoreSpecCount, CoresPerSocket, CPUs, Features, MemSpecLimit, RealMemory, Sockets,
    SocketsPerBoard, ThreadsPerCore, TmpDisk, Weight, in any case."""
    gpu_networks: GpuNetworksConfig | None = None
    """The machine type's GPU NICs, each in a network made for the nodeset (Toolkit
    blueprints' `additional_networks`); for a3-highgpu-8g, a3-megagpu-8g, a3-ultragpu-8g,
    a4-highgpu-8g and a4x-highgpu-4g. NCCL's plugins and daemons are the image's or the
    nodeset's `startupScript`'s."""
    local_ssd: LocalSsdConfig | None = None
    """Local SSD scratch space on each node (Toolkit's `additional_disks` of type
    `local-ssd` with the startup-script's `local_ssd_filesystem`)."""
    service_account_email: ServiceAccountEmail | None = None
    """Defaults to the cluster's dedicated CPU node account `<prefix>-slurm-cpu`."""
    service_account_scopes: list[Scope] = Field(
        default_factory=lambda: list(DEFAULT_SCOPES), min_length=1, max_length=MAX_SCOPES
    )
    """OAuth scopes of the nodes' account; `cloud-platform` leaves access to IAM."""
    enable_public_ips: bool = False
    """Give each node an external IP. Off: Private Google Access and Cloud NAT."""
    bandwidth_tier: Literal[
        "platform_default", "virtio_enabled", "gvnic_enabled", "tier_1_enabled"
    ] = "platform_default"
    """The nodes' network card and egress bandwidth, as Toolkit's `bandwidth_tier`:
    `platform_default` (the machine's own), `virtio_enabled`, `gvnic_enabled`, or
    `tier_1_enabled` (gVNIC with per-VM Tier_1 bandwidth, on N2, N2D, C2, C2D and C3 of 30
    vCPUs or more)."""
    secure_boot: bool | None = None
    """Shielded VM Secure Boot. Unset: on, except where SchedMD's image must load unsigned
    kernel modules (NVIDIA drivers on GPU nodes, Lustre's client)."""
    startup_script: ScriptText = ""
    """Shell Slurm-GCP's setup runs as root on each node before slurmd starts (within 300 s)."""
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """File systems to mount on each node, beside the cluster's."""
    allow_automatic_updates: bool = True
    """Let the image update its OS packages by itself; `false` turns the automatic updates
    of Google's HPC images (and SchedMD's, built on them) off, so that nodes of one job run
    the same packages (metadata `google_disable_automatic_updates`)."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """`ai-infra:storage` volumes to mount on each node, beside the cluster's."""

    @property
    def uses_schedmd_image(self) -> bool:
        return self.image.project == SCHEDMD_IMAGE_PROJECT

    @property
    def slurm_node_conf(self) -> dict[str, str]:
        """`nodeConf` with each key as Slurm spells it."""
        return {node_option(k) or k: v for k, v in self.node_conf.items()}

    @property
    def flex(self) -> bool:
        """Whether the nodes come from flex-start resize requests."""
        return self.dws_flex is not None and self.dws_flex.enabled

    @property
    def resume_timeout(self) -> int:
        """Seconds Slurm waits for a node of the nodeset to register (`ResumeTimeout`)."""
        return FLEX_RESUME_TIMEOUT if self.flex else CPU_RESUME_TIMEOUT

    @property
    def max_nodes(self) -> int:
        return self.node_count_static + self.node_count_dynamic_max

    @property
    def nic_layout(self) -> GpuNicLayout | None:
        """The GPU NICs' layout with `gpuNetworks`, from the GPU catalog."""
        return nic_layout(self.machine_type) if self.gpu_networks is not None else None

    def gpu_network_cidrs(self) -> list[str]:
        """Each extra NIC's subnet, after the first host NIC on the stack's subnet: the
        second host NIC's first on RDMA layouts, then the GPU NICs'."""
        layout = self.nic_layout
        if layout is None or self.gpu_networks is None:
            return []
        return consecutive_ranges(self.gpu_networks.subnet_cidr, layout.nics - 1)

    @property
    def nic_type(self) -> str | None:
        """The template's vNIC type (Toolkit's instance_template `nic_type_map`), None for the
        machine's default."""
        return NIC_TYPES[self.bandwidth_tier]

    def gpus(self) -> GuestAccelerator | None:
        """The GPUs each node has: `gpu`, or the machine type's own."""
        if self.gpu is not None:
            return self.gpu
        fixed = fixed_gpus(self.machine_type)
        if fixed is None:
            return None
        return GuestAccelerator(type=fixed.gpu_type, count=fixed.gpu_count)


def tpu_family(prefix: str) -> tpu_catalog.TpuFamily:
    """A TPU generation's facts from the catalog, by its prefix (`v2`, `v3`, `v4`)."""
    return tpu_catalog.resolve(f"{prefix}-8").family


def cpu_zones(nodeset: CpuNodesetConfig, ctx: StackContext) -> list[str]:
    """The zones a CPU nodeset's nodes may be created in: its own, or `gcp:zone`."""
    return list(nodeset.zones) or [ctx.zone]
