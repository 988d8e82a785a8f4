"""Facts about what the pinned charts install, recorded from their templates (not copied), for
the workload command's RBAC check and the tests that check the program against them: which
ClusterRoles exist with which labels, rules and aggregation, and which webhooks and APIServices
the control plane calls on which pod port.

Sources, as the program installs them (release name = chart name, so `<fullname>` is `kueue`
or `jobset`, charts' _helpers.tpl):
- Kueue chart 0.19.2 (kubernetes-sigs/kueue tag v0.19.2, 8eab68778fc1): charts/kueue/templates/
  rbac/*.yaml, webhook/manifests.yaml and service.yaml, visibility/apiservice_v1beta1.yaml,
  apiservice_v1beta2.yaml and service.yaml, crd/*.yaml (conversion webhooks), values.yaml
  `webhookService.ports`.
- JobSet chart 0.12.0 (kubernetes-sigs/jobset tag v0.12.0, f22e565ac3cc): charts/jobset/
  templates/rbac/jobset_editor_role.yaml, jobset_viewer_role.yaml, webhook/manifests.yaml and
  service.yaml (`targetPort: webhook`), controller/deployment.yaml (`webhook` = 9443).
- Kubernetes' user-facing roles ("Using RBAC Authorization", default roles): `edit` aggregates
  every ClusterRole labelled `rbac.authorization.k8s.io/aggregate-to-edit: "true"`; of the
  built-in `system:aggregate-to-edit` only the rules these tests read are recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WRITE = ("create", "delete", "get", "list", "patch", "update", "watch")
READ = ("get", "list", "watch")
BATCH_USER = "rbac.kueue.x-k8s.io/batch-user"
BATCH_ADMIN = "rbac.kueue.x-k8s.io/batch-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"
AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"


@dataclass(frozen=True)
class Rule:
    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]


@dataclass(frozen=True)
class ClusterRoleFact:
    name: str
    labels: frozenset[str] = frozenset()
    """Label keys set to "true"."""
    rules: tuple[Rule, ...] = ()
    aggregates: str | None = None
    """The label key (= "true") its aggregationRule selects; its rules are then the union of
    the selected roles'."""


def _editor(name: str, group: str, resource: str, *, user: bool = True) -> ClusterRoleFact:
    """Kueue's `<kind>-editor-role`: write verbs plus status get; batch-admin, and batch-user
    for job kinds; never aggregated into Kubernetes' edit/view/admin."""
    labels = {BATCH_ADMIN, BATCH_USER} if user else {BATCH_ADMIN}
    return ClusterRoleFact(
        f"kueue-{name}-editor-role",
        frozenset(labels),
        (Rule(group, (resource,), WRITE), Rule(group, (f"{resource}/status",), ("get",))),
    )


def _viewer(
    name: str, group: str, resource: str, *, user: bool = True, edit: bool = True
) -> ClusterRoleFact:
    """Kueue's `<kind>-viewer-role`: read verbs plus status get; aggregated into admin, and
    into edit and view for what a namespace user may see."""
    labels = {BATCH_ADMIN, AGGREGATE_TO_ADMIN}
    if user:
        labels.add(BATCH_USER)
    if edit:
        labels |= {AGGREGATE_TO_EDIT, AGGREGATE_TO_VIEW}
    return ClusterRoleFact(
        f"kueue-{name}-viewer-role",
        frozenset(labels),
        (Rule(group, (resource,), READ), Rule(group, (f"{resource}/status",), ("get",))),
    )


