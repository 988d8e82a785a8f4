"""Who may log in to a GPU cluster's or a TPU VM entry's VMs: the `logins` of an entry, each a
user, group or service account with or without sudo, and the grants that let them reach the
VMs the way `python -m hosts` and gcloud's `ssh` commands do, and what would let one login act
as another (a machine's account as a member, mounts every user can write over the homes). Not
a project-wide access model: roles an organization grants elsewhere are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

import pulumi
import pulumi_gcp as gcp
from pydantic import AfterValidator

from components.base import Component, ConfigModel, Problem, slug
from components.identity import account_grant, custom_role, project_grant
from components.types import IamMember

OS_LOGIN = "roles/compute.osLogin"
OS_ADMIN_LOGIN = "roles/compute.osAdminLogin"
TUNNEL_ROLE = "roles/iap.tunnelResourceAccessor"
ACCOUNT_USER = "roles/iam.serviceAccountUser"
"""OS Login asks it of anyone who logs in to a VM that runs as a service account, on that
account (Compute Engine, "Set up OS Login": grant roles/iam.serviceAccountUser)."""

SSH_ONLY = gcp.projects.IAMMemberConditionArgs(
    title="IAP tunnels to SSH only",
    description="IAP TCP forwarding to port 22, where OS Login decides who gets in",
    expression="destination.port == 22",
)
"""IAP's tunnel role reaches one port. Per-instance tunnel grants need the instance's name,
which a managed group or Cloud TPU makes at deploy (a TPU worker's is read from its guest
attributes, googlecloudsdk command_lib/compute/tpus/tpu_vm/ssh.py, gcloud 528.0.0); the
login itself stays the entry's own OS Login grant (IAP "Using IAP for TCP forwarding":
conditions on destination.port)."""

MAX_ROLE_ID = 64
"""Custom role ids are 3 to 64 characters (IAM projects.roles.create)."""
VIEWER_DESCRIPTION = "What gcloud's ssh and python -m hosts read to reach the VMs"
MAX_LOGINS = 1500
"""An allow policy holds at most 1,500 principals (IAM "Quotas and limits"), and each login is
one in the project's."""
_PERSON = re.compile(r"(user|group|serviceAccount):.+")


def _person(value: str) -> str:
    if not _PERSON.fullmatch(value):
        raise ValueError(
            f"'{value}' cannot log in to a VM; OS Login takes a user:, group: or "
            "serviceAccount: member with an email, e.g. user:alice@example.com"
        )
    return value


LoginMember = Annotated[IamMember, AfterValidator(_person)]
"""A `user:`, `group:` or `serviceAccount:` member with a plausible email."""


class Login(ConfigModel):
    """One principal allowed to log in to the entry's VMs through OS Login and IAP."""

    member: LoginMember
    """`user:alice@example.com`, `group:ml-team@example.com` or
    `serviceAccount:NAME@PROJECT.iam.gserviceaccount.com`."""
    sudo: bool = False
    """Root through sudo (`roles/compute.osAdminLogin`) instead of a plain login
    (`roles/compute.osLogin`)."""

    @property
    def role(self) -> str:
        return OS_ADMIN_LOGIN if self.sudo else OS_LOGIN


def viewer_role_id(base: str, system: str) -> str:
    """The entry's custom viewer role, `<base>_<system>_login` (ids take letters, digits, '_'
    and '.'): a GPU cluster and a TPU VM entry of one name stay apart."""
    return f"{base.replace('-', '_')}_{system}_login"


def login_problems(logins: Sequence[Login], role_id: str) -> list[Problem]:
    """A `logins[i].member` problem for each member listed before, and a `logins` problem
    when the entry's viewer role id would pass IAM's 64 characters."""
    seen: dict[str, int] = {}
    found = []
    if logins and len(role_id) > MAX_ROLE_ID:
        found.append(
            Problem(
                ("logins",),
                f"the logins' custom role id '{role_id}' is longer than IAM's {MAX_ROLE_ID} "
                "characters; shorten the entry's name or the stack prefix",
            )
        )
    for i, login in enumerate(logins):
        first = seen.setdefault(login.member.lower(), i)
        if first != i:
            found.append(
                Problem(
                    ("logins", i, "member"),
                    f"{login.member} is already listed at logins[{first}]; list each member "
                    "once (with sudo: true to give it root)",
                )
            )
    return found


