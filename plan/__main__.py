"""`uv run python -m plan <stack>`: print what `pulumi up` would create for a stack, offline.

Accepts a stack name (`dev` reads `Pulumi.dev.yaml`) or a path to a stack file. With
`--base <git-ref>` (or `--base <stack file>`) it prints only what would change since the stack
file at that ref, as `pulumi preview` would; `--json` prints the plan, and that diff, as JSON.
Exits 2 with the validation errors, and nothing else, when a config is invalid.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from components import slurm
from components.gpu_clusters import GpuClusterConfig
from components.tpu_catalog import resolve
from components.tpu_vm_provider import node_names
from plan.diff import GraphDiff, Op, ResourceChange, diff, integral, jsonable, render_value
from plan.engine import (
    Graph,
    Registration,
    list_stacks,
    parse_stack_file,
    read_stack_file,
    run_program,
    stack_file,
)
from stacks.config import NAMESPACE, ConfigError, StackConfig, parse


def _short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1]


def _short_key(key: str) -> str:
    """`ai-infra:tpuSlices[2]` -> `tpuSlices[2]`; other namespaces (`gcp:project`) stay."""
    return key.removeprefix(f"{NAMESPACE}:")


def _details(r: Registration) -> str:
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
    elif t == "gcp:compute/subnetwork:Subnetwork":
        ranges = ", ".join(
            f"{s['rangeName']}={s['ipCidrRange']}" for s in i.get("secondaryIpRanges", [])
        )
        parts.append(f"cidr={i.get('ipCidrRange')} {ranges}")
    elif t == "gcp:compute/firewall:Firewall":
        ports = ",".join(
            f"{a['protocol']}{':' + '/'.join(a['ports']) if a.get('ports') else ''}"
            for a in i.get("allows", [])
        )
        parts.append(f"from={','.join(i.get('sourceRanges', []))} allow={ports}")
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
        if i.get("scheduling", {}).get("provisioningModel") == "SPOT":
            parts.append("spot")
    elif t == "gcp:compute/instanceGroupManager:InstanceGroupManager":
        parts.append(f"name={i.get('name')} vms={i.get('targetSize')} zone={i.get('zone')}")
    elif t == "gcp:filestore/instance:Instance":
        share = i.get("fileShares", {})
        parts.append(f"{i.get('tier')} {share.get('capacityGb')}GiB in {i.get('location')}")
    elif t == "gcp:compute/resourcePolicy:ResourcePolicy" and "groupPlacementPolicy" in i:
        parts.append(f"placement={i['groupPlacementPolicy'].get('collocation')}")
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
            details = _details(r)
        else:
            key = keys.get(r.urn) if r.parent not in urns else None
            details = f"({_short_key(key)})" if key else ""
        lines.append(f"{label}  {details}".rstrip())
        for child in by_parent.get(r.urn, []):
            walk(child, depth + 1)

    for r in graph:
        if r.parent not in urns:
            walk(r, 0)

    lines += ["", "Resources by type:"]
    for type_, count in sorted(Counter(r.type for r in graph.resources_to_apply).items()):
        lines.append(f"  {count:4d}  {type_}")
    lines += ["", "TPU slices:"]
    if not config.tpu_slices:
        lines.append("  none")
    for s in config.tpu_slices:
        shape = s.shape
        lines.append(
            f"  {s.name}: {s.count} x {shape.accelerator} topology {shape.topology}, "
            f"{shape.hosts} x {shape.machine_type} ({shape.chips_per_host} chips each) = "
            f"{shape.chips} chips per slice, {s.chips} chips, {s.provisioning}"
        )
    lines.append(f"  total: {config.tpu_chips} TPU chips")
    lines += ["", "GPU clusters:"]
    lines += [_gpu_cluster(c, config) for c in config.gpu_clusters] or ["  none"]
    if config.slurm is not None:
        lines += ["", "Slurm (TPU nodesets, workers per slice, partitions):"]
        lines += slurm.describe(config.slurm, zone=config.zone)
    lines += ["", "Teams (namespace/queue, nominal quota, Google service account):"]
    lines += _teams(graph) or ["  none"]
    return "\n".join(lines)


def _resource_line(change: ResourceChange, keys: dict[str, str]) -> str:
    r = change.resource
    key = keys.get(r.urn)
    parts = [f"{change.op.symbol} {_short_type(r.type)} {r.name}"]
    if key:
        parts.append(f"({_short_key(key)})")
    if change.op in (Op.CREATE, Op.DELETE):
        parts.append(_details(r))
    return "  ".join(p for p in parts if p)


def render_diff(changes: GraphDiff, keys: dict[str, str], heading: str) -> str:
    """The resources that differ, each with its changed inputs (old → new), then the counts."""
    lines = [heading, ""]
    for change in changes:
        if change.is_component:
            continue
        lines.append(_resource_line(change, keys))
        for c in change.changes:
            forces = "  (forces replacement)" if c.replaces else ""
            lines.append(
                f"    {c.rendered_path}: {render_value(c.old)} → {render_value(c.new)}{forces}"
            )
        if change.protect is not None:
            old, new = change.protect
            lines.append(f"    [protect]: {json.dumps(old)} → {json.dumps(new)}")
    if len(lines) == 2:
        lines.append("No changes.")
    lines += ["", changes.summary()]
    return "\n".join(lines)


def _gpu_cluster(c: GpuClusterConfig, config: StackConfig) -> str:
    buckets = {b.name: b.bucket_name(config.project, config.prefix) for b in config.buckets}
    mounts = [f"gs://{buckets.get(m.bucket, m.bucket)} -> {m.mount_path}" for m in c.gcs_mounts]
    mounts += [f"{s.tier} {s.size_gb}GiB -> {s.mount_path}" for s in c.nfs_shares]
    return (
        f"  {c.name}: {c.instance_count} x {c.machine_type} with {c.gpu_count} x {c.gpu_type} = "
        f"{c.gpus} GPUs in {config.zone_of(c)}, network {c.network} ({c.nics} NIC(s)), "
        f"mounts: {', '.join(mounts) or 'none'}, orchestrator {c.orchestrator}"
        f"{', spot' if c.spot else ''}"
    )


def _teams(graph: Graph) -> list[str]:
    lines = []
    service_accounts = {
        r.inputs["metadata"]["namespace"]: r.inputs["metadata"]
        for r in graph.of_type("kubernetes:core/v1:ServiceAccount")
    }
    queues = graph.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    for queue in sorted(queues, key=lambda q: q.inputs["metadata"]["name"]):
        team = queue.inputs["metadata"]["name"]
        quotas = [
            f"{flavor['name']}={integral(res['nominalQuota'])} {res['name']}"
            for group in queue.inputs["spec"].get("resourceGroups", [])
            for flavor in group["flavors"]
            for res in flavor["resources"]
            if res["name"] not in ("cpu", "memory")
        ]
        ksa = service_accounts.get(team, {})
        gsa = (ksa.get("annotations") or {}).get("iam.gke.io/gcp-service-account")
        lines.append(f"  {team}/{team}: {', '.join(quotas) or 'no accelerator quota'}")
        lines.append(f"    runs as {team}/{ksa.get('name')} -> {gsa}")
    return lines


class PlanError(Exception):
    """A stack or base that cannot be read; the message says which and why."""


def _stack_path(target: str) -> tuple[str, Path]:
    """A stack name or stack file path -> (stack name, stack file)."""
    path = Path(target)
    if path.suffix in (".yaml", ".yml"):
        if not path.exists():
            raise PlanError(f"{target}: no such stack file")
        stack = path.name.split(".")[1] if path.name.startswith("Pulumi.") else path.stem
        return stack, path
    path = stack_file(target)
    if not path.exists():
        raise PlanError(f"{path.name} not found: stacks are {', '.join(list_stacks())}")
    return target, path


def _base_text(base: str, path: Path) -> tuple[str, str]:
    """The stack file as it was: `base` is a stack file path, or a git ref whose version of
    `path` is read with `git show`. Returns (text, where it came from)."""
    as_file = Path(base)
    if as_file.suffix in (".yaml", ".yml") and as_file.is_file():
        return as_file.read_text(), str(as_file)
    if not base or base.startswith("-"):
        # A leading '-' would reach git as an option.
        raise PlanError(f"--base {base!r}: expected a git ref or a stack file path")
    try:
        shown = subprocess.run(
            ["git", "-C", str(path.resolve().parent), "show", f"{base}:./{path.name}"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as error:
        raise PlanError(f"--base {base}: cannot run git: {error}") from error
    if shown.returncode != 0:
        raise PlanError(f"--base {base}: git cannot show {path.name} there: {shown.stderr.strip()}")
    return shown.stdout, f"{base}:{path.name}"


def _build(raw: dict[str, Any], stack: str, which: str) -> tuple[StackConfig, Graph]:
    try:
        config = parse(raw, stack)
    except ConfigError as error:
        raise PlanError(f"{which}:\n{error}" if which else str(error)) from error
    graph = run_program(raw, stack=stack)
    # The mock engine accepts two resources with one URN; `pulumi up` would not.
    seen: set[str] = set()
    twice = sorted({u for u in graph.urns if u in seen or seen.add(u)})
    if twice:
        raise PlanError(
            "the program registers two resources with one URN:\n  " + "\n  ".join(twice)
        )
    return config, graph


def _plan_json(graph: Graph, config: StackConfig, stack: str) -> dict[str, Any]:
    keys = graph.config_keys()
    applied = graph.resources_to_apply
    return {
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
                "details": _details(r) if r.custom or r.remote else "",
                "inputs": jsonable(r.inputs),
            }
            for r in graph
        ],
        "counts": {
            "resources": len(applied),
            "components": len(graph) - len(applied),
            "byType": dict(sorted(Counter(r.type for r in applied).items())),
        },
        "tpuChips": config.tpu_chips,
    }


def _diff_json(changes: GraphDiff, keys: dict[str, str], base: str) -> dict[str, Any]:
    return {
        "base": base,
        "summary": {op.value: count for op, count in changes.counts().items()},
        "resources": [
            {
                "op": change.op.value,
                "urn": change.urn,
                "type": change.resource.type,
                "name": change.resource.name,
                "configKey": keys.get(change.urn),
                "changes": [
                    {
                        "path": c.rendered_path,
                        "old": jsonable(c.old),
                        "new": jsonable(c.new),
                        "replaces": c.replaces,
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


def run(target: str, base: str | None, as_json: bool) -> str:
    """The plan of `target` (a stack name or file), or with `base` what changes since then."""
    stack, path = _stack_path(target)
    if base is None:
        config, graph = _build(read_stack_file(path), stack, "")
        if as_json:
            return json.dumps(_plan_json(graph, config, stack), indent=2)
        return render(graph, config, stack)
    # Read the base first: a bad ref fails before any program runs.
    text, origin = _base_text(base, path)
    config, graph = _build(read_stack_file(path), stack, "")
    _, before = _build(parse_stack_file(text), stack, f"the stack file at {origin} is invalid")
    changes = diff(before, graph)
    # A deleted resource's config key is the one it had before.
    keys = {**before.config_keys(), **graph.config_keys()}
    if as_json:
        document = {**_plan_json(graph, config, stack), "diff": _diff_json(changes, keys, base)}
        return json.dumps(document, indent=2)
    heading = f"Changes to stack '{stack}' ({path.name}) since {origin}:"
    return render_diff(changes, keys, heading)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plan", description=__doc__)
    parser.add_argument(
        "stack",
        nargs="?",
        default="dev",
        help=f"stack name ({', '.join(list_stacks())}) or a stack file path",
    )
    parser.add_argument(
        "--base",
        metavar="REF",
        help="print only what changes since the stack file at this git ref (or this stack file)",
    )
    parser.add_argument("--json", action="store_true", help="print the plan (and diff) as JSON")
    args = parser.parse_args(argv)
    try:
        print(run(args.stack, args.base, args.json))
    except (PlanError, ConfigError) as error:
        print(error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
