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
slice of the stack; its namespace's PSA labels then only warn and audit at baseline. A team
that opts in to `gpuDirectPods` likewise keeps every baseline check except what GKE's GPUDirect
and RDMA pod manifests need on a fast-path GPU pool: their host paths and the receive daemon's
NET_ADMIN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import gpu_catalog, tpu_catalog
from components.gke.gpu_direct import TRANSPORTS

TEAM_LABEL = "ai-infra/team"
HOST_NETWORK_LABEL = "ai-infra/tpu-host-network"
"""On a team namespace whose team set `tpuHostNetwork`: its Kueue-managed TPU pods may use
the host network. Team members cannot label namespaces (cluster-scoped)."""
GPU_DIRECT_LABEL = "ai-infra/gpu-direct-pods"
"""On a team namespace whose team set `gpuDirectPods`: its Kueue-managed pods on a fast-path GPU
pool may mount GKE's GPUDirect/RDMA host paths and add NET_ADMIN."""
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
SYSTEM_TAINT = "components.gke.io/gke-managed-components"
"""The system pool's taint: GKE's own system pods tolerate it ("Isolate your workloads in
dedicated node pools"), the charts and the provisioner are given a toleration, team pods may
not carry one."""
PROVISIONER_ANNOTATIONS = "tpu-provisioner.cloud.google.com/"
"""The provisioner reads pod annotations of this prefix to choose node pools' networks,
service account and copied labels (internal/cloud/common.go and gke.go at 6789e2a)."""
ACCELERATOR_TAINTS = (
    tpu_catalog.TPU_TAINT_KEY,
    gpu_catalog.GPU_RESOURCE,
    "cloud.google.com/gke-queued",
)
"""Taints on TPU, GPU and flex-start nodes, which only Kueue's flavors add to a pod."""
ACCELERATOR_RESOURCES = (tpu_catalog.TPU_RESOURCE, gpu_catalog.GPU_RESOURCE)
"""Chips a pod requests: only Kueue-managed pods may, or a Deployment's pending TPU pod
would have the provisioner create node pools outside every queue (creation_controller.go at
6789e2a reconciles any unschedulable pod that requests them, whoever owns it)."""
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
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
)
"""The baseline level's safe sysctls as of Kubernetes 1.32 (pod-security-admission v0.34.0
policy/check_sysctls.go; tcp_rmem and tcp_wmem joined at 1.32, and a kubelet older than that
refuses them itself)."""
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")
"""The SELinux types the baseline level allows (check_seLinuxOptions.go, 1.31 and later)."""
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
"""The deprecated per-container AppArmor annotation, which the baseline level still reads:
`runtime/default` or `localhost/<profile>` only (check_appArmorProfile.go)."""

GPU_DIRECT_HOST_PATHS = tuple(sorted({p for t in TRANSPORTS.values() for _, p in t.volumes}))
"""The host paths GKE's GPUDirect-TCPX, TCPXO and RDMA pods mount (gpu_direct.TRANSPORTS)."""
GPU_DIRECT_CAPABILITIES = tuple(
    sorted(
        {c for t in TRANSPORTS.values() if t.sidecar for c in t.sidecar.capabilities}
        - set(BASELINE_CAPABILITIES)
    )
)
"""What the TCPX/TCPXO receive daemon adds beyond baseline (NET_ADMIN)."""


_CHANGES_SPEC = "request.operation != 'UPDATE' || object.spec != oldObject.spec"
"""An update is judged only when it changes what the checks read, as Pod Security Admission
ignores pod updates that leave the spec alone: the Job controller removing its finalizer from
a pod admitted under an older policy (a slice since removed, tpuHostNetwork since turned off),
or the garbage collector orphaning it, must not be refused."""


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
    conditions: tuple[tuple[str, str], ...] = (("creates-or-changes-the-spec", _CHANGES_SPEC),)
    """matchConditions (name, expression): which requests it judges at all."""


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


def _containers_of(spec: str) -> str:
    """Every container of a pod spec, init and ephemeral ones included, as Pod Security
    Admission visits them (policy/visitor.go)."""
    return (
        f"(has({spec}.containers) ? {spec}.containers : []) + "
        f"(has({spec}.initContainers) ? {spec}.initContainers : []) + "
        f"(has({spec}.ephemeralContainers) ? {spec}.ephemeralContainers : [])"
    )


