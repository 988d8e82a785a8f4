"""What the user writes for `ai-infra:slurm`: the cluster's name, controller and login groups,
CPU and TPU nodesets, partitions, shared storage and the Slurm knobs Cluster Toolkit exposes,
after its `schedmd-slurm-gcp-v6-*` modules.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, ClassVar, Literal, get_args

from pydantic import Field

from components.base import ConfigModel
from components.buckets import BucketConfig
from components.context import StackContext
from components.slurm import scripts
from components.slurm.fields import (
    MAX_LOGIN_GROUPS,
    MAX_MOUNTS,
    MAX_NODESETS,
    MAX_SCHEDULER_PARAMETERS,
    SCRIPT_TIMEOUT_MAX,
    ClusterName,
    JobScript,
    LoginGroupName,
    NetworkStorage,
    NodeImage,
    ScriptsMirror,
    ScriptText,
    needs_unsigned_modules,
    pattern_of,
)
from components.slurm.nodesets import CpuNodesetConfig, TpuNodesetConfig
from components.slurm.partitions import PartitionConfig
from components.storage import StorageMount
from components.types import MachineType, Zone


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
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """File systems to mount on the group's VMs, beside the cluster's."""
    image: NodeImage = Field(default_factory=lambda: NodeImage(family=scripts.IMAGE_FAMILY))
    """Boot image of the group's VMs: one built from SchedMD's image family the pinned
    scripts pair with (default `schedmd-slurm-public/slurm-gcp-6-12-hpc-rocky-linux-8`)."""
    allow_automatic_updates: bool = True
    """Let the image update its OS packages by itself; `false` turns the automatic updates
    of Google's HPC images (and SchedMD's, built on them) off, so that nodes of one job run
    the same packages (metadata `google_disable_automatic_updates`)."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=MAX_MOUNTS)
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


UINT16_MAX = 65535
"""ResumeTimeout, SuspendTimeout, SlurmdTimeout, UnkillableStepTimeout, MessageTimeout,
BatchStartTimeout and PrologEpilogTimeout are uint16 options (read_config.c
`slurm_ctl_conf_options`): slurmctld stops at a larger value (parse_value.c
`s_p_handle_uint16`)."""
UNKILLABLE_PER_MESSAGE = 5
"""UnkillableStepTimeout below 5 x MessageTimeout takes nodes down with KillTaskFailed
(read_config.c `_validate_and_set_defaults`)."""


PrologFlag = Literal[
    "Alloc", "Contain", "DeferBatch", "ForceRequeueOnFail", "NoHold", "RunInJob", "X11"
]
PrivateData = Literal[
    "accounts", "events", "jobs", "nodes", "partitions", "reservations", "usage", "users"
]
PROLOG_FLAGS = get_args(PrologFlag)
PRIVATE_DATA = get_args(PrivateData)
"""The values `cloudParameters.prologFlags` and `privateData` take; each list holds each at
most once, so no longer than these."""


class CloudParameters(ConfigModel):
    """Slurm-wide options Toolkit exposes as `cloud_parameters` (Slurm-GCP conf.py writes them
    into cloud.conf); an unset key keeps Slurm-GCP's default."""

    resume_rate: int | None = Field(default=None, ge=0, le=10000)
    """Nodes resumed per minute at most (`ResumeRate`; default 0, unlimited). Not with
    multi-host TPU nodesets: a rate hands a slice's workers to resume in parts, and no TPU is
    created for a part."""
    resume_timeout: int | None = Field(default=None, ge=60, le=UINT16_MAX)
    """Seconds a node may take to boot and register (`ResumeTimeout`; default 300);
    partitions override it."""
    suspend_rate: int | None = Field(default=None, ge=0, le=10000)
    """Nodes suspended per minute at most (`SuspendRate`; default 0, unlimited)."""
    suspend_timeout: int | None = Field(default=None, ge=30, le=UINT16_MAX)
    """Seconds a node may take to power down (`SuspendTimeout`; default 300)."""
    slurmd_timeout: int | None = Field(default=None, ge=10, le=UINT16_MAX)
    """`SlurmdTimeout` (default 300)."""
    unkillable_step_timeout: int | None = Field(default=None, ge=10, le=UINT16_MAX)
    """`UnkillableStepTimeout` (default 300)."""
    scheduler_parameters: (
        list[
            Annotated[
                str,
                pattern_of(
                    r"[a-z][a-z0-9_]{1,40}(=[A-Za-z0-9_.:-]{1,40})?",
                    "a SchedulerParameters option such as bf_continue or bf_window=2880",
                ),
            ]
        ]
        | None
    ) = Field(default=None, max_length=MAX_SCHEDULER_PARAMETERS)
    """`SchedulerParameters`, e.g. `[bf_continue, bf_window=2880]` (default bf_continue,
    salloc_wait_nodes, ignore_prefer_validation). With multi-host TPU nodesets the program
    adds `max_switch_wait`, so that jobs wait for whole slices, and refuses one here."""
    tree_width: int | None = Field(default=None, ge=1, le=65533)
    """`TreeWidth` (default 128)."""
    prolog_flags: list[PrologFlag] | None = Field(default=None, max_length=len(PROLOG_FLAGS))
    """`PrologFlags`, e.g. `[Alloc, Contain]`."""
    private_data: list[PrivateData] | None = Field(default=None, max_length=len(PRIVATE_DATA))
    """`PrivateData`: what users other than the owner may not see."""


