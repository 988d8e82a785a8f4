"""What the user writes under `ai-infra:workloadIdentities`, `ai-infra:kueue` and
`ai-infra:teams`: identities, the cohort and priority classes, and each team's quota,
access, Pod Security, opt-ins and bounds.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field

from components.base import (
    MAX_ENTRIES,
    MAX_KUEUE_FLAVORS,
    MAX_POLICY_MEMBERS,
    MAX_PRIORITY_CLASSES,
    MAX_ROLES,
    ConfigModel,
    anchored,
    at_most,
    described,
    matching,
)
from components.buckets import BucketAccess
from components.gke.config.cluster import MAX_IMAGE_REPOSITORIES
from components.types import (
    ArtifactRepository,
    DnsLabel,
    IamRole,
)


class WorkloadIdentityConfig(ConfigModel):
    """One entry of `ai-infra:workloadIdentities`."""

    name: DnsLabel
    """The Google service account is `<prefix>-<name>@PROJECT.iam.gserviceaccount.com`."""
    namespace: DnsLabel
    """Kubernetes namespace of the workload."""
    service_account: DnsLabel
    """The Kubernetes service account that may act as the Google service account, bound as
    `serviceAccount:PROJECT.svc.id.goog[NAMESPACE/SERVICE_ACCOUNT]`."""
    roles: list[IamRole] = Field(default_factory=list, max_length=MAX_ROLES)
    """Project roles, e.g. roles/tpu.viewer. Basic roles are refused."""
    buckets: Annotated[
        dict[str, BucketAccess], at_most(MAX_ENTRIES, "one per ai-infra:buckets entry")
    ] = Field(default_factory=dict)
    """`ai-infra:buckets` name -> `read`, `write` or `admin` (roles/storage.objectViewer,
    objectUser, objectAdmin on that bucket)."""
    create_namespace: bool = True
    """Create the namespace; turn off when another identity or a team already has it."""


class KueueConfig(ConfigModel):
    """`ai-infra:kueue`: cluster-wide queueing policy."""

    cohort: DnsLabel = "ai-infra"
    """Cohort of every team ClusterQueue: idle quota is borrowed inside it, and it holds the
    quota no team receives."""
    priority_classes: Annotated[
        dict[DnsLabel, Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]],
        at_most(MAX_PRIORITY_CLASSES, "a bound of this program's, not Kubernetes'"),
    ] = Field(default_factory=lambda: {"low": 100, "normal": 1000, "high": 10000})
    """WorkloadPriorityClass name -> value; higher preempts lower within a queue. Jobs pick
    one with the `kueue.x-k8s.io/priority-class` label."""


Share = int | float
"""Chips/GPUs (int) or a fraction of the entry (float in (0, 1])."""
_PERCENT = re.compile(r"([0-9]+(?:\.[0-9]+)?)%")
_QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?")


@described(
    "chips, fraction or percentage",
    {
        "anyOf": [
            {"type": "integer", "minimum": 0},
            {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            # _PERCENT, with the upper bound of 100%.
            {"type": "string", "pattern": r"^(?:100(?:\.0+)?|[0-9]{1,2}(?:\.[0-9]+)?)%$"},
        ]
    },
)
def _share(value: Any) -> Share:
    """A share as written in YAML: chips (16), a fraction (0.5) or a percentage ("50%")."""
    if isinstance(value, bool):
        raise ValueError(f"{value} is not a share; use chips (16), a fraction (0.5) or 50%")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} chips is negative")
        return value
    if isinstance(value, float):
        if not 0 < value <= 1:
            raise ValueError(f"fraction {value} must be in (0, 1]; write chips as an int")
        return value
    if isinstance(value, str) and (match := _PERCENT.fullmatch(value)):
        percent = float(match[1])
        if not 0 < percent <= 100:
            raise ValueError(f"{value} must be between 0% and 100%")
        return percent / 100
    raise ValueError(f"{value!r} is not a share; use chips (16), a fraction (0.5) or 50%")


QuotaShare = Annotated[Share, BeforeValidator(_share)]


@described(
    "Kubernetes quantity",
    {
        "anyOf": [
            {"type": "integer", "minimum": 0},
            {"type": "string", "pattern": anchored(_QUANTITY)},
        ]
    },
)
def _quantity(value: Any) -> str:
    """A Kubernetes quantity; YAML's `1000` (an int) is the quantity "1000"."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if not isinstance(value, str) or not _QUANTITY.fullmatch(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity such as 200 or 800Gi")
    return value