_CONTAINERS = f"variables.specs.map(s, {_containers_of('s')})"
_KUEUE_MANAGED = (
    "object.kind != 'Pod' || (has(object.metadata.ownerReferences) && "
    "object.metadata.ownerReferences.exists(o, o.apiVersion == 'batch/v1' && "
    "o.kind == 'Job' && has(o.controller) && o.controller))"
)
"""A Job or JobSet in a team namespace is Kueue's (managedJobsNamespaceSelector), and so is
a pod the Job controller made for one; a pod of any other owner, or of none, is not."""
WORKLOADS = (("", "pods"), ("batch", "jobs"), ("jobset.x-k8s.io", "jobsets"))
EPHEMERAL_CONTAINERS = ("", "pods/ephemeralcontainers")
"""The subresource `kubectl debug` adds containers through: a rule for `pods` does not match
it, and the ephemeral container is judged like any other."""


def _all_containers(condition: str) -> str:
    return f"variables.containers.all(cs, cs.all(c, {condition}))"


def _all_specs(condition: str) -> str:
    return f"variables.specs.all(s, {condition})"


def _quoted(values: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _selinux(context: str) -> str:
    """A security context's SELinux options as the baseline level allows them."""
    options = f"{context}.seLinuxOptions"
    return (
        f"!has({options}) || (!has({options}.user) && !has({options}.role) && "
        f"(!has({options}.type) || {options}.type in {_quoted(SELINUX_TYPES)}))"
    )


def _no_host_process(context: str) -> str:
    options = f"{context}.windowsOptions"
    return f"!has({options}) || !has({options}.hostProcess) || !{options}.hostProcess"


def _no_probe_host(c: str) -> str:
    """No probe or lifecycle handler of container `c` sets `host` (check_hostProbesAndhost
    Lifecycle.go): httpGet and tcpSocket only, as that check reads them."""
    handlers = [f"{c}.{p}" for p in ("livenessProbe", "readinessProbe", "startupProbe")]
    handlers += [f"{c}.lifecycle.{h}" for h in ("postStart", "preStop")]
    clauses = []
    for handler in handlers:
        parent = handler.rsplit(".", 1)[0]
        guard = f"!has({handler})" if parent == c else f"!has({parent}) || !has({handler})"
        hosts = " && ".join(
            f"(!has({handler}.{kind}) || !has({handler}.{kind}.host) || "
            f"{handler}.{kind}.host == '')"
            for kind in ("httpGet", "tcpSocket")
        )
        clauses.append(f"({guard} || ({hosts}))")
    return " && ".join(clauses)


def _labelled(label: str) -> str:
    return (
        f"has(namespaceObject.metadata.labels) && '{label}' in namespaceObject.metadata.labels "
        f"&& namespaceObject.metadata.labels['{label}'] == 'true'"
    )


def _gpu_direct(pools: Sequence[str]) -> str:
    """Every pod spec of a Kueue-managed object pinned to a fast-path GPU pool, in a namespace
    whose team set gpuDirectPods."""
    pinned = _all_specs(
        f"has(s.nodeSelector) && '{NODE_POOL_LABEL}' in s.nodeSelector && "
        f"s.nodeSelector['{NODE_POOL_LABEL}'] in {_quoted(pools)}"
    )
    return f"{_labelled(GPU_DIRECT_LABEL)} && ({_KUEUE_MANAGED}) && {pinned}"


def _pod_security(tpu_accelerators: Sequence[str], gpu_direct_pools: Sequence[str]) -> Policy:
    """The baseline level's checks (Pod Security Standards), hostNetwork and the GPU fast
    path as the module says."""
    pinned = (
        f"has(s.nodeSelector) && '{tpu_catalog.ACCELERATOR_LABEL}' in s.nodeSelector && "
        f"s.nodeSelector['{tpu_catalog.ACCELERATOR_LABEL}'] in {_quoted(tpu_accelerators)}"
    )
    host_network_allowed = f"{_labelled(HOST_NETWORK_LABEL)} && ({_KUEUE_MANAGED}) && {pinned}"
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
            _all_specs(
                "!has(s.volumes) || s.volumes.all(v, !has(v.hostPath) || (variables.gpuDirect "
                f"&& v.hostPath.path in {_quoted(GPU_DIRECT_HOST_PATHS)}))"
            ),
            "hostPath volumes are not allowed (Pod Security baseline), but for GKE's GPUDirect "
            "paths in Kueue-managed pods on a fast-path GPU pool of a team that set gpuDirectPods",
        ),
        Check(
            _all_containers(
                f"!{security} || !has(c.securityContext.privileged) || "
                "!c.securityContext.privileged"
            ),
            "privileged containers are not allowed (Pod Security baseline)",
        ),
        # A host-network pod's ports are host ports: the API server defaults hostPort to
        # containerPort for them (pkg/apis/core/v1/defaults.go), before admission.
        Check(
            _all_specs(
                f"has(s.hostNetwork) && s.hostNetwork || ({_containers_of('s')}).all(c, "
                "!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))"
            ),
            "hostPort is not allowed (Pod Security baseline)",
        ),
        Check(
            _all_containers(
                f"!{security} || !has(c.securityContext.capabilities) || "
                "!has(c.securityContext.capabilities.add) || "
                f"c.securityContext.capabilities.add.all(a, a in {_quoted(BASELINE_CAPABILITIES)} "
                f"|| (variables.gpuDirect && a in {_quoted(GPU_DIRECT_CAPABILITIES)}))"
            ),
            "capabilities beyond the baseline set are not allowed (Pod Security baseline), but "
            "NET_ADMIN in Kueue-managed pods on a fast-path GPU pool of a team that set "
            "gpuDirectPods",
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
            _all_specs(f"!has(s.securityContext) || {_selinux('s.securityContext')}")
            + " && "
            + _all_containers(f"!{security} || {_selinux('c.securityContext')}"),
            "SELinux user and role may not be set, and the type only to "
            f"{', '.join(t for t in SELINUX_TYPES if t)} (Pod Security baseline)",
        ),
        Check(
            _all_specs(f"!has(s.securityContext) || {_no_host_process('s.securityContext')}")
            + " && "
            + _all_containers(f"!{security} || {_no_host_process('c.securityContext')}"),
            "Windows host processes are not allowed (Pod Security baseline)",
        ),
        Check(
            "variables.metas.all(m, !has(m.annotations) || m.annotations.all(k, "
            f"!k.startsWith('{APPARMOR_ANNOTATION}') || m.annotations[k] == '' || "
            "m.annotations[k] == 'runtime/default' || m.annotations[k].startsWith('localhost/')))",
            "AppArmor annotations may name runtime/default or localhost/ profiles only "
            "(Pod Security baseline)",
        ),
        Check(
            _all_containers(_no_probe_host("c")),
            "probes and lifecycle hooks may not name a host: the kubelet would connect there "
            "from the node (Pod Security baseline, 1.34)",
        ),
    )
    return Policy(
        "ai-infra-team-pod-security",
        (*WORKLOADS, EPHEMERAL_CONTAINERS),
        checks,
        (
            ("specs", _SPECS),
            ("containers", _CONTAINERS),
            ("metas", _METAS),
            ("gpuDirect", _gpu_direct(gpu_direct_pools)),
        ),
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
                f"({_KUEUE_MANAGED}) || "
                + _all_containers(
                    "!has(c.resources) || "
                    + " && ".join(
                        f"(!has(c.resources.{kind}) || c.resources.{kind}.all(r, "
                        f"!(r in {_quoted(ACCELERATOR_RESOURCES)})))"
                        for kind in ("requests", "limits")
                    )
                ),
                "TPU and GPU chips go to Kueue-managed pods only: run it as a Job or JobSet "
                "in a LocalQueue",
            ),
            Check(
                "object.kind != 'Pod' || !has(object.spec.tolerations) || "
                "!object.spec.tolerations.exists(t, has(t.key) && "
                f"t.key in {_quoted(ACCELERATOR_TAINTS)}) || "
                "variables.containers.exists(cs, cs.exists(c, has(c.resources) && ("
                + " || ".join(
                    f"(has(c.resources.{kind}) && c.resources.{kind}.exists(r, "
                    f"r in {_quoted(ACCELERATOR_RESOURCES)}))"
                    for kind in ("requests", "limits")
                )
                + ")))",
                "a pod that tolerates TPU, GPU or flex-start taints must request their chips: "
                "Kueue admits a chipless pod on CPU quota alone, and it would take room on "
                "accelerator hosts, another team's slice included",
            ),
            Check(
                _all_specs("!has(s.nodeName) || s.nodeName == ''"),
                "nodeName bypasses the scheduler and the nodes' taints; use a nodeSelector",
            ),
            Check(
                "object.kind != 'Job' || !has(object.metadata.ownerReferences) || "
                f"request.userInfo.username == '{_jobset_controller()}' || "
                "object.metadata.ownerReferences.all(o, !(o.kind in ['Job', 'JobSet']) || "
                "(request.operation == 'UPDATE' && has(oldObject.metadata.ownerReferences) && "
                "o in oldObject.metadata.ownerReferences))",
                "only the JobSet controller makes a JobSet's Jobs, and no Job is another "
                "Job's: Kueue leaves a child to its owner's admission, so a Job claiming one "
                "would run outside the queue",
            ),
        ),
        (("specs", _SPECS), ("containers", _CONTAINERS)),
        (
            (
                "creates-or-changes-the-spec-or-a-jobs-owners",
                f"{_CHANGES_SPEC} || object.kind == 'Job' && "
                "(has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []) "
                "!= (has(oldObject.metadata.ownerReferences) ? "
                "oldObject.metadata.ownerReferences : [])",
            ),
        ),
    )


