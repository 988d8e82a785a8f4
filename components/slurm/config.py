"""What the user writes for `ai-infra:slurm`: the cluster's name, controller and login groups,
CPU and TPU nodesets, partitions, shared storage and the Slurm knobs Cluster Toolkit exposes,
after its `schedmd-slurm-gcp-v6-*` modules.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, StringConstraints

from catalog import tpu as tpu_catalog
from catalog.gpu import GpuNicLayout, fixed_gpus, nic_layout
from components.base import ConfigModel, matching
from components.buckets import BucketConfig
from components.context import StackContext
from components.network import consecutive_ranges
from components.slurm import scripts
from components.storage import StorageMount
from components.types import (
    Cidr,
    DiskPath,
    GceName,
    ImageProject,
    ImageReference,
    MachineType,
    MountPath,
    Reservation,
    ServiceAccountEmail,
    Zone,
    image_has_tag_or_digest,
    image_registry,
    shadowed_dir,
)

CLUSTER_NAME = r"[a-z](?:[-a-z0-9]{0,18}[a-z0-9])?"
"""Slurm-GCP's rule (`^[a-z]([-a-z0-9]{0,19})$`, controller variables.tf), without a trailing
'-': the name is every VM's network tag, which must end in a letter or digit."""
NODESET_NAME = r"[a-z][a-z0-9]{0,14}"
"""The controller names nodes `<cluster>-<nodeset>-<index>`; Toolkit strips anything but
`[a-z0-9]` from a nodeset name and keeps 14 characters (nodeset-tpu main.tf), and util.py
splits a node name at its last '-'."""
PARTITION_NAME = r"[a-z][a-z0-9-]{0,29}"
LOGIN_GROUP_NAME = NODESET_NAME
"""Login VMs are `<cluster>-<group>-<index>`; util.py turns each '-' of a group's script
name into a folder, so a group name has none."""

SLURM_FAMILIES = ("v2", "v3", "v4")
"""Slurm-GCP v6 creates TPU VMs of these generations only (slurm_files/scripts/tpu.py maps
`V2`, `V3`, `V4` to the TPU API's accelerator types)."""
CORES_PER_WORKER = 8
"""Toolkit's nodeset-tpu module wants one Slurm node per 8 TensorCores: the controller puts
four chips on each TPU VM (tpu.py TPUS_PER_VM = 4). Sizes, zones and TensorCores per chip
of each generation come from the TPU catalog (`components.tpu_catalog`)."""
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
DEFAULT_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
TPU_PARTITION_CONF = {"SuspendTime": "300", "SuspendTimeout": "240", "ResumeTimeout": "600"}
"""Partition defaults for TPU partitions: TPU VMs take minutes to create and delete, longer
than Slurm's default timeouts (Toolkit's schedmd-slurm-gcp-v6-partition)."""
CPU_PARTITION_CONF = {"SuspendTime": "300", "SuspendTimeout": "120", "ResumeTimeout": "300"}
"""The same module's defaults for partitions of Compute Engine VMs."""
SLURM_RELEASE = "25.11.4"
"""The Slurm the pinned image family runs (slurm-gcp 6.12.2 ansible defaults): what reads the
rendered slurm.conf and cloud.conf."""
PartitionValue = Literal["text", "boolean", "uint16", "uint32", "uint64"]
PARTITION_OPTIONS: dict[str, PartitionValue] = {
    "AllocNodes": "text",
    "AllowAccounts": "text",
    "AllowGroups": "text",
    "AllowQos": "text",
    "Alternate": "text",
    "CpuBind": "text",
    "DefCPUPerGPU": "uint64",
    "DefMemPerCPU": "uint64",
    "DefMemPerGPU": "uint64",
    "DefMemPerNode": "uint64",
    "Default": "boolean",
    "DefaultTime": "text",
    "DenyAccounts": "text",
    "DenyQos": "text",
    "DisableRootJobs": "boolean",
    "ExclusiveUser": "boolean",
    "ExclusiveTopo": "boolean",
    "GraceTime": "uint32",
    "Hidden": "boolean",
    "LLN": "boolean",
    "MaxCPUsPerNode": "uint32",
    "MaxCPUsPerSocket": "uint32",
    "MaxMemPerCPU": "uint64",
    "MaxMemPerNode": "uint64",
    "MaxTime": "text",
    "MaxNodes": "uint32",
    "MinNodes": "uint32",
    "Nodes": "text",
    "OverSubscribe": "text",
    "OverTimeLimit": "text",
    "PowerDownOnIdle": "boolean",
    "PreemptMode": "text",
    "Priority": "uint16",
    "PriorityJobFactor": "uint16",
    "PriorityTier": "uint16",
    "QOS": "text",
    "RootOnly": "boolean",
    "ReqResv": "boolean",
    "ResumeTimeout": "uint16",
    "SelectTypeParameters": "text",
    "Shared": "text",
    "State": "text",
    "SuspendTime": "text",
    "SuspendTimeout": "uint16",
    "Topology": "text",
    "TRESBillingWeights": "text",
}
"""The options a slurm.conf partition line takes in Slurm 25.11.4, each with how its value
is read (src/common/read_config.c `_partition_options` and src/common/parse_value.c at tag
slurm-25-11-4-1): slurmctld refuses to start on any other key, or a value the parser
refuses. Slurm reads the keys without case."""
PROGRAM_PARTITION_KEYS = (
    "PartitionName",
    "Nodes",
    "State",
    "Default",
    "OverSubscribe",
    "Shared",
    "PowerDownOnIdle",
    "Topology",
)
"""Partition options the program decides (Slurm-GCP conf.py `partitionlines` writes them, and
`partitionConf` would be spread over them); `Shared` is Slurm's older name of
`OverSubscribe`."""


