"""GKE's open-source TPU provisioner (ai-on-gke `tpu-provisioner`) on the cluster: its identity,
namespace, RBAC, `manager` ConfigMap and controller Deployment, all from `ai-infra:tpuProvisioner`.

The controller creates a slice node pool when a JobSet's leader pod is pending and unschedulable,
and deletes it once the JobSet has completed, failed or gone. Building its image is the user's
part (as upstream's README says); Kueue quota for the pools it creates lives in `quota.py`.

Upstream facts (env vars and defaults, ports, RBAC, leader election id) are from
github.com/ai-on-gke/tpu-provisioner at 6789e2a12873c79687ff9118048088b6d97d0c7c.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
from pydantic import InstanceOf, SkipValidation

from catalog import tpu as tpu_catalog
from components.base import Component, WiringModel
from components.gke.cluster import ClusterHandle, image_reads, node_roles
from components.gke.config import (
    PROVISIONED_DCN_GROUP,
    PROVISIONER_KSA,
    PROVISIONER_NAMESPACE,
    WORKLOAD_POLICY_PREFIX,
    GkeConfig,
    TpuProvisionerConfig,
)
from components.gke.kueue import CONTROLLER_NODE_SELECTOR, CONTROLLER_TOLERATIONS
from components.gke.workload_identity import (
    KubernetesSide,
    WorkloadIdentity,
    WorkloadIdentityArgs,
)
from components.identity import account_grant, custom_role_grant, project_grant
from components.placement import workload_policy

NAMESPACE = PROVISIONER_NAMESPACE
KUBERNETES_SERVICE_ACCOUNT = PROVISIONER_KSA
DEPLOYMENT = "tpu-provisioner-controller-manager"
CONFIG_MAP = "manager"
"""Upstream's base name for the ConfigMap the manager container reads through `envFrom`."""
HEALTH_PORT = 8081
"""`--health-probe-bind-address` default; `/healthz` and `/readyz` are served there."""
LEADER_ELECTION_ID = "ecaf1259.google.com"
"""The Lease the manager takes in its namespace (`LeaderElectionID` in cmd/main.go)."""


def manager_environment(
    config: TpuProvisionerConfig,
    *,
    project: str,
    cluster_name: pulumi.Input[str],
    cluster_location: str,
    zone: str,
    node_service_account: str,
    node_tags: Sequence[str],
    additional_networks: Sequence[tuple[str, str]] = (),
) -> dict[str, pulumi.Input[str]]:
    """The `manager` ConfigMap: every variable cmd/main.go reads, from the stack. Lists are
    comma-separated (envconfig); durations are Go's. `node_tags` are the tags every GKE node
    of the stack carries, which its firewall rules name; the user's `nodeTags` follow."""
    env: dict[str, pulumi.Input[str]] = {
        "PROVIDER": "gke",
        "GCP_PROJECT_ID": project,
        "GCP_CLUSTER": cluster_name,
        "GCP_CLUSTER_LOCATION": cluster_location,
        "GCP_ZONE": zone,
        "GCP_NODE_SERVICE_ACCOUNT": node_service_account,
        # Shielded nodes with secure boot, like every pool this program creates.
        "GCP_NODE_SECURE_BOOT": "true",
        "GCP_FORCE_ON_DEMAND": "true" if config.force_on_demand else "false",
        "NODE_MIN_LIFESPAN": config.node_min_lifespan,
        "NODEPOOL_DELETION_DELAY": config.node_pool_deletion_delay,
        "CONCURRENCY": str(config.concurrency),
        "POD_RESOURCE_TYPE": tpu_catalog.TPU_RESOURCE,
    }
    # Only what is set: envconfig hands a set-but-empty variable to its parser, and an empty
    # bool or duration stops the controller (envconfig v1.4.0 MustProcess).
    tags = list(dict.fromkeys([*node_tags, *config.node_tags]))
    if tags:
        env["GCP_NODE_TAGS"] = ",".join(tags)
    if config.pod_to_node_labels:
        env["GCP_POD_TO_NODE_LABELS"] = ",".join(config.pod_to_node_labels)
    if config.secondary_boot_disk:
        env["GCP_NODE_SECONDARY_DISK"] = config.secondary_boot_disk
    if additional_networks:
        # "vpc1:subnet1,vpc2:subnet2"; the controller splits on ',' then the first ':'.
        env["GCP_NODE_ADDITIONAL_NETWORKS"] = ",".join(
            f"{vpc}:{subnet}" for vpc, subnet in additional_networks
        )
    if config.boot_disk_kms_key:
        env["GCP_NODE_BOOT_DISK_KMS_KEY"] = config.boot_disk_kms_key
    if config.confidential_storage:
        env["GCP_NODE_CONFIDENTIAL_STORAGE"] = "true"
    disks = {shape.family.boot_disk_type for shape in config.shapes().values()}
    if len(disks) == 1:
        env["GCP_NODE_DISK_TYPE"] = disks.pop()
    return env


