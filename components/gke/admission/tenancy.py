"""What a team's objects may name beyond a pod's own security: the priority classes its config
allows, images of no other team's repository, Services that stay inside the cluster, claims of
the storage classes its quota bounds, none of the TPU provisioner's annotations, and no
DaemonSets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from components.gke.admission.expressions import (
    CHANGES_SPEC,
    EPHEMERAL_CONTAINERS,
    KUEUE_MANAGED,
    POD_VARIABLES,
    PRIORITY_CLASSES_ANNOTATION,
    SERVICES_PRIORITY_CLASS,
    STORAGE_CLASSES_ANNOTATION,
    WORKLOADS,
    Check,
    Policy,
    all_containers,
    all_specs,
    in_annotation,
    literal,
)
from components.types import ARTIFACT_REPOSITORY

PROVISIONER_ANNOTATIONS = "tpu-provisioner.cloud.google.com/"
"""The provisioner reads pod annotations of this prefix to choose node pools' networks,
service account and copied labels (internal/cloud/common.go and gke.go at 6789e2a)."""
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""The label Kueue reads a job's WorkloadPriorityClass from (jobframework
WorkloadPriorityClassName at v0.19.2), on the Job or JobSet itself."""
DIGEST_ONLY = "(?i)^(sha256|sha384|sha512):"
"""An image given by its id alone: containerd's CRI resolves `sha256:<id>` to an image already
on the node (LocalResolve), whoever pulled it, with no registry asked."""


def _label_maps(old: bool = False) -> str:
    """The label maps Kueue reads a job's priority from: a Job's or JobSet's own, and a
    CronJob's Job template's, which its Jobs take."""
    o = "oldObject" if old else "object"
    return (
        f"{o}.kind in ['Job', 'JobSet'] ? [has({o}.metadata.labels) ? {o}.metadata.labels : {{}}]"
        f" : {o}.kind == 'CronJob' ? [has({o}.spec.jobTemplate.metadata) && "
        f"has({o}.spec.jobTemplate.metadata.labels) ? {o}.spec.jobTemplate.metadata.labels : {{}}]"
        " : []"
    )


_LISTED_PRIORITY = in_annotation(PRIORITY_CLASSES_ANNOTATION, f"l['{PRIORITY_LABEL}']")


def priorities() -> Policy:
    """WorkloadPriorityClasses from the team's list only (its namespace's
    `PRIORITY_CLASSES_ANNOTATION`); no PriorityClass on a Kueue pod (Kueue would take its value
    for the workload's priority, and the scheduler would preempt other teams' pods with it:
    system-node-critical, system-cluster-critical), and `SERVICES_PRIORITY_CLASS` on every
    other pod, which its quota counts."""
    return Policy(
        "ai-infra-team-priorities",
        WORKLOADS,
        (
            Check(
                f"variables.labels.all(l, !('{PRIORITY_LABEL}' in l) || ({_LISTED_PRIORITY}))",
                f"{PRIORITY_LABEL} may name only the WorkloadPriorityClasses the team's config "
                "allows (teams[].priorityClasses)",
            ),
            Check(
                f"!({KUEUE_MANAGED}) || "
                + all_specs("!has(s.priorityClassName) || s.priorityClassName == ''"),
                "a Kueue-managed pod names no PriorityClass (system ones preempt every team's "
                f"pods); give the job a WorkloadPriorityClass with {PRIORITY_LABEL}",
            ),
            Check(
                f"({KUEUE_MANAGED}) || "
                + all_specs(
                    "has(s.priorityClassName) && "
                    f"s.priorityClassName == '{SERVICES_PRIORITY_CLASS}'"
                ),
                "a pod outside Kueue (a Deployment's, a StatefulSet's) runs under the "
                f"PriorityClass {SERVICES_PRIORITY_CLASS}, which the team's ResourceQuota "
                f"bounds: set priorityClassName: {SERVICES_PRIORITY_CLASS}",
            ),
        ),
        (*POD_VARIABLES, ("labels", _label_maps())),
        (
            (
                "creates-or-changes-the-spec-or-labels",
                f"{CHANGES_SPEC} || ({_label_maps()}) != ({_label_maps(old=True)})",
            ),
        ),
    )


