"""Dedicated service accounts and IAM grants, built one way for every system: an account
`<owner>-sa` with its project roles granted per member, and every grant named
`<owner>[-<scope>]-<role key>`, so that two grants of one owner can share a name only when
they grant the same role on the same thing.

Also the checks every system runs on the accounts it would create: a valid id, each role
listed once, and each account id (and Kubernetes service account) owned by one entry.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.base import Component, PathPart, Problem, relative_path, slug
from components.types import service_account_project

OS_LOGIN_METADATA = {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"}
"""SSH through OS Login only, on every VM the program makes or has made (GPU clusters, TPU
VMs, Slurm's controller, login and nodes): with OS Login on, Compute Engine accepts no keys
from metadata (compute/docs/instances/managing-instance-access). gcloud's `tpu-vm ssh` imports
the user's key to their OS Login profile, and writes it into the node's `ssh-keys` too, where
OS Login ignores it (googlecloudsdk command_lib/compute/tpus/tpu_vm/ssh.py, gcloud 528.0.0)."""

_ACCOUNT_ID = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")


def service_account_email(account_id: str, project: str) -> str:
    """A user-managed service account's email is fixed by its id; knowing it up front keeps
    IAM members plain strings instead of outputs to wait on."""
    return f"{account_id}@{project}.iam.gserviceaccount.com"


def account_id_problems(account_id: str, field: str = "name") -> list[Problem]:
    """A `field` problem when a derived account id (`<prefix>-<name>`) is not a valid one."""
    if _ACCOUNT_ID.fullmatch(account_id):
        return []
    return [
        Problem(
            (field,),
            f"service account id '{account_id}' must be 6 to 30 lowercase letters, digits or "
            "'-', starting with a letter; shorten the name or the stack prefix",
        )
    ]


def role_key(role: str) -> str:
    """The part of a grant's resource name that names the role: a predefined role without
    `roles/` (`storage.objectUser`), a custom role slugged (it carries a path)."""
    return role.removeprefix("roles/") if role.startswith("roles/") else slug(role)


def grant_name(owner: str, role: str, scope: str | None = None) -> str:
    """The one naming scheme of IAM grants: `<owner>[-<scope>]-<role key>`."""
    return "-".join(part for part in (owner, scope, role_key(role)) if part)


def duplicate_roles(roles: Sequence[str], granted: Sequence[str] = ()) -> list[Problem]:
    """`roles[i]` problems for a role listed before it, or already `granted` by the program,
    or sharing a grant name with one (custom roles differing only in case)."""
    keys = [role_key(r) for r in (*granted, *roles)]
    shift = len(granted)
    return [
        Problem(
            ("roles", i),
            f"{role} repeats a role "
            + (
                f"listed at roles[{keys.index(key) - shift}]"
                if keys.index(key) >= shift
                else "the program already grants this account"
            )
            + " (custom roles differing only in case would also share one resource name); "
            "list each role once",
        )
        for i, role in enumerate(roles)
        if (key := keys[shift + i]) in keys[: shift + i]
    ]


Claim = tuple[tuple[PathPart, ...], str]
"""(config path of the entry that claims it, what it claims)."""


def ownership_problems(
    claims: Sequence[Claim], what: str, field: str, *, within_a_key: bool = True
) -> list[Problem]:
    """A `<path>.<field>` problem for every claim an earlier entry already made: each
    Kubernetes service account (`namespace/name`) and each Google service account id has
    exactly one owner, or one entry could act as another's identity. Without `within_a_key`,
    two entries of one list are left to its own uniqueness check."""
    owner: dict[str, tuple[PathPart, ...]] = {}
    found = []
    for path, claimed in claims:
        if claimed in owner:
            first = owner[claimed]
            if not within_a_key and first[:1] == path[:1]:
                continue
            found.append(
                Problem(
                    (*path, field),
                    f"{what} '{claimed}' already belongs to {relative_path(first)}; each has "
                    "exactly one owner, so pick another",
                )
            )
        else:
            owner[claimed] = path
    return found


def grant_opts(parent: Component, depends_on: Sequence[pulumi.Resource]) -> pulumi.ResourceOptions:
    """A grant waits for what it grants to and on (the account, the bucket), and through them
    for whatever those wait for; one with nothing of that kind (a group's project role) waits
    for what its component waits for."""
    if not depends_on:
        return parent.child_opts()
    return pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on))


def project_grant(
    parent: Component,
    owner: str,
    *,
    project: str,
    role: str,
    member: pulumi.Input[str],
    depends_on: Sequence[pulumi.Resource] = (),
    condition: gcp.projects.IAMMemberConditionArgs | None = None,
    scope: str | None = None,
) -> gcp.projects.IAMMember:
    """One member in one project role, leaving every other grant of the role alone; with
    `condition`, only where it holds. `scope` tells apart one owner's grants of one role to
    several members."""
    return gcp.projects.IAMMember(
        grant_name(owner, role, scope),
        project=project,
        role=role,
        member=member,
        condition=condition,
        opts=grant_opts(parent, depends_on),
    )


def custom_role(
    parent: Component,
    resource_name: str,
    *,
    project: str,
    role_id: str,
    title: str,
    description: str,
    permissions: Sequence[str],
) -> gcp.projects.IAMCustomRole:
    """A project custom role of exactly `permissions`, where a predefined role would grant far
    more. IAM keeps a deleted role's id for a while; the provider undeletes it when it is
    created again (resource_google_project_iam_custom_role.go)."""
    return gcp.projects.IAMCustomRole(
        resource_name,
        project=project,
        role_id=role_id,
        title=title,
        description=description,
        permissions=list(permissions),
        stage="GA",
        opts=parent.child_opts(),
    )


def custom_role_grant(
    parent: Component,
    resource_name: str,
    owner: str,
    *,
    project: str,
    role_id: str,
    title: str,
    description: str,
    permissions: Sequence[str],
    member: pulumi.Input[str],
    depends_on: Sequence[pulumi.Resource] = (),
    condition: gcp.projects.IAMMemberConditionArgs | None = None,
) -> tuple[gcp.projects.IAMCustomRole, gcp.projects.IAMMember]:
    """A `custom_role` and its grant to `member`."""
    role = custom_role(
        parent,
        resource_name,
        project=project,
        role_id=role_id,
        title=title,
        description=description,
        permissions=permissions,
    )
    grant = project_grant(
        parent,
        owner,
        project=project,
        role=f"projects/{project}/roles/{role_id}",
        member=member,
        depends_on=[*depends_on, role],
        condition=condition,
    )
    return role, grant


def account_grant(
    parent: Component,
    owner: str,
    *,
    account: str,
    role: str,
    member: str,
    scope: str | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
) -> gcp.serviceaccount.IAMMember:
    """One member in one role on the service account `account` (an email); `scope` names the
    account in the grant's name when it is not the owner's own."""
    return gcp.serviceaccount.IAMMember(
        grant_name(owner, role, scope),
        service_account_id=f"projects/{service_account_project(account)}/serviceAccounts/{account}",
        role=role,
        member=member,
        opts=grant_opts(parent, depends_on),
    )


@dataclass
class Identity:
    """A dedicated service account and its project grants."""

    owner: str
    """The resource-name prefix of the account and its grants."""
    account: gcp.serviceaccount.Account
    email: str
    grants: list[pulumi.Resource] = field(default_factory=list)

    @property
    def member(self) -> str:
        """`serviceAccount:<email>`, for IAM grants."""
        return f"serviceAccount:{self.email}"

    @property
    def ready(self) -> list[pulumi.Resource]:
        """The account and its grants: what a VM running as it waits for."""
        return [self.account, *self.grants]


def service_account(
    parent: Component,
    owner: str,
    *,
    project: str,
    account_id: str,
    display_name: str,
    roles: Sequence[str] = (),
) -> Identity:
    """The account `<owner>-sa` with `roles` on the project, one grant per role."""
    account = gcp.serviceaccount.Account(
        f"{owner}-sa",
        project=project,
        account_id=account_id,
        display_name=display_name,
        opts=parent.child_opts(),
    )
    identity = Identity(owner, account, service_account_email(account_id, project))
    identity.grants = [
        project_grant(
            parent, owner, project=project, role=role, member=identity.member, depends_on=[account]
        )
        for role in roles
    ]
    return identity
