"""One constant per resource type the program registers, as Pulumi's URNs and the recorded graph
spell it: the readers of a graph (the plan, the diff, the cost, preflight) name a type by its
constant, never by a string of their own. A test holds every constant to a type some shipped
stack or docs example registers.

gcp and kubernetes tokens are the SDK classes' own (`pulumi_gcp.container.NodePool` registers
`gcp:container/nodePool:NodePool`); a Kueue object is a `CustomResource` whose token is its
apiVersion and kind; a dynamic resource's is `pulumi-python:dynamic/<module>:<name>` from its
class (`QueuedResource(..., module="tpu", name="QueuedResource")`).
"""

from __future__ import annotations

# Compute Engine
NETWORK = "gcp:compute/network:Network"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
ROUTER = "gcp:compute/router:Router"
ROUTER_NAT = "gcp:compute/routerNat:RouterNat"
RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
INSTANCE = "gcp:compute/instance:Instance"
INSTANCE_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
INSTANCE_GROUP_MANAGER = "gcp:compute/instanceGroupManager:InstanceGroupManager"
DISK = "gcp:compute/disk:Disk"
GLOBAL_ADDRESS = "gcp:compute/globalAddress:GlobalAddress"
SERVICE_NETWORKING_CONNECTION = "gcp:servicenetworking/connection:Connection"

# GKE
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"

# Storage, Filestore, monitoring
BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_OBJECT = "gcp:storage/bucketObject:BucketObject"
BUCKET_IAM_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
FILESTORE = "gcp:filestore/instance:Instance"
LUSTRE = "gcp:lustre/instance:Instance"
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
ALERT_POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"
NOTIFICATION_CHANNEL = "gcp:monitoring/notificationChannel:NotificationChannel"

# Project, IAM
SERVICE = "gcp:projects/service:Service"
PROJECT_IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
SERVICE_ACCOUNT = "gcp:serviceaccount/account:Account"
SERVICE_ACCOUNT_IAM_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"
REPOSITORY_IAM_MEMBER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"

# Dynamic providers (components/tpu_vms/provider.py, components/gpu_clusters/provider.py,
# components/slurm/cleanup.py, scripts.py)
QUEUED_RESOURCE = "pulumi-python:dynamic/tpu:QueuedResource"
TPU_STARTUP_WAIT = "pulumi-python:dynamic/tpu:StartupWait"
FLEX_CAPACITY = "pulumi-python:dynamic/compute:FlexCapacity"
GPU_STARTUP_WAIT = "pulumi-python:dynamic/compute:StartupWait"
SLURM_RUNTIME_SCRIPTS = "pulumi-python:dynamic/slurm:RuntimeScripts"
SLURM_TPU_CLEANUP = "pulumi-python:dynamic/slurm:TpuCleanup"
SLURM_COMPUTE_CLEANUP = "pulumi-python:dynamic/slurm:ComputeCleanup"
SLURM_FLEX_CLEANUP = "pulumi-python:dynamic/slurm:FlexCleanup"

# Kubernetes
KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
NAMESPACE = "kubernetes:core/v1:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
KUBERNETES_SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
LIMIT_RANGE = "kubernetes:core/v1:LimitRange"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
COHORT = "kubernetes:kueue.x-k8s.io/v1beta2:Cohort"
RESOURCE_FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
VALIDATING_ADMISSION_POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
VALIDATING_ADMISSION_POLICY_BINDING = (
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
)

# Components the readers look for (components/gke/tpu_provisioner.py)
TPU_PROVISIONER = "ai-infra:gke:TpuProvisioner"

STACK = "pulumi:pulumi:Stack"
"""The root of every URN; not a resource of the program's."""

PROVIDER_PREFIX = "pulumi:providers:"
KUBERNETES_PREFIX = "kubernetes:"
DYNAMIC_PREFIX = "pulumi-python:dynamic"


def short(type_: str) -> str:
    """`gcp:container/nodePool:NodePool` -> `NodePool`, as the plan names a resource."""
    return type_.rsplit(":", 1)[-1]


def is_kubernetes(type_: str) -> bool:
    """A Kubernetes object: it bills nothing and places nothing of its own."""
    return type_.startswith(KUBERNETES_PREFIX)


def is_provider(type_: str) -> bool:
    return type_.startswith(PROVIDER_PREFIX)