PERMISSIONS = ("container.clusters.get", "container.clusters.update", "container.operations.get")
"""What the controller calls, and nothing more: node pool get and list (container.clusters.get),
create and delete (container.clusters.update), and polling their operations
(container.operations.get) (internal/cloud/gke_service.go and gke.go at 6789e2a; GKE "API
permissions"). Upstream's README grants roles/container.clusterAdmin, which also creates and
deletes clusters. container.clusters.update still lets it change any node pool of the cluster
(GKE has no per-pool permission); `cluster_condition` holds the grant to this stack's cluster."""


def cluster_condition(cluster: str, location: str) -> gcp.projects.IAMMemberConditionArgs:
    """The custom role holds on the stack's own cluster only: any resource under
    `<location>/clusters/<cluster>` (the cluster and its node pools, whichever GKE checks the
    permission on), under `clusters/<cluster>` named with no location, or under no cluster at
    all (`.../operations/<id>`, which the controller polls, and a request that names no
    resource). The controller addresses `projects/P/locations/L/clusters/C/...`
    (internal/cloud/gke_context.go), IAM's "Full resource names" gives a GKE cluster
    as `projects/P/clusters/C` and "Resource attributes for IAM Conditions" lists
    container.googleapis.com: which form GKE hands the condition is not documented, so each
    is granted (a condition that denies the only form GKE uses would stop the provisioner
    silently), and a cluster of the same name in another location is not. This has not been
    run against GKE here, so the plan and docs/tpu-provisioner.md say so. Without it,
    container.clusters.update reaches every cluster of the project."""
    here, anywhere = f"/{location}/clusters/{cluster}", f"/clusters/{cluster}"
    unlocated = '!resource.name.contains("/locations/") && !resource.name.contains("/zones/")'
    return gcp.projects.IAMMemberConditionArgs(
        title=f"Only cluster {cluster}",
        description=f"Node pools of this stack's cluster in {location}, and operations",
        expression=(
            f'!resource.name.contains("/clusters/") || resource.name.endsWith("{here}") || '
            f'resource.name.contains("{here}/") || ({unlocated} && '
            f'(resource.name.endsWith("{anywhere}") || resource.name.contains("{anywhere}/")))'
        ),
    )


def custom_role_id(prefix: str) -> str:
    """The custom role's id: letters, digits, '_' and '.' only (IAM `roles.create`)."""
    return f"{prefix.replace('-', '_')}_tpu_provisioner"


def _rule(group: str, resources: list[str], verbs: list[str]) -> k8s.rbac.v1.PolicyRuleArgs:
    return k8s.rbac.v1.PolicyRuleArgs(api_groups=[group], resources=resources, verbs=verbs)


