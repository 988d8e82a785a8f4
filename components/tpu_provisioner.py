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
import re
from collections.abc import Mapping
from typing import Annotated

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
from pydantic import AfterValidator, Field, SkipValidation

from components import tpu_catalog
from components.base import Component, ConfigModel, Problem, WiringModel
from components.gke import ClusterHandle, ReleaseChannel, pool_zone_problems
from components.kueue import CONTROLLER_NODE_SELECTOR
from components.workload_identity import KubernetesSide, WorkloadIdentity, WorkloadIdentityArgs

NAMESPACE = "tpu-provisioner-system"
KUBERNETES_SERVICE_ACCOUNT = "tpu-provisioner-controller-manager"
DEPLOYMENT = "tpu-provisioner-controller-manager"
CONFIG_MAP = "manager"
"""Upstream's base name for the ConfigMap the manager container reads through `envFrom`."""
ACCOUNT_SUFFIX = "tpu-prov"
"""The Google service account is `<prefix>-tpu-prov`."""
HEALTH_PORT = 8081
"""`--health-probe-bind-address` default; `/healthz` and `/readyz` are served there."""
LEADER_ELECTION_ID = "ecaf1259.google.com"
"""The Lease the manager takes in its namespace (`LeaderElectionID` in cmd/main.go)."""
WORKLOAD_POLICY_PREFIX = "tpu-provisioner-"
"""For tpu7x the controller names the workload policy `tpu-provisioner-<topology>` in the
cluster's project and region, and expects it to exist (upstream README, Ironwood section)."""
MAX_SLICES_PER_SHAPE = 256
"""A guard against typing chips where slices are meant, not a GKE limit."""

_IMAGE = re.compile(
    r"(?:(?P<registry>[a-zA-Z0-9][-a-zA-Z0-9.]*[a-zA-Z0-9](?::[0-9]{1,5})?)/)?"
    r"(?P<path>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?"
)
_ZONE = re.compile(r"[a-z]+-[a-z]+[0-9]+-[a-z]")
_SERVICE_ACCOUNT = re.compile(
    r"(?P<id>[a-z][-a-z0-9]{4,28}[a-z0-9])@(?P<project>[a-z][-a-z0-9]{4,28}[a-z0-9])"
    r"\.iam\.gserviceaccount\.com"
)
_NETWORK_TAG = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_KEY = re.compile(rf"([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}")
_GO_DURATION = re.compile(r"([0-9]+(ms|s|m|h))+")
_ACCELERATOR = re.compile(r"[a-z0-9]{1,16}-[0-9]{1,5}")
"""An accelerator type's form, checked before the catalog reads it as a quota key, so a key
with whitespace or a newline cannot reach a flavor name."""


def _image(value: str) -> str:
    if len(value) > 512 or not _IMAGE.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a container image reference; write REGISTRY/PATH:TAG@sha256:DIGEST, "
            "e.g. us-docker.pkg.dev/my-project/images/tpu-provisioner@sha256:<64 hex digits>"
        )
    return value


def _zone(value: str) -> str:
    if not _ZONE.fullmatch(value):
        raise ValueError(f"'{value}' is not a GCP zone such as us-east5-a")
    return value


def _service_account(value: str) -> str:
    if not _SERVICE_ACCOUNT.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a user-managed service account email "
            "(NAME@PROJECT.iam.gserviceaccount.com); nodes never run as the default compute "
            "service account, so leave this unset to use the cluster's node service account"
        )
    return value


def _network_tag(value: str) -> str:
    if not _NETWORK_TAG.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a network tag: 1-63 lowercase letters, digits or '-', starting "
            "with a letter"
        )
    return value


def _label_key(value: str) -> str:
    if not _LABEL_KEY.fullmatch(value):
        raise ValueError(f"'{value}' is not a Kubernetes label key such as team or example.com/run")
    return value


def _go_duration(value: str) -> str:
    if len(value) > 32 or not _GO_DURATION.fullmatch(value):
        raise ValueError(f"'{value}' is not a duration; write it as Go does, e.g. 30s, 5m or 1m30s")
    return value


def _nonzero(value: str) -> str:
    if not any(int(n) for n in re.findall(r"[0-9]+", value)):
        raise ValueError(
            f"'{value}' is zero, and the controller refuses to start with a zero "
            "NODE_MIN_LIFESPAN; use at least 1s (upstream default 10s)"
        )
    return value


