"""How the offline plan reads: the resource tree with the properties a reviewer checks, each
system's own sections (`stacks.environment.describe`), a diff as `pulumi preview` shows it,
and both as JSON for CI bots.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from typing import Any

from components.tpu_catalog import resolve
from components.tpu_vms.provider import node_names
from plan import reachability, summary
from plan.diff import (
    SHOWN_SECRETS,
    Change,
    GraphDiff,
    Op,
    ResourceChange,
    integral,
    is_text_block,
    jsonable,
    kinds,
    render_value,
)
from plan.engine import Graph, Registration
from plan.replacements import Effect, unwrap
from prices import cost_json, cost_section, stack_cost
from stacks import environment
from stacks.config import StackConfig
from stacks.messages import NAMESPACE


def _short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1]


def _short_key(key: str) -> str:
    """`ai-infra:tpuSlices[2]` -> `tpuSlices[2]`; other namespaces (`gcp:project`) stay."""
    return key.removeprefix(f"{NAMESPACE}:")


def details(r: Registration) -> str:
    """The properties a reviewer checks for this kind of resource."""
    i = integral(r.inputs)
    t = r.type
    parts: list[str] = []
    if t == "gcp:container/nodePool:NodePool":
        nc = i.get("nodeConfig", {})
        parts.append(f"machine={nc.get('machineType')}")
        if nc.get("diskType") or nc.get("diskSizeGb"):
            parts.append(f"disk={nc.get('diskType')}:{nc.get('diskSizeGb')}GB")
        if "nodeCount" in i:
            parts.append(f"nodes={i['nodeCount']}")
        autoscaling = i.get("autoscaling")
        if autoscaling:
            low = autoscaling.get("minNodeCount", autoscaling.get("totalMinNodeCount"))
            high = autoscaling.get("maxNodeCount", autoscaling.get("totalMaxNodeCount"))
            parts.append(f"autoscale={low}..{high}")
        placement = i.get("placementPolicy")
        if placement:
            parts.append(f"placement={placement.get('type')}")
            if placement.get("tpuTopology"):
                parts.append(f"topology={placement['tpuTopology']}")
            if placement.get("policyName"):
                parts.append(f"policy={placement['policyName']}")
        for gpu in nc.get("guestAccelerators") or []:
            parts.append(f"gpu={gpu.get('count')}x{gpu.get('type')}")
        if nc.get("spot"):
            parts.append("spot")
        if nc.get("flexStart"):
            parts.append("flex-start")
        reservation = nc.get("reservationAffinity") or {}
        if reservation.get("consumeReservationType") == "SPECIFIC_RESERVATION":
            parts.append(f"reservation={','.join(reservation.get('values', []))}")
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
    elif t == "gcp:container/cluster:Cluster":
        private = i.get("privateClusterConfig", {})
        parts += [
            f"location={i.get('location')}",
            f"channel={i.get('releaseChannel', {}).get('channel')}",
            f"privateNodes={private.get('enablePrivateNodes')}",
            f"masterCidr={private.get('masterIpv4CidrBlock')}",
            f"workloadPool={i.get('workloadIdentityConfig', {}).get('workloadPool')}",
            f"deletionProtection={i.get('deletionProtection')}",
        ]
    elif t == "gcp:compute/network:Network":
        parts.append(f"name={i.get('name')}")
        if i.get("networkProfile"):
            parts.append(f"profile={str(i['networkProfile']).rsplit('/', 1)[-1]}")
        if i.get("mtu"):
            parts.append(f"mtu={i['mtu']}")
    elif t == "gcp:compute/subnetwork:Subnetwork":
        ranges = ", ".join(
            f"{s['rangeName']}={s['ipCidrRange']}" for s in i.get("secondaryIpRanges", [])
        )
        parts.append(f"cidr={i.get('ipCidrRange')} {ranges}")
    elif t == "gcp:compute/firewall:Firewall":
        parts += _firewall_details(i)
    elif t == "gcp:projects/iAMCustomRole:IAMCustomRole":
        parts.append(f"id={i.get('roleId')} permissions={','.join(i.get('permissions', []))}")
    elif t.endswith("IAMMember"):
        parts.append(f"{i.get('role')} -> {i.get('member')}")
    elif t == "gcp:serviceaccount/account:Account":
        parts.append(f"id={i.get('accountId')}")
    elif t == "gcp:storage/bucket:Bucket":
        parts += [
            f"name={i.get('name')}",
            f"location={i.get('location')}",
            f"publicAccessPrevention={i.get('publicAccessPrevention')}",
            f"forceDestroy={i.get('forceDestroy')}",
        ]
    elif t == "gcp:projects/service:Service":
        parts.append(str(i.get("service")))
    elif t == "gcp:compute/instanceTemplate:InstanceTemplate":
        parts.append(f"machine={i.get('machineType')}")
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
    elif t == "gcp:compute/instanceGroupManager:InstanceGroupManager":
        vms = i.get("targetSize", "(resize requests)")
        parts.append(f"name={i.get('name')} vms={vms} zone={i.get('zone')}")
        if i.get("waitForInstances"):
            timeout = r.custom_timeouts.get("create", "default")
            parts.append(f"waits={i.get('waitForInstancesStatus')}:{timeout}")
    elif t == "gcp:compute/resizeRequest:ResizeRequest":
        hours = int((i.get("requestedRunDuration") or {}).get("seconds", 0)) // 3600
        parts.append(f"name={i.get('name')} +{i.get('resizeBy')} VMs for {hours}h")
    elif t == "pulumi-python:dynamic/compute:FlexCapacity":
        hours = int(i.get("runSeconds", 0)) // 3600
        parts.append(
            f"group={i.get('group')} size={i.get('size')} (resize requests for what it lacks, "
            f"{hours}h runs)"
        )
    elif t == "pulumi-python:dynamic/tpu:StartupWait":
        minutes = int(i.get("timeoutSeconds", 0)) // 60
        workers = len(i.get("nodes") or []) * int(i.get("workers", 0))
        parts.append(f"waits {minutes}m for {workers} TPU worker(s) to report their startup done")
    elif t == "pulumi-python:dynamic/compute:StartupWait":
        minutes = int(i.get("timeoutSeconds", 0)) // 60
        parts.append(
            f"group={i.get('group')} waits {minutes}m for {i.get('size')} VM(s) to report "
            "their startup done"
        )
    elif t == "gcp:monitoring/dashboard:Dashboard":
        layout = json.loads(i.get("dashboardJson", "{}"))
        tiles = layout.get("mosaicLayout", {}).get("tiles", [])
        parts.append(f"{layout.get('displayName')!r} charts={len(tiles)}")
    elif t == "gcp:filestore/instance:Instance":
        share = i.get("fileShares", {})
        parts.append(f"{i.get('tier')} {share.get('capacityGb')}GiB in {i.get('location')}")
    elif t == "gcp:compute/resourcePolicy:ResourcePolicy" and "groupPlacementPolicy" in i:
        group = i["groupPlacementPolicy"]
        parts.append(f"placement={group.get('collocation')}")
        if group.get("maxDistance"):
            parts.append(f"maxDistance={group['maxDistance']}")
    elif t == "gcp:compute/resourcePolicy:ResourcePolicy":
        policy = i.get("workloadPolicy", {})
        parts.append(f"workload={policy.get('type')} topology={policy.get('acceleratorTopology')}")
    elif t == "pulumi-python:dynamic/tpu:QueuedResource":
        shape = resolve(i["acceleratorType"])
        nodes = node_names(i["nodePrefix"], i["nodeCount"])
        parts += [
            f"id={i['queuedResourceId']} {i['nodeCount']} x {shape.accelerator}",
            f"slices={','.join(nodes)}",
            f"chips={shape.chips * i['nodeCount']}",
            f"capacity={i['capacity']}",
            *([f"reservation={i['reservationName']}"] if i["reservationName"] else []),
            f"runtime={i['runtimeVersion']} zone={i['zone']} publicIps={i['enableExternalIps']}",
        ]
    elif "name" in i and isinstance(i["name"], str):
        parts.append(f"name={i['name']}")
    if t.startswith("kubernetes:"):
        meta = i.get("metadata") or {}
        name = meta.get("name") or i.get("name")
        namespace = meta.get("namespace") or i.get("namespace")
        parts = [f"{namespace}/{name}" if namespace else str(name)] if name else []
        parts += _kubernetes_details(t, i)
    if r.protect:
        parts.append("[protected]")
    return " ".join(str(p) for p in parts)


def _firewall_details(i: dict[str, Any]) -> list[str]:
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


def _kubernetes_details(type_: str, inputs: dict[str, Any]) -> list[str]:
    spec = inputs.get("spec") or {}
    if type_.endswith("ClusterQueue"):
        quotas = []
        for group in spec.get("resourceGroups", []):
            for flavor in group.get("flavors", []):
                for resource in flavor.get("resources", []):
                    quotas.append(f"{flavor['name']}:{resource['name']}={resource['nominalQuota']}")
        return [f"cohort={spec.get('cohortName')}", *quotas]
    if type_.endswith("LocalQueue"):
        return [f"clusterQueue={spec.get('clusterQueue')}"]
    if type_.endswith("helm.sh/v3:Release"):
        return [f"chart={inputs.get('chart')}@{inputs.get('version')}"]
    if type_ == "kubernetes:yaml/v2:ConfigGroup":
        return [", ".join(f"{o['kind']}/{o['metadata']['name']}" for o in inputs.get("objs", []))]
    if type_ == "kubernetes:apps/v1:Deployment":
        pod = ((spec.get("template") or {}).get("spec")) or {}
        images = [c.get("image", "") for c in pod.get("containers", [])]
        return [f"image={i}" + ("" if "@sha256:" in i else " (mutable tag)") for i in images]
    if type_ == "kubernetes:core/v1:ConfigMap" and "GCP_ZONE" in (inputs.get("data") or {}):
        data = inputs["data"]
        return [
            f"zone={data['GCP_ZONE']}",
            f"nodeServiceAccount={data['GCP_NODE_SERVICE_ACCOUNT']}",
        ]
    if type_.endswith("ServiceAccount"):
        annotations = (inputs.get("metadata") or {}).get("annotations") or {}
        return [f"gsa={annotations.get('iam.gke.io/gcp-service-account')}"]
    return []


REACHABILITY = (
    "Reachability (who reaches whom on which ports, from the registered firewall rules and "
    "NetworkPolicies and the rules GKE creates for its nodes)"
)
SCHEMA_VERSION = 2
"""Of `--json`. 2: state-shaped URNs, `summary` (chips by kind, GPUs, nodes, quotas, outputs),
per-change `effect`, and in a diff `deleteBeforeReplace`, `cause`, `refusal` and `notes`."""


def _header(graph: Graph, config: StackConfig, stack: str) -> str:
    resources = len(graph.resources_to_apply)
    return (
        f"Plan for stack '{stack}' (project {config.project}, {config.region}): "
        f"{resources} resources, {len(graph) - resources} components"
    )


def render(graph: Graph, config: StackConfig, stack: str) -> str:
    lines = [_header(graph, config, stack), ""]
    by_parent: dict[str, list[Registration]] = {}
    for r in graph:
        by_parent.setdefault(r.parent, []).append(r)
    urns = set(graph.urns)
    keys = graph.config_keys()

    def walk(r: Registration, depth: int) -> None:
        indent = "  " * depth
        applied = r.custom or r.remote
        label = f"{indent}{'+' if applied else '#'} {_short_type(r.type)} {r.name}"
        if applied:
            shown = details(r)
        else:
            key = keys.get(r.urn) if r.parent not in urns else None
            shown = f"({_short_key(key)})" if key else ""
        lines.append(f"{label}  {shown}".rstrip())
        for child in by_parent.get(r.urn, []):
            walk(child, depth + 1)

    for r in graph:
        if r.parent not in urns:
            walk(r, 0)

    lines += ["", "Resources by type:"]
    for type_, count in sorted(Counter(r.type for r in graph.resources_to_apply).items()):
        lines.append(f"  {count:4d}  {type_}")
    for title, section in environment.describe(config):
        lines += ["", f"{title}:", *section]
    lines += ["", f"{REACHABILITY}:", *reachability.lines(graph)]
    lines += summary.render(summary.summarize(graph))
    lines += ["", *cost_section(stack_cost(config, graph))]
    return "\n".join(lines)


def label(c: Change, r: Registration) -> str:
    """How a reviewer names a changed input: a Kueue quota by its flavor and resource
    (`quota v5p-32 google.com/tpu`), not `spec.resourceGroups[1].flavors[0]...`."""
    p = c.path
    quota = (
        len(p) == 8
        and p[:2] == ("spec", "resourceGroups")
        and p[3] == "flavors"
        and p[5] == "resources"
        and p[7] == "nominalQuota"
    )
    if quota and r.type.rsplit(":", 1)[-1] in ("ClusterQueue", "Cohort"):
        groups = unwrap(r.inputs).get("spec", {}).get("resourceGroups", [])
        try:
            flavor = groups[p[2]]["flavors"][p[4]]
            return f"quota {flavor['name']} {flavor['resources'][p[6]]['name']}"
        except (IndexError, KeyError, TypeError):
            return c.rendered_path
    return c.rendered_path


def _change_lines(c: Change, r: Registration) -> list[str]:
    if is_text_block(c):
        old = c.old if isinstance(c.old, str) else ""
        new = c.new if isinstance(c.new, str) else ""
        body = difflib.unified_diff(
            old.splitlines(), new.splitlines(), "before", "after", lineterm="", n=2
        )
        suffix = "  (forces replacement)" if c.replaces else ""
        return [f"    {label(c, r)}: text{suffix}", *(f"      {line}" for line in body)]
    if c.replaces:
        suffix = "  (forces replacement)"
    elif c.effect is Effect.NO_OP:
        suffix = "  (not applied)"
    elif c.note:
        suffix = f"  ({c.note})"
    else:
        suffix = ""
    return [f"    {label(c, r)}: {render_value(c.old)} → {render_value(c.new)}{suffix}"]


def _resource_line(change: ResourceChange, keys: dict[str, str]) -> str:
    r = change.resource
    key = keys.get(r.urn)
    parts = [f"{change.op.symbol} {_short_type(r.type)} {r.name}"]
    if key:
        parts.append(f"({_short_key(key)})")
    if change.op in (Op.CREATE, Op.DELETE):
        parts.append(details(r))
    if change.op is Op.REPLACE and change.delete_before_replace:
        parts.append("[deleted before its replacement is created]")
    return "  ".join(p for p in parts if p)


_GONE_WITH = {
    "gcp:container/cluster:Cluster": "GKE deletes the cluster's node pools and every workload "
    "on it with the old cluster",
    "pulumi-python:dynamic/tpu:QueuedResource": "its TPU VMs are deleted with it (force)",
}
"""What the cloud deletes with a resource, beyond what the graph shows."""


def _resource_lines(change: ResourceChange, keys: dict[str, str], diff: GraphDiff) -> list[str]:
    lines = [_resource_line(change, keys)]
    if change.cause:
        cause = change.cause.rsplit("::", 1)[-1]
        lines.append(f"    replaced with {cause}: {change.cause_note}")
    for c in change.changes:
        lines += _change_lines(c, change.resource)
    if change.protect is not None:
        old, new = change.protect
        lines.append(f"    [protect]: {json.dumps(old)} → {json.dumps(new)}")
    if any(c.effect is Effect.NO_OP for c in change.changes):
        note = next(c.note for c in change.changes if c.effect is Effect.NO_OP)
        lines.append(f"    ! not applied: {note}")
    for note in change.notes:
        if not note.startswith("nothing is applied"):
            lines.append(f"    ! {note}")
    if change.op is Op.REPLACE and not change.cause:
        radius = diff.blast_radius(change.urn)
        gone = _GONE_WITH.get(change.resource.type)
        if radius or gone:
            what = f"{len(radius)} more replaced with it ({kinds(radius)})" if radius else ""
            lines.append("    blast radius: " + "; ".join(p for p in (what, gone) if p))
    if change.op is Op.DELETE and change.resource.type in _GONE_WITH:
        lines.append(f"    ! {_GONE_WITH[change.resource.type]}")
    if change.refusal:
        lines.append(f"    ✗ {change.refusal}")
    return lines


def render_diff(
    changes: GraphDiff,
    keys: dict[str, str],
    heading: str,
    numbers: list[str] | None = None,
) -> str:
    """The resources that differ, each with its changed inputs (old → new), what `pulumi up`
    would refuse, how the numbers move, then the counts."""
    lines = [heading, ""]
    for change in changes:
        if change.is_component:
            continue
        lines += _resource_lines(change, keys, changes)
    if len(lines) == 2:
        lines.append("No changes.")
    if numbers:
        lines += ["", "Numbers (before → after):", *numbers]
    lines += ["", changes.summary()]
    refused = [r for r in changes.refused if not r.is_component]
    if refused:
        lines.append(
            f"`pulumi up` will refuse {len(refused)} of these (protected resources): "
            "see the ✗ lines"
        )
    return "\n".join(lines)


def shown_inputs(r: Registration) -> dict[str, Any]:
    """A resource's inputs with the ones its SDK marks secret whatever they hold, and the
    program renders from plain config, in the clear (diff.SHOWN_SECRETS)."""
    shown = SHOWN_SECRETS.get(r.type, ())
    return {k: unwrap(v) if k in shown else v for k, v in r.inputs.items()}


def plan_json(graph: Graph, config: StackConfig, stack: str) -> dict[str, Any]:
    keys = graph.config_keys()
    applied = graph.resources_to_apply
    numbers = summary.summarize(graph)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "stack": stack,
        "project": config.project,
        "region": config.region,
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent or None,
                "component": not (r.custom or r.remote),
                "configKey": keys.get(r.urn),
                "protect": r.protect,
                "details": details(r) if r.custom or r.remote else "",
                "inputs": jsonable(shown_inputs(r)),
            }
            for r in graph
        ],
        "counts": {
            "resources": len(applied),
            "components": len(graph) - len(applied),
            "byType": dict(sorted(Counter(r.type for r in applied).items())),
        },
        "tpuChips": numbers.chips,
        "summary": numbers.to_json(),
        "cost": cost_json(stack_cost(config, graph)),
        "reachability": reachability.as_json(graph),
    }


def diff_json(
    changes: GraphDiff, keys: dict[str, str], base: str, before: summary.Summary | None = None
) -> dict[str, Any]:
    return {
        "base": base,
        "summary": {op.value: count for op, count in changes.counts().items()},
        "refused": len([r for r in changes.refused if not r.is_component]),
        "before": before.to_json() if before is not None else None,
        "resources": [
            {
                "op": change.op.value,
                "urn": change.urn,
                "type": change.resource.type,
                "name": change.resource.name,
                "configKey": keys.get(change.urn),
                "deleteBeforeReplace": change.delete_before_replace,
                "cause": change.cause or None,
                "refusal": change.refusal or None,
                "notes": list(change.notes),
                "blastRadius": [r.urn for r in changes.blast_radius(change.urn)],
                "changes": [
                    {
                        "path": c.rendered_path,
                        "label": label(c, change.resource),
                        "old": jsonable(c.old),
                        "new": jsonable(c.new),
                        "replaces": c.replaces,
                        "effect": c.effect.value,
                        "note": c.note or None,
                    }
                    for c in change.changes
                ],
                "protect": (
                    {"old": change.protect[0], "new": change.protect[1]}
                    if change.protect is not None
                    else None
                ),
            }
            for change in changes
            if not change.is_component
        ],
    }
