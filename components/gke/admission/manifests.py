"""The policies as the API server holds them: a ValidatingAdmissionPolicy and its binding to
every namespace labelled `ai-infra/team`, as manifests (what the offline evaluation reads) and
as the Kubernetes objects the program registers from those same manifests.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.gke.admission.expressions import TEAM_LABEL, Policy


def manifest(policy: Policy) -> dict[str, Any]:
    """The policy as the API server holds it (camelCase), what `refusals` evaluates."""
    return {
        "metadata": {"name": policy.name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": [resource],
                    }
                    for group, resource in policy.resources
                ]
            },
            "matchConditions": [{"name": n, "expression": e} for n, e in policy.conditions],
            "variables": [{"name": n, "expression": e} for n, e in policy.variables],
            "validations": [
                {"expression": c.expression, "message": c.message} for c in policy.checks
            ],
        },
    }


def binding_manifest(policy: Policy) -> dict[str, Any]:
    return {
        "metadata": {"name": policy.name},
        "spec": {
            "policyName": policy.name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {
                    "matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]
                }
            },
        },
    }


def register(name: str, policy: Policy, opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """The policy and its binding as Kubernetes objects, from the same manifests."""
    document = manifest(policy)
    binding = binding_manifest(policy)
    v1 = k8s.admissionregistration.v1
    spec = document["spec"]
    created = v1.ValidatingAdmissionPolicy(
        f"{name}-{policy.name}",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=policy.name),
        spec=v1.ValidatingAdmissionPolicySpecArgs(
            failure_policy=spec["failurePolicy"],
            match_constraints=v1.MatchResourcesArgs(
                resource_rules=[
                    v1.NamedRuleWithOperationsArgs(
                        api_groups=r["apiGroups"],
                        api_versions=r["apiVersions"],
                        operations=r["operations"],
                        resources=r["resources"],
                    )
                    for r in spec["matchConstraints"]["resourceRules"]
                ]
            ),
            match_conditions=[
                v1.MatchConditionArgs(name=c["name"], expression=c["expression"])
                for c in spec["matchConditions"]
            ],
            variables=[
                v1.VariableArgs(name=v["name"], expression=v["expression"])
                for v in spec["variables"]
            ],
            validations=[
                v1.ValidationArgs(expression=v["expression"], message=v["message"])
                for v in spec["validations"]
            ],
        ),
        opts=opts,
    )
    bound = v1.ValidatingAdmissionPolicyBinding(
        f"{name}-{policy.name}-binding",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=policy.name),
        spec=v1.ValidatingAdmissionPolicyBindingSpecArgs(
            policy_name=binding["spec"]["policyName"],
            validation_actions=binding["spec"]["validationActions"],
            match_resources=v1.MatchResourcesArgs(
                namespace_selector=k8s.meta.v1.LabelSelectorArgs(
                    match_expressions=[
                        k8s.meta.v1.LabelSelectorRequirementArgs(key=TEAM_LABEL, operator="Exists")
                    ]
                )
            ),
        ),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[created])),
    )
    return [created, bound]
