"""Teams onboarded by config. Each team gets a namespace, a Kubernetes service account bound to
its own Google service account through Workload Identity, a ClusterQueue in the shared cohort
with its quota, LocalQueues `<team>` and `default` (for jobs that name no queue), a Pod
Security level, the member role (`MEMBER_RULES`, narrower than `edit`) and Kueue's batch-user
role for its Google groups, a default-deny NetworkPolicy with what jobs need, ResourceQuotas
and a LimitRange bounding what does not go through Kueue, and access to the buckets it
names. Everything a team owns is a child of its `Team` component, so adding or
removing a team touches nothing else (other teams' quotas aside); `Tenancy` holds what every
team namespace shares: the member role, the services PriorityClass and the admission policies
(`admission/`).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, InstanceOf, SkipValidation

from components.base import Component, WiringModel, slug
from components.buckets import BucketsHandle
from components.context import StackContext
from components.gke import admission
from components.gke.admission import (
    GPU_DIRECT_LABEL,
    HOST_NETWORK_LABEL,
    PRIORITY_CLASSES_ANNOTATION,
    SERVICES_PRIORITY_CLASS,
    STORAGE_CLASSES_ANNOTATION,
    TEAM_LABEL,
    listed,
)
from components.gke.config import TeamConfig, TeamLimits
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

CLUSTER_VIEWER = "roles/container.clusterViewer"
NETWORK_POLICY = "ai-infra-team"
METADATA_SERVER = (("169.254.169.254/32", (80, 8080)), ("169.254.169.252/32", (988,)))
"""Where a pod reaches the GKE metadata server for Workload Identity tokens: 169.254.169.254
on 80 under Dataplane V2, 169.254.169.252 on 988 under Calico (GKE "About Workload Identity
Federation for GKE", network policy limitations); both are allowed, whichever dataplane."""


MEMBER_ROLE = "ai-infra-team-member"
WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
READ = ["get", "list", "watch"]


def _rule(group: str, resources: list[str], verbs: list[str]) -> k8s.rbac.v1.PolicyRuleArgs:
    return k8s.rbac.v1.PolicyRuleArgs(api_groups=[group], resources=resources, verbs=verbs)


MEMBER_RULES = [
    # Pods come from Jobs and JobSets (Kueue's), never straight from a member: a bare pod
    # could claim a Job as its owner and pass for Kueue-managed (admission.py). Members read,
    # delete, exec into and forward to them.
    _rule(
        "",
        [
            "pods",
            "pods/log",
            "events",
            "serviceaccounts",
            "endpoints",
            "resourcequotas",
            "limitranges",
        ],
        READ,
    ),
    _rule("", ["pods"], ["delete"]),
    _rule("", ["pods/exec", "pods/attach", "pods/portforward"], ["create", "get"]),
    _rule("", ["services", "configmaps", "secrets", "persistentvolumeclaims"], WRITE),
    _rule("batch", ["jobs", "cronjobs"], WRITE),
    _rule("batch", ["jobs/status", "cronjobs/status"], ["get"]),
    # Deployments and StatefulSets for CPU services (their pods cannot tolerate accelerator or
    # system taints); no DaemonSets, which would put a pod on every node.
    _rule("apps", ["deployments", "statefulsets"], WRITE),
    _rule("apps", ["replicasets"], READ),
    # The default-deny policy is read, never edited.
    _rule("networking.k8s.io", ["networkpolicies"], READ),
]
"""What `edit` grants that a member keeps (Kubernetes' default roles, "User-facing roles"),
without creating pods, ServiceAccounts, DaemonSets or NetworkPolicies, and without RoleBindings
(`edit` has none either). JobSets and queues come from Kueue's batch-user role."""


DEFAULT_REQUEST = {"cpu": "100m", "memory": "128Mi"}
"""What a container that requests nothing is given (LimitRange `defaultRequest`), so that the
services quota, which needs every pod in its scope to request CPU and memory, can count it. No
default limit: it would cap a TPU job's container that sets none."""
QUOTA_SCOPE = k8s.core.v1.ScopeSelectorArgs(
    match_expressions=[
        k8s.core.v1.ScopedResourceSelectorRequirementArgs(
            scope_name="PriorityClass", operator="In", values=[SERVICES_PRIORITY_CLASS]
        )
    ]
)
"""The team's pods outside Kueue: the admission policies give every such pod, and no other,
the PriorityClass `ai-infra-services` (ResourceQuota scopes, "Quota by PriorityClass")."""


def services_quota(limits: TeamLimits) -> dict[str, str]:
    """The quota of the team's pods outside Kueue (`QUOTA_SCOPE`)."""
    return {"pods": str(limits.pods), "requests.cpu": limits.cpu, "requests.memory": limits.memory}


def objects_quota(limits: TeamLimits) -> dict[str, str]:
    """The quota of the team's objects: no LoadBalancer or NodePort Service, its claims'
    storage per class (a claim's class is `<class>.storageclass.storage.k8s.io/...`;
    claims of `ai-infra:storage` volumes take no class and count under none), and how many
    ConfigMaps, Secrets, Deployments, StatefulSets and CronJobs (etcd's room is everyone's)."""
    hard = {"services.loadbalancers": "0", "services.nodeports": "0"}
    for resource in (
        "configmaps",
        "secrets",
        "count/deployments.apps",
        "count/statefulsets.apps",
        "count/cronjobs.batch",
    ):
        hard[resource] = str(limits.objects)
    for storage_class, size in limits.storage.items():
        prefix = f"{storage_class}.storageclass.storage.k8s.io"
        hard[f"{prefix}/requests.storage"] = size
        hard[f"{prefix}/persistentvolumeclaims"] = str(limits.claims)
    return hard


def namespace_labels(team: TeamConfig) -> dict[str, str]:
    """The team's labels, and its Pod Security level as Pod Security Admission reads it. A
    team with `tpuHostNetwork` gets baseline in warn and audit only: PSA's baseline refuses
    every hostNetwork pod, and the admission policies enforce baseline with the one exception
    (admission.py). Restricted is warned about everywhere, for teams to see what it would
    refuse."""
    labels = {
        TEAM_LABEL: team.name,
        MANAGED_NAMESPACE_LABEL: "true",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
    }
    if team.tpu_host_network:
        labels[HOST_NETWORK_LABEL] = "true"
    if team.gpu_direct_pods:
        labels[GPU_DIRECT_LABEL] = "true"
    if team.tpu_host_network or team.gpu_direct_pods:
        labels["pod-security.kubernetes.io/warn"] = "baseline"
        labels["pod-security.kubernetes.io/audit"] = "baseline"
    else:
        labels["pod-security.kubernetes.io/enforce"] = team.pod_security
    return labels


def namespace_annotations(team: TeamConfig, priority_classes: list[str]) -> dict[str, str]:
    """What the team's config allows it, where the shared admission policies read it: its
    WorkloadPriorityClasses and its claims' StorageClasses."""
    return {
        PRIORITY_CLASSES_ANNOTATION: listed(priority_classes),
        STORAGE_CLASSES_ANNOTATION: listed(list(team.limits.storage)),
    }


ANY_POD = k8s.meta.v1.LabelSelectorArgs(match_labels={})
"""Every pod of the policy's namespace."""


def _tcp(*ports: int) -> list[k8s.networking.v1.NetworkPolicyPortArgs]:
    return [k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=p) for p in ports]


