"""The GKE training environment: the private cluster and its CPU pool, TPU slice and GPU node
pools, workload identities, JobSet and Kueue with queues derived from the slices, teams, and
the TPU provisioner. This face declares the two registry entries (`SYSTEM`, `PROVISIONER`) and
what other packages may use; the code is in the modules named for what they do.
"""

from components.gke import system
from components.gke.admission import SYSTEM_TAINT, Refusal, refusals
from components.gke.checks import (
    countable,
    max_nodes,
    namespace_owner,
    node_account_problems,
    problems,
    version_at_least,
    warnings,
)
from components.gke.config import (
    PROVISIONER_NAMESPACE,
    PROVISIONER_SOURCE,
    ClusterConfig,
    GkeConfig,
    GpuPoolConfig,
    KueueConfig,
    TeamConfig,
    TpuProvisionerConfig,
    TpuSliceConfig,
    WorkloadIdentityConfig,
)
from components.gke.environment import GkeEnvironment, build
from components.gke.gpu_direct import TRANSPORTS
from components.gke.kueue import DEFAULT_LOCAL_QUEUE, PROVISIONED_QUEUE_SUFFIX, provisioned_queue
from components.gke.quota import (
    GIB,
    Flavor,
    NodeShape,
    allocate,
    gpu_node,
    shape_flavor_name,
    tpu_flavor_name,
    tpu_node,
)
from components.gke.sections import describe
from components.gke.system import account_claims, kubernetes_account_claims
from components.system import Stage, Step, System

SYSTEM = System(
    name="gke",
    title="GKE",
    keys=("cluster", "tpuSlices", "gpuPools", "workloadIdentities", "kueue", "teams"),
    problems=system.problems,
    warnings=system.warnings,
    claims=system.claims,
    services=system.services,
    builds=(Step(Stage.CLUSTER, "gke", system.build),),
    describe=system.sections,
    outputs=system.outputs,
    tpu_chips=system.tpu_chips,
    vms_in_vpc=system.vms_in_vpc,
)
"""Built, checked and described with the TPU provisioner, which runs on its cluster."""

PROVISIONER = System(
    name="tpu-provisioner",
    title="TPU provisioner",
    keys=("tpuProvisioner",),
    claims=system.provisioner_claims,
    tpu_chips=system.provisioner_chips,
    vms_in_vpc=system.provisioner_vms,
)
"""GKE's open-source controller that creates slice node pools per pending JobSet: its own
cost, chips, tags and VMs; GKE's entry builds, checks and describes it."""

__all__ = [
    "DEFAULT_LOCAL_QUEUE",
    "GIB",
    "PROVISIONED_QUEUE_SUFFIX",
    "PROVISIONER",
    "PROVISIONER_NAMESPACE",
    "PROVISIONER_SOURCE",
    "SYSTEM",
    "SYSTEM_TAINT",
    "TRANSPORTS",
    "ClusterConfig",
    "Flavor",
    "GkeConfig",
    "GkeEnvironment",
    "GpuPoolConfig",
    "KueueConfig",
    "NodeShape",
    "Refusal",
    "TeamConfig",
    "TpuProvisionerConfig",
    "TpuSliceConfig",
    "WorkloadIdentityConfig",
    "account_claims",
    "allocate",
    "build",
    "countable",
    "describe",
    "gpu_node",
    "kubernetes_account_claims",
    "max_nodes",
    "namespace_owner",
    "node_account_problems",
    "problems",
    "provisioned_queue",
    "refusals",
    "shape_flavor_name",
    "tpu_flavor_name",
    "tpu_node",
    "version_at_least",
    "warnings",
]
