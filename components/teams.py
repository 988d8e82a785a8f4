"""Teams onboarded by config. Each team gets a namespace, a Kubernetes service account bound to
its own Google service account through Workload Identity, a ClusterQueue in the shared cohort
with its quota, a LocalQueue, `edit` for its Google groups, and access to the buckets it names.
Everything a team owns is a child of its `Team` component, so adding or removing a team touches
nothing else (other teams' quotas aside).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
from pydantic import AfterValidator, BeforeValidator, Field, SkipValidation

from components.base import (
    Component,
    ConfigModel,
    DnsLabel,
    IamRole,
    Problem,
    WiringModel,
    duplicate_names,
    slug,
)
from components.buckets import Bucket, BucketAccess, unknown_buckets
from components.kueue import MANAGED_NAMESPACE_LABEL, kueue_object, resource_groups
from components.quota import Flavor, Share, explicit_units
from components.workload_identity import (
    WorkloadIdentity,
    account_id_problems,
    duplicate_roles,
    workload_identity_args,
)

TEAM_LABEL = "ai-infra/team"
_PERCENT = re.compile(r"([0-9]+(?:\.[0-9]+)?)%")
_QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?")
_GROUP_EMAIL = re.compile(r"[^@\s:]+@[^@\s]+\.[a-z]+")


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


def _quantity(value: Any) -> str:
    """A Kubernetes quantity; YAML's `1000` (an int) is the quantity "1000"."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if not isinstance(value, str) or not _QUANTITY.fullmatch(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity such as 200 or 800Gi")
    return value


Quantity = Annotated[str, BeforeValidator(_quantity)]


def _group_email(value: str) -> str:
    if not _GROUP_EMAIL.fullmatch(value):
        raise ValueError(
            f"'{value}': write a Google group as a plain email, e.g. ml-team@example.com"
        )
    return value


GroupEmail = Annotated[str, AfterValidator(_group_email)]


class TeamConfig(ConfigModel):
    """One entry of `ai-infra:teams`."""

    name: DnsLabel
    """Namespace, ClusterQueue and LocalQueue name; Google service account `<prefix>-<name>`."""
    quota: dict[str, QuotaShare] = Field(default_factory=dict)
    """Slice or GPU pool name -> this team's share of it: chips/GPUs (`64`), a fraction
    (`0.25`) or a percentage (`"25%"`). Entries a team does not name are split evenly among
    the teams that do not name them."""
    cpu: Quantity = "1000"
    """Nominal quota of the `cpu` flavor, in cores; high by default so that chips are the
    constraint."""
    memory: Quantity = "4000Gi"
    """Nominal memory quota of the `cpu` flavor."""
    roles: list[IamRole] = Field(default_factory=list)
    """Extra project roles for the team's Google service account; basic roles are refused."""
    buckets: dict[str, BucketAccess] = Field(default_factory=dict)
    """`ai-infra:buckets` name -> `read`, `write` or `admin` for the team's Google service
    account."""
    groups: list[GroupEmail] = Field(default_factory=list)
    """Google groups (emails) that get `edit` in the team namespace and
    `roles/container.clusterViewer` on the project; needs `cluster.rbacSecurityGroup`."""
    service_account: DnsLabel = "training"
    """Kubernetes service account that jobs run as (`serviceAccountName`), bound to the
    team's Google service account."""


def problems(
    teams: list[TeamConfig],
    *,
    prefix: str,
    sources: Mapping[str, int],
    buckets: Iterable[str],
    namespace_owner: Callable[[str], str | None],
    rbac_security_group: str | None,
) -> list[Problem]:
    """Checks of `ai-infra:teams` against the rest of the stack. `sources` maps every slice
    and GPU pool name to the chips or GPUs it provides; `namespace_owner` names who creates
    a namespace a team may not take."""
    found = duplicate_names([t.name for t in teams], "teams")
    known_buckets = list(buckets)
    claimed: dict[str, int] = {}
    fractions: dict[str, float] = {}
    groups: dict[str, tuple[int, str]] = {}  # slug -> (team index, group) first listing it
    for i, team in enumerate(teams):
        entry: list[Problem] = []
        if owner := namespace_owner(team.name):
            entry.append(
                Problem(
                    ("name",),
                    f"namespace '{team.name}' belongs to {owner}; choose another team name",
                )
            )
        entry += account_id_problems(f"{prefix}-{team.name}")
        entry += duplicate_roles(team.roles)
        for key, share in team.quota.items():
            if key not in sources:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"no TPU slice or GPU pool named '{key}'; known: "
                        f"{', '.join(sources) or 'none'}",
                    )
                )
                continue
            claimed[key] = claimed.get(key, 0) + explicit_units(share, sources[key])
            if isinstance(share, float):
                fractions[key] = fractions.get(key, 0) + share
            # Fractions are checked before rounding: 60% + 50% of 8 chips rounds to 4 + 4.
            if fractions.get(key, 0) > 1 + 1e-9:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"teams' fractions of '{key}' add up to {fractions[key]:.0%}; lower "
                        "them to 100% or less",
                    )
                )
            elif claimed[key] > sources[key]:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"teams' shares of '{key}' add up to {claimed[key]}, but it provides "
                        f"{sources[key]}; lower the shares or add capacity",
                    )
                )
        entry += unknown_buckets(team.buckets, known_buckets)
        for j, group in enumerate(team.groups):
            first = groups.setdefault(slug(group), (i, group))
            if first == (i, group) and group not in team.groups[:j]:
                continue
            if first[1] == group and first[0] != i:
                continue  # teams may share a group; it is granted once
            entry.append(
                Problem(
                    ("groups", j),
                    f"'{group}' repeats '{first[1]}' (teams[{first[0]}]) up to case or "
                    "punctuation, and both would get one IAM grant; list each group once, "
                    "written the same way",
                )
            )
        if team.groups and not rbac_security_group:
            entry.append(
                Problem(
                    ("groups",),
                    "Google groups in RBAC need ai-infra:cluster.rbacSecurityGroup "
                    "(gke-security-groups@<your domain>) with these groups as members",
                )
            )
        found += [p.under(i) for p in entry]
    return found


