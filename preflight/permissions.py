"""The deploying identity holds what `pulumi up` needs for this plan: the permissions of every
resource type the plan registers, tested on the project with `testIamPermissions`.

The map below holds the create (and read-back) permissions of each type; every name in it is
in a predefined role of darkbitio/gcp-iam-role-permissions @8ab2a6ff (2026-08-22), since one
permission the API does not know fails the whole call with 400. Which companion permissions a
create checks (`*.get`, `networks.updatePolicy`, `subnetworks.use`) comes from the REST
references' IAM sections as summarised by research, not read here.

Some answers on the project can be "no" while `pulumi up` would still succeed, and are warnings:
Kubernetes objects (RBAC in the cluster may grant them), bucket and object permissions (Owner
and Editor reach buckets through legacy bucket roles, not these), and acting as a service
account (often granted on the account, not the project).
"""

from __future__ import annotations

from collections.abc import Iterable

from graph import types
from preflight.live import CannotCheck, InvalidRequest, Live
from preflight.needs import Needs
from preflight.report import Finding, fail, ok, warn

NAME = "permissions"
MEANING = (
    "the deploying identity holds the IAM permissions the plan's resource types need "
    "(testIamPermissions on the project)"
)

_COMPUTE_VM = ("compute.disks.create", "compute.subnetworks.use", "compute.images.useReadOnly")
PERMISSIONS: dict[str, tuple[str, ...]] = {
    types.SERVICE: ("serviceusage.services.enable", "serviceusage.services.get"),
    types.NETWORK: ("compute.networks.create", "compute.networks.get"),
    types.SUBNETWORK: (
        "compute.subnetworks.create",
        "compute.subnetworks.get",
        "compute.networks.updatePolicy",
    ),
    types.ROUTER: ("compute.routers.create", "compute.routers.get"),
    types.ROUTER_NAT: ("compute.routers.update", "compute.routers.get"),
    types.FIREWALL: (
        "compute.firewalls.create",
        "compute.firewalls.get",
        "compute.networks.updatePolicy",
    ),
    types.RESOURCE_POLICY: (
        "compute.resourcePolicies.create",
        "compute.resourcePolicies.get",
    ),
    types.INSTANCE_TEMPLATE: (
        "compute.instanceTemplates.create",
        "compute.instanceTemplates.get",
        "compute.images.useReadOnly",
        "compute.subnetworks.use",
    ),
    types.INSTANCE_GROUP_MANAGER: (
        "compute.instanceGroupManagers.create",
        "compute.instanceGroupManagers.get",
        "compute.instanceTemplates.useReadOnly",
        "compute.instances.create",
        *_COMPUTE_VM,
    ),
    types.INSTANCE: (
        "compute.instances.create",
        "compute.instances.get",
        "compute.instances.setMetadata",
        "compute.instances.setServiceAccount",
        "compute.disks.use",
        *_COMPUTE_VM,
    ),
    types.DISK: ("compute.disks.create", "compute.disks.get"),
    # components/gpu_clusters/provider.py: FlexCapacity reads the group, lists, inserts and
    # cancels its resize requests (Compute API instanceGroupManagerResizeRequests.insert and
    # cancel check compute.instanceGroupManagers.update) and may resize it; StartupWait lists
    # the group's VMs and reads their guest attributes.
    types.FLEX_CAPACITY: (
        "compute.instanceGroupManagers.get",
        "compute.instanceGroupManagers.update",
    ),
    types.GPU_STARTUP_WAIT: (
        "compute.instanceGroupManagers.get",
        "compute.instances.getGuestAttributes",
    ),
    types.DASHBOARD: (
        "monitoring.dashboards.create",
        "monitoring.dashboards.get",
        "monitoring.dashboards.update",
    ),
    types.CLUSTER: (
        "container.clusters.create",
        "container.clusters.get",
        "container.clusters.update",
        "container.operations.get",
    ),
    # GKE authorises node pool calls on the cluster.
    types.NODE_POOL: ("container.clusters.update", "container.operations.get"),
    types.FILESTORE: (
        "file.instances.create",
        "file.instances.get",
        "file.operations.get",
    ),
    # Managed Lustre IAM roles (roles/lustre.admin), read 2026-11.
    types.LUSTRE: (
        "lustre.instances.create",
        "lustre.instances.get",
        "lustre.operations.get",
    ),
    # A private services access allocation is an internal global address, and its peering is
    # Service Networking's (VPC "Configure private services access": required permissions).
    types.GLOBAL_ADDRESS: (
        "compute.globalAddresses.createInternal",
        "compute.globalAddresses.get",
        "compute.networks.use",
    ),
    types.SERVICE_NETWORKING_CONNECTION: ("servicenetworking.services.addPeering",),
    types.BUCKET: (
        "storage.buckets.create",
        "storage.buckets.get",
        "storage.buckets.update",
    ),
    types.BUCKET_OBJECT: (
        "storage.objects.create",
        "storage.objects.get",
        "storage.objects.delete",
    ),
    types.BUCKET_IAM_MEMBER: (
        "storage.buckets.getIamPolicy",
        "storage.buckets.setIamPolicy",
    ),
    types.SERVICE_ACCOUNT: ("iam.serviceAccounts.create", "iam.serviceAccounts.get"),
    types.SERVICE_ACCOUNT_IAM_MEMBER: (
        "iam.serviceAccounts.getIamPolicy",
        "iam.serviceAccounts.setIamPolicy",
    ),
    types.PROJECT_IAM_MEMBER: (
        "resourcemanager.projects.getIamPolicy",
        "resourcemanager.projects.setIamPolicy",
    ),
    # Per-repository image reads of the nodes' accounts (components/gke/cluster.py); asked on
    # the stack's project, where a repository of another project holds its own policy.
    types.REPOSITORY_IAM_MEMBER: (
        "artifactregistry.repositories.getIamPolicy",
        "artifactregistry.repositories.setIamPolicy",
    ),
    # The provider undeletes a custom role of the same id instead of failing on it
    # (terraform-provider-google resource_google_project_iam_custom_role.go).
    types.CUSTOM_ROLE: (
        "iam.roles.create",
        "iam.roles.get",
        "iam.roles.update",
        "iam.roles.undelete",
    ),
    # No predefined role holds a tpu.queuedResources.* permission; queued resources create
    # nodes, so tpu.nodes.* is the best reading. Labels, metadata, tags and data disks are
    # updated on the nodes in place (UpdateNode).
    types.QUEUED_RESOURCE: (
        "tpu.nodes.create",
        "tpu.nodes.get",
        "tpu.nodes.update",
        "tpu.nodes.delete",
        "tpu.operations.get",
    ),
    # Reads each worker's readiness signal (GetGuestAttributes is read under tpu.nodes.get).
    types.TPU_STARTUP_WAIT: ("tpu.nodes.get",),
    types.SLURM_RUNTIME_SCRIPTS: (
        "storage.objects.create",
        "storage.objects.get",
        "storage.objects.delete",
    ),
    types.SLURM_TPU_CLEANUP: ("tpu.nodes.list", "tpu.nodes.delete"),
    # components/slurm/cleanup.py lists each CPU nodeset's zone and deletes its VMs.
    types.SLURM_COMPUTE_CLEANUP: (
        "compute.instances.list",
        "compute.instances.delete",
    ),
    # ... and each flex-start nodeset's region, deleting the groups its controller made.
    types.SLURM_FLEX_CLEANUP: (
        "compute.instanceGroupManagers.list",
        "compute.instanceGroupManagers.delete",
    ),
    types.KUBERNETES_PROVIDER: ("container.clusters.get",),
    types.NAMESPACE: ("container.namespaces.create",),
    types.KUBERNETES_SERVICE_ACCOUNT: ("container.serviceAccounts.create",),
    types.CONFIG_MAP: ("container.configMaps.create",),
    types.DEPLOYMENT: ("container.deployments.create",),
    types.NETWORK_POLICY: ("container.networkPolicies.create",),
    types.RESOURCE_QUOTA: ("container.resourceQuotas.create",),
    types.LIMIT_RANGE: ("container.limitRanges.create",),
    types.PRIORITY_CLASS: ("container.priorityClasses.create",),
    types.CLUSTER_ROLE: (
        "container.clusterRoles.create",
        "container.clusterRoles.escalate",
    ),
    types.CLUSTER_ROLE_BINDING: (
        "container.clusterRoleBindings.create",
        "container.clusterRoles.bind",
    ),
    types.ROLE: (
        "container.roles.create",
        "container.roles.escalate",
    ),
    types.ROLE_BINDING: (
        "container.roleBindings.create",
        "container.roles.bind",
        "container.clusterRoles.bind",
    ),
    # Kueue's and JobSet's charts: CRDs, webhooks, the controller, its service and RBAC.
    types.HELM_RELEASE: (
        "container.customResourceDefinitions.create",
        "container.mutatingWebhookConfigurations.create",
        "container.validatingWebhookConfigurations.create",
        "container.deployments.create",
        "container.services.create",
        "container.secrets.create",
        "container.clusterRoles.create",
        "container.clusterRoles.escalate",
        "container.clusterRoleBindings.create",
        "container.clusterRoles.bind",
    ),
    types.CONFIG_GROUP: ("container.thirdPartyObjects.create",),
    types.VALIDATING_ADMISSION_POLICY: ("container.validatingAdmissionPolicies.create",),
    types.VALIDATING_ADMISSION_POLICY_BINDING: (
        "container.validatingAdmissionPolicyBindings.create",
    ),
}
"""Resource type -> the permissions `pulumi up` uses to create and read it back."""
CUSTOM_RESOURCE = ("container.thirdPartyObjects.create",)
"""Objects of a custom resource definition (`kueue.x-k8s.io`, `jobset.x-k8s.io`,
`networking.gke.io`)."""
ACT_AS = "iam.serviceAccounts.actAs"
LENIENT = frozenset(
    {
        ACT_AS,
        "storage.buckets.get",
        "storage.buckets.update",
        "storage.buckets.getIamPolicy",
        "storage.buckets.setIamPolicy",
        "storage.objects.create",
        "storage.objects.get",
        "storage.objects.delete",
    }
)
"""Permissions whose absence on the project is a warning: the darkbitio dataset shows
`roles/owner` without the storage ones, and actAs is often granted on the account instead."""
ROLES: dict[str, str] = {
    "artifactregistry": "roles/artifactregistry.admin",
    "compute": "roles/compute.admin",
    "container": "roles/container.admin",
    "file": "roles/file.editor",
    "lustre": "roles/lustre.admin",
    "servicenetworking": "roles/servicenetworking.networksAdmin",
    "storage": "roles/storage.admin",
    "tpu": "roles/tpu.admin",
    "serviceusage": "roles/serviceusage.serviceUsageAdmin",
    "iam": "roles/iam.serviceAccountAdmin",
    "iam.roles": "roles/iam.roleAdmin",
    "monitoring": "roles/monitoring.dashboardEditor",
    "resourcemanager": "roles/resourcemanager.projectIamAdmin",
}
"""Service -> a predefined role holding every permission above of that service (checked
against the same dataset)."""