ImageReference = Annotated[str, AfterValidator(_image)]
GoDuration = Annotated[str, AfterValidator(_go_duration)]
SliceCount = Annotated[int, Field(strict=True, ge=1, le=MAX_SLICES_PER_SHAPE)]


def is_digest_pinned(image: str) -> bool:
    match = _IMAGE.fullmatch(image)
    return bool(match and match["digest"])


def account_id(prefix: str) -> str:
    """The provisioner's Google service account id, reserved whether or not it is enabled."""
    return f"{prefix}-{ACCOUNT_SUFFIX}"


class TpuProvisionerConfig(ConfigModel):
    """`ai-infra:tpuProvisioner`: GKE's open-source TPU provisioner, which creates a slice node
    pool for each pending JobSet and deletes it when the JobSet ends. It manages node pools
    itself, so the cluster must not be on a release channel."""

    enabled: bool = False
    """Run the controller in `tpu-provisioner-system`, as `<prefix>-tpu-prov` (with
    `roles/container.clusterAdmin`, and `roles/iam.serviceAccountUser` on the node service
    account) through the Kubernetes service account `tpu-provisioner-controller-manager`."""
    image: ImageReference | None = None
    """The controller image you built and pushed (required when enabled); pin it by digest
    (`...@sha256:...`), a tag alone can move under a running cluster."""
    zone: Annotated[str, AfterValidator(_zone)] | None = None
    """Zone it creates node pools in (`GCP_ZONE`); defaults to `gcp:zone`. It must offer the
    TPU generations the teams request."""
    node_service_account: Annotated[str, AfterValidator(_service_account)] | None = None
    """Service account of the nodes it creates (`GCP_NODE_SERVICE_ACCOUNT`); defaults to the
    cluster's node service account."""
    node_tags: list[Annotated[str, AfterValidator(_network_tag)]] = Field(default_factory=list)
    """Network tags on the nodes it creates (`GCP_NODE_TAGS`)."""
    pod_to_node_labels: list[Annotated[str, AfterValidator(_label_key)]] = Field(
        default_factory=list
    )
    """Pod label keys copied onto the node pools it creates (`GCP_POD_TO_NODE_LABELS`)."""
    force_on_demand: bool = False
    """Create on-demand pools even when a pod selects Spot or a reservation
    (`GCP_FORCE_ON_DEMAND`)."""
    concurrency: int = Field(default=3, ge=1, le=64)
    """Pods and nodes reconciled at once by each of its controllers (`CONCURRENCY`), 1-64."""
    node_min_lifespan: Annotated[GoDuration, AfterValidator(_nonzero)] = "10s"
    """How old a node must be before its pool may be deleted (`NODE_MIN_LIFESPAN`)."""
    node_pool_deletion_delay: GoDuration = "30s"
    """Time between the two checks that must both find a pool unused before it is deleted
    (`NODEPOOL_DELETION_DELAY`)."""
    quota: dict[str, SliceCount] = Field(default_factory=dict)
    """Accelerator type -> the most slices of it the provisioner may create, e.g.
    `{v5p-32: 4}`, in the type's default topology. Each becomes Kueue quota on that shape's
    flavor, shared with fixed slices of the shape; teams name it in their quota as
    `tpuProvisioner.<accelerator>`."""

    def shapes(self) -> dict[str, tpu_catalog.TpuShape]:
        """The quota's accelerator types resolved to their default-topology shapes; call only
        on a config whose `problems()` are empty."""
        return {accelerator: tpu_catalog.resolve(accelerator) for accelerator in self.quota}


SOURCE_PREFIX = "tpuProvisioner."
"""Prefix of a provisioner shape's capacity as a quota source (`tpuProvisioner.v5p-32`); a
slice or pool name (a DNS label) cannot contain the '.'."""


def capacity(config: TpuProvisionerConfig) -> dict[str, tuple[tpu_catalog.TpuShape, int]]:
    """Quota source name (`tpuProvisioner.v5p-32`) -> the shape and the chips the provisioner
    may create of it; empty when it is off. For a config whose `problems()` are empty."""
    if not config.enabled:
        return {}
    return {
        f"{SOURCE_PREFIX}{accelerator}": (shape, config.quota[accelerator] * shape.chips)
        for accelerator, shape in config.shapes().items()
    }