Quantity = Annotated[str, BeforeValidator(_quantity)]
GroupEmail = Annotated[
    str,
    matching(
        r"[^@\s:]+@[^@\s]+\.[a-z]+",
        "is not a Google group: write it as a plain email, e.g. ml-team@example.com",
    ),
]


@described("`baseline` or `restricted`", {"enum": ["baseline", "restricted"]})
def _pod_security(value: Any) -> str:
    if value == "privileged":
        raise ValueError(
            "'privileged' would let a team member run privileged, hostPath or hostPID pods, "
            "and read every token on the node; use baseline (the default) or restricted, and "
            "tpuHostNetwork: true where multislice JobSets need the host network"
        )
    if value not in ("baseline", "restricted"):
        raise ValueError(
            f"{value!r} is not a Pod Security level a team may take: baseline or restricted"
        )
    return value


PodSecurityLevel = Annotated[str, BeforeValidator(_pod_security)]
DiskStorageClass = Literal["standard", "standard-rwo", "premium-rwo"]
"""The Persistent Disk StorageClasses GKE creates in every cluster (GKE "Using the Compute
Engine persistent disk CSI Driver": standard-rwo is balanced PD, premium-rwo SSD PD, standard
standard PD). Filestore and Lustre come from `ai-infra:storage`, never from a team's claim."""


class TeamLimits(ConfigModel):
    """`teams[].limits`: what the team may take outside Kueue, in its namespace's
    ResourceQuotas. Services (Deployments, StatefulSets) run under the PriorityClass
    `ai-infra-services`, which a quota scoped to it bounds; Kueue bounds the Jobs and
    JobSets."""

    cpu: Quantity = "8"
    """CPU its services' pods request, in total."""
    memory: Quantity = "32Gi"
    """Memory its services' pods request, in total."""
    pods: int = Field(default=20, ge=0, le=10_000)
    """Pods of its services at once."""
    storage: Annotated[
        dict[DiskStorageClass, Quantity],
        at_most(len(get_args(DiskStorageClass)), "one per GKE disk StorageClass"),
    ] = Field(default_factory=lambda: {"standard-rwo": "500Gi"})
    """StorageClass -> what the team's own claims of it request in total; a claim of a
    class not listed is refused. Claims of `ai-infra:storage` volumes take no class and are
    not counted."""
    claims: int = Field(default=20, ge=0, le=10_000)
    """Claims of each listed class."""
    objects: int = Field(default=200, ge=1, le=10_000)
    """ConfigMaps, Secrets, Deployments, StatefulSets and CronJobs, each."""