def _jobset_controller() -> str:
    """The user the JobSet controller acts as. Kueue treats a Job whose controller is a
    JobSet, or a Job (batch/job is an enabled integration too, and a Job is never top-level:
    integrationmanager.go getJobTypeForOwner), as that owner's child, suspended only while the
    owner is not admitted, and
    leaves "same-namespace ownership spoofing" out of its scope (jobframework/reconciler.go
    FindAncestorJobManagedByKueue, v0.19.2)."""
    from components.gke.kueue import JOBSET_CONTROLLER  # kueue.py imports this module

    return JOBSET_CONTROLLER


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
        (
            (
                "creates-or-changes-the-spec-or-annotations",
                f"{_CHANGES_SPEC} || "
                "(has(object.metadata.annotations) ? object.metadata.annotations : {}) != "
                "(has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {})",
            ),
        ),
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


def policies(tpu_accelerators: Sequence[str], gpu_direct_pools: Sequence[str] = ()) -> list[Policy]:
    """Every team-namespace policy; `tpu_accelerators` are the accelerator label values of
    the stack's TPU flavors, where hostNetwork may run, and `gpu_direct_pools` the GPU pools
    built on their fast path, where gpuDirectPods teams' pods may take what GKE's manifests do."""
    return [
        _pod_security(sorted(set(tpu_accelerators)), sorted(set(gpu_direct_pools))),
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
    """What the API server would refuse of `obj` (a Pod, Job, JobSet or DaemonSet, as a
    manifest) on create in `namespace` (the Namespace object), or on update from `old`, under
    `documents`: (policy, binding) manifests, as `manifest` renders them or as a plan
    registered them; with `subresource` (`ephemeralcontainers`), an update through it; `user`
    makes the request (a team member; `kueue.JOBSET_CONTROLLER` for a JobSet's Jobs). Only
    the policies this module writes are understood: resource rules, match conditions, a
    namespace selector, Deny."""
    if subresource and old is None:
        raise ValueError("a write through a subresource is an update: pass `old`")
    request = {"operation": "CREATE" if old is None else "UPDATE", "userInfo": {"username": user}}
    kind = obj.get("kind", "")
    resource = _RESOURCES.get(kind)
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


def stack_documents(
    tpu_accelerators: Sequence[str], gpu_direct_pools: Sequence[str] = ()
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The stack's policies and bindings as manifests, for `refusals`."""
    return [
        (manifest(p), binding_manifest(p)) for p in policies(tpu_accelerators, gpu_direct_pools)
    ]
