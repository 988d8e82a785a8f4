"""`ai-infra:slurm`: a Slurm-GCP v6 cluster whose TPU nodesets the controller turns into Cloud
TPU VMs on demand, after Cluster Toolkit's `schedmd-slurm-gcp-v6-nodeset-tpu`, `-partition` and
`-controller` modules. Only TPU nodesets: CPU and GPU nodesets, accounting databases and
high-availability controllers are not built here.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Annotated, Any, Literal

import pulumi
import pulumi_gcp as gcp
import yaml
from pydantic import AfterValidator, Field, SkipValidation, StringConstraints

from components import locations, slurm_boot, slurm_scripts, tpu_catalog
from components.base import (
    Component,
    ConfigModel,
    Problem,
    WiringModel,
    duplicate_names,
    matching,
    service_account_email,
    slug,
)
from components.buckets import Bucket, BucketArgs, BucketConfig, grant_bucket_access
from components.network import IAP_TCP_FORWARDING_RANGE, subnet_name
from components.slurm_cleanup import TpuCleanup, TpuCleanupProvider
from components.slurm_scripts import ScriptsProvider, SlurmScripts

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


def account_id(prefix: str, role: str) -> str:
    """The id of the cluster's controller (`ctl`), TPU node (`tpu`) or login (`lgn`)
    service account; one Slurm cluster per stack, so the prefix keeps them unique."""
    return f"{prefix}-slurm-{role}"


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
MachineType = Annotated[
    str, _pattern(r"[a-z][a-z0-9]*-[a-z0-9-]+", "a Compute Engine machine type (c2-standard-4)")
]
Zone = Annotated[str, _pattern(r"[a-z]+-[a-z]+[0-9]{1,2}-[a-z]", "a zone such as us-central2-b")]
Topology = Annotated[
    str,
    _pattern(r"[1-9]x[1-9](x[1-9])?", "a topology of one-digit dimensions, e.g. 2x2 or 2x2x4"),
]
ServiceAccountEmail = Annotated[
    str,
    _pattern(
        r"[a-z][-a-z0-9]{4,28}[a-z0-9]@[a-z][-a-z0-9]{4,28}[a-z0-9]\.iam\.gserviceaccount\.com",
        "a user-managed service account email (NAME@PROJECT.iam.gserviceaccount.com)",
    ),
]
Scope = Annotated[
    str,
    _pattern(
        r"https://www\.googleapis\.com/auth/[a-z][-a-z0-9._]*",
        "an OAuth scope such as https://www.googleapis.com/auth/cloud-platform",
    ),
]
DiskSource = Annotated[
    str,
    _pattern(
        r"projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/zones/[a-z]+-[a-z]+[0-9]{1,2}-[a-z]/disks/"
        r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?",
        "a disk: projects/PROJECT/zones/ZONE/disks/NAME",
    ),
]
MountPath = Annotated[
    str,
    _pattern(r"(/[A-Za-z0-9._-]+)+/?", "an absolute path of letters, digits, '.', '_', '-'"),
]
SubnetName = Annotated[
    str, _pattern(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?", "a subnetwork name such as ai-dev-subnet")
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
    docker_image: (
        Annotated[
            str,
            _pattern(
                r"[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(:[A-Za-z0-9._-]{1,128}|@sha256:[0-9a-f]{64})",
                "an image reference such as us-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG",
            ),
        ]
        | None
    ) = None
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
    data_disks: list[DiskSource] = Field(default_factory=list, max_length=16)
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
    subnetwork: SubnetName | None = None
    """Defaults to the stack's subnet (which has Private Google Access). Another subnet
    needs `enablePublicIps`, since its Private Google Access cannot be checked here."""

    @property
    def tf(self) -> str:
        """The TensorFlow version the runtime is named after."""
        if self.runtime_version is not None:
            return self.runtime_version.removeprefix("tpu-vm-tf-")
        return self.tf_version or DEFAULT_TF_VERSION

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


def describe(config: SlurmConfig, *, zone: str) -> list[str]:
    """The offline plan's summary: nodesets with their workers per slice, and partitions."""
    lines = [
        f"  cluster {config.cluster_name}: controller {config.controller.machine_type}, "
        f"{config.login.count} x {config.login.machine_type} login"
    ]
    for n in config.tpu_nodesets:
        shape = n.node_type or (
            f"{n.accelerator_config.version} {n.accelerator_config.topology}"
            if n.accelerator_config
            else "?"
        )
        flags = [f for f, on in (("preemptible", n.preemptible), ("reserved", n.reserved)) if on]
        lines.append(
            f"  nodeset {n.name}: {shape} in {n.zone or zone}, {n.workers_per_slice} worker(s) "
            f"per slice, {n.node_count_static} static + up to {n.node_count_dynamic_max} "
            f"dynamic nodes, runtime tpu-vm-tf-{n.tf}{''.join(f', {f}' for f in flags)}"
        )
    for p in config.partitions:
        lines.append(
            f"  partition {p.name}{' (default)' if p.default else ''}: "
            f"{', '.join(p.nodesets)}{', exclusive' if p.exclusive else ''}"
        )
    return lines


