"""What an edit of `ai-infra:slurm` does to a running cluster, beside what `pulumi up` changes:
Slurm-GCP v6 reads most of its files again on its own, some only when a VM is set up, and
deletes the VMs of nodes a smaller config no longer lists.

How the pinned scripts pick a change up: every VM runs slurmsync.py 30 s after its last run
(slurm-gcp 6.12.2 ansible role slurmcmd, `OnUnitInactiveSec={{slurmcmd_timeout}}`, 30), which
hashes config.yaml and the partition and nodeset files (util.py `_ConfigBlobs.hash`; login
group files are not in it) and on a new hash regenerates slurm.conf and cloud.conf and
restarts slurmctld on the controller, slurmd on nodes and sackd on login VMs
(`reconfigure_slurm`); it reinstalls changed custom scripts on every run
(`install_custom_scripts(check_hash=True)`), though setup runs startup scripts only once.
"""

from __future__ import annotations

from typing import Any

from components.slurm.config import SlurmConfig
from components.slurm.nodesets import CpuNodesetConfig, TpuNodesetConfig

SYNC_SECONDS = 30
"""slurmcmd.timer's OnUnitInactiveSec (slurm-gcp 6.12.2 `slurmcmd_timeout`)."""
ORPHAN_SECONDS = 90
"""slurmsync deletes a running VM no node of slurm.conf names once it is 90 s old
(slurmsync.py `get_node_action`, `_find_tpu_node_action`)."""
PLACEMENT_FIELDS = {"node_count_static", "node_count_dynamic_max", "zones", "zone_target_shape"}
"""CPU nodeset keys written to the nodeset's file, not its instance template."""
FILE_FIELDS = {"startup_script", "network_storage", "storage", "node_conf"}
"""Keys read at setup (or by conf.py), not from the template either."""


def edit_notices(before: SlurmConfig | None, after: SlurmConfig | None) -> list[str]:
    """What the running cluster does with the edit from `before` to `after`, for the diff;
    nothing when the cluster is new or goes (the plan lists that)."""
    if before is None or after is None:
        return []
    notices = _reconfigure(before, after)
    notices += _partitions_removed(before, after)
    notices += _nodes_removed(before, after)
    notices += _nodesets_changed(before, after)
    notices += _setup_only(before, after)
    return [f"Slurm {after.cluster_name}: {n}" for n in notices]


def _synced(config: SlurmConfig) -> dict[str, Any]:
    """What slurmsync hashes: config.yaml and the partition and nodeset files, by what the
    program writes them from."""
    return {
        "partitions": [p.model_dump() for p in config.all_partitions],
        "cpu": [n.model_dump() for n in config.all_cpu_nodesets],
        "tpu": [n.model_dump() for n in config.tpu_nodesets],
        "cluster": config.model_dump(
            include={
                "cloud_parameters",
                "timeouts",
                "prolog_scripts",
                "epilog_scripts",
                "network_storage",
                "storage",
                "home",
            }
        ),
    }


def _reconfigure(before: SlurmConfig, after: SlurmConfig) -> list[str]:
    if _synced(before) == _synced(after):
        return []
    return [
        f"within about {SYNC_SECONDS} s of `pulumi up`, slurmsync on every VM reads the new "
        "files: the controller writes slurm.conf and cloud.conf again and restarts slurmctld "
        "(its jobs are kept on the state disk), nodes restart slurmd (its unit's "
        "KillMode=process leaves running job steps) and login VMs sackd; a value slurmctld "
        "refused would stop it there, which the checks before `pulumi up` rule out"
    ]


def _partitions_removed(before: SlurmConfig, after: SlurmConfig) -> list[str]:
    gone = sorted({p.name for p in before.all_partitions} - {p.name for p in after.all_partitions})
    return [
        f"partition {name} goes: at the restart slurmctld kills its running jobs and drops "
        "the queued ones (read_config.c `_sync_jobs_to_conf`)"
        for name in gone
    ]