def machine_account_problems(logins: Sequence[Login], accounts: Mapping[str, str]) -> list[Problem]:
    """A `logins[i].member` problem for a service account that machines or pods run as:
    `accounts` maps such emails (lower case) to whose they are. Anything running there gets
    the account's token from the metadata server, so every program on those machines could
    log in as it (and be root, with sudo)."""
    found = []
    for i, login in enumerate(logins):
        kind, _, email = login.member.partition(":")
        owner = accounts.get(email.lower()) if kind == "serviceAccount" else None
        if owner is None:
            continue
        found.append(
            Problem(
                ("logins", i, "member"),
                f"{login.member} is {owner}: every process running as it gets its token from "
                "the metadata server, so any program there could log in to these VMs"
                + (" as root" if login.sudo else " as that account")
                + "; list the people or groups who log in, never a machine's account",
            )
        )
    return found


OPEN_TO_ALL = ("/home",)
"""Where a mount every user can write hands each user the others' files: their homes (their
`~/.bashrc`, `~/.ssh`), so anyone could act as anyone, root through a sudo member."""


def open_home_problem(path: str, what: str) -> str | None:
    """Why `what`, writable by every user, may not be mounted at `path`; None when it may."""
    top = "/" + path.split("/")[1]
    if top not in OPEN_TO_ALL:
        return None
    return (
        f"{what} is writable by every user, and at '{path}' every user could write the others' "
        f"home directories (their shell start-up files, ~/.ssh) and so act as them, root "
        "through a member with sudo; mount it under /data, /gcs or /mnt, or read-only"
    )


INSTANCE = "compute.googleapis.com/Instance"
GROUP = "compute.googleapis.com/InstanceGroupManager"
TPU_HOST_PREFIX = "t1v-n-"
"""How Cloud TPU names a TPU VM's hosts (`t1v-n-<8 hex>-w-<worker>`), the instance name each
worker's guest attribute `hostname` gives and gcloud hands IAP's tunnel in the project
(googlecloudsdk command_lib/compute/tpus/tpu_vm/ssh.py, gcloud 528.0.0)."""


def instance_condition(
    prefix: str, title: str, *, group: str | None = None
) -> gcp.projects.IAMMemberConditionArgs:
    """Only the Compute Engine instances whose resource name starts with `prefix`
    (`projects/P/zones/Z/instances/<base>-`; IAM "Resource attributes for IAM Conditions").
    With `group` (`projects/P/zones/Z/instanceGroupManagers/<base>`), that group too, and
    whatever is neither an instance nor a group (the project gcloud reads): types without
    resource attributes must be let through by `!=`, not named (IAM "Configure
    resource-based access")."""
    expression = f'resource.type == "{INSTANCE}" && resource.name.startsWith("{prefix}")'
    if group is not None:
        expression = (
            f"({expression}) || "
            f'(resource.type == "{GROUP}" && resource.name == "{group}") || '
            f'(resource.type != "{INSTANCE}" && resource.type != "{GROUP}")'
        )
    return gcp.projects.IAMMemberConditionArgs(
        title=title[:100], description=f"Instances {prefix}*", expression=expression
    )


