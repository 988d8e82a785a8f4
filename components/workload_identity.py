"""Workload Identity: a Google service account with project roles and bucket access, usable by
exactly one Kubernetes service account (`serviceAccount:PROJECT.svc.id.goog[NS/KSA]`).
The Kubernetes side (namespace, annotated KSA) is created with the cluster's objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
from pydantic import Field, SkipValidation

from components.base import (
    Component,
    ConfigModel,
    DnsLabel,
    IamRole,
    Problem,
    WiringModel,
    duplicate_names,
    service_account_email,
    slug,
)
from components.buckets import (
    ACCESS_ROLES,
    Bucket,
    BucketAccess,
    grant_bucket_access,
    unknown_buckets,
)

_ACCOUNT_ID = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")


def account_id_problems(account_id: str) -> list[Problem]:
    """A `name` problem when `<prefix>-<name>` is not a valid service account id."""
    if _ACCOUNT_ID.fullmatch(account_id):
        return []
    return [
        Problem(
            ("name",),
            f"service account id '{account_id}' must be 6 to 30 lowercase letters, digits or "
            "'-', starting with a letter; shorten the name or the stack prefix",
        )
    ]


class WorkloadIdentityConfig(ConfigModel):
    """One entry of `ai-infra:workloadIdentities`."""

    name: DnsLabel
    """The Google service account is `<prefix>-<name>@PROJECT.iam.gserviceaccount.com`."""
    namespace: DnsLabel
    """Kubernetes namespace of the workload."""
    service_account: DnsLabel
    """The Kubernetes service account that may act as the Google service account, bound as
    `serviceAccount:PROJECT.svc.id.goog[NAMESPACE/SERVICE_ACCOUNT]`."""
    roles: list[IamRole] = Field(default_factory=list)
    """Project roles, e.g. roles/tpu.viewer. Basic roles are refused."""
    buckets: dict[str, BucketAccess] = Field(default_factory=dict)
    """`ai-infra:buckets` name -> `read`, `write` or `admin` (roles/storage.objectViewer,
    objectUser, objectAdmin on that bucket)."""
    create_namespace: bool = True
    """Create the namespace; turn off when another identity or a team already has it."""


def role_key(role: str) -> str:
    """The part of a role grant's resource name that names the role."""
    return role.split("/")[-1] if role.startswith("roles/") else slug(role)


def duplicate_roles(roles: list[str]) -> list[Problem]:
    """`roles[i]` problems for a role an earlier entry already lists, or one whose grant
    would get the same resource name (custom roles differing only in case)."""
    keys = [role_key(r) for r in roles]
    return [
        Problem(
            ("roles", i),
            f"{role} repeats roles[{keys.index(keys[i])}] (custom roles differing only in case "
            "would also share one resource name); list each role once",
        )
        for i, role in enumerate(roles)
        if keys[i] in keys[:i]
    ]


def problems(
    identities: list[WorkloadIdentityConfig],
    *,
    prefix: str,
    buckets: Iterable[str],
    teams: Iterable[str],
    namespace_owner: Callable[[str], str | None],
) -> list[Problem]:
    """Checks of `ai-infra:workloadIdentities` against the rest of the stack: account ids,
    bucket names, and who creates each namespace. `namespace_owner` names who creates a
    namespace the stack may not create (Kubernetes, GKE, the platform), or None."""
    found = duplicate_names([i.name for i in identities], "workloadIdentities")
    team_names, known_buckets = set(teams), list(buckets)
    created: dict[str, int] = {}
    for i, identity in enumerate(identities):
        entry: list[Problem] = account_id_problems(f"{prefix}-{identity.name}")
        entry += duplicate_roles(identity.roles)
        entry += unknown_buckets(identity.buckets, known_buckets)
        system_owner = namespace_owner(identity.namespace)
        if system_owner is not None and not identity.create_namespace:
            # A KSA there bound to a Google account with roles would hand those roles to
            # whatever Kubernetes or GKE runs in that namespace.
            entry.append(
                Problem(
                    ("namespace",),
                    f"namespace '{identity.namespace}' belongs to {system_owner}; run workloads "
                    "in a namespace of your own",
                )
            )
        if identity.create_namespace:
            owner = "a team" if identity.namespace in team_names else None
            owner = owner or system_owner
            if owner:
                entry.append(
                    Problem(
                        ("createNamespace",),
                        f"namespace '{identity.namespace}' is created by {owner}; set "
                        "createNamespace: false",
                    )
                )
            elif identity.namespace in created:
                entry.append(
                    Problem(
                        ("createNamespace",),
                        f"namespace '{identity.namespace}' is already created by "
                        f"workloadIdentities[{created[identity.namespace]}]; set "
                        "createNamespace: false",
                    )
                )
            else:
                created[identity.namespace] = i
        found += [p.under(i) for p in entry]
    return found


Claim = tuple[tuple[str | int, ...], str]
"""(config path of the entry that claims it, what it claims)."""