def partition_option(key: str) -> str | None:
    """The option `key` names, as Slurm spells it, or None when Slurm has none of that name."""
    return _PARTITION_OPTIONS_BY_LOWER.get(key.lower())


_PARTITION_OPTIONS_BY_LOWER = {key.lower(): key for key in PARTITION_OPTIONS}
NIC_TYPES: dict[str, str | None] = {
    "platform_default": None,
    "virtio_enabled": "VIRTIO_NET",
    "gvnic_enabled": "GVNIC",
    "tier_1_enabled": "GVNIC",
}
"""`bandwidth_tier` -> vNIC type, as Toolkit's internal/slurm-gcp/instance_template maps it;
`tier_1_enabled` also sets the egress bandwidth tier TIER_1."""
MAX_NODES_PER_NODESET = 1024
"""A bound of this program's, so that a typo in a count is refused before anything is made."""
ACCOUNT_ROLES = ("ctl", "tpu", "lgn", "cpu")
"""The cluster's accounts: controller, TPU nodes, login nodes, CPU nodes (the last made only
when a CPU nodeset runs as it)."""
SCRIPT_TIMEOUT_MAX = 3600
SLURM_DIRS = ("/slurm",)
"""Where Slurm's scripts live, beside the OS's (`types.SYSTEM_DIRS`, which hold its state
under /var/spool/slurm): no mount at or under these."""
SCHEDMD_IMAGE_PROJECT = scripts.IMAGE_PROJECT


def _pattern(pattern: str, what: str) -> AfterValidator:
    return matching(pattern, f"is not {what}")


