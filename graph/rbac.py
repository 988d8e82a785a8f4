"""A small RBAC authorizer over what the program renders (RoleBindings, ClusterRoleBindings,
its own Roles and ClusterRoles) plus the charts' and Kubernetes' ClusterRoles recorded in
`chart_facts`, with aggregation resolved the way the ClusterRole aggregation controller does:
an aggregated role's rules are the union of the rules of every role whose labels its selector
matches. Enough to answer "may a member of these groups do this here?"."""

from __future__ import annotations

from typing import Any

from catalog.charts import CLUSTER_ROLES, Rule
from graph import types
from graph.model import Graph


def _rendered_rules(rules: list[dict[str, Any]]) -> list[Rule]:
    return [
        Rule(group, tuple(rule["resources"]), tuple(rule["verbs"]))
        for rule in rules
        for group in rule.get("apiGroups", [""])
        if not rule.get("resourceNames")
    ]


def cluster_role_rules(graph: Graph, name: str) -> list[Rule]:
    """The effective rules of ClusterRole `name`, rendered by the program or recorded from a
    chart; a role nobody creates is an error, not an empty grant."""
    rendered = [
        r for r in graph.of_type(types.CLUSTER_ROLE) if r.inputs["metadata"]["name"] == name
    ]
    if rendered:
        return _rendered_rules(rendered[0].inputs.get("rules", []))
    assert name in CLUSTER_ROLES, f"no chart or the program creates ClusterRole {name}"
    role = CLUSTER_ROLES[name]
    if role.aggregates is None:
        return list(role.rules)
    return [
        rule
        for member in CLUSTER_ROLES.values()
        if role.aggregates in member.labels
        for rule in member.rules
    ]


def _subject_matches(subjects: list[dict[str, Any]], groups: set[str]) -> bool:
    return any(s["kind"] == "Group" and s["name"] in groups for s in subjects)


def _grants(rules: list[Rule], verb: str, group: str, resource: str) -> bool:
    return any(
        rule.group in (group, "*")
        and (resource in rule.resources or "*" in rule.resources)
        and (verb in rule.verbs or "*" in rule.verbs)
        for rule in rules
    )


def allowed(
    graph: Graph,
    groups: set[str],
    verb: str,
    group: str,
    resource: str,
    namespace: str | None,
) -> bool:
    """Whether a user in `groups` may `verb` `resource` of API `group` in `namespace` (None:
    cluster-scoped), through the bindings the program renders."""
    rules: list[Rule] = []
    for binding in graph.of_type(types.CLUSTER_ROLE_BINDING):
        if _subject_matches(binding.inputs["subjects"], groups):
            rules += cluster_role_rules(graph, binding.inputs["roleRef"]["name"])
    if namespace is not None:
        for binding in graph.of_type(types.ROLE_BINDING):
            meta = binding.inputs["metadata"]
            if meta["namespace"] != namespace:
                continue
            if not _subject_matches(binding.inputs["subjects"], groups):
                continue
            ref = binding.inputs["roleRef"]
            if ref["kind"] == "ClusterRole":
                rules += cluster_role_rules(graph, ref["name"])
            else:
                (role,) = [
                    r
                    for r in graph.of_type(types.ROLE)
                    if (r.inputs["metadata"]["name"], r.inputs["metadata"].get("namespace"))
                    == (ref["name"], namespace)
                ]
                rules += _rendered_rules(role.inputs["rules"])
    return _grants(rules, verb, group, resource)