def _family_sizes(family: str) -> tuple[int, ...]:
    if family in NODE_TYPES:
        return NODE_TYPES[family]
    return tuple(tpu_catalog.valid_sizes(family))


def _zones_for(nodeset: TpuNodesetConfig) -> tuple[str, ...]:
    family = nodeset.family
    if family == "v4":
        return tpu_catalog.resolve("v4-8").family.zones
    key = f"{family}-8" if nodeset.cores == CORES_PER_WORKER else f"{family}-pod"
    return V2_V3_ZONES[key]


def _type_problems(nodeset: TpuNodesetConfig) -> list[Problem]:
    """Exactly one of nodeType and acceleratorConfig, naming a v2, v3 or v4 TPU."""
    if (nodeset.node_type is None) == (nodeset.accelerator_config is None):
        return [
            Problem(
                ("nodeType",),
                "give exactly one of nodeType (e.g. v4-8) and acceleratorConfig "
                "({version: V4, topology: 2x2x1})",
            )
        ]
    if nodeset.node_type is not None:
        match = re.fullmatch(r"(v[0-9a-z]+)-([0-9]{1,5})", nodeset.node_type)
        family = match[1] if match else None
        if family not in SLURM_FAMILIES:
            return [
                Problem(
                    ("nodeType",),
                    f"'{nodeset.node_type}' is not a TPU type Slurm-GCP v6 can create: its TPU "
                    "nodesets run v2, v3 and v4 only (e.g. v4-8); for newer TPUs use a GKE "
                    "slice in ai-infra:tpuSlices",
                )
            ]
        assert match is not None
        sizes = _family_sizes(family)
        if int(match[2]) not in sizes:
            shown = ", ".join(f"{family}-{s}" for s in sizes)
            return [
                Problem(
                    ("nodeType",),
                    f"'{nodeset.node_type}' is not a Cloud TPU type; {family} sizes are {shown}",
                )
            ]
        return []
    accelerator = nodeset.accelerator_config
    assert accelerator is not None
    axes = accelerator.topology.count("x") + 1
    wanted = 3 if accelerator.version == "V4" else 2
    if axes != wanted:
        return [
            Problem(
                ("acceleratorConfig", "topology"),
                f"{accelerator.version} topologies have {wanted} axes (e.g. "
                f"{'2x2x1' if wanted == 3 else '2x2'}), not '{accelerator.topology}'",
            )
        ]
    family = accelerator.version.lower()
    if family == "v4":
        try:
            tpu_catalog.resolve(f"v4-{nodeset.cores}", accelerator.topology)
        except tpu_catalog.CatalogError as error:
            return [Problem(("acceleratorConfig", "topology"), str(error))]
    elif nodeset.cores not in NODE_TYPES[family]:
        return [
            Problem(
                ("acceleratorConfig", "topology"),
                f"{accelerator.topology} is {nodeset.cores} TensorCores, not a {family} size; "
                f"{family} sizes are {', '.join(str(s) for s in NODE_TYPES[family])} TensorCores",
            )
        ]
    return []


def _runtime_problems(nodeset: TpuNodesetConfig) -> list[Problem]:
    if nodeset.tf_version is not None and nodeset.runtime_version is not None:
        return [
            Problem(("runtimeVersion",), "give tfVersion or runtimeVersion, not both"),
        ]
    key = "runtimeVersion" if nodeset.runtime_version is not None else "tfVersion"
    known = ", ".join(TF_RUNTIMES)
    if nodeset.runtime_version is not None and not nodeset.runtime_version.startswith("tpu-vm-tf-"):
        return [
            Problem(
                (key,),
                f"'{nodeset.runtime_version}': the Slurm-GCP v6 controller only requests "
                f"runtimes named tpu-vm-tf-<version>; use one of tpu-vm-tf-{{{known}}}",
            )
        ]
    if nodeset.tf not in TF_RUNTIMES:
        return [
            Problem(
                (key,),
                f"'{nodeset.tf}' has no TPU runtime tpu-vm-tf-{nodeset.tf} (from TF 2.15 "
                f"runtimes end in -pjrt or -se, which the controller cannot request); use one "
                f"of {known}",
            )
        ]
    if nodeset.docker_image is None and nodeset.tf not in DEFAULT_IMAGE_TF_VERSIONS:
        return [
            Problem(
                (key,),
                f"SchedMD publishes no slurmd image for TF {nodeset.tf}; use one of "
                f"{', '.join(DEFAULT_IMAGE_TF_VERSIONS)} or set dockerImage to your own build",
            )
        ]
    return []