KUEUE = "kueue.x-k8s.io"
KUEUE_ROLES: tuple[ClusterRoleFact, ...] = (
    ClusterRoleFact("kueue-batch-user-role", aggregates=BATCH_USER),
    ClusterRoleFact("kueue-batch-admin-role", aggregates=BATCH_ADMIN),
    _editor("jobset", "jobset.x-k8s.io", "jobsets"),
    _viewer("jobset", "jobset.x-k8s.io", "jobsets"),
    _editor("job", "batch", "jobs"),
    _viewer("job", "batch", "jobs"),
    _viewer("localqueue", KUEUE, "localqueues"),
    _viewer("workload", KUEUE, "workloads"),
    ClusterRoleFact(
        "kueue-pending-workloads-lq-viewer-role",
        frozenset(
            {BATCH_ADMIN, BATCH_USER, AGGREGATE_TO_EDIT, AGGREGATE_TO_VIEW, AGGREGATE_TO_ADMIN}
        ),
        (Rule("visibility.kueue.x-k8s.io", ("localqueues/pendingworkloads",), READ),),
    ),
    # batch-admin only: a team member never gets these through batch-user or edit.
    _editor("localqueue", KUEUE, "localqueues", user=False),
    _editor("workload", KUEUE, "workloads", user=False),
    _editor("clusterqueue", KUEUE, "clusterqueues", user=False),
    _viewer("clusterqueue", KUEUE, "clusterqueues", user=False, edit=False),
    ClusterRoleFact(
        "kueue-cohort-editor-role",
        frozenset({BATCH_ADMIN}),
        (Rule(KUEUE, ("cohorts",), WRITE),),
    ),
    ClusterRoleFact(
        "kueue-resourceflavor-editor-role",
        frozenset({BATCH_ADMIN}),
        (Rule(KUEUE, ("resourceflavors",), WRITE),),
    ),
)
"""The Kueue chart's user-facing ClusterRoles that matter to a team member; the chart also has
editor and viewer roles for Kubeflow, Ray, LeaderWorkerSet, Spark and TrainJob kinds, labelled
the same way, which these tests do not read."""

JOBSET_ROLES: tuple[ClusterRoleFact, ...] = (
    # The JobSet chart's own roles carry only its common labels: nothing aggregates them.
    ClusterRoleFact(
        "jobset-jobset-editor-role",
        rules=(
            Rule("jobset.x-k8s.io", ("jobsets",), WRITE),
            Rule("jobset.x-k8s.io", ("jobsets/status",), ("get",)),
        ),
    ),
    ClusterRoleFact(
        "jobset-jobset-viewer-role",
        rules=(
            Rule("jobset.x-k8s.io", ("jobsets",), READ),
            Rule("jobset.x-k8s.io", ("jobsets/status",), ("get",)),
        ),
    ),
)

KUBERNETES_ROLES: tuple[ClusterRoleFact, ...] = (
    ClusterRoleFact("edit", aggregates=AGGREGATE_TO_EDIT),
    ClusterRoleFact(
        "system:aggregate-to-edit",
        frozenset({AGGREGATE_TO_EDIT}),
        (
            Rule("", ("pods", "services", "configmaps"), (*WRITE, "deletecollection")),
            Rule("batch", ("jobs", "cronjobs"), (*WRITE, "deletecollection")),
        ),
    ),
)

CLUSTER_ROLES: dict[str, ClusterRoleFact] = {
    role.name: role for role in (*KUEUE_ROLES, *JOBSET_ROLES, *KUBERNETES_ROLES)
}


@dataclass(frozen=True)
class ControlPlaneCall:
    """An object through which the API server calls a pod: an admission webhook
    configuration, a CRD conversion webhook or an APIService, with its Service's port and the
    pod port that Service targets."""

    chart: str
    kind: str
    name: str
    service: str
    service_port: int
    target_port: int
    sources: tuple[str, ...] = field(default_factory=tuple)


_WEBHOOK_SOURCES = {
    "kueue": ("templates/webhook/manifests.yaml", "values.yaml webhookService.ports"),
    "jobset": ("templates/webhook/manifests.yaml", "templates/controller/deployment.yaml"),
}
CONTROL_PLANE_CALLS: tuple[ControlPlaneCall, ...] = (
    *(
        ControlPlaneCall(
            chart,
            f"{kind}WebhookConfiguration",
            f"{chart}-{kind.lower()}-webhook-configuration",
            f"{chart}-webhook-service",
            443,
            9443,
            sources,
        )
        for chart, sources in _WEBHOOK_SOURCES.items()
        for kind in ("Mutating", "Validating")
    ),
    ControlPlaneCall(
        "kueue",
        "CustomResourceDefinition",
        "clusterqueues.kueue.x-k8s.io",
        "kueue-webhook-service",
        443,
        9443,
        ("templates/crd/kueue.x-k8s.io_clusterqueues.yaml spec.conversion",),
    ),
    *(
        ControlPlaneCall(
            "kueue",
            "APIService",
            f"{version}.visibility.kueue.x-k8s.io",
            "kueue-visibility-server",
            443,
            8082,
            (
                f"templates/visibility/apiservice_{version}.yaml",
                "templates/visibility/service.yaml",
            ),
        )
        for version in ("v1beta1", "v1beta2")
    ),
)
"""Every path by which the control plane reaches the charts' pods. The APIServices have no
condition in the templates: Kueue 0.19.2 always installs both."""
