"""Teams onboarded by config. Each team gets a namespace, a Kubernetes service account bound to
its own Google service account through Workload Identity, a ClusterQueue in the shared cohort
with its quota, LocalQueues `<team>` and `default` (for jobs that name no queue), `edit` and
Kueue's batch-user role for its Google groups, a default-deny NetworkPolicy with what jobs
need, and access to the buckets it names. Everything a team owns is a child of its `Team`
component, so adding or removing a team touches nothing else (other teams' quotas aside).
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
    DEFAULT_LOCAL_QUEUE,
    MANAGED_NAMESPACE_LABEL,
    cluster_queue_spec,
    kueue_object,
    provisioned_queue,
    provisioned_queue_spec,
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
NETWORK_POLICY = "ai-infra-team"
METADATA_SERVER = (("169.254.169.254/32", (80, 8080)), ("169.254.169.252/32", (988,)))
"""Where a pod reaches the GKE metadata server for Workload Identity tokens: 169.254.169.254
on 80 under Dataplane V2, 169.254.169.252 on 988 under Calico (GKE "About Workload Identity
Federation for GKE", network policy limitations); both are allowed, whichever dataplane."""


ANY_POD = k8s.meta.v1.LabelSelectorArgs(match_labels={})
"""Every pod of the policy's namespace."""


def _tcp(*ports: int) -> list[k8s.networking.v1.NetworkPolicyPortArgs]:
    return [k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=p) for p in ports]


def network_policy_spec() -> k8s.networking.v1.NetworkPolicySpecArgs:
    """Every pod of the namespace, denied what is not listed: traffic with the namespace's own
    pods on any port (JobSet's headless Service resolves to pod IPs; JAX and MegaScale pick
    their ports), DNS through kube-dns, the metadata server, and HTTPS anywhere (Google APIs
    such as Cloud Storage, and the Kubernetes API). Pods with hostNetwork are not subject to
    NetworkPolicy; Dataplane V2 enforces it ("About network policies" in GKE)."""
    same_namespace = [k8s.networking.v1.NetworkPolicyPeerArgs(pod_selector=ANY_POD)]
    kube_dns = k8s.networking.v1.NetworkPolicyPeerArgs(
        namespace_selector=k8s.meta.v1.LabelSelectorArgs(
            match_labels={"kubernetes.io/metadata.name": "kube-system"}
        ),
        pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"k8s-app": "kube-dns"}),
    )
    egress = [
        k8s.networking.v1.NetworkPolicyEgressRuleArgs(to=same_namespace),
        k8s.networking.v1.NetworkPolicyEgressRuleArgs(
            to=[kube_dns],
            ports=[
                k8s.networking.v1.NetworkPolicyPortArgs(protocol=protocol, port=53)
                for protocol in ("UDP", "TCP")
            ],
        ),
        *(
            k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                to=[
                    k8s.networking.v1.NetworkPolicyPeerArgs(
                        ip_block=k8s.networking.v1.IPBlockArgs(cidr=cidr)
                    )
                ],
                ports=_tcp(*ports),
            )
            for cidr, ports in METADATA_SERVER
        ),
        k8s.networking.v1.NetworkPolicyEgressRuleArgs(
            to=[
                k8s.networking.v1.NetworkPolicyPeerArgs(
                    ip_block=k8s.networking.v1.IPBlockArgs(cidr="0.0.0.0/0")
                )
            ],
            ports=_tcp(443),
        ),
    ]
    return k8s.networking.v1.NetworkPolicySpecArgs(
        pod_selector=ANY_POD,
        policy_types=["Ingress", "Egress"],
        ingress=[k8s.networking.v1.NetworkPolicyIngressRuleArgs(from_=same_namespace)],
        egress=egress,
    )


class TeamArgs(WiringModel):
    context: InstanceOf[StackContext]
    cohort: str
    config: TeamConfig
    flavors: list[Flavor]
    quotas: dict[str, int]
    """Nominal quota per flavor for this team, from `quota.allocate`."""
    cpu: dict[str, str]
    """The `cpu` flavor's `cpu` and `memory` quota, from `GkeConfig.cpu_quota`."""
    provisioned_cpu: dict[str, str]
    """The same for its queue of provisioner-created slices (unused without them)."""
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
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NETWORK_POLICY, namespace=team.name),
            spec=network_policy_spec(),
            opts=self.child_opts(depends_on=[self.namespace]),
        )
        spec = cluster_queue_spec(
            namespace=team.name,
            cohort=args.cohort,
            flavors=args.flavors,
            quotas=args.quotas,
            cpu=args.cpu,
            flex_start_checks=args.flex_start_checks,
        )
        self.cluster_queue = kueue_object(
            self, f"{name}-cluster-queue", "ClusterQueue", team.name, spec, [args.kueue_release]
        )
        after_queue = [args.kueue_release, self.namespace, self.cluster_queue]
        self.local_queue = kueue_object(
            self,
            f"{name}-local-queue",
            "LocalQueue",
            team.name,
            {"clusterQueue": team.name},
            after_queue,
            namespace=team.name,
        )
        # Where Kueue puts the team's jobs that name no queue, against the same quota.
        kueue_object(
            self,
            f"{name}-default-queue",
            "LocalQueue",
            DEFAULT_LOCAL_QUEUE,
            {"clusterQueue": team.name},
            after_queue,
            namespace=team.name,
        )
        if any(f.provisioned for f in args.flavors):
            self._provisioned_queues(name, args)
        self.register_outputs(
            {"namespace": team.name, "queue": team.name, "serviceAccount": self.identity.email}
        )

    def _provisioned_queues(self, name: str, args: TeamArgs) -> None:
        """The ClusterQueue and LocalQueue `<team>-provisioned` for what the TPU provisioner
        creates (`kueue.provisioned_queue_spec`)."""
        team = args.config
        queue = provisioned_queue(team.name)
        cluster_queue = kueue_object(
            self,
            f"{name}-provisioned-cluster-queue",
            "ClusterQueue",
            queue,
            provisioned_queue_spec(
                namespace=team.name,
                flavors=args.flavors,
                quotas=args.quotas,
                cpu=args.provisioned_cpu,
            ),
            [args.kueue_release],
        )
        kueue_object(
            self,
            f"{name}-provisioned-local-queue",
            "LocalQueue",
            queue,
            {"clusterQueue": queue},
            [args.kueue_release, self.namespace, cluster_queue],
            namespace=team.name,
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
