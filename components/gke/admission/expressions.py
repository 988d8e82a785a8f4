"""The pieces every team-namespace policy is written with: the labels and taints they read,
`Check` and `Policy`, what a team's config says of it (`TeamRules`), and CEL that reaches a
pod's specs, metadata and containers whatever object holds them.

Expressions test fields with `has()` and iterate lists and maps only, never an object's keys:
the API server types a Pod's fields from its OpenAPI schema, where an object is no map to
iterate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

TEAM_LABEL = "ai-infra/team"
HOST_NETWORK_LABEL = "ai-infra/tpu-host-network"
"""On a team namespace whose team set `tpuHostNetwork`: its Kueue-managed TPU pods on the
team's own slices may use the host network. Team members cannot label namespaces
(cluster-scoped)."""
GPU_DIRECT_LABEL = "ai-infra/gpu-direct-pods"
"""On a team namespace whose team set `gpuDirectPods`: its Kueue-managed pods on a fast-path GPU
pool may mount GKE's GPUDirect/RDMA host paths and add NET_ADMIN."""
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
SYSTEM_TAINT = "components.gke.io/gke-managed-components"
"""The system pool's taint: GKE's own system pods tolerate it ("Isolate your workloads in
dedicated node pools"), the charts and the provisioner are given a toleration, team pods may
not carry one."""
PRIORITY_CLASSES_ANNOTATION = "ai-infra/priority-classes"
STORAGE_CLASSES_ANNOTATION = "ai-infra/storage-classes"
"""On a team namespace: the WorkloadPriorityClasses its jobs may name and the StorageClasses its
claims may, each written `,a,b,` (`listed`), so that a team's settings live on its own
namespace, which members cannot edit, and a policy shared by every team reads them there."""
SERVICES_PRIORITY_CLASS = "ai-infra-services"
"""The PriorityClass every team pod outside Kueue (a Deployment's, a StatefulSet's) runs
under, and the only one a team pod may name: the namespace's ResourceQuota scoped to it
bounds their CPU, memory and pods (teams.py)."""

CHANGES_SPEC = "request.operation != 'UPDATE' || object.spec != oldObject.spec"
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
    conditions: tuple[tuple[str, str], ...] = (("creates-or-changes-the-spec", CHANGES_SPEC),)
    """matchConditions (name, expression): which requests it judges at all."""


def listed(names: Sequence[str]) -> str:
    """Names (DNS labels, which hold no comma) as a namespace annotation: `,a,b,`, in which
    `,<name>,` occurs exactly when the name is listed."""
    for name in names:
        assert "," not in name, name
    return "," + "".join(f"{n}," for n in names)


def in_annotation(annotation: str, name: str) -> str:
    """Whether CEL string `name` is listed in the namespace's `annotation` (`listed`); a
    namespace without it lists nothing."""
    annotations = "namespaceObject.metadata.annotations"
    return (
        f"has({annotations}) && '{annotation}' in {annotations} && "
        f"{annotations}['{annotation}'].contains(',' + {name} + ',')"
    )


POD = ("", "pods")
EPHEMERAL_CONTAINERS = ("", "pods/ephemeralcontainers")
"""The subresource `kubectl debug` adds containers through: a rule for `pods` does not match
it, and the ephemeral container is judged like any other."""
WORKLOADS = (
    POD,
    ("batch", "jobs"),
    ("jobset.x-k8s.io", "jobsets"),
    ("batch", "cronjobs"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
)
"""What carries a pod template that a member writes (the member role: jobs, cronjobs,
deployments, statefulsets; Kueue's batch-user role: jobsets) and the pods made of them."""

SPECS = (
    "object.kind == 'Pod' ? [object.spec] : "
    "object.kind == 'JobSet' ? "
    "object.spec.replicatedJobs.map(r, r.template.spec.template.spec) : "
    "object.kind == 'CronJob' ? [object.spec.jobTemplate.spec.template.spec] : "
    "[object.spec.template.spec]"
)
"""A pod's specs, whatever the object: a Pod, each replicated Job's template of a JobSet, a
CronJob's Job template, a Job's, Deployment's or StatefulSet's template."""
METAS = (
    "object.kind == 'Pod' ? [object.metadata] : "
    "object.kind == 'JobSet' ? object.spec.replicatedJobs.map(r, "
    "has(r.template.spec.template.metadata) ? r.template.spec.template.metadata : {}) : "
    "object.kind == 'CronJob' ? [has(object.spec.jobTemplate.spec.template.metadata) ? "
    "object.spec.jobTemplate.spec.template.metadata : {}] : "
    "[has(object.spec.template.metadata) ? object.spec.template.metadata : {}]"
)
TEAM = f"namespaceObject.metadata.labels['{TEAM_LABEL}']"
"""The team whose namespace it is; the bindings select namespaces with the label."""


def containers_of(spec: str) -> str:
    """Every container of a pod spec, init and ephemeral ones included, as Pod Security
    Admission visits them (policy/visitor.go)."""
    return (
        f"(has({spec}.containers) ? {spec}.containers : []) + "
        f"(has({spec}.initContainers) ? {spec}.initContainers : []) + "
        f"(has({spec}.ephemeralContainers) ? {spec}.ephemeralContainers : [])"
    )


CONTAINERS = f"variables.specs.map(s, {containers_of('s')})"
KUEUE_MANAGED = (
    "object.kind in ['Job', 'JobSet', 'CronJob'] || (object.kind == 'Pod' && "
    "has(object.metadata.ownerReferences) && "
    "object.metadata.ownerReferences.exists(o, o.apiVersion == 'batch/v1' && "
    "o.kind == 'Job' && has(o.controller) && o.controller))"
)
"""A Job, JobSet or CronJob (whose Jobs are) in a team namespace is Kueue's
(managedJobsNamespaceSelector), and so is a pod the Job controller made for one; a
Deployment's or StatefulSet's pod, or a pod of no owner, is not."""
POD_VARIABLES = (("specs", SPECS), ("containers", CONTAINERS), ("metas", METAS), ("team", TEAM))


def all_containers(condition: str) -> str:
    return f"variables.containers.all(cs, cs.all(c, {condition}))"


def all_specs(condition: str) -> str:
    return f"variables.specs.all(s, {condition})"


def literal(value: str) -> str:
    """A CEL string literal of `value`, a validated name, path or RE2 pattern: its
    backslashes escaped (a pattern's `\\.` stays a backslash and a dot), and never a quote,
    which could end the literal early."""
    assert "'" not in value, value
    return "'" + value.replace("\\", "\\\\") + "'"


def quoted(values: Sequence[str]) -> str:
    """A CEL list of string literals."""
    return "[" + ", ".join(literal(v) for v in values) + "]"


def labelled(label: str) -> str:
    return (
        f"has(namespaceObject.metadata.labels) && '{label}' in namespaceObject.metadata.labels "
        f"&& namespaceObject.metadata.labels['{label}'] == 'true'"
    )
