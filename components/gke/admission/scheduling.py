"""Where a team's pods may land and who may own its jobs: never the system pool, accelerators
only through Kueue, another team's own slices never, always through the scheduler; and no Job
or JobSet that Kueue would take for the child of another workload.
"""

from __future__ import annotations

from catalog import gpu as gpu_catalog
from catalog import tpu as tpu_catalog
from components.gke.admission.expressions import (
    KUEUE_MANAGED,
    POD_VARIABLES,
    SYSTEM_TAINT,
    WORKLOADS,
    Check,
    Policy,
    all_containers,
    all_specs,
    quoted,
)
from components.gke.quota import DEDICATED_KEY

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
JOBS = (("batch", "jobs"), ("jobset.x-k8s.io", "jobsets"))
JOBSET_OWNER = ("jobset.x-k8s.io/v1alpha2", "JobSet")
CRONJOB_OWNER = ("batch/v1", "CronJob")


def scheduling() -> Policy:
    """Tolerations, chips and node names."""
    return Policy(
        "ai-infra-team-scheduling",
        WORKLOADS,
        (
            Check(
                all_specs(
                    "!has(s.tolerations) || s.tolerations.all(t, has(t.key) && t.key != '' "
                    f"&& t.key != '{SYSTEM_TAINT}')"
                ),
                "a toleration must name its taint, and not the system pool's "
                f"({SYSTEM_TAINT}): the controllers' nodes are not for team pods",
            ),
            Check(
                all_specs(
                    f"!has(s.tolerations) || s.tolerations.all(t, t.key != '{DEDICATED_KEY}' || "
                    "((!has(t.operator) || t.operator == 'Equal') && has(t.value) && "
                    "t.value == variables.team))"
                ),
                f"a {DEDICATED_KEY} toleration must name the team's own slices (operator Equal, "
                "value the team): another team's own slices are not for its pods",
            ),
            Check(
                f"({KUEUE_MANAGED}) || "
                + all_specs(
                    "!has(s.tolerations) || s.tolerations.all(t, !has(t.key) || "
                    f"!(t.key in {quoted(ACCELERATOR_TAINTS)}))"
                ),
                "TPU, GPU and flex-start nodes take Kueue-managed pods only: run it as a Job "
                "or JobSet in a LocalQueue",
            ),
            Check(
                f"({KUEUE_MANAGED}) || "
                + all_containers(
                    "!has(c.resources) || "
                    + " && ".join(
                        f"(!has(c.resources.{kind}) || c.resources.{kind}.all(r, "
                        f"!(r in {quoted(ACCELERATOR_RESOURCES)})))"
                        for kind in ("requests", "limits")
                    )
                ),
                "TPU and GPU chips go to Kueue-managed pods only: run it as a Job or JobSet "
                "in a LocalQueue",
            ),
            Check(
                "object.kind != 'Pod' || !has(object.spec.tolerations) || "
                "!object.spec.tolerations.exists(t, has(t.key) && "
                f"t.key in {quoted(ACCELERATOR_TAINTS)}) || "
                "variables.containers.exists(cs, cs.exists(c, has(c.resources) && ("
                + " || ".join(
                    f"(has(c.resources.{kind}) && c.resources.{kind}.exists(r, "
                    f"r in {quoted(ACCELERATOR_RESOURCES)}))"
                    for kind in ("requests", "limits")
                )
                + ")))",
                "a pod that tolerates TPU, GPU or flex-start taints must request their chips: "
                "Kueue admits a chipless pod on CPU quota alone, and it would take room on "
                "accelerator hosts, another team's slice included",
            ),
            Check(
                all_specs("!has(s.nodeName) || s.nodeName == ''"),
                "nodeName bypasses the scheduler and the nodes' taints; use a nodeSelector",
            ),
        ),
        POD_VARIABLES,
    )


def jobset_controller() -> str:
    """The user the JobSet controller acts as."""
    from components.gke.kueue import JOBSET_CONTROLLER  # kueue.py imports this package

    return JOBSET_CONTROLLER


_OWNERS = "(has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : [])"
_OLD_OWNERS = (
    "(request.operation == 'UPDATE' && has(oldObject.metadata.ownerReferences) ? "
    "oldObject.metadata.ownerReferences : [])"
)


def owners() -> Policy:
    """A Job or JobSet is a workload of its own to Kueue unless its controller chain reaches a
    workload Kueue manages: FindAncestorJobManagedByKueue (jobframework/reconciler.go at
    v0.19.2) walks up every controller of a kind Kueue knows (integrationmanager.go
    isKnownOwner: every integration it registers, enabled or not, a Deployment, StatefulSet,
    LeaderWorkerSet, Ray or Kubeflow job among them, and apps/v1 ReplicaSet), and a child so
    found gets no Workload and is never suspended while its ancestor is admitted; Kueue leaves
    "same-namespace ownership spoofing" out of its scope there. So the only controllers are a
    CronJob (no integration: the walk stops and its Jobs queue as their own) and, for the Jobs
    the JobSet controller makes, their JobSet; a controller already there stays through other
    updates."""
    allowed = (
        "!has(o.controller) || !o.controller || o in variables.oldOwners || "
        f"(object.kind == 'Job' && o.apiVersion == '{CRONJOB_OWNER[0]}' && "
        f"o.kind == '{CRONJOB_OWNER[1]}') || "
        f"(object.kind == 'Job' && o.apiVersion == '{JOBSET_OWNER[0]}' && "
        f"o.kind == '{JOBSET_OWNER[1]}' && "
        f"request.userInfo.username == '{jobset_controller()}')"
    )
    return Policy(
        "ai-infra-team-owners",
        JOBS,
        (
            Check(
                f"variables.owners.all(o, {allowed})",
                "a Job's controller may be a CronJob, or its JobSet when the JobSet controller "
                "makes it, and a JobSet has none: Kueue leaves a child to its owner's "
                "admission, so a Job or JobSet claiming another workload would run outside "
                "the queue",
            ),
        ),
        (("owners", _OWNERS), ("oldOwners", _OLD_OWNERS)),
        (
            (
                "creates-or-changes-the-owners",
                "request.operation != 'UPDATE' || "
                f"{_OWNERS} != (has(oldObject.metadata.ownerReferences) ? "
                "oldObject.metadata.ownerReferences : [])",
            ),
        ),
    )