ClusterName = Annotated[
    str,
    _pattern(
        CLUSTER_NAME,
        "a Slurm cluster name: a lowercase letter, then up to 19 lowercase letters, digits or "
        "'-', ending with a letter or digit (Slurm-GCP's rule; it is every VM's network tag)",
    ),
]
NodesetName = Annotated[
    str,
    _pattern(
        NODESET_NAME,
        "a nodeset name: a lowercase letter, then up to 14 lowercase letters or digits (no '-')",
    ),
]
LoginGroupName = Annotated[
    str,
    _pattern(
        LOGIN_GROUP_NAME,
        "a login group name: a lowercase letter, then up to 14 lowercase letters or digits "
        "(no '-')",
    ),
]
PartitionName = Annotated[
    str,
    _pattern(
        PARTITION_NAME,
        "a partition name: a lowercase letter, then up to 29 lowercase letters, digits, '-'",
    ),
]
NodeType = Annotated[
    str,
    _pattern(
        r"v[0-9a-z]+-[1-9][0-9]{0,4}",
        "a TPU type as the TPU API spells it: lowercase, no leading zeros, e.g. v4-8, v2-32",
    ),
]
Topology = Annotated[
    str,
    _pattern(r"[1-9]x[1-9](x[1-9])?", "a topology of one-digit dimensions, e.g. 2x2 or 2x2x4"),
]
Scope = Annotated[
    str,
    _pattern(
        r"https://www\.googleapis\.com/auth/[a-z][-a-z0-9._]*",
        "an OAuth scope such as https://www.googleapis.com/auth/cloud-platform",
    ),
]
ConfKey = Annotated[
    str, _pattern(r"[A-Za-z]{2,40}", "a slurm.conf partition option such as MaxTime")
]
ConfValue = Annotated[
    str,
    _pattern(
        r"[A-Za-z0-9_.:,/*+-]{1,200}",
        "a slurm.conf value: letters, digits and _.:,/*+- only, no spaces or newlines",
    ),
]
"""One slurm.conf value: no spaces, quotes or newlines, so a value cannot add a line."""
ScriptText = Annotated[str, StringConstraints(max_length=65536)]


def _tagged(image: str) -> str:
    if not image_has_tag_or_digest(image):
        raise ValueError(
            f"'{image}' names no tag or digest; write REGISTRY/PATH:TAG, e.g. "
            "us-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG"
        )
    return image


def _no_climbing(path: str) -> str:
    if ".." in path.split("/") or "//" in path:
        raise ValueError(
            f"'{path}' climbs out of the export with '..' or has an empty segment; write the "
            "export path as the server names it, e.g. /export/home"
        )
    return path


def _not_reserved(path: str) -> str:
    if reserved := shadowed_dir(path, SLURM_DIRS):
        raise ValueError(
            f"'{path}' would hide {reserved} of the VMs' system or Slurm's own files; "
            "mount under another directory, e.g. /shared or /data"
        )
    return path


ScriptsMirror = Annotated[
    str,
    _pattern(
        r"gs://[a-z0-9][-_.a-z0-9]{1,61}[a-z0-9](/[A-Za-z0-9._-]+)*|/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*",
        "a mirror of the scripts: a Cloud Storage folder such as gs://my-bucket/slurm-scripts, "
        "or an absolute local folder such as /srv/slurm-scripts",
    ),
    AfterValidator(_no_climbing),
]


class AcceleratorConfig(ConfigModel):
    """A TPU by generation and chip topology, as the TPU API's AcceleratorConfig takes it."""

    version: Annotated[
        str,
        _pattern(
            r"V[234]",
            "a TPU generation Slurm-GCP v6 can create (V2, V3 or V4); for newer TPUs use a GKE "
            "slice in ai-infra:tpuSlices",
        ),
    ]
    """TPU generation: `V2`, `V3` or `V4`."""
    topology: Topology
    """Chips along each axis: two axes for V2 and V3 (`2x2`), three for V4 (`2x2x1`)."""