def tpu_host_condition(project: str, zone: str) -> gcp.projects.IAMMemberConditionArgs:
    """OS Login on TPU VM hosts and nothing else of Compute Engine: a Compute Engine instance
    only when its name is a TPU VM host's in the zone, anything else (a TPU node, the project)
    as before. Which resource OS Login checks for a TPU VM is documented nowhere; this holds
    if it is the host instance IAP is told of, or anything but a Compute Engine instance, and
    is unverified until tried live (docs/tpu-vms.md)."""
    prefix = f"projects/{project}/zones/{zone}/instances/{TPU_HOST_PREFIX}"
    return gcp.projects.IAMMemberConditionArgs(
        title=f"TPU VM hosts in {zone}",
        description=f"No Compute Engine VM but TPU VM hosts {TPU_HOST_PREFIX}* in {zone}",
        expression=f'resource.type != "{INSTANCE}" || resource.name.startsWith("{prefix}")',
    )


@dataclass(frozen=True)
class Role:
    """A custom role of exactly `permissions`, made once per entry."""

    role_id: str
    title: str
    description: str
    permissions: tuple[str, ...]

    def make(self, parent: Component, resource_name: str, project: str) -> pulumi.Resource:
        return custom_role(
            parent,
            resource_name,
            project=project,
            role_id=self.role_id,
            title=self.title,
            description=self.description,
            permissions=self.permissions,
        )

    def name(self, project: str) -> str:
        return f"projects/{project}/roles/{self.role_id}"


@dataclass(frozen=True)
class LoginGrants:
    """How an entry's members reach its VMs: the OS Login role's condition (None: the
    project, where the VMs' service allows nothing narrower), the read-only role gcloud and
    `python -m hosts` use, with its condition, and the VMs' account."""

    login_condition: gcp.projects.IAMMemberConditionArgs | None
    viewer: Role
    viewer_condition: gcp.projects.IAMMemberConditionArgs | None
    account: str
    sudo_role: Role | None = None
    """What only `sudo: true` members get besides, on the project: root on the VMs reached
    makes it no wider for them (TPU VMs: writing the user's key into the node's metadata)."""


def grant_logins(
    parent: Component,
    owner: str,
    *,
    project: str,
    logins: Sequence[Login],
    grants: LoginGrants,
    depends_on: Sequence[pulumi.Resource] = (),
) -> list[pulumi.Resource]:
    """Per member: its OS Login role, the IAP tunnel role to port 22, the entry's viewer role
    (and, with sudo, the entry's sudo role) and `roles/iam.serviceAccountUser` on the entry's
    VM account alone; one custom viewer role for the entry, and a sudo role where a member has
    sudo. Nothing when `logins` is empty."""
    if not logins:
        return []
    viewer = grants.viewer.make(parent, f"{owner}-viewer", project)
    made: list[pulumi.Resource] = [viewer]
    sudo: tuple[Role, pulumi.Resource] | None = None
    if grants.sudo_role is not None and any(login.sudo for login in logins):
        sudo = (grants.sudo_role, grants.sudo_role.make(parent, f"{owner}-sudo", project))
        made.append(sudo[1])
    for login in logins:
        scope = slug(login.member)
        roles = [
            (login.role, grants.login_condition, depends_on),
            (TUNNEL_ROLE, SSH_ONLY, depends_on),
            (grants.viewer.name(project), grants.viewer_condition, [viewer]),
        ]
        if sudo is not None and login.sudo:
            roles.append((sudo[0].name(project), None, [sudo[1]]))
        made += [
            project_grant(
                parent,
                owner,
                project=project,
                role=role,
                member=login.member,
                condition=condition,
                scope=scope,
                depends_on=waits_for,
            )
            for role, condition, waits_for in roles
        ]
        made.append(
            account_grant(
                parent,
                owner,
                account=grants.account,
                role=ACCOUNT_USER,
                member=login.member,
                scope=scope,
                depends_on=depends_on,
            )
        )
    return made


def describe_logins(logins: Sequence[Login], where: str) -> list[str]:
    """The plan's line of who may log in, and where their OS Login grant reaches."""
    if not logins:
        return ["    logins: none granted by the stack"]
    who = ", ".join(f"{x.member}{' (sudo)' if x.sudo else ''}" for x in logins)
    return [f"    logins: {who}; OS Login {where}; IAP to port 22; the VMs' account"]
