"""What the API server refuses in team namespaces, as ValidatingAdmissionPolicies (CEL, GA in
Kubernetes 1.30): the Pod Security Standards' baseline checks with one relaxation, the
tolerations and node names that would put a pod beside the controllers or on accelerators
outside Kueue, the TPU provisioner's pod annotations, and DaemonSets. The same policies are
evaluated offline with Google's CEL implementation by `refusals()`, so a rendered Pod, Job or
JobSet can be checked against them before it reaches a cluster.

Why policies and not only Pod Security Admission: PSA's `baseline` level refuses
`hostNetwork` outright, and GKE's multislice JobSets run with it ("Deploy TPU Multislices in
GKE", the example JobSet's `hostNetwork: true`). A team that opts in (`tpuHostNetwork`) keeps
every other baseline check here, and hostNetwork only for Kueue-managed pods pinned to a TPU
slice of the stack; its namespace's PSA labels then only warn and audit at baseline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import tpu_catalog

TEAM_LABEL = "ai-infra/team"
HOST_NETWORK_LABEL = "ai-infra/tpu-host-network"
"""On a team namespace whose team set `tpuHostNetwork`: its Kueue-managed TPU pods may use
the host network. Team members cannot label namespaces (cluster-scoped)."""
SYSTEM_TAINT = "components.gke.io/gke-managed-components"
"""The system pool's taint: GKE's own system pods tolerate it ("Isolate your workloads in
dedicated node pools"), the charts and the provisioner are given a toleration, team pods may
not carry one."""
PROVISIONER_ANNOTATIONS = "tpu-provisioner.cloud.google.com/"
"""The provisioner reads pod annotations of this prefix to choose node pools' networks,
service account and copied labels (internal/cloud/common.go and gke.go at 6789e2a)."""
ACCELERATOR_TAINTS = (
    tpu_catalog.TPU_TAINT_KEY,
    "nvidia.com/gpu",
    "cloud.google.com/gke-queued",
)
"""Taints on TPU, GPU and flex-start nodes, which only Kueue's flavors add to a pod."""
BASELINE_CAPABILITIES = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
"""Capabilities the baseline level lets a container add (Pod Security Standards)."""
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
)
"""The baseline level's safe sysctls (Pod Security Standards, up to Kubernetes 1.32)."""


@dataclass(frozen=True)
class Check:
    expression: str
    message: str


@dataclass(frozen=True)
class Policy:
    """One ValidatingAdmissionPolicy with its binding to every team namespace."""

    name: str
    resources: tuple[tuple[str, str], ...]
    """(API group, resource) pairs it sees on CREATE and UPDATE."""
    checks: tuple[Check, ...]
    variables: tuple[tuple[str, str], ...] = field(default_factory=tuple)


# A pod's specs and metadata, whatever the object: a Pod, a Job's template, each replicated
# Job's template of a JobSet.
_SPECS = (
    "object.kind == 'Pod' ? [object.spec] : "
    "object.kind == 'Job' ? [object.spec.template.spec] : "
    "object.spec.replicatedJobs.map(r, r.template.spec.template.spec)"
)
_METAS = (
    "object.kind == 'Pod' ? [object.metadata] : "
    "object.kind == 'Job' ? "
    "[has(object.spec.template.metadata) ? object.spec.template.metadata : {}] : "
    "object.spec.replicatedJobs.map(r, has(r.template.spec.template.metadata) ? "
    "r.template.spec.template.metadata : {})"
)
_CONTAINERS = (
    "variables.specs.map(s, "
    "(has(s.containers) ? s.containers : []) + "
    "(has(s.initContainers) ? s.initContainers : []) + "
    "(has(s.ephemeralContainers) ? s.ephemeralContainers : []))"
)
_KUEUE_MANAGED = (
    "object.kind != 'Pod' || (has(object.metadata.ownerReferences) && "
    "object.metadata.ownerReferences.exists(o, o.apiVersion == 'batch/v1' && "
    "o.kind == 'Job' && has(o.controller) && o.controller))"
)
"""A Job or JobSet in a team namespace is Kueue's (managedJobsNamespaceSelector), and so is
a pod the Job controller made for one; a pod of any other owner, or of none, is not."""
WORKLOADS = (("", "pods"), ("batch", "jobs"), ("jobset.x-k8s.io", "jobsets"))


def _all_containers(condition: str) -> str:
    return f"variables.containers.all(cs, cs.all(c, {condition}))"


def _all_specs(condition: str) -> str:
    return f"variables.specs.all(s, {condition})"