def nodeset_problems(
    nodeset: TpuNodesetConfig, *, zone: str, region: str, stack_subnet: str
) -> list[Problem]:
    """Checks of one nodeset, given its resolved zone and the stack's region and subnet."""
    found = _type_problems(nodeset) + _runtime_problems(nodeset)
    if found[:1] and found[0].path[0] in ("nodeType", "acceleratorConfig"):
        return found
    workers = nodeset.workers_per_slice
    if workers > 1:
        found.append(
            Problem(
                ("nodeType" if nodeset.node_type else "acceleratorConfig",),
                f"a {nodeset.cores}-TensorCore slice spans {workers} TPU VMs, and Slurm-GCP v6 "
                "keeps a multi-host slice's workers together with a switch topology it writes "
                "only when a CPU nodeset exists (conf.py TopologyPlugin), which this program "
                "does not build; use a single-host type (v2-8, v3-8, v4-8) or a GKE slice in "
                "ai-infra:tpuSlices",
            )
        )
    for key, count in (
        ("nodeCountStatic", nodeset.node_count_static),
        ("nodeCountDynamicMax", nodeset.node_count_dynamic_max),
    ):
        if count % workers:
            found.append(
                Problem(
                    (key,),
                    f"{count} is not a multiple of the {workers} workers per slice "
                    f"({nodeset.cores} TensorCores / {CORES_PER_WORKER}); use "
                    f"{(count // workers) * workers or workers} or "
                    f"{(count // workers + 1) * workers}",
                )
            )
    if max(nodeset.node_count_static, nodeset.node_count_dynamic_max) < workers:
        found.append(
            Problem(
                ("nodeCountDynamicMax",),
                f"the nodeset can never hold a whole slice: set nodeCountDynamicMax or "
                f"nodeCountStatic to at least {workers} (the workers per slice)",
            )
        )
    registry = nodeset.image.split("/", 1)[0]
    if registry not in slurm_boot.DOCKER_REGISTRIES:
        found.append(
            Problem(
                ("dockerImage",),
                f"TPU VMs pull with Docker authenticated to "
                f"{' and '.join(slurm_boot.DOCKER_REGISTRIES)} only, not {registry}; push the "
                "image to a us-docker.pkg.dev repository",
            )
        )
    if nodeset.preemptible and nodeset.reserved:
        found.append(
            Problem(
                ("preemptible",),
                "a nodeset cannot be both preemptible and reserved; drop one",
            )
        )
    for key, value in (("preemptible", nodeset.preemptible), ("preserveTpu", nodeset.preserve_tpu)):
        if value and nodeset.node_type not in SINGLE_HOST_TYPES:
            found.append(
                Problem(
                    (key,),
                    f"only single-host node types ({', '.join(SINGLE_HOST_TYPES)}) can be "
                    "preempted or preserved; Slurm-GCP silently ignores it otherwise; set "
                    "nodeType to one of them or remove it",
                )
            )
    if problem := locations.zone_problem(zone, region):
        found.append(Problem(("zone",), f"{problem}; a nodeset's TPU VMs join the stack's subnet"))
    elif zone not in (zones := _zones_for(nodeset)):
        found.append(
            Problem(
                ("zone",),
                f"Cloud TPU offers {nodeset.node_type or nodeset.family} in "
                f"{', '.join(zones) or 'no zone this program knows'}, not {zone}; pick one of "
                "those (gcp:region must hold it)",
            )
        )
    subnet = nodeset.subnetwork or stack_subnet
    if subnet != stack_subnet and not nodeset.enable_public_ips:
        found.append(
            Problem(
                ("subnetwork",),
                f"TPU VMs without public IPs need Private Google Access, which only the stack's "
                f"own subnet '{stack_subnet}' is known to have; remove subnetwork or set "
                "enablePublicIps: true",
            )
        )
    return found


