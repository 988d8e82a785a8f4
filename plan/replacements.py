"""Which input changes make a provider replace a resource instead of updating it in place.

One table of upstream facts, limited to the inputs this program sets; a type or path that is not
listed is updated in place. A path names a field (list indexes dropped); `.*` also covers every
key or element under it. A change to a listed path replaces; so does adding or removing a listed
block or list element.

Sources:
- gcp: `ForceNew: true` in terraform-provider-google v7.45.0 (pulumi-gcp bridges the same
  generated schemas), paths in Pulumi's camelCase: google/services/container/
  resource_container_cluster.go, resource_container_node_pool.go, node_config.go
  (schemaNodeConfig); google/services/compute/resource_compute_{network,subnetwork,router,
  router_nat,firewall,resource_policy}.go; google/services/resourcemanager/
  resource_google_service_account.go, resource_google_project_service.go, iam_project.go,
  iam_service_account.go; google/tpgiamresource/resource_iam_member.go (role, member);
  google/services/storage/resource_storage_bucket.go, iam_storage_bucket.go,
  resource_storage_bucket_object.go;
  google/services/compute/resource_compute_instance.go (boot_disk initialize_params),
  resource_compute_instance_template.go (every field ForceNew);
  google/services/filestore/resource_filestore_instance.go.
  A ForceNew map or list replaces on any key or element (terraform-plugin-sdk schemaMap.diff);
  a ForceNew block on being added or removed, and through those of its fields that are ForceNew.
- kubernetes: pulumi-kubernetes v4.32.0 provider/pkg/provider/diff.go (`metadata.name` and
  `metadata.namespace` of every object, `roleRef` of RBAC bindings) and helm_release.go (a
  Release's `name` and `namespace`).
"""

from __future__ import annotations

from collections.abc import Sequence

_SHIELDED = (
    "nodeConfig.shieldedInstanceConfig",
    "nodeConfig.shieldedInstanceConfig.enableSecureBoot",
    "nodeConfig.shieldedInstanceConfig.enableIntegrityMonitoring",
)
_IAM_MEMBER = ("role", "member")
_KUBERNETES_OBJECT = ("metadata.name", "metadata.namespace")