def _permissions_of(type_: str) -> tuple[str, ...] | None:
    if type_ in PERMISSIONS:
        return PERMISSIONS[type_]
    if type_.startswith("kubernetes:"):
        group = type_.split(":")[1].split("/")[0]
        if group.endswith(("x-k8s.io", ".gke.io")):
            return CUSTOM_RESOURCE
    return None


def role_for(permission: str) -> str:
    if permission == ACT_AS:
        return "roles/iam.serviceAccountUser"
    service, resource, _ = permission.split(".", 2)
    return ROLES.get(f"{service}.{resource}", ROLES.get(service, "a role that holds it"))


def required(needs: Needs) -> tuple[dict[str, set[str]], list[str]]:
    """Permission -> the resource types that need it, and the types preflight has no map for."""
    needed: dict[str, set[str]] = {}
    unknown = []
    for type_, _count in needs.types:
        permissions = _permissions_of(type_)
        if permissions is None:
            unknown.append(type_)
            continue
        for permission in permissions:
            needed.setdefault(permission, set()).add(type_)
    if needs.service_accounts:
        needed.setdefault(ACT_AS, set()).add("resources that run as a service account")
    return needed, unknown


def _lenient(permission: str, types: Iterable[str]) -> bool:
    return permission in LENIENT or all(t.startswith("kubernetes:") for t in types)