def repository_pattern(repository: str) -> str:
    """An RE2 pattern matching an image of `repository` however its host is written: in any
    case, with a trailing dot, or with port 443 (`US-DOCKER.pkg.dev.:0443/...`), all of which
    reach the same registry; the path is compared as written, which the registry takes in
    lowercase only."""
    match = ARTIFACT_REPOSITORY.fullmatch(repository)
    assert match is not None, repository
    host, path = repository.split("/", 1)
    return f"(?i)^{re.escape(host)}\\.?(:0*443)?/{re.escape(path)}([/:@]|$)"


def images(repositories: Mapping[str, Sequence[str]]) -> Policy:
    """No image of another team's repository (`repositories`: team -> its own), however
    written, and none by its id alone: the node's account pulls every team's repositories, and
    an image once on a node runs for any pod that names it. The owned repositories are the
    policy's own data, so a team that declares none changes nothing here."""
    owned = ", ".join(
        f"[{literal(repository_pattern(r))}, {literal(team)}]"
        for team, listed in repositories.items()
        for r in listed
    )

    def ok(image: str) -> str:
        return (
            f"!{image}.matches('{DIGEST_ONLY}') && "
            f"variables.owned.all(r, r[1] == variables.team || !{image}.matches(r[0]))"
        )

    return Policy(
        "ai-infra-team-images",
        (*WORKLOADS, EPHEMERAL_CONTAINERS),
        (
            Check(
                all_containers(f"!has(c.image) || ({ok('c.image')})")
                + " && "
                + all_specs(
                    "!has(s.volumes) || s.volumes.all(v, !has(v.image) || "
                    f"!has(v.image.reference) || ({ok('v.image.reference')}))"
                ),
                "an image (or image volume) may not come from another team's "
                "imageRepositories, nor be named by its id alone (sha256:...): the nodes pull "
                "every team's images, and a node runs what it holds for whoever names it",
            ),
        ),
        (*POD_VARIABLES, ("owned", f"[{owned}]")),
    )


def services() -> Policy:
    """Services stay inside the cluster: ClusterIP (headless included) only, no externalIPs,
    which would take traffic to any address cluster-wide (CVE-2020-8554)."""
    return Policy(
        "ai-infra-team-services",
        (("", "services"),),
        (
            Check(
                "!has(object.spec.type) || object.spec.type == 'ClusterIP'",
                "a team's Services are ClusterIP (headless included): a LoadBalancer or "
                "NodePort puts its pods (a host-network pod past every NetworkPolicy) on "
                "addresses outside the cluster, an ExternalName aliases other names",
            ),
            Check(
                "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
                "externalIPs would take traffic to those addresses from every pod and node "
                "(CVE-2020-8554)",
            ),
        ),
    )


def claims() -> Policy:
    """A claim binds a volume the stack made for the team (no class) or provisions a disk of a
    class its ResourceQuota bounds (its namespace's `STORAGE_CLASSES_ANNOTATION`); any other
    class (a Filestore one, a class added later) would provision storage outside every
    bound."""
    return Policy(
        "ai-infra-team-claims",
        (("", "persistentvolumeclaims"),),
        (
            Check(
                "has(object.spec.storageClassName) && (object.spec.storageClassName == '' || "
                f"({in_annotation(STORAGE_CLASSES_ANNOTATION, 'object.spec.storageClassName')}))",
                "a claim names no class (it binds a volume of ai-infra:storage made for the "
                "team) or a class of teams[].limits.storage, whose quota bounds it",
            ),
        ),
    )


def provisioner_annotations() -> Policy:
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
        POD_VARIABLES,
        (
            (
                "creates-or-changes-the-spec-or-annotations",
                f"{CHANGES_SPEC} || "
                "(has(object.metadata.annotations) ? object.metadata.annotations : {}) != "
                "(has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {})",
            ),
        ),
    )


def daemonsets() -> Policy:
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