def opening_ports(ports: list[str]) -> list[k8s.networking.v1.NetworkPolicyPortArgs]:
    """`network.allow` ports (`tcp:8476`, `udp:5000-5100`) as NetworkPolicy ports."""
    found = []
    for spec in ports:
        protocol, _, span = spec.partition(":")
        low, _, high = span.partition("-")
        found.append(
            k8s.networking.v1.NetworkPolicyPortArgs(
                protocol=protocol.upper(), port=int(low), end_port=int(high) if high else None
            )
        )
    return found


def network_policy_spec(
    openings: list[tuple[str, list[str]]] | None = None,
) -> k8s.networking.v1.NetworkPolicySpecArgs:
    """Every pod of the namespace, denied what is not listed: traffic with the namespace's own
    pods on any port (JobSet's headless Service resolves to pod IPs; JAX and MegaScale pick
    their ports), DNS through kube-dns, the metadata server, and HTTPS anywhere (Google APIs
    such as Cloud Storage, and the Kubernetes API). Pods with hostNetwork are not subject to
    NetworkPolicy; Dataplane V2 enforces it ("About network policies" in GKE). `openings` are
    (range, ports) the stack's `network.allow` opened to the pods range: the team's pods may
    leave for them too, and the firewall decides which system's VMs answer."""
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
        *(
            k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                to=[
                    k8s.networking.v1.NetworkPolicyPeerArgs(
                        ip_block=k8s.networking.v1.IPBlockArgs(cidr=cidr)
                    )
                ],
                ports=opening_ports(ports),
            )
            for cidr, ports in openings or []
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
    tenancy: SkipValidation[pulumi.Resource]
    """The member role and admission policies, in place before the namespace takes pods."""
    openings: list[tuple[str, list[str]]] = Field(default_factory=list)
    """(range, ports) that `network.allow` opened to the pods range, for the egress policy."""
    priority_classes: list[str] = Field(default_factory=list)
    """The WorkloadPriorityClasses its jobs may name (`GkeConfig.priority_classes`)."""


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
                labels=namespace_labels(team),
                annotations=namespace_annotations(team, args.priority_classes),
            ),
            opts=self.child_opts(depends_on=[args.tenancy]),
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
            # The member role covers Jobs, services and reading pods; JobSet create and
            # delete come only with Kueue's batch-user role, which also shows pending
            # workloads of the team's LocalQueues. Neither lets a member edit a queue or a
            # Workload.
            for key, role in (("member", MEMBER_ROLE), ("batch-user", BATCH_USER_ROLE)):
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
                    opts=self.child_opts(
                        depends_on=[self.namespace, args.kueue_release, args.tenancy]
                    ),
                )
        self._bounds(name, team)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NETWORK_POLICY, namespace=team.name),
            spec=network_policy_spec(args.openings),
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

    def _bounds(self, name: str, team: TeamConfig) -> None:
        """What the team takes outside Kueue: two ResourceQuotas (its services' pods by their
        PriorityClass; its objects and claims) and the LimitRange that gives a container that
        requests nothing a request the services quota can count."""
        after = self.child_opts(depends_on=[self.namespace])

        def metadata(object_name: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=team.name)

        k8s.core.v1.ResourceQuota(
            f"{name}-services-quota",
            metadata=metadata("ai-infra-team-services"),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(
                hard=services_quota(team.limits), scope_selector=QUOTA_SCOPE
            ),
            opts=after,
        )
        k8s.core.v1.ResourceQuota(
            f"{name}-objects-quota",
            metadata=metadata("ai-infra-team-objects"),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=objects_quota(team.limits)),
            opts=after,
        )
        k8s.core.v1.LimitRange(
            f"{name}-limit-range",
            metadata=metadata("ai-infra-team"),
            spec=k8s.core.v1.LimitRangeSpecArgs(
                limits=[
                    k8s.core.v1.LimitRangeItemArgs(
                        type="Container", default_request=DEFAULT_REQUEST
                    )
                ]
            ),
            opts=after,
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


class TenancyArgs(WiringModel):
    image_repositories: dict[str, list[str]] = Field(default_factory=dict)
    """Team -> its own image repositories, which no other team's pod may name."""
    gpu_direct_pools: list[str] = Field(default_factory=list)
    """GPU pools built on their fast path, where gpuDirectPods teams' pods may take GKE's
    GPUDirect host paths and NET_ADMIN."""


class Tenancy(Component):
    """What every team namespace shares: the member role, the PriorityClass of the teams'
    pods outside Kueue, and the admission policies bound to namespaces labelled
    `ai-infra/team`, so a team added later is held from its first pod."""

    def __init__(self, name: str, args: TenancyArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gke:Tenancy", name, opts)
        k8s.rbac.v1.ClusterRole(
            f"{name}-member-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=MEMBER_ROLE),
            rules=MEMBER_RULES,
            opts=self.child_opts(),
        )
        # Value 0, as a pod of no class has, and it preempts nothing: it only marks the pods
        # a team's services quota counts.
        k8s.scheduling.v1.PriorityClass(
            f"{name}-services-priority",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=SERVICES_PRIORITY_CLASS),
            value=0,
            global_default=False,
            preemption_policy="Never",
            description="Team pods outside Kueue (Deployments, StatefulSets), which each team "
            "namespace's ResourceQuota bounds",
            opts=self.child_opts(),
        )
        found = admission.policies(args.image_repositories, args.gpu_direct_pools)
        for policy in found:
            admission.register(name, policy, self.child_opts())
        self.register_outputs({"policies": [p.name for p in found]})


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
