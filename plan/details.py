"""The properties a reviewer checks for each kind of resource, on one line of the plan: one
function per resource type (`DETAILS`), a line of Kubernetes facts per kind, and `[protected]`
where Pulumi protects it. The plan's tree, the diff's creates and deletes and `--json` print
them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from catalog.tpu import resolve
from components.tpu_vms import node_names
from graph import types
from graph.model import Registration, integral

Inputs = dict[str, Any]
Detail = Callable[[Inputs, Registration], list[str]]


def _node_pool_size(i: Inputs) -> list[str]:
    parts = []
    if "nodeCount" in i:
        parts.append(f"nodes={i['nodeCount']}")
    autoscaling = i.get("autoscaling")
    if autoscaling:
        low = autoscaling.get("minNodeCount", autoscaling.get("totalMinNodeCount"))
        high = autoscaling.get("maxNodeCount", autoscaling.get("totalMaxNodeCount"))
        parts.append(f"autoscale={low}..{high}")
    return parts


def _node_pool_placement(i: Inputs) -> list[str]:
    placement = i.get("placementPolicy")
    if not placement:
        return []
    parts = [f"placement={placement.get('type')}"]
    if placement.get("tpuTopology"):
        parts.append(f"topology={placement['tpuTopology']}")
    if placement.get("policyName"):
        parts.append(f"policy={placement['policyName']}")
    return parts


def _node_pool_capacity(nc: Inputs) -> list[str]:
    parts = [
        f"gpu={gpu.get('count')}x{gpu.get('type')}" for gpu in nc.get("guestAccelerators") or []
    ]
    if nc.get("spot"):
        parts.append("spot")
    if nc.get("flexStart"):
        parts.append("flex-start")
    reservation = nc.get("reservationAffinity") or {}
    if reservation.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        parts.append(f"reservation={','.join(reservation.get('values', []))}")
    return parts


def _node_pool_upkeep(i: Inputs, nc: Inputs) -> list[str]:
    parts = []
    if i.get("nodeLocations"):
        parts.append(f"zones={','.join(i['nodeLocations'])}")
    held = [
        hold
        for policy in i.get("maintenancePolicies") or []
        for hold in policy.get("exclusionUntilEndOfSupports") or []
        if hold.get("enabled")
    ]
    if held:
        parts.append("upgrades=held-until-end-of-support")
    extra = (i.get("networkConfig") or {}).get("additionalNodeNetworkConfigs") or []
    if extra:
        parts.append(f"extraNics={','.join(str(n.get('network')) for n in extra)}")
    interval = (nc.get("hostMaintenancePolicy") or {}).get("maintenanceInterval")
    if interval:
        parts.append(f"hostMaintenance={interval}")
    return parts


def _node_pool(i: Inputs, r: Registration) -> list[str]:
    nc = i.get("nodeConfig", {})
    parts = [f"machine={nc.get('machineType')}"]
    if nc.get("diskType") or nc.get("diskSizeGb"):
        parts.append(f"disk={nc.get('diskType')}:{nc.get('diskSizeGb')}GB")
    return [
        *parts,
        *_node_pool_size(i),
        *_node_pool_placement(i),
        *_node_pool_capacity(nc),
        *_node_pool_upkeep(i, nc),
    ]


def _cluster(i: Inputs, r: Registration) -> list[str]:
    private = i.get("privateClusterConfig", {})
    return [
        f"location={i.get('location')}",
        f"channel={i.get('releaseChannel', {}).get('channel')}",
        f"privateNodes={private.get('enablePrivateNodes')}",
        f"masterCidr={private.get('masterIpv4CidrBlock')}",
        f"workloadPool={i.get('workloadIdentityConfig', {}).get('workloadPool')}",
        f"deletionProtection={i.get('deletionProtection')}",
    ]


def _network(i: Inputs, r: Registration) -> list[str]:
    parts = [f"name={i.get('name')}"]
    if i.get("networkProfile"):
        parts.append(f"profile={str(i['networkProfile']).rsplit('/', 1)[-1]}")
    if i.get("mtu"):
        parts.append(f"mtu={i['mtu']}")
    return parts


def _subnetwork(i: Inputs, r: Registration) -> list[str]:
    ranges = ", ".join(
        f"{s['rangeName']}={s['ipCidrRange']}" for s in i.get("secondaryIpRanges", [])
    )
    return [f"cidr={i.get('ipCidrRange')} {ranges}"]


def _firewall(i: Inputs, r: Registration) -> list[str]:
    """Who a rule admits (ranges, tags), to which tagged VMs, which ports, allow or deny."""
    egress = i.get("direction") == "EGRESS"
    where = ",".join([*i.get("sourceRanges", []), *(f"tag:{t}" for t in i.get("sourceTags", []))])
    parts = [
        f"to={','.join(map(str, i.get('destinationRanges', [])))}" if egress else f"from={where}"
    ]
    if i.get("targetTags"):
        parts.append(f"on=tag:{','.join(i['targetTags'])}")
    for key, verb in (("allows", "allow"), ("denies", "deny")):
        if i.get(key):
            ports = ",".join(
                f"{a['protocol']}{':' + '/'.join(a['ports']) if a.get('ports') else ''}"
                for a in i[key]
            )
            parts.append(f"{verb}={ports}")
    if i.get("priority") is not None:
        parts.append(f"priority={i['priority']}")
    return parts


def _custom_role(i: Inputs, r: Registration) -> list[str]:
    return [f"id={i.get('roleId')} permissions={','.join(i.get('permissions', []))}"]


def _member(i: Inputs, r: Registration) -> list[str]:
    condition = i.get("condition") or {}
    where = f" only: {condition['title']}" if condition.get("title") else ""
    return [f"{i.get('role')} -> {i.get('member')}{where}"]


def _service_account(i: Inputs, r: Registration) -> list[str]:
    return [f"id={i.get('accountId')}"]


def _bucket(i: Inputs, r: Registration) -> list[str]:
    return [
        f"name={i.get('name')}",
        f"location={i.get('location')}",
        f"publicAccessPrevention={i.get('publicAccessPrevention')}",
        f"forceDestroy={i.get('forceDestroy')}",
    ]


def _service(i: Inputs, r: Registration) -> list[str]:
    return [str(i.get("service"))]


def _template(i: Inputs, r: Registration) -> list[str]:
    parts = [f"machine={i.get('machineType')}"]
    parts += [f"gpu={g.get('count')}x{g.get('type')}" for g in i.get("guestAccelerators", [])]
    parts.append(f"nics={len(i.get('networkInterfaces', []))}")
    rdma = sum(1 for n in i.get("networkInterfaces", []) if n.get("nicType") == "MRDMA")
    if rdma:
        parts.append(f"rdma={rdma}")
    model = i.get("scheduling", {}).get("provisioningModel")
    if model == "SPOT":
        parts.append("spot")
    elif model in ("FLEX_START", "RESERVATION_BOUND"):
        parts.append(model.lower().replace("_", "-"))
    affinity = i.get("reservationAffinity") or {}
    if affinity.get("type") == "SPECIFIC_RESERVATION":
        values = affinity.get("specificReservation", {}).get("values", [])
        parts.append(f"reservation={','.join(values)}")
    elif affinity.get("type") == "ANY_RESERVATION":
        parts.append("reservation=any")
    return parts


def _group(i: Inputs, r: Registration) -> list[str]:
    vms = i.get("targetSize", "(resize requests)")
    parts = [f"name={i.get('name')} vms={vms} zone={i.get('zone')}"]
    if i.get("waitForInstances"):
        timeout = r.custom_timeouts.get("create", "default")
        parts.append(f"waits={i.get('waitForInstancesStatus')}:{timeout}")
    return parts


def _flex_capacity(i: Inputs, r: Registration) -> list[str]:
    hours = int(i.get("runSeconds", 0)) // 3600
    return [
        f"group={i.get('group')} size={i.get('size')} (resize requests for what it lacks, "
        f"{hours}h runs)"
    ]


def _gpu_startup_wait(i: Inputs, r: Registration) -> list[str]:
    minutes = int(i.get("timeoutSeconds", 0)) // 60
    return [
        f"group={i.get('group')} waits {minutes}m for {i.get('size')} VM(s) to report "
        "their startup done"
    ]


def _tpu_startup_wait(i: Inputs, r: Registration) -> list[str]:
    minutes = int(i.get("timeoutSeconds", 0)) // 60
    workers = len(i.get("nodes") or []) * int(i.get("workers", 0))
    return [f"waits {minutes}m for {workers} TPU worker(s) to report their startup done"]


def _dashboard(i: Inputs, r: Registration) -> list[str]:
    layout = json.loads(i.get("dashboardJson", "{}"))
    tiles = layout.get("mosaicLayout", {}).get("tiles", [])
    return [f"{layout.get('displayName')!r} charts={len(tiles)}"]


def _filestore(i: Inputs, r: Registration) -> list[str]:
    share = i.get("fileShares", {})
    return [f"{i.get('tier')} {share.get('capacityGb')}GiB in {i.get('location')}"]


def _resource_policy(i: Inputs, r: Registration) -> list[str]:
    if "groupPlacementPolicy" in i:
        group = i["groupPlacementPolicy"]
        parts = [f"placement={group.get('collocation')}"]
        if group.get("maxDistance"):
            parts.append(f"maxDistance={group['maxDistance']}")
        return parts
    policy = i.get("workloadPolicy", {})
    parts = [f"workload={policy.get('type')}"]
    # A4X's carries its NVLink topology; A3/A4's may carry a strict placement boundary.
    for key in ("acceleratorTopology", "maxTopologyDistance"):
        if policy.get(key):
            parts.append(f"{key}={policy[key]}")
    return parts


def _queued_resource(i: Inputs, r: Registration) -> list[str]:
    shape = resolve(i["acceleratorType"])
    nodes = node_names(i["nodePrefix"], i["nodeCount"])
    return [
        f"id={i['queuedResourceId']} {i['nodeCount']} x {shape.accelerator}",
        f"slices={','.join(nodes)}",
        f"chips={shape.chips * i['nodeCount']}",
        f"capacity={i['capacity']}",
        *([f"reservation={i['reservationName']}"] if i["reservationName"] else []),
        f"runtime={i['runtimeVersion']} zone={i['zone']} publicIps={i['enableExternalIps']}",
    ]


DETAILS: dict[str, Detail] = {
    types.NODE_POOL: _node_pool,
    types.CLUSTER: _cluster,
    types.NETWORK: _network,
    types.SUBNETWORK: _subnetwork,
    types.FIREWALL: _firewall,
    types.CUSTOM_ROLE: _custom_role,
    types.PROJECT_IAM_MEMBER: _member,
    types.SERVICE_ACCOUNT_IAM_MEMBER: _member,
    types.BUCKET_IAM_MEMBER: _member,
    types.SERVICE_ACCOUNT: _service_account,
    types.BUCKET: _bucket,
    types.SERVICE: _service,
    types.INSTANCE_TEMPLATE: _template,
    types.INSTANCE_GROUP_MANAGER: _group,
    types.FLEX_CAPACITY: _flex_capacity,
    types.GPU_STARTUP_WAIT: _gpu_startup_wait,
    types.TPU_STARTUP_WAIT: _tpu_startup_wait,
    types.DASHBOARD: _dashboard,
    types.FILESTORE: _filestore,
    types.RESOURCE_POLICY: _resource_policy,
    types.QUEUED_RESOURCE: _queued_resource,
}
"""Resource type -> what the plan shows of it; a type not here shows its `name`."""


def _kubernetes(type_: str, inputs: Inputs) -> list[str]:
    meta = inputs.get("metadata") or {}
    name = meta.get("name") or inputs.get("name")
    namespace = meta.get("namespace") or inputs.get("namespace")
    parts = [f"{namespace}/{name}" if namespace else str(name)] if name else []
    return parts + _kubernetes_kind(type_, inputs)


def _kubernetes_kind(type_: str, inputs: Inputs) -> list[str]:
    spec = inputs.get("spec") or {}
    if type_ == types.CLUSTER_QUEUE:
        quotas = []
        for group in spec.get("resourceGroups", []):
            for flavor in group.get("flavors", []):
                for resource in flavor.get("resources", []):
                    quotas.append(f"{flavor['name']}:{resource['name']}={resource['nominalQuota']}")
        return [f"cohort={spec.get('cohortName')}", *quotas]
    if type_ == types.LOCAL_QUEUE:
        return [f"clusterQueue={spec.get('clusterQueue')}"]
    if type_ == types.HELM_RELEASE:
        return [f"chart={inputs.get('chart')}@{inputs.get('version')}"]
    if type_ == types.CONFIG_GROUP:
        return [", ".join(f"{o['kind']}/{o['metadata']['name']}" for o in inputs.get("objs", []))]
    if type_ == types.DEPLOYMENT:
        pod = ((spec.get("template") or {}).get("spec")) or {}
        images = [c.get("image", "") for c in pod.get("containers", [])]
        return [f"image={i}" + ("" if "@sha256:" in i else " (mutable tag)") for i in images]
    if type_ == types.CONFIG_MAP and "GCP_ZONE" in (inputs.get("data") or {}):
        data = inputs["data"]
        return [
            f"zone={data['GCP_ZONE']}",
            f"nodeServiceAccount={data['GCP_NODE_SERVICE_ACCOUNT']}",
        ]
    if type_ == types.KUBERNETES_SERVICE_ACCOUNT:
        annotations = (inputs.get("metadata") or {}).get("annotations") or {}
        return [f"gsa={annotations.get('iam.gke.io/gcp-service-account')}"]
    return []


def details(r: Registration) -> str:
    """The properties a reviewer checks for this resource, on one line."""
    i = integral(r.inputs)
    detail = DETAILS.get(r.type)
    if types.is_kubernetes(r.type):
        parts = _kubernetes(r.type, i)
    elif detail is not None:
        parts = detail(i, r)
    elif isinstance(i.get("name"), str):
        parts = [f"name={i['name']}"]
    else:
        parts = []
    if r.protect:
        parts.append("[protected]")
    return " ".join(str(p) for p in parts)