class TeamConfig(ConfigModel):
    """One entry of `ai-infra:teams`."""

    name: DnsLabel
    """Namespace, ClusterQueue and LocalQueue name; Google service account `<prefix>-<name>`."""
    # Kueue v0.19.2 ClusterQueue CRD: spec.resourceGroups[].flavors maxItems 64.
    quota: Annotated[
        dict[str, QuotaShare], at_most(MAX_KUEUE_FLAVORS, "one Kueue flavor each, 64 per queue")
    ] = Field(default_factory=dict)
    """Slice or GPU pool name -> this team's share of it: chips/GPUs (`64`), a fraction
    (`0.25`) or a percentage (`"25%"`), best a whole number of slices. Entries a team does not
    name are split evenly, in whole slices, among the teams that do not name them; the rest
    stays with the cohort."""
    cpu: Quantity | None = None
    """Nominal quota of the `cpu` flavor, in cores. Unset: the allocatable CPU of the nodes
    behind the team's TPU and GPU quota (GKE's node allocatable), so a job that takes the
    team's whole quota never borrows CPU and is never reclaimed for it. Set it for CPU-only
    jobs, or where the catalog cannot size a GPU pool's nodes."""
    memory: Quantity | None = None
    """Nominal memory quota of the `cpu` flavor; unset, the allocatable memory of the nodes
    behind the team's TPU and GPU quota, as for `cpu`."""
    roles: list[IamRole] = Field(default_factory=list, max_length=MAX_ROLES)
    """Extra project roles for the team's Google service account; basic roles are refused."""
    buckets: Annotated[
        dict[str, BucketAccess], at_most(MAX_ENTRIES, "one per ai-infra:buckets entry")
    ] = Field(default_factory=dict)
    """`ai-infra:buckets` name -> `read`, `write` or `admin` for the team's Google service
    account."""
    # Each group is a principal of the project's allow policy (roles/container.clusterViewer).
    groups: list[GroupEmail] = Field(default_factory=list, max_length=MAX_POLICY_MEMBERS)
    """Google groups (emails) that get `edit` and Kueue's `kueue-batch-user-role` (JobSets and
    Jobs, their LocalQueues' pending workloads) in the team namespace, and
    `roles/container.clusterViewer` on the project; needs `cluster.rbacSecurityGroup`."""
    service_account: DnsLabel = "training"
    """Kubernetes service account that jobs run as (`serviceAccountName`), bound to the
    team's Google service account."""
    pod_security: PodSecurityLevel = "baseline"
    """The Pod Security level the namespace enforces: `baseline` (no privileged, hostPath,
    hostPID or host ports) or `restricted` (also non-root, no privilege escalation, all
    capabilities dropped); `privileged` is refused."""
    tpu_host_network: bool = False
    """Let the team's Kueue-managed pods on its own slices (`tpuSlices[].team`, selected by
    the `ai-infra/dedicated` node label) use the host network, as GKE's multislice JobSets
    do. Such a pod is outside every NetworkPolicy and acts as its node's account, so it runs
    only on nodes that no other team's pod lands on and whose account reads only the team's
    images. Every other baseline check still holds (an admission policy enforces them instead
    of Pod Security Admission, which cannot make that exception). Not with
    `podSecurity: restricted`."""
    priority_classes: Annotated[list[DnsLabel], Field(max_length=MAX_PRIORITY_CLASSES)] | None = (
        None
    )
    """The `kueue.priorityClasses` its jobs may name (`kueue.x-k8s.io/priority-class`); unset,
    every one. A job naming another, or a pod naming a PriorityClass (system ones included),
    is refused."""
    image_repositories: list[ArtifactRepository] = Field(
        default_factory=list, max_length=MAX_IMAGE_REPOSITORIES
    )
    """Artifact Registry repositories holding the team's private images
    (`LOCATION-docker.pkg.dev/PROJECT/REPOSITORY`): the nodes' account reads them, and no other
    team's pod may name an image of them."""
    limits: TeamLimits = Field(default_factory=TeamLimits)
    """What the team may take outside Kueue: its services' CPU, memory and pods, its claims'
    storage per class, and its objects; no LoadBalancer or NodePort Services."""
    gpu_direct_pods: bool = False
    """Let the team's Kueue-managed pods on a GPU pool built on its fast path (A3, A3 Mega,
    A3 Ultra, A4 with GPU NICs) mount the host paths of GKE's GPUDirect/RDMA manifests and give
    the receive daemon NET_ADMIN, as GKE's examples do; every other baseline check still holds
    (an admission policy enforces them instead of Pod Security Admission). Not with
    `podSecurity: restricted`."""