def max_nodes(config: TpuProvisionerConfig) -> int:
    """The most nodes the provisioner's pools reach, for a config whose `problems()` are empty."""
    if not config.enabled:
        return 0
    return sum(config.quota[a] * shape.hosts for a, shape in config.shapes().items())


def problems(
    config: TpuProvisionerConfig,
    *,
    release_channel: ReleaseChannel,
    region: str,
    cluster_location: str,
    default_zone: str,
) -> list[Problem]:
    """Cross-checks of `ai-infra:tpuProvisioner`; the stack root checks that its account id
    and Kubernetes service account have no other owner."""
    found: list[Problem] = []
    if not config.enabled:
        if config.quota:
            found.append(
                Problem(
                    ("quota",),
                    "quota for provisioner-created slices needs enabled: true; without the "
                    "controller Kueue would admit jobs onto capacity nobody creates",
                )
            )
        return found
    if release_channel != "NONE":
        found.append(
            Problem(
                ("enabled",),
                "the TPU provisioner manages node pools itself and requires a cluster without "
                "a release channel; set ai-infra:cluster.releaseChannel: NONE (now "
                f"{release_channel})",
            )
        )
    if config.image is None:
        found.append(
            Problem(
                ("image",),
                "is required when enabled: build and push the controller image (upstream "
                "tpu-provisioner README) and give its reference, pinned by digest "
                "(REGISTRY/PATH@sha256:...)",
            )
        )
    zone_problems = []
    if config.zone is not None:
        zone_problems = pool_zone_problems(
            config.zone, region=region, cluster_location=cluster_location
        )
        found += zone_problems
    zone = config.zone or default_zone
    disks: dict[str, list[str]] = {}
    for accelerator in config.quota:
        if not _ACCELERATOR.fullmatch(accelerator):
            found.append(
                Problem(
                    ("quota", accelerator),
                    "is not an accelerator type; write it as the catalog does, e.g. v5p-32",
                )
            )
            continue
        try:
            shape = tpu_catalog.resolve(accelerator)
        except tpu_catalog.CatalogError as error:
            found.append(Problem(("quota", accelerator), str(error)))
            continue
        if not shape.family.gke:
            found.append(
                Problem(
                    ("quota", accelerator),
                    f"GKE has no {shape.family.prefix} node pools here; request it as TPU VMs "
                    "(ai-infra:tpuVms)",
                )
            )
            continue
        if not zone_problems and (problem := tpu_catalog.zone_problem(shape.family, zone)):
            where = "" if config.zone else f"the provisioner creates pools in gcp:zone {zone}: "
            found.append(Problem(("quota", accelerator), where + problem.split("; pick")[0]))
        disks.setdefault(shape.family.boot_disk_type, []).append(accelerator)
    if len(disks) > 1:
        kinds = "; ".join(f"{disk} for {', '.join(names)}" for disk, names in disks.items())
        found.append(
            Problem(
                ("quota",),
                f"the controller gives every pool it creates one boot disk type "
                f"(GCP_NODE_DISK_TYPE), but these shapes need different ones ({kinds}); "
                "provision the other family as fixed tpuSlices",
            )
        )
    return found


def manager_environment(
    config: TpuProvisionerConfig,
    *,
    project: str,
    cluster_name: pulumi.Input[str],
    cluster_location: str,
    zone: str,
    node_service_account: str,
) -> dict[str, pulumi.Input[str]]:
    """The `manager` ConfigMap: every variable cmd/main.go reads, from the stack. Lists are
    comma-separated (envconfig); durations are Go's."""
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
    if config.node_tags:
        env["GCP_NODE_TAGS"] = ",".join(config.node_tags)
    if config.pod_to_node_labels:
        env["GCP_POD_TO_NODE_LABELS"] = ",".join(config.pod_to_node_labels)
    disks = {shape.family.boot_disk_type for shape in config.shapes().values()}
    if len(disks) == 1:
        env["GCP_NODE_DISK_TYPE"] = disks.pop()
    return env


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
    project: str
    prefix: str
    region: str
    cluster: ClusterHandle
    zone: str
    """Resolved: `tpuProvisioner.zone` or `gcp:zone`."""
    node_service_account: str
    """Resolved: `tpuProvisioner.nodeServiceAccount` or the cluster's node service account."""
    config: TpuProvisionerConfig
    jobset_release: SkipValidation[pulumi.Resource]
    node_service_account_resource: SkipValidation[pulumi.Resource] | None = None
    """The node service account, when this program creates it."""