class NetworkStorage(ConfigModel):
    """A file system the VMs mount (Slurm-GCP `network_storage`)."""

    server_ip: Annotated[
        str,
        _pattern(
            r"[A-Za-z0-9](?:[-A-Za-z0-9.]{0,251}[A-Za-z0-9])?(?:@[a-z0-9]{1,16})?",
            "a server address or hostname (Lustre: ADDRESS@tcp)",
        ),
    ]
    """The file server's address or host name (for gcsfuse, unused: the bucket is `remoteMount`)."""
    remote_mount: Annotated[
        str,
        _pattern(r"[A-Za-z0-9._/-]{1,255}", "an export path or bucket name"),
        AfterValidator(_no_climbing),
    ]
    """The export path on the server, or the bucket name for gcsfuse."""
    local_mount: Annotated[MountPath, AfterValidator(_not_reserved)]
    """Where it is mounted on each VM: an absolute path outside the system's and Slurm's
    directories."""
    fs_type: Literal["nfs", "lustre", "gcsfuse", "cifs"]
    """The file system type: `nfs`, `lustre`, `gcsfuse` or `cifs`."""
    mount_options: Annotated[
        str, _pattern(r"[A-Za-z0-9,=._:-]{0,255}", "comma-separated mount options")
    ] = ""
    """Comma-separated mount options, e.g. `defaults,_netdev`."""


def needs_unsigned_modules(
    storage: list[NetworkStorage],
    mounts: Sequence[StorageMount] = (),
    lustre: Collection[str] = (),
) -> bool:
    """Lustre's client is a kernel module SchedMD's image does not sign for Secure Boot: a
    `network_storage` entry of it, or a mount of a volume named in `lustre` (the
    `ai-infra:storage` Lustre volumes)."""
    return any(s.fs_type == "lustre" for s in storage) or any(m.volume in lustre for m in mounts)


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
    docker_image: Annotated[ImageReference, AfterValidator(_tagged)] | None = None
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
    data_disks: list[DiskPath] = Field(default_factory=list, max_length=16)
    """Existing Balanced Persistent Disks to attach to each TPU VM, in the nodeset's zone:
    read-write on a nodeset of one TPU VM, read-only (the only mode several VMs may share)
    on a nodeset that may hold more."""
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=16)
    """File systems to mount in each TPU VM's slurmd container, beside the cluster's."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=16)
    """`ai-infra:storage` volumes to mount in each TPU VM's slurmd container, beside the
    cluster's."""
    service_account_email: ServiceAccountEmail | None = None
    """Defaults to the cluster's dedicated TPU node account."""
    service_account_scopes: list[Scope] = Field(
        default_factory=lambda: list(DEFAULT_SCOPES), min_length=1, max_length=20
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


class GuestAccelerator(ConfigModel):
    """GPUs on each VM of a CPU nodeset (Toolkit's `guest_accelerator`, one entry)."""

    type: Annotated[str, _pattern(r"nvidia-[a-z0-9-]{2,40}", "a GPU type such as nvidia-tesla-t4")]
    """The Compute Engine accelerator type, e.g. `nvidia-tesla-t4`, `nvidia-l4`."""
    count: int = Field(ge=1, le=16)
    """GPUs per VM."""


class NodeImage(ConfigModel):
    """A boot image for a nodeset's VMs, by family or by name: one that runs Slurm-GCP v6
    (SchedMD's, or one built from it)."""

    project: ImageProject = SCHEDMD_IMAGE_PROJECT
    """The project publishing the image."""
    family: GceName | None = None
    """The image family; the newest image of it is used when a VM is created."""
    name: GceName | None = None
    """One image by name, instead of `family`."""

    @property
    def path(self) -> str:
        if self.name is not None:
            return f"projects/{self.project}/global/images/{self.name}"
        return f"projects/{self.project}/global/images/family/{self.family}"


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
    mount_path: MountPath = "/mnt/localssd"
    """Where the striped disks are mounted, world-writable with the sticky bit like /tmp."""


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
    zones: list[Zone] = Field(default_factory=list, max_length=8)
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
    additional_disks: list[AdditionalDisk] = Field(default_factory=list, max_length=8)
    """Persistent disks each node gets beside its boot disk (Toolkit's `additional_disks`)."""
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
        default_factory=lambda: list(DEFAULT_SCOPES), min_length=1, max_length=20
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
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=16)
    """File systems to mount on each node, beside the cluster's."""
    allow_automatic_updates: bool = True
    """Let the image update its OS packages by itself; `false` turns the automatic updates
    of Google's HPC images (and SchedMD's, built on them) off, so that nodes of one job run
    the same packages (metadata `google_disable_automatic_updates`)."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=16)
    """`ai-infra:storage` volumes to mount on each node, beside the cluster's."""

    @property
    def uses_schedmd_image(self) -> bool:
        return self.image.project == SCHEDMD_IMAGE_PROJECT

    @property
    def flex(self) -> bool:
        """Whether the nodes come from flex-start resize requests."""
        return self.dws_flex is not None and self.dws_flex.enabled

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


