"""What Slurm-GCP v6's own scripts (Cluster Toolkit v1.95.0) make of the objects this program
writes, as `upstream_check.py` recorded it by running them with the cloud faked: the loader
accepts every object, cloud.conf carries the config, every VM mounts the shared storage, and a
multi-host TPU partition gets the tree topology whose leaf switches hold one slice each,
where the pinned code alone gives it block topology. The recording is checked to be of what
the program writes today; re-record with `uv run python -m tests.slurm.upstream_check`."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from tests.slurm.upstream_check import (
    CASES,
    RECORDED,
    SLURM_VERSION,
    SUBMITS,
    inputs_digest,
    provenance,
)

RECORDING: dict[str, Any] = json.loads(RECORDED.read_text())


def run(case: str, *, addition: bool = True) -> dict[str, Any]:
    return RECORDING["cases"][case]["with_addition" if addition else "as_pinned"]


def hosts(hostlist: str) -> list[str]:
    """`aic-v4x16-[0-1]` -> its node names (Slurm's hostlist form, ranges and commas)."""
    match = re.fullmatch(r"(.*)\[([-0-9,]+)\]", hostlist)
    if not match:
        return [hostlist]
    found = []
    for part in match[2].split(","):
        low, _, high = part.partition("-")
        found += [f"{match[1]}{i}" for i in range(int(low), int(high or low) + 1)]
    return found


def partition_line(cloud_conf: str, name: str) -> dict[str, str]:
    [line] = [x for x in cloud_conf.splitlines() if x.startswith(f"PartitionName={name} ")]
    return dict(item.split("=", 1) for item in line.split())


def test_the_recording_was_made_with_the_pinned_toolkit_commit_and_scripts():
    # A re-pin of TOOLKIT_COMMIT, MANIFEST or PATCHED (an addition or an edit) that skipped
    # re-recording fails here: the recording names what it ran.
    assert {k: RECORDING[k] for k in provenance()} == provenance()
    assert RECORDING["slurm_version"] == SLURM_VERSION


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_recording_is_of_what_the_program_writes_today(case: str):
    assert inputs_digest(case) == RECORDING["cases"][case]["inputs_sha256"], (
        f"{case}: the bucket objects changed since upstream_check.py ran; re-run it"
    )


def test_the_pinned_code_gives_a_tpu_partition_block_topology_and_the_addition_a_tree():
    pinned, added = run("cpu-and-v4-16", addition=False), run("cpu-and-v4-16")
    assert pinned["block topology"]["tpu"] is True
    assert partition_line(pinned["cloud.conf"], "tpu")["Topology"] == "topology/block"
    assert added["block topology"] == {"debug": False, "t4": False, "tpu": False}
    assert partition_line(added["cloud.conf"], "tpu")["Topology"] == "topology/tree"
    # Everything else the generator writes is the same.
    strip = re.compile(r" Topology=\S+")
    assert strip.sub("", pinned["cloud.conf"]) == strip.sub("", added["cloud.conf"])


def test_each_leaf_switch_of_a_multi_host_nodeset_holds_one_slice_as_resume_creates_it():
    added = run("cpu-and-v4-16")
    sections = yaml.safe_load(added["cloud_topology.yaml"].split("---", 1)[1])
    [tree] = [s for s in sections if s["topology"] == "topology/tree"]
    assert tree["cluster_default"] is True
    leaves = [
        hosts(switch["nodes"])
        for switch in tree["tree"]["switches"]
        if "nodes" in switch and switch["nodes"].startswith("aic-v4x16-")
    ]
    slices = added["resume v4x16 chunks"]
    assert leaves == slices == [["aic-v4x16-0", "aic-v4x16-1"], ["aic-v4x16-2", "aic-v4x16-3"]]
    # job_submit.lua turns `-N <slices>` into that many switches of `vmcount` nodes each.
    assert added["tpu vmcount"] == {"tpu": 2}
    assert added["job_submit.lua installed"] is True
    assert added["topology.yaml links to"] == "cloud_topology.yaml"
    assert "TopologyPlugin=topology/tree" in added["cloud.conf"].splitlines()


def test_cloud_conf_carries_the_nodesets_partitions_and_knobs():
    conf = run("cpu-and-v4-16")["cloud.conf"]
    lines = conf.splitlines()
    for expected in ("TreeWidth=64", "Prolog=/slurm/custom_scripts/prolog.d/*"):
        assert expected in lines, expected
    # A resume rate is taken where no slice could be handed to resume in parts.
    assert "ResumeRate=10" in run("toolkit-parity")["cloud.conf"].splitlines()
    [t4] = [x for x in lines if x.startswith("NodeName=aic-t4-[0-1] ")]
    assert "Gres=gpu:1" in t4.split() and "CPUs=4" in t4.split()  # n1-standard-8, SMT off
    assert partition_line(conf, "debug")["Default"] == "YES"
    assert "Oversubscribe" not in partition_line(conf, "debug")
    # partitionConf {maxtime: 60, GraceTime: 30}: written as Slurm spells the option.
    t4 = partition_line(conf, "t4")
    assert (t4["MaxTime"], t4["GraceTime"]) == ("60", "30") and "maxtime" not in t4
    tpu = partition_line(conf, "tpu")
    # A v4-16 slice: tpu.py's create wait and the setup's scripts (nodesets.SLICE_CREATE_WAIT).
    assert (tpu["Oversubscribe"], tpu["ResumeTimeout"], tpu["DefMemPerCPU"]) == (
        "Exclusive",
        "1200",
        "100",
    )


def test_jwt_is_an_alternative_authentication_of_slurmctld_and_slurmdbd():
    added = run("cpu-and-v4-16")
    assert "AuthAltTypes=auth/jwt" in added["slurm.conf"].splitlines()
    assert "AuthAltParameters=jwt_key=/var/spool/slurm/jwt_hs256.key" in (
        added["slurmdbd.conf"].splitlines()
    )


def test_every_vm_mounts_the_filestore_home_and_the_cluster_storage():
    added = run("cpu-and-v4-16")
    expected = [
        ["/data", "10.0.0.9", "/data", "nfs"],
        ["/home", "192.0.2.2", "/nfsshare", "nfs"],
        ["/opt/apps", "aic-controller", "/opt/apps", "nfs"],
    ]
    for role in (
        "controller mounts",
        "login login mounts",
        "login gpu mounts",
        "compute debug mounts",
        "compute t4 mounts",
    ):
        assert added[role] == expected, role


def test_resume_creates_cpu_nodes_from_the_nodeset_s_own_template():
    added = run("cpu-and-v4-16")
    request = added["resume debug"]
    assert request["method"] == "compute.instances.bulkInsert"
    assert request["zone"] == "us-central2-b"
    assert request["body"]["sourceInstanceTemplate"].rsplit("/", 1)[1].startswith("aic-debug-")
    assert sorted(request["body"]["perInstanceProperties"]) == ["aic-debug-0", "aic-debug-1"]


def test_the_seed_example_loads_as_a_single_host_nodeset_with_home_on_the_controller():
    seed = run("seed-v2-8-tf-2-10")
    assert seed["tpu vmcount"] == {"tpu": 1}
    assert partition_line(seed["cloud.conf"], "tpu")["Default"] == "YES"
    assert seed["controller mounts"] == [
        ["/home", "seed-controller", "/home", "nfs"],
        ["/opt/apps", "seed-controller", "/opt/apps", "nfs"],
    ]
    assert seed["resume v2x8 chunks"] == [["seed-v2x8-0"], ["seed-v2x8-1"]]


SCALE = "tpu-slices-at-scale"
WORKERS = {"v4x8": 1, "v4x16": 2, "v4x32": 4, "v4x64": 8}
"""The case's nodesets of at least 12 nodes, by workers per slice."""


def leaf_switches(recorded: dict[str, Any], nodeset: str) -> list[list[str]]:
    sections = yaml.safe_load(recorded["cloud_topology.yaml"].split("---", 1)[1])
    [tree] = [s for s in sections if s["topology"] == "topology/tree"]
    return [
        hosts(switch["nodes"])
        for switch in tree["tree"]["switches"]
        if switch.get("nodes", "").startswith(f"big-{nodeset}-")
    ]


def slices_of(recorded: dict[str, Any], nodeset: str) -> list[list[str]]:
    """Every TPU node resume would create for the nodeset: all nodes as no job's, and as the
    exclusive jobs of the first slice and of all the others."""
    return [
        *recorded[f"resume {nodeset} chunks"],
        *recorded[f"resume {nodeset} jobs"].values(),
    ]


@pytest.mark.parametrize("nodeset", sorted(WORKERS))
def test_every_slice_resume_creates_is_one_leaf_switch_at_twelve_nodes_and_more(nodeset: str):
    added = run(SCALE)
    workers = WORKERS[nodeset]
    leaves = leaf_switches(added, nodeset)
    nodes = [node for leaf in leaves for node in leaf]
    assert len(nodes) >= 12
    if workers == 1:
        assert len(leaves) == 1  # conf.py puts every single-host node under one switch
    else:
        # One leaf switch per slice, in index order.
        assert leaves == [nodes[i : i + workers] for i in range(0, len(nodes), workers)]
    for chunk in slices_of(added, nodeset):
        assert len(chunk) == workers and (workers == 1 or chunk in leaves), chunk
    resumed = [node for chunk in added[f"resume {nodeset} chunks"] for node in chunk]
    assert sorted(resumed) == sorted(nodes)


def test_the_pinned_resume_mixes_two_leaf_switches_into_one_slice_from_node_ten():
    pinned, added = run(SCALE, addition=False), run(SCALE)
    # The example: an exclusive two-slice job on nodes 4-11 of a v4-32 nodeset.
    assert pinned["resume v4x32 jobs"]["big-v4x32:job2:0"] == [
        "big-v4x32-10",
        "big-v4x32-11",
        "big-v4x32-4",
        "big-v4x32-5",
    ]
    assert added["resume v4x32 jobs"]["big-v4x32:job2:0"] == [f"big-v4x32-{i}" for i in range(4, 8)]
    for nodeset in ("v4x32", "v4x64"):
        leaves = [set(leaf) for leaf in leaf_switches(pinned, nodeset)]
        mixed = [c for c in slices_of(pinned, nodeset) if not any(set(c) <= x for x in leaves)]
        assert mixed, nodeset
    # The TPU node resume creates for a slice names its workers in index order.
    [created] = added["resume v4x64 creates"]
    assert created["slurm_names"] == ";".join(f"WORKER_{i}:big-v4x64-{i}" for i in range(8))
    assert created["topology"] == "2x4x4"


def test_a_preempted_static_tpu_node_is_deleted_and_created_anew():
    pinned, added = run(SCALE, addition=False), run(SCALE)
    # Pinned: slurmsync sees PREEMPTED, not STOPPED, and leaves the node down for good; its
    # own restart, had it picked it, dies on the dict it hands start_tpu.
    assert pinned["slurmsync pre preempted"]["action"] == "NodeActionUnchanged"
    assert pinned["slurmsync pre preempted"]["tpu api"] == []
    assert pinned["slurmsync pre restart"]["error"] == "KeyError(0)"
    recovered = added["slurmsync pre preempted"]
    assert recovered["action"] == "NodeActionPrempt" and recovered["error"] is None
    assert [next(iter(call)) for call in recovered["tpu api"]] == ["delete", "create"]
    created = recovered["tpu api"][1]
    assert (created["create"], created["preemptible"]) == ("big-pre-0", True)
    down, register = recovered["scontrol"]
    assert "nodename=big-pre-0 state=down" in down and "nodeaddr=10.1.0.1" in register


def test_data_disks_attach_read_only_to_a_nodeset_of_more_than_one_tpu_vm():
    pinned, added = run(SCALE, addition=False), run(SCALE)
    disk = "projects/test-project/zones/us-central2-b/disks/"
    [shared] = added["resume v4x32 creates"]
    assert shared["data_disks"] == [[disk + "data", "READ_ONLY"]]
    [pinned_shared] = pinned["resume v4x32 creates"]
    assert pinned_shared["data_disks"] == [[disk + "data", "DISK_MODE_UNSPECIFIED"]]
    # A nodeset of one TPU VM keeps the API's default, read-write.
    [alone] = added["resume one creates"]
    assert alone["data_disks"] == [[disk + "scratch", "DISK_MODE_UNSPECIFIED"]]


def test_every_tpu_vm_resume_or_slurmsync_creates_takes_ssh_through_os_login_only():
    creates = {
        (case, addition): [
            call
            for key, found in run(case, addition=addition).items()
            if key.endswith(" creates") or key.startswith("slurmsync ")
            for call in (found if isinstance(found, list) else found.get("tpu api", []))
            if "create" in call
        ]
        for case in CASES
        for addition in (False, True)
    }
    tpu_cases = {case for (case, _), calls in creates.items() if calls}
    assert tpu_cases == {"cpu-and-v4-16", SCALE, "seed-v2-8-tf-2-10"}
    for case in tpu_cases:
        # Pinned: create_node's fixed metadata has no OS Login (nor any SSH key).
        assert all(c["ssh"] == {} for c in creates[case, False]), case
        assert all(
            c["ssh"] == {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"}
            for c in creates[case, True]
        ), case
    # The preempted node slurmsync creates anew keeps it too.
    recovered = run(SCALE)["slurmsync pre preempted"]["tpu api"]
    assert [c["ssh"]["enable-oslogin"] for c in recovered if "create" in c] == ["TRUE"]


PARITY = "toolkit-parity"


def job_calls(recorded: dict[str, Any], nodeset: str) -> list[dict[str, Any]]:
    run_ = recorded[f"resume job {nodeset}"]
    assert run_["error"] is None, run_["error"]
    return [c for c in run_["calls"] if c["method"] != "machineTypes.aggregatedList"]


def test_the_loader_and_conf_generator_take_every_toolkit_key_s_nodeset():
    conf = run(PARITY)["cloud.conf"].splitlines()
    nodes = {line.split()[0]: line.split() for line in conf if line.startswith("NodeName=")}
    assert set(nodes) == {
        f"NodeName=tk-{n}-[0-3]" for n in ("tier1", "place", "disks", "resv", "flex")
    }
    assert "Gres=gpu:8" in nodes["NodeName=tk-resv-[0-3]"]
    assert "Gres=gpu:8" in nodes["NodeName=tk-flex-[0-3]"]
    assert run(PARITY)["login login mounts"]


def test_a_reservation_nodeset_s_nodes_consume_it_by_its_full_name():
    [insert] = job_calls(run(PARITY), "resv")
    assert insert["method"] == "instances.bulkInsert" and insert["zone"] == "us-central1-a"
    assert insert["body"]["instanceProperties"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/test-project/reservations/a3mega-block"],
    }


def test_a_placed_job_gets_a_compact_policy_at_the_nodeset_s_max_distance():
    policy, insert = job_calls(run(PARITY), "place")
    assert policy["method"] == "resourcePolicies.insert" and policy["region"] == "us-central1"
    assert policy["body"]["groupPlacementPolicy"]["maxDistance"] == 2
    properties = insert["body"]["instanceProperties"]
    assert properties["resourcePolicies"] == [policy["body"]["name"]]
    assert properties["scheduling"] == {"onHostMaintenance": "TERMINATE"}


def test_a_flex_start_job_is_a_resize_request_on_a_group_the_cleanup_owns():
    from google.cloud import compute_v1 as compute

    from components.slurm.cleanup import owned_groups

    listing, group, resize = job_calls(run(PARITY), "flex")
    assert listing["method"] == "regionInstanceGroupManagers.list"
    body = group["body"]
    assert group["method"] == "regionInstanceGroupManagers.insert"
    assert body["distributionPolicy"]["zones"] == [{"zone": "zones/us-central1-a"}]
    [version] = body["versions"]
    assert version["instanceTemplate"].rsplit("/", 1)[1].startswith("tk-flex-")
    assert resize["body"]["requested_run_duration"] == {"seconds": 7200}
    assert [i["name"] for i in resize["body"]["instances"]] == ["tk-flex-0", "tk-flex-1"]
    made = compute.InstanceGroupManager(
        name=body["name"],
        versions=[
            compute.InstanceGroupManagerVersion(instance_template=version["instanceTemplate"])
        ],
    )
    assert owned_groups([made], "tk", "flex") == [body["name"]]


def test_a_job_labels_its_nodes_persistent_disks_but_not_their_local_ssds():
    [insert] = job_calls(run(PARITY), "disks")
    disks = insert["body"]["instanceProperties"]["disks"]
    assert [(d["type"], d["initializeParams"]["diskType"]) for d in disks] == [
        ("PERSISTENT", "pd-balanced"),
        ("PERSISTENT", "pd-ssd"),
        ("SCRATCH", "local-ssd"),
        ("SCRATCH", "local-ssd"),
    ]
    assert [d["initializeParams"]["labels"].get("slurm_job_id") for d in disks] == [
        7,
        7,
        None,
        None,
    ]


def test_tier_1_and_automatic_updates_ride_on_the_template_resume_creates_from():
    [insert] = job_calls(run(PARITY), "tier1")
    assert insert["body"]["sourceInstanceTemplate"].rsplit("/", 1)[1].startswith("tk-tier1-")


NO_VAL = "4294967294"


def test_a_multi_host_job_waits_for_whole_slices_however_it_is_submitted():
    pinned, added = run("cpu-and-v4-16", addition=False), run("cpu-and-v4-16")
    # The job waits for its -N leaf switches for as long as that takes ...
    assert (
        "SchedulerParameters=bf_continue,salloc_wait_nodes,ignore_prefer_validation,"
        + ("max_switch_wait=2147483647")
        in added["cloud.conf"].splitlines()
    )
    job = added["job_submit tpu submit -N 2"]
    assert (job["rc"], job["min_nodes"], job["req_switch"], job["wait4switch"]) == (
        "0",
        "4",
        "2",
        NO_VAL,
    )
    # ... whatever wait of its own it asked for, where the pinned script kept it (0 s).
    assert added["job_submit tpu submit -N 1 --switches=1@0"]["wait4switch"] == NO_VAL
    assert pinned["job_submit tpu submit -N 1 --switches=1@0"]["wait4switch"] == "0"
    # Choosing nodes past the topology is refused at submit, and reshaping a pending job
    # (but by root) at modify; the pinned script took each.
    for name in (
        "submit -N 1 --contiguous",
        "submit -N 1 --nodelist",
        "modify NumNodes=3",
        "modify Switches=2@0",
    ):
        assert added[f"job_submit tpu {name}"]["rc"] == "-1", name
        assert added[f"job_submit tpu {name}"]["log"], name
        assert pinned[f"job_submit tpu {name}"]["rc"] == "0", name
    for name in ("modify TimeLimit=60 (not a slice's shape)", "modify NumNodes=3 as root"):
        assert added[f"job_submit tpu {name}"]["rc"] == "0", name
    submits = {k.split(" ", 2)[2] for k in added if k.startswith("job_submit tpu ")}
    assert submits == set(SUBMITS)


@pytest.mark.parametrize("nodeset", ["v4x16", "v4x32", "v4x64"])
def test_an_allocation_across_two_slices_would_create_no_tpu(nodeset: str):
    # Why Slurm is told to wait for whole switches: given one slice's worth of nodes from two
    # leaf switches, resume cuts them by switch and creates nothing (the job would wait out
    # ResumeTimeout), where the pinned resume made a TPU whose workers slurmsync then looks
    # for under the wrong leaf switch.
    pinned, added = run(SCALE, addition=False), run(SCALE)
    spanning = added[f"resume {nodeset} spanning"]
    leaves = leaf_switches(added, nodeset)
    assert not any(set(spanning["nodes"]) <= set(leaf) for leaf in leaves)
    assert spanning["creates"] == []
    assert len(spanning["chunks"]) == 2
    assert pinned[f"resume {nodeset} spanning"]["creates"] == [spanning["nodes"][0]]