class TpuProvisioner(Component):
    """The provisioner's identity, namespace, RBAC, ConfigMap and Deployment."""

    identity: WorkloadIdentity
    deployment: k8s.apps.v1.Deployment

    def __init__(
        self, name: str, args: TpuProvisionerArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:tpu_provisioner:TpuProvisioner", name, opts)
        config = args.config
        if config.image is None:
            raise ValueError("tpuProvisioner.image is required; stacks.config.problems checks it")
        if not is_digest_pinned(config.image):
            pulumi.log.warn(
                f"ai-infra:tpuProvisioner.image '{config.image}' is a mutable tag: a push "
                "changes what the next pod runs. Pin it by digest (...@sha256:<digest>)."
            )
        cluster = args.cluster
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAMESPACE),
            opts=self.child_opts(),
        )
        # Named like the component and aliased to the stack root: the identity existed on its
        # own before the controller did, and its account must not be replaced.
        self.identity = WorkloadIdentity(
            name,
            WorkloadIdentityArgs(
                project=args.project,
                account_id=account_id(args.prefix),
                display_name="GKE TPU provisioner",
                namespace=NAMESPACE,
                kubernetes_service_account=KUBERNETES_SERVICE_ACCOUNT,
                roles=["roles/container.clusterAdmin"],
                kubernetes=KubernetesSide(create_namespace=False, namespace=namespace),
            ),
            self.child_opts(aliases=[pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)]),
        )
        # Setting a service account on nodes takes Service Account User on that account
        # (cloud.google.com/iam/docs/roles-permissions/container); granted there, not on the
        # project.
        account = _SERVICE_ACCOUNT.fullmatch(args.node_service_account)
        if account is None:
            raise ValueError(f"'{args.node_service_account}' is not a service account email")
        node_account_user = gcp.serviceaccount.IAMMember(
            f"{name}-node-sa-user",
            service_account_id=(
                f"projects/{account['project']}/serviceAccounts/{args.node_service_account}"
            ),
            role="roles/iam.serviceAccountUser",
            member=self.identity.member,
            opts=self.child_opts(
                depends_on=[
                    self.identity.service_account,
                    *filter(None, [args.node_service_account_resource]),
                ]
            ),
        )
        policies = [
            gcp.compute.ResourcePolicy(
                f"{name}-workload-policy-{shape.topology}",
                project=args.project,
                region=args.region,
                name=f"{WORKLOAD_POLICY_PREFIX}{shape.topology}",
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT", accelerator_topology=shape.topology
                ),
                opts=self.child_opts(),
            )
            for shape in _distinct_topologies(config.shapes())
            # The controller places every tpu7x pool, single-host too, by such a policy.
            if shape.family.workload_policy_for_multi_host
        ]
        environment = manager_environment(
            config,
            project=args.project,
            cluster_name=cluster.name,
            cluster_location=cluster.location,
            zone=args.zone,
            node_service_account=args.node_service_account,
        )
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=CONFIG_MAP, namespace=NAMESPACE),
            data=environment,
            opts=self.child_opts(depends_on=[namespace]),
        )
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
        # The controller watches JobSets, so it starts once their API exists; it starts with
        # its permissions (RBAC, the identity's grants, the workload policies) in place rather
        # than failing its first node pool creations. It needs no Kueue object.
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYMENT, namespace=NAMESPACE),
            spec=deployment_spec(config.image, config_digest(environment)),
            opts=self.child_opts(
                depends_on=[
                    args.jobset_release,
                    config_map,
                    self.identity,
                    node_account_user,
                    cluster_binding,
                    election_binding,
                    *policies,
                ]
            ),
        )
        self.register_outputs(
            {
                "image": config.image,
                "zone": args.zone,
                "nodeServiceAccount": args.node_service_account,
                "serviceAccount": self.identity.email,
            }
        )


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
    """One leader-elected replica on the CPU pool, non-root, probed on the health port."""
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
