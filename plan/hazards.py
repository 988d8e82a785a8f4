"""What a change costs beyond the resource itself: data it deletes, capacity that goes away while
it runs, a replacement GCP will not let finish while others still use the old resource, and a
template change that reaches a group's running VMs only when they are recreated.

Pure functions of a resource change and the two graphs; `plan.diff` attaches their findings to
each change, and the text, the markdown summary and the JSON show them. `STATEFUL` is what the
`--fail-on-destructive` flag refuses to replace or delete.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

import yaml

from components.gke import SYSTEM_TAINT
from graph import capacity, types
from graph.model import Graph, Registration, unwrap


class Kind(StrEnum):
    DATA_LOSS = "data-loss"
    AVAILABILITY = "availability"


@dataclass(frozen=True)
class Hazard:
    kind: Kind
    message: str


STATEFUL: frozenset[str] = frozenset(
    {
        types.FILESTORE,
        types.LUSTRE,
        types.DISK,
        types.BUCKET,
        types.CLUSTER,
        types.NAMESPACE,
    }
)
"""Types whose replacement or deletion loses what they hold: files, disk blocks, objects, a
cluster's workloads, a namespace's workloads, secrets and volumes."""

_LOST: dict[str, str] = {
    types.FILESTORE: "every file on the share is lost (Filestore deletes the instance's data "
    "with it): back it up first (gcloud filestore backups create)",
    types.LUSTRE: "every file on the Lustre instance is lost (Managed Lustre deletes its data "
    "with the instance): export what must stay to Cloud Storage first (gcloud lustre instances "
    "export-data)",
    types.DISK: "the disk's data is lost: snapshot it first (gcloud compute snapshots create)",
    types.BUCKET: "the delete fails while it holds any object (Cloud Storage refuses to delete "
    "a non-empty bucket, and forceDestroy is off), so `pulumi up` stops there if it is not "
    "empty: copy what it holds, then empty it",
    types.CLUSTER: "every workload on the cluster, and what its volumes hold, goes with it",
    types.NAMESPACE: "Kubernetes deletes every object in the namespace with it (workloads, "
    "secrets, volume claims); a renamed team's new namespace starts empty",
}

_FORCE_DESTROYED = (
    "forceDestroy is on: every object in the bucket is deleted with it: copy what it holds first"
)

_QUEUES = (types.LOCAL_QUEUE, types.CLUSTER_QUEUE)

IN_USE: dict[str, frozenset[str]] = {
    types.NETWORK: frozenset(
        {
            types.SUBNETWORK,
            types.FIREWALL,
            types.ROUTER,
            types.INSTANCE,
            types.INSTANCE_GROUP_MANAGER,
            types.CLUSTER,
            types.FILESTORE,
            types.QUEUED_RESOURCE,
        }
    ),
    types.SUBNETWORK: frozenset(
        {types.INSTANCE, types.INSTANCE_GROUP_MANAGER, types.CLUSTER, types.QUEUED_RESOURCE}
    ),
    types.INSTANCE_TEMPLATE: frozenset({types.INSTANCE_GROUP_MANAGER}),
    types.DISK: frozenset({types.INSTANCE}),
    types.RESOURCE_POLICY: frozenset(
        {types.INSTANCE, types.INSTANCE_GROUP_MANAGER, types.NODE_POOL}
    ),
}
"""Resource type -> the types whose VMs (or whose own use) keep it from being deleted: Compute
Engine answers `resourceInUseByAnotherResource` ("The subnetwork resource '...' is already
being used by '.../instances/...'", as in hashicorp/terraform#21362). A group's VMs use what
its template names."""


FIXED_IDS: dict[str, str] = {
    # pulumi-gcp resources.go maps no autonamed field for google_lustre_instance (SetAutonaming
    # covers `name` only), so the bridge replaces it create-before-delete.
    types.LUSTRE: "instanceId",
}
"""Resource type -> the input that names it in GCP, for types the bridge replaces
create-before-delete although the program names them: the new one is created under the old
one's id while the old one still exists."""


def collides(resource: Registration, old: Registration) -> str:
    """Why a create-before-delete replace of `resource` cannot complete: its new instance is
    created under the id the old one still holds, and the API answers 409 ALREADY_EXISTS;
    empty when its id changes or its type has none fixed."""
    field = FIXED_IDS.get(resource.type)
    if field is None:
        return ""
    new_id, old_id = unwrap(resource.inputs).get(field), unwrap(old.inputs).get(field)
    if not isinstance(new_id, str) or new_id != old_id:
        return ""
    return (
        f"cannot complete: {types.short(resource.type)} {resource.name} is replaced "
        f"create-before-delete, and its replacement is created under the same {field} "
        f"({new_id!r}) while the old one still holds it: the API answers 409 ALREADY_EXISTS "
        "and `pulumi up` stops with the old one in place. Replace it delete-before-replace "
        "(the resource option deleteBeforeReplace), or give the new one another id"
    )


def _uses(user: Registration, used: str, before: dict[str, Registration]) -> bool:
    """Whether `user` (in the old graph) refers to `used`, itself or through its template."""
    deps = set(user.dependencies) | {u for d in user.property_dependencies.values() for u in d}
    if used in deps:
        return True
    return user.type == types.INSTANCE_GROUP_MANAGER and any(
        used in before[d].dependencies for d in deps if d in before
    )


def blocked(urn: str, before: Graph, replaced: set[str], later: Iterable[capacity.Machines]) -> str:
    """Why deleting the old `urn` first (delete-before-replace) fails while resources this
    run does not replace still use it, and what to do; empty when nothing holds it."""
    old = {r.urn: r for r in before}
    resource = old.get(urn)
    if resource is None or resource.type not in IN_USE:
        return ""
    users = [
        r
        for r in before
        if r.type in IN_USE[resource.type]
        and r.urn not in replaced
        and r.urn != urn
        and _uses(r, urn, old)
    ]
    created = [m for m in later if m.system is capacity.System.SLURM]
    if not users and not (created and resource.type in (types.NETWORK, types.SUBNETWORK)):
        return ""
    named = ", ".join(f"{types.short(r.type)} {r.name}" for r in users)
    if created and resource.type in (types.NETWORK, types.SUBNETWORK):
        nodes = ", ".join(m.name for m in created)
        named += ("; " if named else "") + f"and the VMs Slurm's controller runs ({nodes})"
    # `pulumi up --replace` would not help: the engine deletes a delete-before-replace
    # resource when it is registered, taking along only dependents whose provider diff says
    # replace with its outputs unknown; `--replace` targets are not among them (pulumi
    # pkg/resource/deploy/step_generator.go, calculateDependentReplacements).
    targets = " ".join(f"--target '{r.urn}'" for r in users)
    how = (
        f"remove them in a run of their own (`pulumi destroy {targets} --target-dependents`)"
        if users
        else ""
    )
    if created:
        how = "power Slurm's nodes down" + (f" and {how}" if how else "")
    return (
        f"cannot complete: {types.short(resource.type)} {resource.name} is deleted before its "
        f"replacement is created, and Compute Engine refuses while {named} still use it "
        f"(resourceInUseByAnotherResource). `pulumi up` deletes what it replaces first, then "
        f"stops here with the old one in place. To go through, {how} first, then run "
        "`pulumi up`, which creates them again on the new one"
    )


def _runs_controllers(pool: Registration) -> bool:
    """The system pool: tainted for GKE's managed components, where Kueue, JobSet, the TPU
    provisioner and GKE's system pods run (components/gke/cluster.py)."""
    taints = (unwrap(pool.inputs).get("nodeConfig") or {}).get("taints") or []
    return any(t.get("key") == SYSTEM_TAINT for t in taints)


def _only_cpu_pool(pool: Registration, graph: Graph) -> bool:
    """Whether `pool` is the only node pool of its cluster with neither TPUs nor GPUs nor the
    system taint: where the teams' CPU pods run."""
    cpu = [
        m
        for m in capacity.read(graph).machines
        if m.system is capacity.System.GKE_POOLS
        and m.tpu is None
        and not m.gpus
        and not _runs_controllers(graph.by_urn(m.key))
    ]
    cluster = unwrap(pool.inputs).get("cluster")
    same = [m for m in cpu if unwrap(graph.by_urn(m.key).inputs).get("cluster") == cluster]
    return [m.key for m in same] == [pool.urn]


def _slurm_home_on_boot_disk(vm: Registration, graph: Graph) -> bool:
    """Whether `vm` is a Slurm controller that serves /home from its own boot disk: its
    cluster's config.yaml mounts no network storage at /home, so the controller exports its
    own (docs/slurm.md "Storage that survives a change")."""
    # slurm-gcp scripts/setup_network_storage.py resolve_network_storage: the default mounts
    # are the controller's /home and /opt/apps, overridden only by a network_storage entry.
    metadata = unwrap(vm.inputs).get("metadata") or {}
    if metadata.get("slurm_instance_role") != "controller":
        return False
    cluster = metadata.get("slurm_cluster_name")
    for r in graph.of_type(types.BUCKET_OBJECT):
        if not str(unwrap(r.inputs).get("name", "")).endswith("config.yaml"):
            continue
        try:
            document = yaml.safe_load(str(unwrap(r.inputs).get("content", "")))
        except yaml.YAMLError:
            continue
        if not isinstance(document, dict) or document.get("slurm_cluster_name") != cluster:
            continue
        storage = document.get("network_storage") or []
        return not any(isinstance(s, dict) and s.get("local_mount") == "/home" for s in storage)
    return False


_CONTROLLER_HOME = (
    "/home is on the Slurm controller's boot disk (slurm.home.filestore is false), which is "
    "deleted with the VM: every user's files in /home, and /opt/apps, are lost. Copy them off "
    "first (or move /home to Filestore in a run of its own, with slurm.home.filestore: true, "
    "and copy the files over before this change)"
)


def _tpu_slice(pool: Registration, graph: Graph) -> capacity.Machines | None:
    """The TPU machines a GKE node pool brings up, if it is a TPU slice pool."""
    for m in capacity.read(graph).machines:
        if m.key == pool.urn and m.tpu is not None:
            return m
    return None


def _slice_gone(pool: Registration, graph: Graph) -> Hazard | None:
    """A TPU slice pool that goes away (deleted, or deleted before its replacement): the jobs
    running on it lose their slice; in a protected stack, said as the production capacity it
    is."""
    machines = _tpu_slice(pool, graph)
    if machines is None:
        return None
    protected = str(graph.config.get("ai-infra:protect", "")).lower() == "true"
    where = "in this protected stack, " if protected else ""
    return Hazard(
        Kind.AVAILABILITY,
        f"{where}a TPU slice ({machines.full} x {machines.machine_type}, {machines.chips} "
        f"{machines.tpu.family.prefix if machines.tpu else ''} chips) goes: GKE deletes its "
        "nodes with the pool, so the jobs running on it are stopped mid-run (JobSet restarts "
        "them only where capacity is left), and Kueue admits nothing more to its flavor; "
        "drain it first (let the running jobs finish, or stop admitting to its queue)",
    )


def hazards(
    resource: Registration, replaced: bool, delete_first: bool, before: Graph
) -> tuple[Hazard, ...]:
    """The data a replace or delete of `resource` (as it was) loses, and the capacity that goes
    while it runs. `delete_first`: a replace that deletes the old one before creating the new."""
    found: list[Hazard] = []
    if resource.type == types.INSTANCE and _slurm_home_on_boot_disk(resource, before):
        found.append(Hazard(Kind.DATA_LOSS, _CONTROLLER_HOME))
    if resource.type == types.BUCKET and unwrap(resource.inputs).get("forceDestroy") is True:
        found.append(Hazard(Kind.DATA_LOSS, _FORCE_DESTROYED))
    elif resource.type in _LOST:
        found.append(Hazard(Kind.DATA_LOSS, _LOST[resource.type]))
    if resource.type in _QUEUES and not replaced:
        found.append(
            Hazard(
                Kind.DATA_LOSS,
                "Kueue drops the queue's pending workloads and evicts its admitted ones",
            )
        )
    down = delete_first or not replaced
    if resource.type == types.NODE_POOL and down:
        if _runs_controllers(resource):
            found.append(
                Hazard(
                    Kind.AVAILABILITY,
                    "the system pool: Kueue, JobSet, the TPU provisioner and GKE's system pods "
                    "have nowhere to run until it is up again, and no workload is admitted",
                )
            )
        elif (gone := _slice_gone(resource, before)) is not None:
            found.append(gone)
        elif _only_cpu_pool(resource, before):
            found.append(
                Hazard(
                    Kind.AVAILABILITY,
                    "the cluster's only CPU pool: the teams' CPU pods have nowhere to run "
                    "until a CPU pool is up again; add the new pool under another name first, "
                    "then remove this one",
                )
            )
    return tuple(found)


def rollout(group: Registration) -> str:
    """What reaches a managed instance group's running VMs when its template changes, under
    its update policy (Compute Engine "Automatically apply VM configuration updates in a
    MIG": OPPORTUNISTIC applies only when a VM is recreated for another reason)."""
    policy = unwrap(group.inputs).get("updatePolicy") or {}
    name = unwrap(group.inputs).get("name", group.name)
    zone = unwrap(group.inputs).get("zone", "ZONE")
    if policy.get("type", "OPPORTUNISTIC") == "OPPORTUNISTIC":
        return (
            "the group's update policy is OPPORTUNISTIC: its running VMs keep the old template "
            "(machine, image, metadata) until they are recreated (by autohealing, a resize, or "
            f"`gcloud compute instance-groups managed rolling-action replace {name} "
            f"--zone={zone}`); VMs it creates from now on get the new one"
        )
    unavailable = policy.get("maxUnavailableFixed", policy.get("maxUnavailablePercent", 1))
    return (
        f"the group's update policy is PROACTIVE: it {policy.get('minimalAction', 'REPLACE')}s "
        f"its VMs to the new template right after `pulumi up`, {unavailable} at a time"
    )