def judge(needed: dict[str, set[str]], held: set[str]) -> list[Finding]:
    """One finding per role that would grant what is missing."""
    missing = sorted(p for p in needed if p not in held)
    if not missing:
        return [ok(NAME, "the deploying identity", f"holds all {len(needed)} permissions")]
    by_role: dict[tuple[str, bool], list[str]] = {}
    for permission in missing:
        key = (role_for(permission), _lenient(permission, needed[permission]))
        by_role.setdefault(key, []).append(permission)
    findings = []
    for (role, lenient), permissions in sorted(by_role.items()):
        types = sorted({t.rsplit(":", 1)[-1] for p in permissions for t in needed[p]})
        detail = f"lacks {', '.join(permissions)} on the project (for {', '.join(types)})"
        if lenient:
            findings.append(
                warn(
                    NAME,
                    "the deploying identity",
                    detail + "; Kubernetes RBAC, legacy bucket roles or a grant on the service "
                    "account may give it instead",
                    f"if pulumi up is refused, grant {role}",
                )
            )
        else:
            findings.append(fail(NAME, "the deploying identity", detail, f"grant {role}"))
    return findings


def check(needs: Needs, live: Live) -> list[Finding]:
    needed, unknown = required(needs)
    findings = [
        warn(
            NAME,
            type_,
            "preflight does not know which permissions this resource type needs",
            "add it to preflight/permissions.py",
        )
        for type_ in unknown
    ]
    try:
        held = live.granted(needed)
    except InvalidRequest as error:
        return [
            *findings,
            fail(
                NAME,
                "testIamPermissions",
                f"the API refused preflight's permission list ({error})",
                "a permission in preflight/permissions.py is not testable on projects: fix it",
            ),
        ]
    except CannotCheck as error:
        return [*findings, warn(NAME, "the deploying identity", str(error))]
    return [*findings, *judge(needed, held)]
