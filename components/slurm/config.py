"""What the user writes for `ai-infra:slurm`: the cluster's name, controller and login VMs,
TPU nodesets and partitions, after Cluster Toolkit's `schedmd-slurm-gcp-v6-*` modules.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from components import tpu_catalog
from components.base import ConfigModel, matching
from components.buckets import BucketConfig
from components.types import (
    DiskPath,
    GceName,
    ImageReference,
    MachineType,
    MountPath,
    ServiceAccountEmail,
    Zone,
    image_has_tag_or_digest,
)

CLUSTER_NAME = r"[a-z][-a-z0-9]{0,9}"
NODESET_NAME = r"[a-z][a-z0-9]{0,14}"
"""The controller names TPU VMs `<cluster>-<nodeset>-<index>`; Toolkit strips anything but
`[a-z0-9]` from a nodeset name and keeps 14 characters (nodeset-tpu main.tf)."""
PARTITION_NAME = r"[a-z][a-z0-9-]{0,29}"

SLURM_FAMILIES = ("v2", "v3", "v4")
"""Slurm-GCP v6 creates TPU VMs of these generations only (slurm_files/scripts/tpu.py maps
`V2`, `V3`, `V4` to the TPU API's accelerator types)."""
V2_V3_CORES_PER_CHIP = 2
"""TensorCores per chip of v2 and v3 (Cloud TPU "System architecture"); v4's comes from the
catalog."""
CORES_PER_WORKER = 8
"""Toolkit's nodeset-tpu module wants one Slurm node per 8 TensorCores: the controller puts
four chips on each TPU VM (tpu.py TPUS_PER_VM = 4)."""
NODE_TYPES: dict[str, tuple[int, ...]] = {
    "v2": (8, 32, 128, 256, 512),
    "v3": (8, 32, 64, 128, 256, 512, 1024, 2048),
}
"""Accelerator sizes (TensorCores) Cloud TPU offers for v2 and v3 ("TPU v2", "TPU v3");
v4 sizes come from the catalog."""
SINGLE_HOST_TYPES = ("v2-8", "v3-8", "v4-8")
"""Toolkit passes `preemptible` and `preserve_tpu` on only for these (internal/slurm-gcp/
nodeset_tpu `simple_nodes`) and silently drops them for any other type."""
V2_V3_ZONES: dict[str, tuple[str, ...]] = {
    "v2-8": ("us-central1-b", "us-central1-c"),
    "v3-8": ("us-central1-a", "us-central1-b"),
    "v2-pod": ("us-central1-a",),
    "v3-pod": (),
}
"""Cloud TPU "TPU regions and zones", North America rows: v2-32 to v2-512 (`v2-pod`) in
us-central1-a; larger v3 types are listed only in Europe, whose zones could not be read."""
TF_RUNTIMES = (
    "2.12.0",
    "2.12.1",
    "2.13.0",
    "2.13.1",
    "2.14.0",
    "2.14.1",
)
"""TensorFlow versions with a TPU VM runtime named `tpu-vm-tf-<version>`, the only name the
controller requests (tpu.py). From TF 2.15 the runtimes carry `-pjrt` or `-se` (Cloud TPU
"TPU software versions"), which the controller cannot ask for. Older runtimes have no
SchedMD image."""
DEFAULT_IMAGE_TF_VERSIONS = ("2.12.1", "2.13.0", "2.13.1", "2.14.0", "2.14.1")
"""TF versions of SchedMD's published `tpu:slurm-gcp-6-9-tf-<version>` images (slurm-gcp
docs/images.md) that also have a `tpu-vm-tf-` runtime."""
DEFAULT_TF_VERSION = "2.14.0"
DEFAULT_DOCKER_IMAGE = "us-docker.pkg.dev/schedmd-slurm-public/tpu/slurm-gcp-6-9:tf-{tf}"
"""Toolkit's default slurmd image for TPU VMs (internal/slurm-gcp/nodeset_tpu)."""
DEFAULT_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
TPU_PARTITION_CONF = {"SuspendTime": "300", "SuspendTimeout": "240", "ResumeTimeout": "600"}
"""Partition defaults for TPU partitions: TPU VMs take minutes to create and delete, longer
than Slurm's default timeouts (Toolkit's TPU examples)."""
MAX_NODES_PER_NODESET = 1024
"""A bound of this program's, so that a typo in a count is refused before anything is made."""
ACCOUNT_ROLES = ("ctl", "tpu", "lgn")


def _pattern(pattern: str, what: str) -> AfterValidator:
    return matching(pattern, f"is not {what}")


ClusterName = Annotated[
    str,
    _pattern(
        CLUSTER_NAME, "a Slurm cluster name: a lowercase letter, then up to 9 letters, digits, '-'"
    ),
]
NodesetName = Annotated[
    str,
    _pattern(
        NODESET_NAME,
        "a nodeset name: a lowercase letter, then up to 14 lowercase letters or digits (no '-')",
    ),
]
PartitionName = Annotated[
    str,
    _pattern(
        PARTITION_NAME,
        "a partition name: a lowercase letter, then up to 29 lowercase letters, digits, '-'",
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
    str, _pattern(r"[A-Z][A-Za-z]{1,40}", "a slurm.conf partition option such as MaxTime")
]
ConfValue = Annotated[
    str,
    _pattern(
        r"[A-Za-z0-9_.:,/*+-]{1,200}",
        "a slurm.conf value: letters, digits and _.:,/*+- only, no spaces or newlines",
    ),
]
"""One slurm.conf value: no spaces, quotes or newlines, so a value cannot add a line."""


def _tagged(image: str) -> str:
    if not image_has_tag_or_digest(image):
        raise ValueError(
            f"'{image}' names no tag or digest; write REGISTRY/PATH:TAG, e.g. "
            "us-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG"
        )
    return image


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
    """A file system every TPU VM of the nodeset mounts (Slurm-GCP `network_storage`)."""

    server_ip: Annotated[
        str,
        _pattern(
            r"[A-Za-z0-9](?:[-A-Za-z0-9.]{0,251}[A-Za-z0-9])?", "a server address or hostname"
        ),
    ]
    """The file server's address or host name (for gcsfuse, unused: the bucket is `remoteMount`)."""
    remote_mount: Annotated[
        str, _pattern(r"[A-Za-z0-9._/-]{1,255}", "an export path or bucket name")
    ]
    """The export path on the server, or the bucket name for gcsfuse."""
    local_mount: MountPath
    """Where it is mounted on each TPU VM, an absolute path."""
    fs_type: Literal["nfs", "lustre", "gcsfuse", "cifs"]
    """The file system type: `nfs`, `lustre`, `gcsfuse` or `cifs`."""
    mount_options: Annotated[
        str, _pattern(r"[A-Za-z0-9,=._:-]{0,255}", "comma-separated mount options")
    ] = ""
    """Comma-separated mount options, e.g. `defaults,_netdev`."""


class TpuNodesetConfig(ConfigModel):
    """One entry of `ai-infra:slurm.tpuNodesets`: TPU VMs the controller creates on demand."""

    name: NodesetName
    """Nodes are named `<clusterName>-<name>-<index>`."""
    node_type: str | None = None
    """Accelerator type, e.g. `v2-8`, `v3-8`, `v4-8`; or give `acceleratorConfig`."""
    accelerator_config: AcceleratorConfig | None = None
    """Generation and topology instead of `nodeType`."""
    tf_version: str | None = None
    """TensorFlow version of the TPU runtime `tpu-vm-tf-<tfVersion>` (default 2.14.0); TF
    2.15 and later have no runtime of that name."""
    runtime_version: str | None = None
    """The TPU runtime by its name, `tpu-vm-tf-<version>`, instead of `tfVersion`."""
    docker_image: Annotated[ImageReference, AfterValidator(_tagged)] | None = None
    """The slurmd image each TPU VM runs; defaults to
    `us-docker.pkg.dev/schedmd-slurm-public/tpu/slurm-gcp-6-9:tf-<tfVersion>`."""
    preemptible: bool = False
    """Preemptible TPU VMs (single-host types only)."""
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
    """Existing disks to attach to each TPU VM."""
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=16)
    """File systems to mount on each TPU VM."""
    service_account_email: ServiceAccountEmail | None = None
    """Defaults to the cluster's dedicated TPU node account."""
    service_account_scopes: list[Scope] = Field(
        default_factory=lambda: list(DEFAULT_SCOPES), min_length=1, max_length=20
    )
    """OAuth scopes of the TPU VMs' account; `cloud-platform` leaves access to IAM."""
    startup_script: Annotated[str, StringConstraints(max_length=65536)] = ""
    """Shell run on each TPU VM after Slurm-GCP's setup."""
    zone: Zone | None = None
    """One zone per nodeset; defaults to `gcp:zone`; must be in `gcp:region` and offer the
    family."""
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
            return chips * _cores_per_chip(accelerator.version.lower())
        assert self.node_type is not None
        return int(self.node_type.rsplit("-", 1)[1])

    @property
    def workers_per_slice(self) -> int:
        return max(1, self.cores // CORES_PER_WORKER)


class PartitionConfig(ConfigModel):
    """One entry of `ai-infra:slurm.partitions`: a queue jobs submit to with `sbatch -p`."""

    name: PartitionName
    """The partition's name, `sbatch -p <name>`."""
    nodesets: list[NodesetName] = Field(min_length=1, max_length=32)
    """TPU nodesets (by name) whose nodes the partition schedules."""
    exclusive: bool = True
    """One job per node (`enable_job_exclusive`); Slurm-GCP powers exclusive nodes down when
    the job ends."""
    default: bool = False
    """The partition jobs go to without `-p`."""
    partition_conf: dict[ConfKey, ConfValue] = Field(default_factory=dict, max_length=50)
    """Extra partition options for slurm.conf, over the TPU defaults SuspendTime=300,
    SuspendTimeout=240, ResumeTimeout=600."""

    @property
    def conf(self) -> dict[str, str]:
        found = dict(TPU_PARTITION_CONF)
        found.update(self.partition_conf)
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


class LoginConfig(ConfigModel):
    """Login VMs `<clusterName>-login-<index>`, where users run `sbatch`."""

    count: int = Field(default=1, ge=0, le=8)
    """How many login VMs."""
    machine_type: MachineType = "n2-standard-2"
    """Machine type of the login VMs."""
    disk_size_gb: int = Field(default=50, ge=50, le=2048)
    """Boot disk of each login VM; the Slurm image needs at least 50 GB."""


class SlurmConfig(ConfigModel):
    """`ai-infra:slurm`: a Slurm-GCP v6 cluster with TPU nodesets."""

    cluster_name: ClusterName
    """Names the controller, login and TPU VMs; unique in the project."""
    controller: ControllerConfig = Field(default_factory=ControllerConfig)
    """The controller VM `<clusterName>-controller` and its state disk."""
    login: LoginConfig = Field(default_factory=LoginConfig)
    """Login VMs `<clusterName>-login-<index>`, where users run `sbatch`."""
    tpu_nodesets: list[TpuNodesetConfig] = Field(default_factory=list, max_length=32)
    """TPU nodesets; Slurm-GCP v6 supports v2, v3 and v4."""
    partitions: list[PartitionConfig] = Field(default_factory=list, max_length=32)
    """Partitions over the nodesets; at most one `default`."""

    @property
    def bucket_key(self) -> str:
        """The Slurm bucket's name among buckets, as if it were an `ai-infra:buckets` entry."""
        return f"slurm-{self.cluster_name}"

    def bucket_name(self, project: str, prefix: str) -> str:
        # Unvalidated: the checks that use it report a bad cluster name themselves.
        return BucketConfig.model_construct(name=self.bucket_key).bucket_name(project, prefix)


def _cores_per_chip(family: str) -> int:
    if family in NODE_TYPES:
        return V2_V3_CORES_PER_CHIP
    return tpu_catalog.resolve(f"{family}-8").family.cores_per_chip
