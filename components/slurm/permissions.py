"""The controller's custom role: what Slurm-GCP's scripts call for the nodesets configured,
permission by permission, where Compute Engine's and Cloud TPU's predefined roles grant far
more.
"""

from __future__ import annotations

from components.context import StackContext
from components.slurm.config import SlurmConfig, account_id

ALWAYS_PERMISSIONS = ("compute.instances.list",)
"""slurmsync.py lists the cluster's VMs on every run (util.py `instances`,
instances.aggregatedList), with or without CPU nodesets."""
TPU_PERMISSIONS = (
    "tpu.acceleratorTypes.get",
    "tpu.nodes.create",
    "tpu.nodes.delete",
    "tpu.nodes.get",
    "tpu.nodes.list",
    "tpu.nodes.start",
    "tpu.nodes.stop",
    "tpu.operations.get",
)
"""What tpu.py calls (get_accelerator_type, list/get/create/delete/start/stop_node, and the
operations it waits on), where `roles/tpu.admin` grants all of Cloud TPU."""
CPU_PERMISSIONS = (
    "compute.disks.create",
    "compute.disks.setLabels",
    "compute.globalOperations.get",
    "compute.images.useReadOnly",
    "compute.instanceTemplates.get",
    "compute.instanceTemplates.useReadOnly",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setScheduling",
    "compute.instances.setServiceAccount",
    "compute.instances.setTags",
    "compute.instances.start",
    "compute.machineTypes.get",
    "compute.machineTypes.list",
    "compute.regionOperations.get",
    "compute.resourcePolicies.list",
    "compute.subnetworks.use",
    "compute.zoneOperations.get",
)
"""What resume.py, suspend.py and slurmsync.py call for CPU nodesets (instances.bulkInsert
from the nodeset's template, with its disk, labels, tags, metadata and account;
instances.delete and start; instanceTemplates.get and machineTypes.aggregatedList to size
nodes; resourcePolicies.list; operations they wait on), and using the template's boot image,
which an image in the project (not SchedMD's public one) needs (images.useReadOnly); where
`roles/compute.instanceAdmin.v1` also covers snapshots, instance groups and every other
instance change."""
PUBLIC_IP_PERMISSIONS = ("compute.subnetworks.useExternalIp",)
"""Only when a CPU nodeset gives its nodes external IPs."""
RESERVATION_PERMISSIONS = ("compute.reservations.get", "compute.resourcePolicies.use")
"""A nodeset with a reservation: util.py reads it (reservations.get) and resume.py gives the
nodes the reservation's own placement policies, if it has any."""
PLACEMENT_PERMISSIONS = (
    "compute.resourcePolicies.create",
    "compute.resourcePolicies.delete",
    "compute.resourcePolicies.use",
)
"""Compact placement: resume.py creates a policy per job or chunk (resourcePolicies.insert)
and creates the nodes in it; slurmsync.py deletes those of finished jobs."""
FLEX_PERMISSIONS = (
    "compute.instanceGroupManagers.create",
    "compute.instanceGroupManagers.delete",
    "compute.instanceGroupManagers.get",
    "compute.instanceGroupManagers.list",
    "compute.instanceGroupManagers.update",
)
"""Flex-start: mig_flex.py creates a regional managed instance group per resume, asks it for
the nodes with a resize request (an update of the group), lists its instances, and
deletes them or the group at suspend; slurmsync lists the groups."""


def controller_permissions(config: SlurmConfig) -> list[str]:
    """The controller's custom role, from what the scripts call for the nodesets configured."""
    found = set(ALWAYS_PERMISSIONS)
    if config.tpu_nodesets:
        found |= set(TPU_PERMISSIONS)
    cpu = config.all_cpu_nodesets
    if cpu:
        found |= set(CPU_PERMISSIONS)
    for permissions, needed in (
        (PUBLIC_IP_PERMISSIONS, any(n.enable_public_ips for n in cpu)),
        (RESERVATION_PERMISSIONS, any(n.reservation for n in cpu)),
        (PLACEMENT_PERMISSIONS, any(n.enable_placement for n in cpu)),
        (FLEX_PERMISSIONS, any(n.flex for n in cpu)),
    ):
        if needed:
            found |= set(permissions)
    return sorted(found)


def controller_role_id(ctx: StackContext) -> str:
    """IAM custom role ids take letters, digits, '_' and '.' (3 to 64)."""
    return account_id(ctx, "ctl").replace("-", "_")