def _nodes_removed(before: SlurmConfig, after: SlurmConfig) -> list[str]:
    """Nodes a lower count drops from slurm.conf; a nodeset dropped whole is the cleanup's
    (the plan shows it)."""
    found = []
    old = {n.name: n for n in [*before.all_cpu_nodesets, *before.tpu_nodesets]}
    for nodeset in [*after.all_cpu_nodesets, *after.tpu_nodesets]:
        was = old.get(nodeset.name)
        if was is None:
            continue
        dropped = _dropped(was, nodeset)
        if dropped:
            found.append(
                f"nodeset {nodeset.name} loses nodes {after.cluster_name}-{nodeset.name}-"
                f"[{dropped}]: slurm.conf no longer lists them, and slurmsync deletes their "
                f"VMs once {ORPHAN_SECONDS} s old, with any job running on them; drain them "
                "first (scontrol update nodename=... state=drain)"
            )
    return found


def _dropped(
    was: CpuNodesetConfig | TpuNodesetConfig, now: CpuNodesetConfig | TpuNodesetConfig
) -> str:
    """The node indexes `was` has and `now` lacks: a nodeset's nodes are indexed from 0,
    static first (util.py `nodenames`), so a lower total drops the last ones."""
    old_total = was.node_count_static + was.node_count_dynamic_max
    new_total = now.node_count_static + now.node_count_dynamic_max
    if new_total >= old_total:
        return ""
    last = old_total - 1
    return f"{new_total}" if new_total == last else f"{new_total}-{last}"


def _nodesets_changed(before: SlurmConfig, after: SlurmConfig) -> list[str]:
    """Nodesets whose VMs are made differently: the running ones keep what they were made
    with (slurmsync replaces no running node: `get_node_action`)."""
    found = []
    old_cpu = {n.name: n for n in before.all_cpu_nodesets}
    for nodeset in after.all_cpu_nodesets:
        was = old_cpu.get(nodeset.name)
        skip = PLACEMENT_FIELDS | FILE_FIELDS
        if was is not None and was.model_dump(exclude=skip) != nodeset.model_dump(exclude=skip):
            found.append(
                f"nodeset {nodeset.name}'s nodes are made from a new instance template from "
                "now on; running ones keep theirs (dynamic nodes until they power down, static "
                "nodes until their VM is deleted)"
            )
    old_tpu = {n.name: n for n in before.tpu_nodesets}
    for tpu in after.tpu_nodesets:
        was_tpu = old_tpu.get(tpu.name)
        skip = {"node_count_static", "node_count_dynamic_max", "startup_script"}
        if was_tpu is not None and was_tpu.model_dump(exclude=skip) != tpu.model_dump(exclude=skip):
            found.append(
                f"nodeset {tpu.name}'s TPU VMs are created with the change from now on; "
                "running ones keep how they were created until they are deleted"
            )
    return found


def _setup_only(before: SlurmConfig, after: SlurmConfig) -> list[str]:
    """What a VM reads once, at setup: startup scripts, and a login group's file."""
    found = []
    old = {n.name: n for n in [*before.all_cpu_nodesets, *before.tpu_nodesets]}
    for nodeset in [*after.all_cpu_nodesets, *after.tpu_nodesets]:
        was = old.get(nodeset.name)
        if was is not None and was.startup_script != nodeset.startup_script:
            found.append(
                f"nodeset {nodeset.name}'s startup script runs on nodes set up from now on; "
                "running nodes never run the new one"
            )
    if before.controller.startup_script != after.controller.startup_script:
        found.append(
            "the controller's startup script runs when a controller is next set up (a "
            "replaced one); the running controller never runs the new one"
        )
    old_groups = {g.name: g for g in before.login_groups}
    for group in after.login_groups:
        was = old_groups.get(group.name)
        if was is None:
            continue
        if was.startup_script != group.startup_script or was.model_dump(
            include={"network_storage", "storage", "startup_scripts_timeout"}
        ) != group.model_dump(include={"network_storage", "storage", "startup_scripts_timeout"}):
            found.append(
                f"login group {group.name}'s VMs read their script and mounts at setup only "
                "(slurmsync does not hash login group files): running login VMs keep theirs "
                "until replaced"
            )
    return found