class PartitionConfig(ConfigModel):
    """One entry of `ai-infra:slurm.partitions`: a queue jobs submit to with `sbatch -p`."""

    name: PartitionName
    """The partition's name, `sbatch -p <name>`."""
    nodesets: list[NodesetName] = Field(min_length=1, max_length=32)
    """Nodesets (by name) whose nodes the partition schedules: all CPU or all TPU."""
    exclusive: bool = True
    """Each job gets nodes of its own, which Slurm-GCP powers down when it ends
    (`enable_job_exclusive`). Partitions of multi-host TPU slices are always exclusive, so
    that a slice holds one job's workers; on any TPU partition a job has whole nodes."""
    default: bool = False
    """The partition jobs go to without `-p`."""
    partition_conf: dict[ConfKey, ConfValue] = Field(default_factory=dict, max_length=50)
    """Extra partition options for slurm.conf (e.g. `MaxTime`), over the defaults
    SuspendTime=300 and, for TPU partitions, SuspendTimeout=240, ResumeTimeout=600 (CPU:
    120, 300): any partition option of Slurm 25.11 in any case, with a value of its type.
    The options the program decides (PartitionName, Nodes, State, Default, OverSubscribe,
    Shared, PowerDownOnIdle, Topology) are refused."""

    def conf(self, *, tpu: bool) -> dict[str, str]:
        """The partition's options, each key as Slurm spells it, so that an option written in
        another case replaces the default rather than repeating it."""
        found = dict(TPU_PARTITION_CONF if tpu else CPU_PARTITION_CONF)
        found.update({partition_option(k) or k: v for k, v in self.partition_conf.items()})
        if self.default:
            found["Default"] = "YES"
        return found


class StateDisk(ConfigModel):
    """The persistent disk holding slurmctld's state, kept across controller replacement."""

    type: Literal["pd-ssd", "pd-balanced", "pd-standard"] = "pd-ssd"
    """Disk type of the state disk."""
    size_gb: int = Field(default=50, ge=10, le=1024)
    """Size of the state disk, in GB."""


class ControllerConfig(ConfigModel):
    """The controller VM `<clusterName>-controller`."""

    machine_type: MachineType = "c2-standard-4"
    """Machine type of the controller VM."""
    disk_type: Literal["pd-ssd", "pd-balanced", "pd-standard"] = "pd-ssd"
    """Boot disk type of the controller VM."""
    disk_size_gb: int = Field(default=50, ge=50, le=2048)
    """Boot disk; the Slurm image needs at least 50 GB."""
    state_disk: StateDisk = Field(default_factory=StateDisk)
    """The persistent disk holding slurmctld's state, kept across controller replacement."""
    zone: Zone | None = None
    """Defaults to `gcp:zone`; must be in `gcp:region`, beside the subnet."""
    startup_script: ScriptText = ""
    """Shell Slurm-GCP's setup runs as root on the controller after it writes the Slurm
    configs and before slurmctld starts."""
    image: NodeImage = Field(default_factory=lambda: NodeImage(family=scripts.IMAGE_FAMILY))
    """Boot image of the controller: one built from SchedMD's image family the pinned scripts
    pair with (default `schedmd-slurm-public/slurm-gcp-6-12-hpc-rocky-linux-8`)."""
    allow_automatic_updates: bool = True
    """Let the image update its OS packages by itself; `false` turns the automatic updates
    of Google's HPC images (and SchedMD's, built on them) off, so that nodes of one job run
    the same packages (metadata `google_disable_automatic_updates`)."""