CLUSTER_RULES = [
    # Events on the pods and nodes it acts on, in their namespaces.
    _rule("", ["events"], ["create", "patch"]),
    # The creation controller watches pods; the deletion controller watches nodes and pods.
    _rule("", ["pods", "nodes"], ["get", "list", "watch"]),
    # Whether the JobSet behind a pool still exists or has ended.
    _rule("jobset.x-k8s.io", ["jobsets"], ["get", "list", "watch"]),
]
"""Upstream's kubebuilder markers also grant create/update/patch/delete on pods and nodes and
their status and finalizers subresources; at the pinned commit the controllers only read them
(Get/List through the cache) and record events, so only that is granted here."""
LEADER_ELECTION_RULES = [
    # client-go's lease lock creates, gets and updates one Lease in the pod's namespace
    # (controller-runtime's default lock since v0.12, pkg/leaderelection; upstream's ConfigMap
    # rule predates it). A create carries no name for RBAC to check, so only reads and updates
    # are held to the manager's Lease.
    _rule("coordination.k8s.io", ["leases"], ["create"]),
    k8s.rbac.v1.PolicyRuleArgs(
        api_groups=["coordination.k8s.io"],
        resources=["leases"],
        resource_names=[LEADER_ELECTION_ID],
        verbs=["get", "update"],
    ),
]


class TpuProvisionerArgs(WiringModel):
    config: InstanceOf[GkeConfig]
    cluster: InstanceOf[ClusterHandle]
    jobset_release: SkipValidation[pulumi.Resource]


