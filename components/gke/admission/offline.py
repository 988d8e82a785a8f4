"""The policies evaluated offline with Google's CEL implementation (cel-expr-python), as the
API server evaluates them: resource rules, match conditions, variables, a namespace selector,
Deny, and failurePolicy Fail for an expression that errs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class Refusal:
    policy: str
    message: str


RESOURCES: dict[str, tuple[str, str]] = {
    "Pod": ("", "pods"),
    "Job": ("batch", "jobs"),
    "JobSet": ("jobset.x-k8s.io", "jobsets"),
    "CronJob": ("batch", "cronjobs"),
    "Deployment": ("apps", "deployments"),
    "StatefulSet": ("apps", "statefulsets"),
    "DaemonSet": ("apps", "daemonsets"),
    "Service": ("", "services"),
    "PersistentVolumeClaim": ("", "persistentvolumeclaims"),
}
"""Kind -> (API group, resource) of every object the policies judge."""


@cache
def _env() -> Any:
    from cel_expr_python import cel

    return cel.NewEnv(
        variables={
            name: cel.Type.DYN
            for name in ("object", "oldObject", "namespaceObject", "request", "variables")
        }
    )


@cache
def _compiled(expression: str) -> Any:
    return _env().compile(expression)


def _evaluate(expression: str, data: Mapping[str, Any]) -> Any:
    """The expression's value, or None when it errs (the API server then applies the
    policy's failurePolicy, Fail here)."""
    from cel_expr_python import cel

    value = _compiled(expression).eval(data=dict(data))
    if value.type() == cel.Type.ERROR:
        return None
    return value.plain_value()


def _namespace_selected(binding: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    selector = binding["spec"].get("matchResources", {}).get("namespaceSelector", {})
    for requirement in selector.get("matchExpressions", []):
        present = requirement["key"] in labels
        if (requirement["operator"] == "Exists") != present:
            return False
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def refusals(
    obj: Mapping[str, Any],
    namespace: Mapping[str, Any],
    documents: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    *,
    old: Mapping[str, Any] | None = None,
    subresource: str = "",
    user: str = "member@example.com",
) -> list[Refusal]:
    """What the API server would refuse of `obj` (a Pod, Job, JobSet, CronJob, Deployment,
    StatefulSet, DaemonSet, Service or PersistentVolumeClaim, as a manifest) on create in
    `namespace` (the Namespace object), or on update from `old`, under `documents`: (policy,
    binding) manifests, as `manifests.manifest` renders them or as a plan registered them;
    with `subresource` (`ephemeralcontainers`), an update through it; `user` makes the request
    (a team member; `kueue.JOBSET_CONTROLLER` for a JobSet's Jobs). Only the policies this
    package writes are understood: resource rules, match conditions, a namespace selector,
    Deny."""
    if subresource and old is None:
        raise ValueError("a write through a subresource is an update: pass `old`")
    request = {"operation": "CREATE" if old is None else "UPDATE", "userInfo": {"username": user}}
    kind = obj.get("kind", "")
    resource = RESOURCES.get(kind)
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    found = []
    for policy, binding in documents:
        spec = policy["spec"]
        rules = spec["matchConstraints"]["resourceRules"]
        if resource is None:
            continue
        name = f"{resource[1]}/{subresource}" if subresource else resource[1]
        if not any(resource[0] in r["apiGroups"] and name in r["resources"] for r in rules):
            continue
        if not _namespace_selected(binding, labels):
            continue
        data: dict[str, Any] = {
            "object": obj,
            "namespaceObject": namespace,
            "oldObject": old,
            "request": request,
        }
        conditions = [_evaluate(c["expression"], data) for c in spec.get("matchConditions", [])]
        if False in conditions:
            continue
        if None in conditions:
            # An erring condition under failurePolicy Fail refuses the request.
            found.append(Refusal(policy["metadata"]["name"], "a match condition failed"))
            continue
        variables: dict[str, Any] = {}
        for variable in spec.get("variables") or []:
            variables[variable["name"]] = _evaluate(
                variable["expression"], {**data, "variables": variables}
            )
        data["variables"] = variables
        for validation in spec["validations"]:
            if _evaluate(validation["expression"], data) is not True:
                found.append(Refusal(policy["metadata"]["name"], validation["message"]))
    return found