def problems(
    config: SlurmConfig, *, project: str, zone: str, region: str, prefix: str, buckets: list[str]
) -> list[Problem]:
    """Cross-checks of `ai-infra:slurm`, with paths relative to it."""
    stack_subnet = subnet_name(prefix)
    found = [
        p.under("tpuNodesets")
        for p in duplicate_names([n.name for n in config.tpu_nodesets], "tpuNodesets")
    ]
    found += [
        p.under("partitions")
        for p in duplicate_names([p.name for p in config.partitions], "partitions")
    ]
    valid: dict[str, TpuNodesetConfig] = {}
    for i, nodeset in enumerate(config.tpu_nodesets):
        own = nodeset_problems(
            nodeset, zone=nodeset.zone or zone, region=region, stack_subnet=stack_subnet
        )
        found += [p.under("tpuNodesets", i) for p in own]
        if not own:
            valid[nodeset.name] = nodeset
    if problem := locations.zone_problem(config.controller.zone or zone, region):
        found.append(Problem(("controller", "zone"), problem))
    bucket = config.bucket_name(project, prefix)
    # GCS "Bucket naming guidelines": at most 63 characters, no "google".
    if len(bucket) > 63 or "google" in bucket:
        found.append(
            Problem(
                ("clusterName",),
                f"the Slurm bucket '{bucket}' is longer than 63 characters or contains "
                "'google'; shorten clusterName (or ai-infra:prefix)",
            )
        )
    if config.cluster_name.endswith("-"):
        # The name ends the bucket's name and is the cluster's network tag; GCS and Compute
        # Engine both want those to end in a letter or digit.
        found.append(
            Problem(("clusterName",), "must not end with '-'; end it with a letter or digit")
        )
    if config.bucket_key in buckets:
        found.append(
            Problem(
                ("clusterName",),
                f"the Slurm bucket takes the name of ai-infra:buckets entry "
                f"'{config.bucket_key}'; rename one",
            )
        )
    names = {n.name for n in config.tpu_nodesets}
    used: set[str] = set()
    for i, partition in enumerate(config.partitions):
        for j, name in enumerate(partition.nodesets):
            used.add(name)
            if name not in names:
                found.append(
                    Problem(
                        ("partitions", i, "nodesets", j),
                        f"no TPU nodeset named '{name}'; known: "
                        f"{', '.join(sorted(names)) or 'none'}",
                    )
                )
        repeated = [n for n, c in Counter(partition.nodesets).items() if c > 1]
        if repeated:
            found.append(
                Problem(("partitions", i, "nodesets"), f"lists {', '.join(repeated)} twice")
            )
        members = [valid[n] for n in partition.nodesets if n in valid]
        if partition.exclusive:
            static = [n.name for n in members if n.node_count_static]
            if static:
                found.append(
                    Problem(
                        ("partitions", i, "exclusive"),
                        f"exclusive partitions power nodes down after each job, so static nodes "
                        f"of {', '.join(static)} would be deleted; set exclusive: false or "
                        "nodeCountStatic: 0",
                    )
                )
        if len({n.workers_per_slice for n in members}) > 1:
            found.append(
                Problem(
                    ("partitions", i, "nodesets"),
                    "its nodesets differ in workers per slice; a job's node count must mean "
                    "whole slices in every nodeset, so split them into partitions",
                )
            )
    defaults = [i for i, p in enumerate(config.partitions) if p.default]
    for i in defaults[1:]:
        found.append(
            Problem(
                ("partitions", i, "default"),
                f"partitions[{defaults[0]}] is already the default; keep one",
            )
        )
    for i, nodeset in enumerate(config.tpu_nodesets):
        if nodeset.name not in used:
            found.append(
                Problem(
                    ("tpuNodesets", i, "name"),
                    f"no partition lists '{nodeset.name}', so no job could reach it; add it to "
                    "a partition's nodesets",
                )
            )
    if config.tpu_nodesets and not config.partitions:
        found.append(Problem(("partitions",), "add a partition, e.g. {name: tpu, nodesets: [...]}"))
    return found


# What the cluster builds: the bucket and the objects the v6 controller reads, the accounts
# and their grants, the firewall.

FILES_DIR = "{cluster}-files"
"""The controller reads everything under `<bucket>/<cluster>-files/` (slurm_files main.tf
`bucket_dir`)."""
NODE_CONF: dict[str, dict[str, int]] = {
    "v2": {
        "CPUs": 96,
        "Boards": 1,
        "Sockets": 2,
        "CoresPerSocket": 24,
        "ThreadsPerCore": 2,
        "RealMemory": 307200,
    },
    "v4": {
        "CPUs": 240,
        "Boards": 1,
        "Sockets": 2,
        "CoresPerSocket": 60,
        "ThreadsPerCore": 2,
        "RealMemory": 400000,
    },
}
"""The host each TPU VM is, as slurm.conf node options (internal/slurm-gcp/nodeset_tpu
`node_conf_mappings`: v2 and v3 hosts are alike)."""
NODE_CONF["v3"] = NODE_CONF["v2"]
LOGIN_GROUP = "login"
UNIVERSE_DOMAIN = "googleapis.com"
"""util.py builds API endpoints from the `universe_domain` metadata key."""
CONTROLLER_ROLES = (
    "roles/tpu.admin",
    "roles/compute.instanceAdmin.v1",
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
)
"""The controller creates, stops and deletes TPU VMs (resume.py, suspend.py) and tags them;
`iam.serviceAccountUser` it gets on the TPU node account alone."""
NODE_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
BUCKET_READER_ROLES = ("roles/storage.objectViewer", "roles/storage.legacyBucketReader")
"""Every VM lists and reads the cluster's files (util.py `blob_list`, `download_as_text`)."""

