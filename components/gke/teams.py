"""Teams onboarded by config. Each team gets a namespace, a Kubernetes service account bound to
its own Google service account through Workload Identity, a ClusterQueue in the shared cohort
with its quota, a LocalQueue, `edit` and Kueue's batch-user role for its Google groups, and
access to the buckets it names.
Everything a team owns is a child of its `Team` component, so adding or removing a team touches
nothing else (other teams' quotas aside).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from pydantic import InstanceOf, SkipValidation

from components.base import Component, WiringModel, slug
from components.buckets import BucketsHandle
from components.context import StackContext
from components.gke.config import TeamConfig
from components.gke.kueue import (
    BATCH_USER_ROLE,
    MANAGED_NAMESPACE_LABEL,
    cluster_queue_spec,
    kueue_object,
)
from components.gke.quota import Flavor
from components.gke.workload_identity import (
    KubernetesSide,
    WorkloadIdentity,
    WorkloadIdentityArgs,
)
from components.identity import project_grant

TEAM_LABEL = "ai-infra/team"
CLUSTER_VIEWER = "roles/container.clusterViewer"


class TeamArgs(WiringModel):
    context: InstanceOf[StackContext]
    cohort: str
    config: TeamConfig
    flavors: list[Flavor]
    quotas: dict[str, int]
    """Nominal quota per flavor for this team, from `quota.allocate`."""
    flex_start_checks: list[str]
    kueue_release: SkipValidation[pulumi.Resource]
    cluster: SkipValidation[pulumi.Resource]
    buckets: InstanceOf[BucketsHandle]


class Team(Component):
    """Everything one team owns."""

    namespace: k8s.core.v1.Namespace
    identity: WorkloadIdentity
    cluster_queue: k8s.apiextensions.CustomResource
    local_queue: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: TeamArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:Team", name, opts)
        team = args.config
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=team.name,
                labels={TEAM_LABEL: team.name, MANAGED_NAMESPACE_LABEL: "true"},
            ),
            opts=self.child_opts(),
        )
        self.identity = WorkloadIdentity(
            f"{name}-identity",
            WorkloadIdentityArgs(
                context=args.context,
                account_id=args.context.name(team.name),
                display_name=f"Team {team.name} workloads",
                namespace=team.name,
                kubernetes_service_account=team.service_account,
                roles=team.roles,
                buckets=team.buckets,
                bucket_handle=args.buckets,
                kubernetes=KubernetesSide(create_namespace=False, namespace=self.namespace),
            ),
            # The identity pool PROJECT.svc.id.goog exists once the cluster does.
            self.child_opts(depends_on=[args.cluster]),
        )
        if team.groups:
            # `edit` covers pods, logs, services and batch Jobs; JobSet create and delete come
            # only with Kueue's batch-user role, which also shows pending workloads of the
            # team's LocalQueues. Neither lets a member edit a queue or a Workload.
            for key, role in (("edit", "edit"), ("batch-user", BATCH_USER_ROLE)):
                k8s.rbac.v1.RoleBinding(
                    f"{name}-{key}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=f"ai-infra-team-{key}", namespace=team.name
                    ),
                    role_ref=k8s.rbac.v1.RoleRefArgs(
                        api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role
                    ),
                    subjects=[
                        k8s.rbac.v1.SubjectArgs(
                            api_group="rbac.authorization.k8s.io", kind="Group", name=group
                        )
                        for group in team.groups
                    ],
                    opts=self.child_opts(depends_on=[self.namespace, args.kueue_release]),
                )
        spec = cluster_queue_spec(
            namespace=team.name,
            cohort=args.cohort,
            flavors=args.flavors,
            quotas=args.quotas,
            cpu={"cpu": team.cpu, "memory": team.memory},
            flex_start_checks=args.flex_start_checks,
        )
        self.cluster_queue = kueue_object(
            self, f"{name}-cluster-queue", "ClusterQueue", team.name, spec, [args.kueue_release]
        )
        self.local_queue = kueue_object(
            self,
            f"{name}-local-queue",
            "LocalQueue",
            team.name,
            {"clusterQueue": team.name},
            [args.kueue_release, self.namespace, self.cluster_queue],
            namespace=team.name,
        )
        self.register_outputs(
            {"namespace": team.name, "queue": team.name, "serviceAccount": self.identity.email}
        )


class GroupAccessArgs(WiringModel):
    project: str
    groups: list[str]


class GroupAccess(Component):
    """`roles/container.clusterViewer` for every team group, once per group however many teams
    name it, so its members can fetch cluster credentials; namespaces grant the rest."""

    def __init__(
        self, name: str, args: GroupAccessArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:gke:GroupAccess", name, opts)
        for group in args.groups:
            project_grant(
                self,
                f"{name}-{slug(group)}",
                project=args.project,
                role=CLUSTER_VIEWER,
                member=f"group:{group}",
            )
        self.register_outputs({"groups": args.groups})