def _quoted(values: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _pod_security(tpu_accelerators: Sequence[str]) -> Policy:
    """The baseline level's checks (Pod Security Standards), hostNetwork as the module says."""
    pinned = (
        f"has(s.nodeSelector) && '{tpu_catalog.ACCELERATOR_LABEL}' in s.nodeSelector && "
        f"s.nodeSelector['{tpu_catalog.ACCELERATOR_LABEL}'] in {_quoted(tpu_accelerators)}"
    )
    host_network_allowed = (
        f"has(namespaceObject.metadata.labels) && '{HOST_NETWORK_LABEL}' in "
        f"namespaceObject.metadata.labels && namespaceObject.metadata.labels"
        f"['{HOST_NETWORK_LABEL}'] == 'true' && ({_KUEUE_MANAGED}) && {pinned}"
    )
    security = "has(c.securityContext)"
    checks = (
        Check(
            _all_specs(f"!has(s.hostNetwork) || !s.hostNetwork || ({host_network_allowed})"),
            "hostNetwork is allowed only to Kueue-managed pods pinned to a TPU slice "
            f"({tpu_catalog.ACCELERATOR_LABEL}) in a namespace whose team set tpuHostNetwork",
        ),
        Check(
            _all_specs("(!has(s.hostPID) || !s.hostPID) && (!has(s.hostIPC) || !s.hostIPC)"),
            "hostPID and hostIPC are not allowed (Pod Security baseline)",
        ),
        Check(
            _all_specs("!has(s.volumes) || s.volumes.all(v, !has(v.hostPath))"),
            "hostPath volumes are not allowed (Pod Security baseline)",
        ),
        Check(
            _all_containers(
                f"!{security} || !has(c.securityContext.privileged) || "
                "!c.securityContext.privileged"
            ),
            "privileged containers are not allowed (Pod Security baseline)",
        ),
        Check(
            "variables.specs.all(s, has(s.hostNetwork) && s.hostNetwork || "
            "[(has(s.containers) ? s.containers : []), "
            "(has(s.initContainers) ? s.initContainers : [])].all(cs, cs.all(c, "
            "!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))))",
            "hostPort is not allowed (Pod Security baseline)",
        ),
        Check(
            _all_containers(
                f"!{security} || !has(c.securityContext.capabilities) || "
                "!has(c.securityContext.capabilities.add) || "
                f"c.securityContext.capabilities.add.all(a, a in {_quoted(BASELINE_CAPABILITIES)})"
            ),
            "capabilities beyond the baseline set are not allowed (Pod Security baseline)",
        ),
        Check(
            _all_containers(
                f"!{security} || !has(c.securityContext.procMount) || "
                "c.securityContext.procMount == 'Default'"
            ),
            "procMount must be Default (Pod Security baseline)",
        ),
        Check(
            "variables.specs.all(s, !has(s.securityContext) || "
            "!has(s.securityContext.seccompProfile) || "
            "s.securityContext.seccompProfile.type != 'Unconfined') && "
            + _all_containers(
                f"!{security} || !has(c.securityContext.seccompProfile) || "
                "c.securityContext.seccompProfile.type != 'Unconfined'"
            ),
            "seccomp profile Unconfined is not allowed (Pod Security baseline)",
        ),
        Check(
            _all_specs(
                "!has(s.securityContext) || !has(s.securityContext.sysctls) || "
                f"s.securityContext.sysctls.all(x, x.name in {_quoted(SAFE_SYSCTLS)})"
            ),
            "only the safe sysctls are allowed (Pod Security baseline)",
        ),
        Check(
            "variables.specs.all(s, !has(s.securityContext) || "
            "!has(s.securityContext.appArmorProfile) || "
            "s.securityContext.appArmorProfile.type != 'Unconfined') && "
            + _all_containers(
                f"!{security} || !has(c.securityContext.appArmorProfile) || "
                "c.securityContext.appArmorProfile.type != 'Unconfined'"
            ),
            "AppArmor profile Unconfined is not allowed (Pod Security baseline)",
        ),
        Check(
            "variables.specs.all(s, !has(s.securityContext) || "
            "!has(s.securityContext.seLinuxOptions) || "
            "(!has(s.securityContext.seLinuxOptions.user) && "
            "!has(s.securityContext.seLinuxOptions.role))) && "
            + _all_containers(
                f"!{security} || !has(c.securityContext.seLinuxOptions) || "
                "(!has(c.securityContext.seLinuxOptions.user) && "
                "!has(c.securityContext.seLinuxOptions.role))"
            ),
            "SELinux user and role may not be set (Pod Security baseline)",
        ),
        Check(
            _all_containers(
                f"!{security} || !has(c.securityContext.windowsOptions) || "
                "!has(c.securityContext.windowsOptions.hostProcess) || "
                "!c.securityContext.windowsOptions.hostProcess"
            ),
            "Windows host processes are not allowed (Pod Security baseline)",
        ),
    )
    return Policy(
        "ai-infra-team-pod-security",
        WORKLOADS,
        checks,
        (("specs", _SPECS), ("containers", _CONTAINERS)),
    )


def _scheduling() -> Policy:
    """Where a team's pods may land: never the system pool, accelerators only through Kueue,
    and always through the scheduler."""
    return Policy(
        "ai-infra-team-scheduling",
        WORKLOADS,
        (
            Check(
                _all_specs(
                    "!has(s.tolerations) || s.tolerations.all(t, has(t.key) && t.key != '' "
                    f"&& t.key != '{SYSTEM_TAINT}')"
                ),
                "a toleration must name its taint, and not the system pool's "
                f"({SYSTEM_TAINT}): the controllers' nodes are not for team pods",
            ),
            Check(
                f"({_KUEUE_MANAGED}) || "
                + _all_specs(
                    "!has(s.tolerations) || s.tolerations.all(t, !has(t.key) || "
                    f"!(t.key in {_quoted(ACCELERATOR_TAINTS)}))"
                ),
                "TPU, GPU and flex-start nodes take Kueue-managed pods only: run it as a Job "
                "or JobSet in a LocalQueue",
            ),
            Check(
                _all_specs("!has(s.nodeName) || s.nodeName == ''"),
                "nodeName bypasses the scheduler and the nodes' taints; use a nodeSelector",
            ),
        ),
        (("specs", _SPECS),),
    )


def _annotations() -> Policy:
    return Policy(
        "ai-infra-team-provisioner-annotations",
        WORKLOADS,
        (
            Check(
                "variables.metas.all(m, !has(m.annotations) || "
                f"m.annotations.all(k, !k.startsWith('{PROVISIONER_ANNOTATIONS}')))",
                f"{PROVISIONER_ANNOTATIONS}* annotations choose the provisioner's node "
                "networks, service account and labels; the stack sets those",
            ),
        ),
        (("metas", _METAS),),
    )


def _daemonsets() -> Policy:
    return Policy(
        "ai-infra-team-no-daemonsets",
        (("apps", "daemonsets"),),
        (
            Check(
                "false",
                "a DaemonSet would put a pod on every node, accelerators and the system pool "
                "included; run Jobs or JobSets in a LocalQueue",
            ),
        ),
    )


def policies(tpu_accelerators: Sequence[str]) -> list[Policy]:
    """Every team-namespace policy; `tpu_accelerators` are the accelerator label values of
    the stack's TPU flavors, where hostNetwork may run."""
    return [
        _pod_security(sorted(set(tpu_accelerators))),
        _scheduling(),
        _annotations(),
        _daemonsets(),
    ]


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


# Offline evaluation.


@dataclass(frozen=True)
class Refusal:
    policy: str
    message: str


_RESOURCES = {
    "Pod": ("", "pods"),
    "Job": ("batch", "jobs"),
    "JobSet": ("jobset.x-k8s.io", "jobsets"),
    "DaemonSet": ("apps", "daemonsets"),
}


@cache
def _env() -> Any:
    from cel_expr_python import cel

    return cel.NewEnv(
        variables={
            name: cel.Type.DYN for name in ("object", "oldObject", "namespaceObject", "variables")
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
) -> list[Refusal]:
    """What the API server would refuse of `obj` (a Pod, Job, JobSet or DaemonSet, as a
    manifest) on create in `namespace` (the Namespace object), under `documents`: (policy,
    binding) manifests, as `manifest` renders them or as a plan registered them. Only the
    policies this module writes are understood: resource rules, a namespace selector, Deny."""
    kind = obj.get("kind", "")
    resource = _RESOURCES.get(kind)
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    found = []
    for policy, binding in documents:
        spec = policy["spec"]
        rules = spec["matchConstraints"]["resourceRules"]
        if resource is None or not any(
            resource[0] in r["apiGroups"] and resource[1] in r["resources"] for r in rules
        ):
            continue
        if not _namespace_selected(binding, labels):
            continue
        data: dict[str, Any] = {"object": obj, "namespaceObject": namespace, "oldObject": None}
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


def stack_documents(tpu_accelerators: Sequence[str]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The stack's policies and bindings as manifests, for `refusals`."""
    return [(manifest(p), binding_manifest(p)) for p in policies(tpu_accelerators)]