SLURM_CONF_TEMPLATE = """\
# Rendered on the controller by Slurm-GCP's conf.py from ai-infra's template.
ClusterName={name}
{slurmctld_hosts}
SlurmctldPort={control_host_port}
SlurmdPort=6818
SlurmUser=slurm
AuthType=auth/{auth_key}
CredType=cred/{auth_key}
StateSaveLocation={state_save}
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/var/run/slurm/slurmctld.pid
SlurmdPidFile=/var/run/slurm/slurmd.pid
SlurmctldLogFile={slurmlog}/slurmctld.log
SlurmdLogFile={slurmlog}/slurmd-%n.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
MpiDefault={mpi_default}
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/cgroup
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={accounting_storage_host}
{accounting_storage_backup_host}
include cloud.conf
"""
"""slurm.conf; conf.py fills the `{...}` fields and writes the nodes and partitions to
cloud.conf."""
SLURMDBD_CONF_TEMPLATE = """\
# Rendered on the controller by Slurm-GCP's conf.py from ai-infra's template.
{dbd_host_str}
AuthType=auth/{auth_key}
SlurmUser=slurm
LogFile={slurmlog}/slurmdbd.log
PidFile=/var/run/slurm/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost={db_host}
StoragePort={db_port}
StorageLoc={db_name}
StorageUser={db_user}
StoragePass={db_pass}
"""
CGROUP_CONF_TEMPLATE = """\
# Written as is on the controller by Slurm-GCP's conf.py.
ConstrainCores=yes
ConstrainRamSpace=yes
ConstrainSwapSpace=no
ConstrainDevices=yes
"""


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (the conf templates) as literal blocks, readable in GCS."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(document: dict[str, Any]) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=True, default_flow_style=False)


def nodeset_document(
    nodeset: TpuNodesetConfig, *, project: str, zone: str, subnetwork: str, email: str
) -> dict[str, Any]:
    """`nodeset_tpu_configs/<name>.yaml`: the keys Slurm-GCP's tpu.py and conf.py read
    (the shape of internal/slurm-gcp/nodeset_tpu `nodeset_tpu`), none of them null."""
    family = nodeset.family
    assert family is not None
    accelerator = nodeset.accelerator_config
    document: dict[str, Any] = {
        "nodeset_name": nodeset.name,
        "node_conf": dict(NODE_CONF[family]),
        # tpu.py reads both fields of accelerator_config and falls back to node_type only
        # when they are empty strings, so the key is never left out.
        "accelerator_config": (
            {"topology": accelerator.topology, "version": accelerator.version}
            if accelerator
            else {"topology": "", "version": ""}
        ),
        "tf_version": nodeset.tf,
        "preemptible": nodeset.preemptible,
        "preserve_tpu": nodeset.preserve_tpu,
        "reserved": nodeset.reserved,
        "node_count_static": nodeset.node_count_static,
        "node_count_dynamic_max": nodeset.node_count_dynamic_max,
        "enable_public_ip": nodeset.enable_public_ips,
        "zone": zone,
        "project_id": project,
        "service_account": {"email": email, "scopes": list(nodeset.service_account_scopes)},
        "data_disks": list(nodeset.data_disks),
        "docker_image": nodeset.image,
        # The TPU API takes the subnetwork's name (Toolkit writes the subnetwork's `name`).
        "subnetwork": subnetwork,
        "network_storage": [
            {
                "server_ip": s.server_ip,
                "remote_mount": s.remote_mount,
                "local_mount": s.local_mount,
                "fs_type": s.fs_type,
                "mount_options": s.mount_options,
            }
            for s in nodeset.network_storage
        ],
    }
    if nodeset.node_type is not None:
        document["node_type"] = nodeset.node_type
    return document


def partition_document(partition: PartitionConfig) -> dict[str, Any]:
    """`partition_configs/<name>.yaml` (the controller's `partitions` variable)."""
    return {
        "partition_name": partition.name,
        "partition_conf": partition.conf,
        "partition_nodeset": [],
        "partition_nodeset_dyn": [],
        "partition_nodeset_tpu": list(partition.nodesets),
        "enable_job_exclusive": partition.exclusive,
    }