class TpuProvisioner(Component):
    """The provisioner's identity, namespace, RBAC, ConfigMap and Deployment."""

    identity: WorkloadIdentity
    deployment: k8s.apps.v1.Deployment

    def __init__(
        self, name: str, args: TpuProvisionerArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:gke:TpuProvisioner", name, opts)
        gke = args.config
        config = gke.tpu_provisioner
        if config.image is None:
            raise ValueError("tpuProvisioner.image is required; the GKE checks refuse it unset")
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAMESPACE),
            opts=self.child_opts(),
        )
        self.identity = WorkloadIdentity(
            f"{name}-identity",
            WorkloadIdentityArgs(
                context=gke.context,
                account_id=gke.provisioner_account_id,
                display_name="GKE TPU provisioner",
                namespace=NAMESPACE,
                kubernetes_service_account=KUBERNETES_SERVICE_ACCOUNT,
                kubernetes=KubernetesSide(create_namespace=False, namespace=namespace),
            ),
            self.child_opts(),
        )
        ready = [*self._cloud_grants(name, gke, args.cluster), *self._rbac(name, namespace)]
        environment = manager_environment(
            config,
            project=gke.context.project,
            cluster_name=args.cluster.name,
            cluster_location=args.cluster.location,
            zone=gke.provisioner_zone,
            node_service_account=gke.provisioner_node_service_account,
            # Its pools on the stack's node networks are a DCN group of their own (dcn.py).
            node_tags=[
                *args.cluster.node_tags,
                *([gke.dcn_tag(PROVISIONED_DCN_GROUP)] if gke.provisioner_node_networks else []),
            ],
            additional_networks=gke.provisioner_additional_networks,
        )
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=CONFIG_MAP, namespace=NAMESPACE),
            data=environment,
            opts=self.child_opts(depends_on=[namespace]),
        )
        # The controller watches JobSets, so it starts once their API exists; it starts with
        # its permissions (RBAC, the identity's grants, the workload policies) in place rather
        # than failing its first node pool creations. It needs no Kueue object.
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYMENT, namespace=NAMESPACE),
            spec=deployment_spec(config.image, config_digest(environment)),
            opts=self.child_opts(
                depends_on=[args.jobset_release, config_map, self.identity, *ready]
            ),
        )
        self.register_outputs(
            {
                "image": config.image,
                "zone": gke.provisioner_zone,
                "nodeServiceAccount": gke.provisioner_node_service_account,
                "serviceAccount": self.identity.email,
            }
        )

    def _cloud_grants(
        self, name: str, gke: GkeConfig, cluster: ClusterHandle
    ) -> list[pulumi.Resource]:
        """The custom role on this cluster only, Service Account User on the nodes' account
        (and that account's roles when it is the user's own), and the tpu7x workload
        policies."""
        ctx = gke.context
        config = gke.tpu_provisioner
        _, role_grant = custom_role_grant(
            self,
            f"{name}-role",
            name,
            project=ctx.project,
            role_id=custom_role_id(ctx.prefix),
            title=f"TPU provisioner of {ctx.prefix}",
            description="Node pool get, list, create and delete, and their operations",
            permissions=PERMISSIONS,
            member=self.identity.member,
            depends_on=[self.identity.identity.account],
            condition=cluster_condition(gke.cluster_name, gke.location),
        )
        # Setting a service account on nodes takes Service Account User on that account
        # (cloud.google.com/iam/docs/roles-permissions/container); granted there, not on the
        # project.
        node_account = gke.provisioner_node_service_account
        node_account_user = account_grant(
            self,
            name,
            account=node_account,
            role="roles/iam.serviceAccountUser",
            member=self.identity.member,
            scope="nodes",
            depends_on=[
                self.identity.identity.account,
                *([] if config.node_service_account else [cluster.node_identity.account]),
            ],
        )
        # A node account of the user's own gets what the cluster's node account has.
        node_grants: list[pulumi.Resource] = []
        if config.node_service_account:
            node_grants += [
                project_grant(
                    self,
                    f"{name}-nodes",
                    project=ctx.project,
                    role=role_name,
                    member=f"serviceAccount:{node_account}",
                )
                for role_name in node_roles(cluster.image_streaming)
            ]
            node_grants += image_reads(
                self,
                f"{name}-nodes",
                gke.image_repositories(),
                member=f"serviceAccount:{node_account}",
            )
        policies = [
            workload_policy(
                self,
                f"{name}-workload-policy-{shape.topology}",
                project=ctx.project,
                region=ctx.region,
                name=f"{WORKLOAD_POLICY_PREFIX}{shape.topology}",
                topology=shape.topology,
            )
            for shape in _distinct_topologies(config.shapes())
            # The controller places every tpu7x pool, single-host too, by such a policy.
            if shape.family.workload_policy_for_multi_host and config.create_workload_policies
        ]
        return [role_grant, node_account_user, *node_grants, *policies]

    def _rbac(self, name: str, namespace: k8s.core.v1.Namespace) -> list[pulumi.Resource]:
        """The manager's ClusterRole (pods, nodes, JobSets read; events) and its leader
        election Role, each bound to its Kubernetes service account."""
        subject = k8s.rbac.v1.SubjectArgs(
            kind="ServiceAccount", name=KUBERNETES_SERVICE_ACCOUNT, namespace=NAMESPACE
        )
        cluster_role = k8s.rbac.v1.ClusterRole(
            f"{name}-manager-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="tpu-provisioner-manager-role"),
            rules=CLUSTER_RULES,
            opts=self.child_opts(),
        )
        cluster_binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-manager-rolebinding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="tpu-provisioner-manager-rolebinding"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io",
                kind="ClusterRole",
                name="tpu-provisioner-manager-role",
            ),
            subjects=[subject],
            opts=self.child_opts(depends_on=[cluster_role]),
        )
        election_role = k8s.rbac.v1.Role(
            f"{name}-leader-election-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="tpu-provisioner-leader-election-role", namespace=NAMESPACE
            ),
            rules=LEADER_ELECTION_RULES,
            opts=self.child_opts(depends_on=[namespace]),
        )
        election_binding = k8s.rbac.v1.RoleBinding(
            f"{name}-leader-election-rolebinding",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="tpu-provisioner-leader-election-rolebinding", namespace=NAMESPACE
            ),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io",
                kind="Role",
                name="tpu-provisioner-leader-election-role",
            ),
            subjects=[subject],
            opts=self.child_opts(depends_on=[election_role]),
        )
        return [cluster_binding, election_binding]


def _distinct_topologies(
    shapes: Mapping[str, tpu_catalog.TpuShape],
) -> list[tpu_catalog.TpuShape]:
    return list({shape.topology: shape for shape in shapes.values()}.values())


