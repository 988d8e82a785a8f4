"""IAM as a recorded stack grants it, for fakes of Google APIs: every `projects.IAMMember` and
`serviceaccount.IAMMember` of a member (or of a group it is in), its condition evaluated with
CEL on the resource a call touches, custom roles with their registered permissions, and the
predefined roles the stack grants with the permissions IAM's role reference lists for them
(`PREDEFINED`; nothing else of those roles matters to the calls the fakes serve).

Resources IAM Conditions cannot name (Cloud TPU's) carry empty `resource.type` and
`resource.name`, so a condition lets them through only by `!=`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from graph import types
from graph.model import Graph

PREDEFINED = {
    "roles/compute.osLogin": frozenset({"compute.instances.osLogin"}),
    "roles/compute.osAdminLogin": frozenset(
        {"compute.instances.osLogin", "compute.instances.osAdminLogin"}
    ),
    "roles/iap.tunnelResourceAccessor": frozenset(
        {"iap.tunnelInstances.accessViaIAP", "iap.tunnelDestGroups.accessViaIAP"}
    ),
    "roles/iam.serviceAccountUser": frozenset(
        {"iam.serviceAccounts.actAs", "iam.serviceAccounts.get", "iam.serviceAccounts.list"}
    ),
}
"""The permissions of the predefined roles a stack grants logins that these calls can need
(IAM "Compute Engine roles and permissions", "IAP roles", "Service accounts roles")."""

INSTANCE = "compute.googleapis.com/Instance"
GROUP = "compute.googleapis.com/InstanceGroupManager"
PROJECT = "compute.googleapis.com/Project"
ACCOUNT = "iam.googleapis.com/ServiceAccount"
UNNAMED = ""
"""resource.type and resource.name of what IAM Conditions cannot name (Cloud TPU's nodes)."""


@dataclass(frozen=True)
class Resource:
    """What IAM evaluates a permission on: `resource.service`, `.type` and `.name`."""

    service: str
    type: str
    name: str

    def attributes(self) -> dict[str, str]:
        return {"service": self.service, "type": self.type, "name": self.name}


@dataclass(frozen=True)
class Binding:
    member: str
    role: str
    condition: str | None
    account: str | None = None
    """The service account (email) a `serviceaccount.IAMMember` grants on; None: the project."""


@cache
def _compiled(expression: str) -> Any:
    from cel_expr_python import cel

    env = cel.NewEnv(variables={"resource": cel.Type.DYN, "destination": cel.Type.DYN})
    return env.compile(expression)


def holds(expression: str, resource: Resource, destination: Mapping[str, Any]) -> bool:
    """A condition's value on `resource`; an error (an attribute the request lacks) denies."""
    from cel_expr_python import cel

    data = {"resource": resource.attributes(), "destination": dict(destination)}
    value = _compiled(expression).eval(data=data)
    return value.type() != cel.Type.ERROR and value.plain_value() is True


class Iam:
    """The grants a recorded stack makes, and what they allow a caller."""

    def __init__(self, graph: Graph, groups: Mapping[str, Sequence[str]] | None = None) -> None:
        self.groups = {k: tuple(v) for k, v in (groups or {}).items()}
        self.roles: dict[str, frozenset[str]] = dict(PREDEFINED)
        for r in graph.of_type(types.CUSTOM_ROLE):
            name = f"projects/{r.inputs['project']}/roles/{r.inputs['roleId']}"
            self.roles[name] = frozenset(r.inputs["permissions"])
        self.bindings: list[Binding] = []
        for r in graph.of_type(types.PROJECT_IAM_MEMBER):
            condition = (r.inputs.get("condition") or {}).get("expression")
            self.bindings.append(Binding(r.inputs["member"], r.inputs["role"], condition))
        for r in graph.of_type(types.SERVICE_ACCOUNT_IAM_MEMBER):
            account = r.inputs["serviceAccountId"].rsplit("/", 1)[-1]
            self.bindings.append(Binding(r.inputs["member"], r.inputs["role"], None, account))

    def principals(self, member: str) -> set[str]:
        return {member, *(g for g, members in self.groups.items() if member in members)}

    def allows(
        self,
        member: str,
        permission: str,
        resource: Resource,
        destination: Mapping[str, Any] | None = None,
    ) -> bool:
        principals = self.principals(member)
        for b in self.bindings:
            if b.member not in principals or permission not in self.roles.get(b.role, ()):
                continue
            if b.account is not None and not (
                resource.type == ACCOUNT and resource.name.endswith(f"/{b.account}")
            ):
                continue
            if b.condition is None or holds(b.condition, resource, destination or {}):
                return True
        return False


def instance(project: str, zone: str, name: str) -> Resource:
    return Resource(
        "compute.googleapis.com", INSTANCE, f"projects/{project}/zones/{zone}/instances/{name}"
    )