def cluster_document(config: SlurmConfig, *, project: str, bucket: str) -> dict[str, Any]:
    """`config.yaml`, the controller's readiness signal (slurm_files main.tf `config`), with
    only the keys this cluster sets: util.py reads a missing key as empty."""
    return {
        "slurm_cluster_name": config.cluster_name,
        "project": project,
        "bucket_path": f"gs://{bucket}/{FILES_DIR.format(cluster=config.cluster_name)}",
        "enable_slurm_auth": False,
        "controller_state_disk": {"device_name": state_disk_name(config.cluster_name)},
        "slurm_conf_tpl": SLURM_CONF_TEMPLATE,
        "slurmdbd_conf_tpl": SLURMDBD_CONF_TEMPLATE,
        "cgroup_conf_tpl": CGROUP_CONF_TEMPLATE,
    }


def state_disk_name(cluster: str) -> str:
    """setup.py mounts `/dev/disk/by-id/google-<device_name>`; the device is named after
    the disk, as Toolkit's controller.tf does (`<cluster>-controller-save`)."""
    return f"{cluster}-controller-save"


class SlurmClusterArgs(WiringModel):
    project: str
    region: str
    zone: str
    """`gcp:zone`, the default of the controller's and the nodesets' zones."""
    prefix: str
    protect: bool
    labels: dict[str, str]
    network_self_link: SkipValidation[pulumi.Output[str]]
    subnet_name: str
    """The stack's subnet, known before it exists."""
    subnet_self_link: SkipValidation[pulumi.Output[str]]
    network: SkipValidation[pulumi.Resource]
    """The stack's network component; the TPU cleanup runs before any of it is deleted."""
    config: SlurmConfig
    scripts_provider: SkipValidation[ScriptsProvider] | None = None
    """Tests pass a provider with a fake fetcher; `pulumi up` uses the real one."""
    cleanup_provider: SkipValidation[TpuCleanupProvider] | None = None