class SlurmTimeouts(ConfigModel):
    """slurm.conf timeouts of the controller and nodes; Toolkit's A3 Mega blueprint raises
    them with its `long-prolog-slurm.conf.tpl` (600 s each) for prologs that set up GPU
    networking. Unset keys keep the values shown."""

    message_timeout: int = Field(default=60, ge=1, le=UINT16_MAX // UNKILLABLE_PER_MESSAGE)
    """Seconds a Slurm RPC may take (`MessageTimeout`); at most 13107, so that
    UnkillableStepTimeout, five times it, fits Slurm's 16 bits."""
    batch_start_timeout: int | None = Field(default=None, ge=1, le=UINT16_MAX)
    """Seconds a batch job's launch, prolog included, may take (`BatchStartTimeout`;
    Slurm's default 10)."""
    prolog_epilog_timeout: int | None = Field(default=None, ge=1, le=UINT16_MAX)
    """Seconds a prolog or epilog may run before the node is drained
    (`PrologEpilogTimeout`; unset, Slurm waits forever)."""
    credential_expire: int = Field(default=120, ge=5, le=86400)
    """Seconds a job credential stays valid (`AuthInfo=cred_expire`; Slurm takes 5 and up,
    src/interfaces/cred.c; at most a day here); a prolog longer than it aborts the job."""


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
        default_factory=lambda: [LoginGroupConfig()], max_length=MAX_LOGIN_GROUPS
    )
    """Login VM groups; by default one group `login` of one `n2-standard-2`."""
    cpu_nodesets: list[CpuNodesetConfig] = Field(default_factory=list, max_length=MAX_NODESETS)
    """Compute Engine nodesets; a multi-host TPU nodeset needs at least one."""
    tpu_nodesets: list[TpuNodesetConfig] = Field(default_factory=list, max_length=MAX_NODESETS)
    """TPU nodesets; Slurm-GCP v6 supports v2, v3 and v4."""
    partitions: list[PartitionConfig] = Field(default_factory=list, max_length=MAX_NODESETS)
    """Partitions over the nodesets; at most one `default`."""
    debug_partition: bool = False
    """Add Toolkit's example `debug` partition: nodeset `debug` of up to 4 dynamic
    n2-standard-2 VMs, shared (not exclusive), the default unless another partition is."""
    home: HomeConfig = Field(default_factory=HomeConfig)
    """Where `/home` lives (default a Filestore share)."""
    network_storage: list[NetworkStorage] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """File systems every VM of the cluster mounts: controller, login and every nodeset."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """`ai-infra:storage` volumes every login VM and node mounts, by name: Slurm-GCP's
    `network_storage` entries are generated from them (the controller mounts the file systems
    too; it counts an entry without a server, a bucket, as its own export and skips it)."""
    cloud_parameters: CloudParameters = Field(default_factory=CloudParameters)
    """Slurm-wide timeouts, rates and scheduler options (Toolkit's `cloud_parameters`)."""
    timeouts: SlurmTimeouts = Field(default_factory=SlurmTimeouts)
    """slurm.conf timeouts (Toolkit's `slurm_conf_tpl` settings), e.g. the long-prolog ones
    `{messageTimeout: 600, batchStartTimeout: 600, prologEpilogTimeout: 600,
    credentialExpire: 600}`."""
    prolog_scripts: list[JobScript] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """Scripts slurmd runs before each job on its nodes (`Prolog`)."""
    epilog_scripts: list[JobScript] = Field(default_factory=list, max_length=MAX_MOUNTS)
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

    @property
    def has_multi_host_tpu(self) -> bool:
        """Whether a TPU nodeset has slices of more than one TPU VM (call it once the
        nodesets' own checks pass)."""
        return any(n.workers_per_slice > 1 for n in self.tpu_nodesets)

    def is_tpu_partition(self, partition: PartitionConfig) -> bool:
        return not (set(partition.nodesets) & self.cpu_names)

    def nodesets_of(self, partition: PartitionConfig) -> list[CpuNodesetConfig | TpuNodesetConfig]:
        """The partition's nodesets that exist (a missing one is its own problem)."""
        found = {n.name: n for n in [*self.all_cpu_nodesets, *self.tpu_nodesets]}
        return [found[name] for name in partition.nodesets if name in found]

    def resume_timeout(self, partition: PartitionConfig) -> int:
        """The partition's ResumeTimeout unless its partitionConf sets one: the most any of
        its nodesets needs (a node in two partitions waits the longer, Slurm's
        power_save.c `power_save_set_timeouts`)."""
        return max((n.resume_timeout for n in self.nodesets_of(partition)), default=300)

    def has_flex(self, partition: PartitionConfig) -> bool:
        return any(isinstance(n, CpuNodesetConfig) and n.flex for n in self.nodesets_of(partition))

    def partition_conf(self, partition: PartitionConfig) -> dict[str, str]:
        """The options of the partition's slurm.conf line that its partition file carries."""
        return partition.conf(
            tpu=self.is_tpu_partition(partition),
            resume_timeout=self.resume_timeout(partition),
            flex=self.has_flex(partition),
            static=any(n.node_count_static for n in self.nodesets_of(partition)),
        )

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
