"""`uv run python -m plan <stack>`: print what `pulumi up` would create for a stack, offline.

Accepts a stack name (`dev` reads `Pulumi.dev.yaml`) or a path to a stack file. Exits 2 with
the validation errors, and nothing else, when the config is invalid.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from components import slurm
from plan.engine import (
    Graph,
    Registration,
    list_stacks,
    load_stack_config,
    read_stack_file,
    run_program,
)
from stacks.config import ConfigError, StackConfig, parse


def _short_type(type_: str) -> str:
    return type_.rsplit(":", 1)[-1]


def _integral(value: Any) -> Any:
    """The mock engine hands numbers back as floats; show whole numbers as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _details(r: Registration) -> str:
    """The properties a reviewer checks for this kind of resource."""
    i = _integral(r.inputs)
    t = r.type
    parts: list[str] = []
    if t == "gcp:container/nodePool:NodePool":
        nc = i.get("nodeConfig", {})
        parts.append(f"machine={nc.get('machineType')}")
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
    elif t == "gcp:compute/resourcePolicy:ResourcePolicy":
        policy = i.get("workloadPolicy", {})
        parts.append(f"workload={policy.get('type')} topology={policy.get('acceleratorTopology')}")
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
    if type_.endswith("ServiceAccount"):
        annotations = (inputs.get("metadata") or {}).get("annotations") or {}
        return [f"gsa={annotations.get('iam.gke.io/gcp-service-account')}"]
    return []


def render(graph: Graph, config: StackConfig, stack: str) -> str:
    lines = [
        f"Plan for stack '{stack}' (project {config.project}, {config.region}): "
        f"{len(graph)} resources",
        "",
    ]
    by_parent: dict[str, list[Registration]] = {}
    for r in graph:
        by_parent.setdefault(r.parent, []).append(r)
    urns = set(graph.urns)

    def walk(r: Registration, depth: int) -> None:
        indent = "  " * depth
        applied = r.custom or r.remote
        label = f"{indent}{'+' if applied else '#'} {_short_type(r.type)} {r.name}"
        details = _details(r) if applied else ""
        lines.append(f"{label}  {details}".rstrip())
        for child in sorted(by_parent.get(r.urn, []), key=lambda c: (c.custom, c.type, c.name)):
            walk(child, depth + 1)

    for r in sorted(graph, key=lambda c: c.name):
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
    if config.slurm is not None:
        lines += ["", "Slurm (TPU nodesets, workers per slice, partitions):"]
        lines += slurm.describe(config.slurm, zone=config.zone)
    lines += ["", "Teams (namespace/queue, nominal quota, Google service account):"]
    lines += _teams(graph) or ["  none"]
    return "\n".join(lines)


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
            f"{flavor['name']}={_integral(res['nominalQuota'])} {res['name']}"
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


def _read_config(target: str) -> tuple[str, dict[str, Any]]:
    path = Path(target)
    if path.suffix in (".yaml", ".yml"):
        if not path.exists():
            raise FileNotFoundError(f"{target}: no such stack file")
        stack = path.name.split(".")[1] if path.name.startswith("Pulumi.") else path.stem
        return stack, read_stack_file(path)
    return target, load_stack_config(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plan", description=__doc__)
    parser.add_argument(
        "stack",
        nargs="?",
        default="dev",
        help=f"stack name ({', '.join(list_stacks())}) or a stack file path",
    )
    args = parser.parse_args(argv)
    try:
        stack, raw = _read_config(args.stack)
        config = parse(raw, stack)
    except (FileNotFoundError, ConfigError) as error:
        print(error, file=sys.stderr)
        return 2
    graph = run_program(raw, stack=stack)
    print(render(graph, config, stack))
    return 0


if __name__ == "__main__":
    sys.exit(main())