class SlurmCluster(Component):
    """The Slurm bucket and its files, the cluster's service accounts and firewall."""

    bucket: Bucket
    accounts: dict[str, gcp.serviceaccount.Account]
    emails: dict[str, str]
    config_object: gcp.storage.BucketObject
    """`config.yaml`, written after every other object."""

    def __init__(
        self, name: str, args: SlurmClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ai-infra:slurm:SlurmCluster", name, opts)
        config = args.config
        cluster = config.cluster_name
        self.emails = {
            role: service_account_email(account_id(args.prefix, role), args.project)
            for role in ACCOUNT_ROLES
        }
        titles = {"ctl": "controller", "tpu": "TPU nodes", "lgn": "login nodes"}
        self.accounts = {
            role: gcp.serviceaccount.Account(
                f"{name}-{role}",
                project=args.project,
                account_id=account_id(args.prefix, role),
                display_name=f"Slurm {cluster} {titles[role]}",
                opts=self.child_opts(),
            )
            for role in ACCOUNT_ROLES
        }
        members = {role: f"serviceAccount:{email}" for role, email in self.emails.items()}
        project_roles = {"ctl": CONTROLLER_ROLES, "tpu": NODE_ROLES, "lgn": NODE_ROLES}
        self.grants: dict[str, list[pulumi.Resource]] = {role: [] for role in ACCOUNT_ROLES}
        for role, roles in project_roles.items():
            for project_role in roles:
                self.grants[role].append(
                    gcp.projects.IAMMember(
                        f"{name}-{role}-{slug(project_role.removeprefix('roles/'))}",
                        project=args.project,
                        role=project_role,
                        member=members[role],
                        opts=self.child_opts(depends_on=[self.accounts[role]]),
                    )
                )
        # The controller attaches the TPU node account to the TPU VMs it creates, and may act
        # as that account alone.
        acts_as_tpu = gcp.serviceaccount.IAMMember(
            f"{name}-ctl-acts-as-tpu",
            service_account_id=self.accounts["tpu"].name,
            role="roles/iam.serviceAccountUser",
            member=members["ctl"],
            opts=self.child_opts(depends_on=[self.accounts["ctl"]]),
        )
        self.grants["ctl"].append(acts_as_tpu)

        self.bucket = Bucket(
            f"{name}-bucket",
            BucketArgs(
                project=args.project,
                prefix=args.prefix,
                location=args.region,
                protect=args.protect,
                labels=args.labels,
                config=BucketConfig.model_validate(
                    {"name": config.bucket_key, "forceDestroy": not args.protect}
                ),
            ),
            self.child_opts(),
        )
        readers = dict(members)
        # A nodeset may run as an account of the team's own: it reads the bucket too, and the
        # controller must be able to attach it to the TPU VMs it creates. Keyed by email, so
        # nodesets sharing an account share one grant.
        own = set(self.emails.values())
        for email in sorted(
            {n.service_account_email for n in config.tpu_nodesets if n.service_account_email} - own
        ):
            readers[slug(email)] = f"serviceAccount:{email}"
            acts_as = gcp.serviceaccount.IAMMember(
                f"{name}-ctl-acts-as-{slug(email)}",
                service_account_id=f"projects/-/serviceAccounts/{email}",
                role="roles/iam.serviceAccountUser",
                member=members["ctl"],
                opts=self.child_opts(depends_on=[self.accounts["ctl"]]),
            )
            self.grants["ctl"].append(acts_as)
        for who, member in sorted(readers.items()):
            for bucket_role in BUCKET_READER_ROLES:
                grant = grant_bucket_access(
                    f"{name}-{who}-{slug(bucket_role.removeprefix('roles/'))}",
                    self.bucket,
                    role=bucket_role,
                    member=member,
                    opts=self.child_opts(
                        depends_on=[self.accounts[who]] if who in self.accounts else []
                    ),
                )
                self.grants.setdefault(who, []).append(grant)

        files = FILES_DIR.format(cluster=cluster)
        objects: list[gcp.storage.BucketObject] = []

        def put(resource: str, path: str, content: str) -> gcp.storage.BucketObject:
            found = gcp.storage.BucketObject(
                f"{name}-{resource}",
                bucket=self.bucket.name_,
                name=f"{files}/{path}",
                content=content,
                content_type="text/plain",
                opts=self.child_opts(depends_on=[self.bucket.bucket]),
            )
            objects.append(found)
            return found

        for nodeset in config.tpu_nodesets:
            document = nodeset_document(
                nodeset,
                project=args.project,
                zone=nodeset.zone or args.zone,
                subnetwork=nodeset.subnetwork or args.subnet_name,
                email=nodeset.service_account_email or self.emails["tpu"],
            )
            put(
                f"nodeset-{nodeset.name}",
                f"nodeset_tpu_configs/{nodeset.name}.yaml",
                _dump(document),
            )
            if nodeset.startup_script:
                # setup.py runs `slurm-nodeset-<nodeset>-script-*` on the nodeset's VMs.
                put(
                    f"nodeset-{nodeset.name}-script",
                    f"slurm-nodeset-{nodeset.name}-script-startup_sh",
                    nodeset.startup_script,
                )
        for partition in config.partitions:
            put(
                f"partition-{partition.name}",
                f"partition_configs/{partition.name}.yaml",
                _dump(partition_document(partition)),
            )
        # A login VM refuses to set up unless its group's file exists (util.py).
        put(
            "login-group",
            f"login_group_configs/{LOGIN_GROUP}.yaml",
            _dump({"group_name": LOGIN_GROUP}),
        )
        # The controller installs this as the boot script of every TPU VM it creates.
        put(
            "tpu-boot",
            slurm_boot.TPU_NODE_SCRIPT,
            slurm_boot.render(slurm_boot.BootScript(kind="tpu")),
        )
        # The zips the controller and the TPU VMs download at boot, fetched and verified at
        # `pulumi up`; the image's own copies predate this bucket layout.
        self.scripts = SlurmScripts(
            f"{name}-scripts",
            bucket=self.bucket.name_,
            prefix=files,
            provider=args.scripts_provider,
            opts=self.child_opts(depends_on=[self.bucket.bucket]),
        )
        self.objects = objects
        # setup.py waits for config.yaml and then reads the rest: writing it last makes it
        # the signal that everything else is in place (slurm_files main.tf `config`).
        self.config_object = gcp.storage.BucketObject(
            f"{name}-config",
            bucket=self.bucket.name_,
            name=f"{files}/config.yaml",
            content=_dump(cluster_document(config, project=args.project, bucket=self.bucket.name_)),
            content_type="text/plain",
            opts=self.child_opts(depends_on=[self.bucket.bucket, self.scripts, *objects]),
        )
        self.bucket_path = f"gs://{self.bucket.name_}/{files}"

        tag = cluster
        self.firewalls = [
            gcp.compute.Firewall(
                f"{name}-internal",
                project=args.project,
                name=f"{args.prefix}-slurm-{cluster}-internal",
                network=args.network_self_link,
                direction="INGRESS",
                source_tags=[tag],
                target_tags=[tag],
                allows=[
                    gcp.compute.FirewallAllowArgs(protocol="tcp"),
                    gcp.compute.FirewallAllowArgs(protocol="udp"),
                    gcp.compute.FirewallAllowArgs(protocol="icmp"),
                ],
                description=f"Slurm {cluster}: controller, login and TPU VMs to each other",
                opts=self.child_opts(),
            ),
            gcp.compute.Firewall(
                f"{name}-iap-ssh",
                project=args.project,
                name=f"{args.prefix}-slurm-{cluster}-iap-ssh",
                network=args.network_self_link,
                direction="INGRESS",
                source_ranges=[IAP_TCP_FORWARDING_RANGE],
                target_tags=[tag],
                allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
                description=f"Slurm {cluster}: SSH through Identity-Aware Proxy only",
                opts=self.child_opts(),
            ),
        ]
        # Pulumi deletes dependents first: the controller (which depends on this) stops
        # creating TPU VMs, then this deletes those left, then the subnet and the TPU node
        # account go.
        self.cleanup = TpuCleanup(
            f"{name}-tpu-cleanup",
            project=args.project,
            cluster=cluster,
            nodesets=[{"name": n.name, "zone": n.zone or args.zone} for n in config.tpu_nodesets],
            provider=args.cleanup_provider,
            opts=self.child_opts(depends_on=[args.network, self.accounts["tpu"]]),
        )
        self._vms(name, args)
        self.register_outputs({"bucketPath": self.bucket_path, "controller": self.controller.name})

    def _vms(self, name: str, args: SlurmClusterArgs) -> None:
        """The controller with its state disk, and the login nodes. They need not wait for
        the bucket: their boot retries until the zips are there, and setup.py until
        config.yaml is."""
        config = args.config
        cluster = config.cluster_name
        zone = config.controller.zone or args.zone
        self.state_disk = gcp.compute.Disk(
            f"{name}-state",
            project=args.project,
            zone=zone,
            name=state_disk_name(cluster),
            type=config.controller.state_disk.type,
            size=config.controller.state_disk.size_gb,
            labels=args.labels,
            opts=self.child_opts(protect=args.protect),
        )

        def vm(
            resource: str,
            vm_name: str,
            role: str,
            machine_type: str,
            disk_type: str,
            disk_size_gb: int,
            metadata: dict[str, str],
            attached: list[gcp.compute.InstanceAttachedDiskArgs],
            depends_on: list[pulumi.Resource],
            protect: bool,
        ) -> gcp.compute.Instance:
            account = {"controller": "ctl", "login": "lgn"}[role]
            return gcp.compute.Instance(
                f"{name}-{resource}",
                project=args.project,
                zone=zone,
                name=vm_name,
                machine_type=machine_type,
                boot_disk=gcp.compute.InstanceBootDiskArgs(
                    initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                        image=slurm_scripts.IMAGE, type=disk_type, size=disk_size_gb
                    ),
                ),
                attached_disks=attached,
                # No access config: private, reaching Google APIs through Private Google
                # Access and the image registry through Cloud NAT.
                network_interfaces=[
                    gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=args.subnet_self_link)
                ],
                service_account=gcp.compute.InstanceServiceAccountArgs(
                    email=self.emails[account], scopes=list(DEFAULT_SCOPES)
                ),
                shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
                    enable_secure_boot=True,
                    enable_vtpm=True,
                    enable_integrity_monitoring=True,
                ),
                metadata={
                    "slurm_bucket_path": self.bucket_path,
                    "slurm_cluster_name": cluster,
                    "slurm_instance_role": role,
                    "universe_domain": UNIVERSE_DOMAIN,
                    "enable-oslogin": "TRUE",
                    "block-project-ssh-keys": "TRUE",
                    # In metadata rather than `metadata_startup_script`, so that a new script
                    # updates the VM in place instead of replacing it.
                    "startup-script": slurm_boot.render(
                        slurm_boot.BootScript(kind="vm", install_tpu_script=role == "controller")
                    ),
                    **metadata,
                },
                # slurmsync.py finds the cluster's instances by these labels.
                labels={
                    **args.labels,
                    "slurm_cluster_name": cluster,
                    "slurm_instance_role": role,
                },
                tags=[cluster],
                allow_stopping_for_update=True,
                opts=self.child_opts(
                    depends_on=[self.accounts[account], *depends_on], protect=protect
                ),
            )

        self.controller = vm(
            "controller",
            f"{cluster}-controller",
            "controller",
            config.controller.machine_type,
            config.controller.disk_type,
            config.controller.disk_size_gb,
            {},
            # setup.py mounts /dev/disk/by-id/google-<device_name> as slurmctld's state.
            [
                gcp.compute.InstanceAttachedDiskArgs(
                    source=self.state_disk.self_link, device_name=state_disk_name(cluster)
                )
            ],
            # setup.py reads the bucket, and asks the TPU API about each nodeset while it writes
            # the Slurm configs (conf.py topology -> tpu.py), without retrying: the controller
            # starts after its grants.
            [self.state_disk, self.cleanup, *self.grants["ctl"]],
            args.protect,
        )
        self.logins = [
            vm(
                f"login-{i}",
                f"{cluster}-login-{i}",
                "login",
                config.login.machine_type,
                "pd-balanced",
                config.login.disk_size_gb,
                {"slurm_login_group": LOGIN_GROUP},
                [],
                self.grants["lgn"],
                False,
            )
            for i in range(config.login.count)
        ]