POD_LABELS = {"control-plane": "controller-manager", "app.kubernetes.io/name": "tpu-provisioner"}


CONFIG_DIGEST_ANNOTATION = "ai-infra/manager-config-sha256"


def config_digest(environment: dict[str, pulumi.Input[str]]) -> pulumi.Output[str]:
    """A digest of the ConfigMap's data. The controller reads it only at start (envFrom), so
    the pod template carries the digest: a settings change rolls the pod."""
    return pulumi.Output.from_input(environment).apply(
        lambda data: hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    )


def deployment_spec(image: str, config_sha256: pulumi.Input[str]) -> k8s.apps.v1.DeploymentSpecArgs:
    """One leader-elected replica on the system pool, non-root, probed on the health port."""
    return k8s.apps.v1.DeploymentSpecArgs(
        replicas=1,
        selector=k8s.meta.v1.LabelSelectorArgs(match_labels=POD_LABELS),
        template=k8s.core.v1.PodTemplateSpecArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(
                labels=POD_LABELS, annotations={CONFIG_DIGEST_ANNOTATION: config_sha256}
            ),
            spec=k8s.core.v1.PodSpecArgs(
                service_account_name=KUBERNETES_SERVICE_ACCOUNT,
                # Workload Identity needs the GKE metadata server, which every pool here runs.
                node_selector={
                    **CONTROLLER_NODE_SELECTOR,
                    "iam.gke.io/gke-metadata-server-enabled": "true",
                },
                # The upstream Dockerfile's distroless image runs as 65532; a numeric user
                # lets the kubelet verify runAsNonRoot whatever the image declares.
                security_context=k8s.core.v1.PodSecurityContextArgs(
                    run_as_non_root=True,
                    run_as_user=65532,
                    run_as_group=65532,
                    seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
                ),
                tolerations=[
                    k8s.core.v1.TolerationArgs(
                        key=t["key"], operator=t["operator"], value=t["value"], effect=t["effect"]
                    )
                    for t in CONTROLLER_TOLERATIONS
                ],
                termination_grace_period_seconds=10,
                containers=[
                    k8s.core.v1.ContainerArgs(
                        name="manager",
                        image=image,
                        command=["/manager"],
                        args=[
                            "--leader-elect",
                            f"--health-probe-bind-address=:{HEALTH_PORT}",
                            # Upstream serves metrics on loopback behind kube-rbac-proxy, which
                            # is not deployed here; loopback keeps them off the network.
                            "--metrics-bind-address=127.0.0.1:8080",
                        ],
                        env_from=[
                            k8s.core.v1.EnvFromSourceArgs(
                                config_map_ref=k8s.core.v1.ConfigMapEnvSourceArgs(name=CONFIG_MAP)
                            )
                        ],
                        ports=[
                            k8s.core.v1.ContainerPortArgs(
                                name="health", container_port=HEALTH_PORT, protocol="TCP"
                            )
                        ],
                        liveness_probe=k8s.core.v1.ProbeArgs(
                            http_get=k8s.core.v1.HTTPGetActionArgs(
                                path="/healthz", port=HEALTH_PORT
                            ),
                            initial_delay_seconds=15,
                            period_seconds=20,
                        ),
                        readiness_probe=k8s.core.v1.ProbeArgs(
                            http_get=k8s.core.v1.HTTPGetActionArgs(
                                path="/readyz", port=HEALTH_PORT
                            ),
                            initial_delay_seconds=5,
                            period_seconds=10,
                        ),
                        # Upstream's manager.yaml asks for one CPU and 1Gi and caps both there.
                        resources=k8s.core.v1.ResourceRequirementsArgs(
                            requests={"cpu": "1", "memory": "1Gi"},
                            limits={"cpu": "1", "memory": "1Gi"},
                        ),
                        security_context=k8s.core.v1.SecurityContextArgs(
                            allow_privilege_escalation=False,
                            read_only_root_filesystem=True,
                            capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
                        ),
                    )
                ],
            ),
        ),
    )