REPLACE_ON_CHANGES: dict[str, tuple[str, ...]] = {
    "gcp:container/cluster:Cluster": (
        "name",
        "location",
        "project",
        "network",
        "subnetwork",
        "initialNodeCount",
        "networkingMode",
        "datapathProvider",
        "defaultMaxPodsPerNode",
        "ipAllocationPolicy",
        "ipAllocationPolicy.clusterSecondaryRangeName",
        "ipAllocationPolicy.servicesSecondaryRangeName",
        "privateClusterConfig.masterIpv4CidrBlock",
        "nodeConfig",
        "nodeConfig.oauthScopes",
        "nodeConfig.serviceAccount",
        *_SHIELDED,
    ),
    "gcp:container/nodePool:NodePool": (
        "name",
        "location",
        "project",
        "cluster",
        "initialNodeCount",
        "placementPolicy",
        "placementPolicy.policyName",
        "queuedProvisioning",
        "queuedProvisioning.enabled",
        "nodeConfig",
        "nodeConfig.guestAccelerators",
        "nodeConfig.guestAccelerators.count",
        "nodeConfig.guestAccelerators.type",
        "nodeConfig.guestAccelerators.gpuDriverInstallationConfig",
        "nodeConfig.guestAccelerators.gpuDriverInstallationConfig.gpuDriverVersion",
        "nodeConfig.metadata.*",
        "nodeConfig.oauthScopes",
        "nodeConfig.reservationAffinity",
        "nodeConfig.reservationAffinity.consumeReservationType",
        "nodeConfig.reservationAffinity.key",
        "nodeConfig.reservationAffinity.values",
        "nodeConfig.spot",
        "nodeConfig.flexStart",
        "nodeConfig.serviceAccount",
        "nodeConfig.hostMaintenancePolicy",
        "nodeConfig.hostMaintenancePolicy.maintenanceInterval",
        # The program sets only additionalNodeNetworkConfigs (ForceNew) in a pool's
        # networkConfig, so adding or removing the block replaces the pool too.
        "networkConfig",
        "networkConfig.additionalNodeNetworkConfigs",
        "networkConfig.additionalNodeNetworkConfigs.network",
        "networkConfig.additionalNodeNetworkConfigs.subnetwork",
        *_SHIELDED,
    ),
    # `mtu` updates in place (not ForceNew); running VMs keep the old MTU until they restart,
    # which the diff adds as a notice (stacks.environment.diff_notices).
    "gcp:compute/network:Network": ("name", "project", "autoCreateSubnetworks", "networkProfile"),
    "gcp:compute/subnetwork:Subnetwork": ("name", "project", "network", "region"),
    "gcp:compute/router:Router": ("name", "project", "network", "region"),
    "gcp:compute/routerNat:RouterNat": ("name", "project", "router", "region"),
    "gcp:compute/firewall:Firewall": ("name", "project", "direction"),
    "gcp:compute/resourcePolicy:ResourcePolicy": (
        "project",
        "region",
        "workloadPolicy.type",
        "workloadPolicy.acceleratorTopology",
    ),
    "gcp:compute/instance:Instance": (
        "name",
        "zone",
        "project",
        "bootDisk.initializeParams",
        "bootDisk.initializeParams.image",
        "bootDisk.initializeParams.size",
        "bootDisk.initializeParams.type",
    ),
    # Instance templates are immutable: every input but labels replaces (a new name_prefix name).
    "gcp:compute/instanceTemplate:InstanceTemplate": (
        "advancedMachineFeatures.*",
        "disks.*",
        "guestAccelerators.*",
        "machineType",
        "metadata.*",
        "namePrefix",
        "networkInterfaces.*",
        "project",
        "reservationAffinity.*",
        "resourcePolicies",
        "scheduling.*",
        "serviceAccount.*",
        "shieldedInstanceConfig.*",
        "tags",
    ),
    "gcp:compute/instanceGroupManager:InstanceGroupManager": (
        "baseInstanceName",
        "name",
        "project",
        "zone",
    ),
    "gcp:compute/resizeRequest:ResizeRequest": (
        "description",
        "instanceGroupManager",
        "name",
        "project",
        "requestedRunDuration.*",
        "resizeBy",
        "zone",
    ),
    "gcp:filestore/instance:Instance": (
        "location",
        "name",
        "networks.*",
        "project",
        "tier",
        "fileShares.name",
    ),
    "gcp:projects/iAMCustomRole:IAMCustomRole": ("project", "roleId"),
    "gcp:monitoring/dashboard:Dashboard": ("project",),
    "gcp:serviceaccount/account:Account": ("project", "accountId"),
    "gcp:serviceaccount/iAMMember:IAMMember": ("serviceAccountId", *_IAM_MEMBER),
    "gcp:projects/iAMMember:IAMMember": ("project", *_IAM_MEMBER),
    "gcp:projects/service:Service": ("project", "service"),
    "gcp:storage/bucket:Bucket": (
        "name",
        "location",
        "project",
        "hierarchicalNamespace",
        "hierarchicalNamespace.enabled",
    ),
    "gcp:storage/bucketIAMMember:BucketIAMMember": ("bucket", *_IAM_MEMBER),
    "gcp:storage/bucketObject:BucketObject": ("name", "bucket", "content"),
    "kubernetes:helm.sh/v3:Release": ("name", "namespace"),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": (
        *_KUBERNETES_OBJECT,
        "roleRef.*",
    ),
}
"""Type token -> the input paths whose change replaces the resource."""

_NOT_OBJECTS = ("kubernetes:helm.sh/", "kubernetes:yaml/")
"""Kubernetes types that are not one object: a Helm release, a group of manifests."""


def replace_paths(type_: str) -> tuple[str, ...]:
    if type_ in REPLACE_ON_CHANGES:
        return REPLACE_ON_CHANGES[type_]
    if type_.startswith("kubernetes:") and not type_.startswith(_NOT_OBJECTS):
        return _KUBERNETES_OBJECT
    return ()


def replaces(type_: str, path: Sequence[str | int], also: Sequence[str] = ()) -> bool:
    """Whether changing the input at `path` (keys and list indexes) replaces a `type_`; `also`
    holds the resource's own `replace_on_changes` paths (`*` for every input)."""
    if "*" in also:
        return True
    field = tuple(part for part in path if isinstance(part, str))
    for entry in (*replace_paths(type_), *also):
        covers_below = entry.endswith(".*")
        parts = tuple(entry.removesuffix(".*").replace("[*]", "").split("."))
        if field == parts or (covers_below and field[: len(parts)] == parts):
            return True
    return False