class TeamArgs(WiringModel):
    project: str
    prefix: str
    cohort: str
    config: TeamConfig
    flavors: list[Flavor]
    quotas: dict[str, int]
    """Nominal quota per flavor for this team, from `quota.allocate`."""
    flex_start_checks: list[str]
    kueue_release: SkipValidation[pulumi.Resource]
    cluster: SkipValidation[pulumi.Resource]
    buckets: dict[str, SkipValidation[Bucket]]


class Team(Component):
    """Everything one team owns."""

    namespace: k8s.core.v1.Namespace
    identity: WorkloadIdentity
    cluster_queue: k8s.apiextensions.CustomResource
    local_queue: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: TeamArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:teams:Team", name, opts)
        team = args.config
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=team.name,
                labels={TEAM_LABEL: team.name, MANAGED_NAMESPACE_LABEL: "true"},
            ),
            opts=self.child_opts(),
        )
        self.identity = WorkloadIdentity(
            f"{name}-identity",
            workload_identity_args(
                project=args.project,
                account_id=f"{args.prefix}-{team.name}",
                display_name=f"Team {team.name} workloads",
                namespace=team.name,
                service_account=team.service_account,
                roles=team.roles,
                buckets=team.buckets,
                bucket_components=args.buckets,
                create_namespace=False,
                namespace_resource=self.namespace,
            ),
            # The identity pool PROJECT.svc.id.goog exists once the cluster does.
            self.child_opts(depends_on=[args.cluster]),
        )
        if team.groups:
            k8s.rbac.v1.RoleBinding(
                f"{name}-edit",
                metadata=k8s.meta.v1.ObjectMetaArgs(name="ai-infra-team-edit", namespace=team.name),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="edit"
                ),
                subjects=[
                    k8s.rbac.v1.SubjectArgs(
                        api_group="rbac.authorization.k8s.io", kind="Group", name=group
                    )
                    for group in team.groups
                ],
                opts=self.child_opts(depends_on=[self.namespace]),
            )

        spec: dict[str, Any] = {
            "cohortName": args.cohort,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.name}},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": resource_groups(
                args.flavors, args.quotas, cpu={"cpu": team.cpu, "memory": team.memory}
            ),
            # Borrow idle chips from the cohort, take them back when the lender needs them,
            # and let urgent work displace less important work inside the team.
            "preemption": {
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority"},
                "withinClusterQueue": "LowerPriority",
            },
            "flavorFungibility": {
                "whenCanBorrow": "MayStopSearch",
                "whenCanPreempt": "TryNextFlavor",
            },
        }
        flex_flavors = [f.name for f in args.flavors if f.flex_start]
        if flex_flavors and args.flex_start_checks:
            spec["admissionChecksStrategy"] = {
                "admissionChecks": [
                    {"name": check, "onFlavors": flex_flavors} for check in args.flex_start_checks
                ]
            }
        self.cluster_queue = kueue_object(
            self, f"{name}-cluster-queue", "ClusterQueue", team.name, spec, [args.kueue_release]
        )
        self.local_queue = kueue_object(
            self,
            f"{name}-local-queue",
            "LocalQueue",
            team.name,
            {"clusterQueue": team.name},
            [args.kueue_release, self.namespace, self.cluster_queue],
            namespace=team.name,
        )
        self.register_outputs(
            {"namespace": team.name, "queue": team.name, "serviceAccount": self.identity.email}
        )


class GroupAccessArgs(WiringModel):
    project: str
    groups: list[str]


class GroupAccess(Component):
    """`roles/container.clusterViewer` for every team group, once per group however many teams
    name it, so its members can fetch cluster credentials; namespaces grant the rest."""

    def __init__(
        self, name: str, args: GroupAccessArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:teams:GroupAccess", name, opts)
        for group in args.groups:
            gcp.projects.IAMMember(
                f"{name}-{slug(group)}",
                project=args.project,
                role="roles/container.clusterViewer",
                member=f"group:{group}",
                opts=self.child_opts(),
            )
        self.register_outputs({"groups": args.groups})