def ownership_problems(
    claims: Sequence[Claim], what: str, field: str, *, within_a_key: bool = True
) -> list[Problem]:
    """A `<path>.<field>` problem for every claim an earlier entry already made: each
    Kubernetes service account (`namespace/name`) and each Google service account id has
    exactly one owner, or one entry could act as another's identity. Without `within_a_key`,
    two entries of one list are left to its own uniqueness check."""
    owner: dict[str, tuple[str | int, ...]] = {}
    found = []
    for path, claimed in claims:
        if claimed in owner:
            first = owner[claimed]
            if not within_a_key and first[:1] == path[:1]:
                continue
            found.append(
                Problem(
                    (*path, field),
                    f"{what} '{claimed}' already belongs to {_describe(first)}; each has exactly "
                    "one owner, so pick another",
                )
            )
        else:
            owner[claimed] = path
    return found


def _describe(path: tuple[str | int, ...]) -> str:
    head, *rest = path
    return str(head) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest)


class KubernetesSide(WiringModel):
    create_namespace: bool
    namespace: SkipValidation[pulumi.Resource] | None = None
    """The namespace, when someone else creates it."""


class WorkloadIdentityArgs(WiringModel):
    project: str
    account_id: str
    display_name: str
    namespace: str
    kubernetes_service_account: str
    roles: list[str]
    bucket_access: list[tuple[str, SkipValidation[Bucket], str]] = Field(default_factory=list)
    """(bucket config name, bucket, role)."""
    kubernetes: KubernetesSide | None = None
    """Create the annotated Kubernetes service account (and namespace) as well."""


class WorkloadIdentity(Component):
    """GSA + per-member project roles + bucket grants + the Workload Identity binding."""

    service_account: gcp.serviceaccount.Account
    email: str
    member: str
    """`serviceAccount:<email>`, for IAM grants."""
    workload_member: str

    def __init__(
        self, name: str, args: WorkloadIdentityArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:workload_identity:WorkloadIdentity", name, opts)
        self.service_account = gcp.serviceaccount.Account(
            f"{name}-gsa",
            project=args.project,
            account_id=args.account_id,
            display_name=args.display_name,
            opts=self.child_opts(),
        )
        # Everything else waits for the account, and so for what the component waits for;
        # depending on the account alone keeps each child's dependency list short.
        after_gsa = pulumi.ResourceOptions(parent=self, depends_on=[self.service_account])
        self.email = service_account_email(args.account_id, args.project)
        self.member = f"serviceAccount:{self.email}"
        self.workload_member = (
            f"serviceAccount:{args.project}.svc.id.goog"
            f"[{args.namespace}/{args.kubernetes_service_account}]"
        )
        gcp.serviceaccount.IAMMember(
            f"{name}-workload-identity",
            service_account_id=f"projects/{args.project}/serviceAccounts/{self.email}",
            role="roles/iam.workloadIdentityUser",
            member=self.workload_member,
            opts=after_gsa,
        )
        for role in args.roles:
            gcp.projects.IAMMember(
                f"{name}-{role_key(role)}",
                project=args.project,
                role=role,
                member=self.member,
                opts=after_gsa,
            )
        for bucket_key, bucket, role in args.bucket_access:
            grant_bucket_access(
                f"{name}-bucket-{bucket_key}",
                bucket,
                role=role,
                member=self.member,
                opts=after_gsa,
            )
        if args.kubernetes is not None:
            after: list[pulumi.Resource] = (
                [args.kubernetes.namespace] if args.kubernetes.namespace else []
            )
            if args.kubernetes.create_namespace:
                after.append(
                    k8s.core.v1.Namespace(
                        f"{name}-namespace",
                        metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace),
                        opts=pulumi.ResourceOptions(parent=self),
                    )
                )
            k8s.core.v1.ServiceAccount(
                f"{name}-service-account",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=args.kubernetes_service_account,
                    namespace=args.namespace,
                    annotations={"iam.gke.io/gcp-service-account": self.email},
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )
        self.register_outputs({"email": self.email, "member": self.workload_member})


def bucket_role(access: BucketAccess) -> str:
    return ACCESS_ROLES[access]


def workload_identity_args(
    *,
    project: str,
    account_id: str,
    display_name: str,
    namespace: str,
    service_account: str,
    roles: list[str],
    buckets: Mapping[str, BucketAccess],
    bucket_components: Mapping[str, Bucket],
    create_namespace: bool,
    namespace_resource: pulumi.Resource | None = None,
) -> WorkloadIdentityArgs:
    """Args for an identity whose bucket access is named by `ai-infra:buckets` keys."""
    return WorkloadIdentityArgs(
        project=project,
        account_id=account_id,
        display_name=display_name,
        namespace=namespace,
        kubernetes_service_account=service_account,
        roles=roles,
        bucket_access=[
            (bucket, bucket_components[bucket], bucket_role(access))
            for bucket, access in buckets.items()
        ],
        kubernetes=KubernetesSide(create_namespace=create_namespace, namespace=namespace_resource),
    )