class LoginGroupConfig(ConfigModel):
    """One entry of `ai-infra:slurm.loginGroups`: login VMs `<clusterName>-<name>-<index>`,
    where users run `sbatch`."""

    name: LoginGroupName = "login"
    """The group's name; VMs are `<clusterName>-<name>-<index>`."""
    count: int = Field(default=1, ge=0, le=8)
    """How many login VMs."""
    machine_type: MachineType = "n2-standard-2"
    """Machine type of the login VMs."""
    disk_size_gb: int = Field(default=50, ge=50, le=2048)
    """Boot disk of each login VM; the Slurm image needs at least 50 GB."""
    startup_script: ScriptText = ""
    """Shell Slurm-GCP's setup runs as root on each of the group's VMs."""
    startup_scripts_timeout: int = Field(default=300, ge=0, le=SCRIPT_TIMEOUT_MAX)
    """Seconds the startup script may run (0: no limit)."""
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=16)
    """File systems to mount on the group's VMs, beside the cluster's."""
    image: NodeImage = Field(default_factory=lambda: NodeImage(family=scripts.IMAGE_FAMILY))
    """Boot image of the group's VMs: one built from SchedMD's image family the pinned
    scripts pair with (default `schedmd-slurm-public/slurm-gcp-6-12-hpc-rocky-linux-8`)."""
    allow_automatic_updates: bool = True
    """Let the image update its OS packages by itself; `false` turns the automatic updates
    of Google's HPC images (and SchedMD's, built on them) off, so that nodes of one job run
    the same packages (metadata `google_disable_automatic_updates`)."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=16)
    """`ai-infra:storage` volumes to mount on the group's VMs, beside the cluster's."""


class HomeConfig(ConfigModel):
    """Where `/home` lives: a Filestore share every VM mounts (as Toolkit's examples do), or
    the controller's boot disk, exported over NFS and lost with it."""

    filestore: bool = True
    """A Filestore instance `<prefix>-slurm-<clusterName>-home` in the controller's zone.
    `false`: /home is on the controller's boot disk, which a new image or machine type
    replaces, and everything in /home with it (slurmctld's state disk keeps only the
    scheduler's state)."""
    tier: Literal["BASIC_HDD", "BASIC_SSD", "ZONAL"] = "BASIC_HDD"
    """Filestore tier (Toolkit's filestore module defaults to BASIC_SSD)."""
    capacity_gb: int = Field(default=1024, ge=1024, le=102400)
    """Size in GiB: BASIC_HDD and ZONAL from 1024, BASIC_SSD from 2560."""


class CloudParameters(ConfigModel):
    """Slurm-wide options Toolkit exposes as `cloud_parameters` (Slurm-GCP conf.py writes them
    into cloud.conf); an unset key keeps Slurm-GCP's default."""

    resume_rate: int | None = Field(default=None, ge=0, le=10000)
    """Nodes resumed per minute at most (`ResumeRate`; default 0, unlimited)."""
    resume_timeout: int | None = Field(default=None, ge=60, le=86400)
    """Seconds a node may take to boot and register (`ResumeTimeout`; default 300);
    partitions override it."""
    suspend_rate: int | None = Field(default=None, ge=0, le=10000)
    """Nodes suspended per minute at most (`SuspendRate`; default 0, unlimited)."""
    suspend_timeout: int | None = Field(default=None, ge=30, le=86400)
    """Seconds a node may take to power down (`SuspendTimeout`; default 300)."""
    slurmd_timeout: int | None = Field(default=None, ge=10, le=86400)
    """`SlurmdTimeout` (default 300)."""
    unkillable_step_timeout: int | None = Field(default=None, ge=10, le=86400)
    """`UnkillableStepTimeout` (default 300)."""
    scheduler_parameters: (
        list[
            Annotated[
                str,
                _pattern(
                    r"[a-z][a-z0-9_]{1,40}(=[A-Za-z0-9_.:-]{1,40})?",
                    "a SchedulerParameters option such as bf_continue or bf_window=2880",
                ),
            ]
        ]
        | None
    ) = Field(default=None, max_length=40)
    """`SchedulerParameters`, e.g. `[bf_continue, bf_window=2880]` (default bf_continue,
    salloc_wait_nodes, ignore_prefer_validation)."""
    tree_width: int | None = Field(default=None, ge=1, le=65533)
    """`TreeWidth` (default 128)."""
    prolog_flags: (
        list[
            Literal[
                "Alloc", "Contain", "DeferBatch", "ForceRequeueOnFail", "NoHold", "RunInJob", "X11"
            ]
        ]
        | None
    ) = None
    """`PrologFlags`, e.g. `[Alloc, Contain]`."""
    private_data: (
        list[
            Literal[
                "accounts",
                "events",
                "jobs",
                "nodes",
                "partitions",
                "reservations",
                "usage",
                "users",
            ]
        ]
        | None
    ) = None
    """`PrivateData`: what users other than the owner may not see."""


class JobScript(ConfigModel):
    """A script Slurm runs around every job, on the job's nodes."""

    name: Annotated[
        str,
        _pattern(
            r"[a-z0-9][-_a-z0-9]{0,40}\.[a-z0-9]{1,8}",
            "a script file name with one extension, e.g. gpu-check.sh",
        ),
    ]
    """File name; Slurm runs the scripts in name order."""
    content: Annotated[ScriptText, StringConstraints(min_length=2)]
    """The script, starting with its `#!` line."""


class SlurmConfig(ConfigModel):
    """`ai-infra:slurm`: a Slurm-GCP v6 cluster with CPU and TPU nodesets."""

    REPLACED_KEYS: ClassVar[dict[str, str]] = {
        "login": "login became loginGroups, a list of groups each with its own name, count and "
        "machine type: write loginGroups: [{name: login, count: 2}] (the group named login "
        "keeps the VMs <clusterName>-login-<index>)",
    }
    """Keys of earlier releases, with what to write instead."""

    cluster_name: ClusterName
    """Names the controller, login and node VMs; unique in the project."""
    controller: ControllerConfig = Field(default_factory=ControllerConfig)
    """The controller VM `<clusterName>-controller` and its state disk."""
    login_groups: list[LoginGroupConfig] = Field(
        default_factory=lambda: [LoginGroupConfig()], max_length=8
    )
    """Login VM groups; by default one group `login` of one `n2-standard-2`."""
    cpu_nodesets: list[CpuNodesetConfig] = Field(default_factory=list, max_length=32)
    """Compute Engine nodesets; a multi-host TPU nodeset needs at least one."""
    tpu_nodesets: list[TpuNodesetConfig] = Field(default_factory=list, max_length=32)
    """TPU nodesets; Slurm-GCP v6 supports v2, v3 and v4."""
    partitions: list[PartitionConfig] = Field(default_factory=list, max_length=32)
    """Partitions over the nodesets; at most one `default`."""
    debug_partition: bool = False
    """Add Toolkit's example `debug` partition: nodeset `debug` of up to 4 dynamic
    n2-standard-2 VMs, shared (not exclusive), the default unless another partition is."""
    home: HomeConfig = Field(default_factory=HomeConfig)
    """Where `/home` lives (default a Filestore share)."""
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=16)
    """File systems every VM of the cluster mounts: controller, login and every nodeset."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=16)
    """`ai-infra:storage` volumes every login VM and node mounts, by name: Slurm-GCP's
    `network_storage` entries are generated from them (the controller mounts the file systems
    too; it counts an entry without a server, a bucket, as its own export and skips it)."""
    cloud_parameters: CloudParameters = Field(default_factory=CloudParameters)
    """Slurm-wide timeouts, rates and scheduler options (Toolkit's `cloud_parameters`)."""
    prolog_scripts: list[JobScript] = Field(default_factory=list, max_length=16)
    """Scripts slurmd runs before each job on its nodes (`Prolog`)."""
    epilog_scripts: list[JobScript] = Field(default_factory=list, max_length=16)
    """Scripts slurmd runs after each job on its nodes (`Epilog`)."""
    scripts_mirror: ScriptsMirror | None = None
    """Where `pulumi up` reads the pinned Slurm-GCP scripts instead of GitHub: a Cloud
    Storage folder `gs://BUCKET/PATH` or a local folder, laid out as the scripts folder of
    Cluster Toolkit v1.95.0; every file must still match its pinned sha256."""

    @property
    def bucket_key(self) -> str:
        """The Slurm bucket's name among buckets, as if it were an `ai-infra:buckets` entry."""
        return f"slurm-{self.cluster_name}"

    def bucket_name(self, project: str, prefix: str) -> str:
        # Unvalidated: the checks that use it report a bad cluster name themselves.
        return BucketConfig.model_construct(name=self.bucket_key).bucket_name(project, prefix)

    @property
    def all_cpu_nodesets(self) -> list[CpuNodesetConfig]:
        """The CPU nodesets, with Toolkit's debug nodeset when asked for."""
        if not self.debug_partition:
            return list(self.cpu_nodesets)
        return [*self.cpu_nodesets, DEBUG_NODESET]

    @property
    def all_partitions(self) -> list[PartitionConfig]:
        """The partitions, with Toolkit's debug partition when asked for."""
        if not self.debug_partition:
            return list(self.partitions)
        debug = DEBUG_PARTITION.model_copy(
            update={"default": not any(p.default for p in self.partitions)}
        )
        return [*self.partitions, debug]

    @property
    def cpu_names(self) -> set[str]:
        return {n.name for n in self.all_cpu_nodesets}

    @property
    def controller_name(self) -> str:
        return f"{self.cluster_name}-controller"

    def login_names(self, group: LoginGroupConfig) -> list[str]:
        """A group's login VMs, `<cluster>-<group>-<index>`."""
        return [f"{self.cluster_name}-{group.name}-{i}" for i in range(group.count)]

    def is_tpu_partition(self, partition: PartitionConfig) -> bool:
        return not (set(partition.nodesets) & self.cpu_names)

    def mounts_lustre(self, lustre: Collection[str] = ()) -> bool:
        """Whether every VM of the cluster mounts Lustre (then Secure Boot is off); `lustre`
        names the `ai-infra:storage` Lustre volumes."""
        return needs_unsigned_modules(self.network_storage, self.storage, lustre)

    def secure_boot(self, nodeset: CpuNodesetConfig, lustre: Collection[str] = ()) -> bool:
        """Shielded VM Secure Boot on a CPU nodeset's VMs: its own `secureBoot`, else on
        unless SchedMD's image must load unsigned kernel modules there: NVIDIA drivers, or the
        Lustre client for the cluster's storage or the nodeset's (compute nodes mount both)."""
        if nodeset.secure_boot is not None:
            return nodeset.secure_boot
        return nodeset.gpus() is None and not (
            self.mounts_lustre(lustre)
            or needs_unsigned_modules(nodeset.network_storage, nodeset.storage, lustre)
        )


DEBUG_NODESET = CpuNodesetConfig.model_validate(
    {"name": "debug", "machineType": "n2-standard-2", "nodeCountDynamicMax": 4}
)
"""Toolkit's hpc-slurm example: `debug_nodeset`, 4 dynamic n2-standard-2."""
DEBUG_PARTITION = PartitionConfig.model_validate(
    {"name": "debug", "nodesets": ["debug"], "exclusive": False}
)


def account_id(ctx: StackContext, role: str) -> str:
    """The id of one of the cluster's accounts (`ACCOUNT_ROLES`); one Slurm cluster per
    stack, so the prefix keeps them unique."""
    return ctx.name("slurm", role)


def tpu_family(prefix: str) -> tpu_catalog.TpuFamily:
    """A TPU generation's facts from the catalog, by its prefix (`v2`, `v3`, `v4`)."""
    return tpu_catalog.resolve(f"{prefix}-8").family
