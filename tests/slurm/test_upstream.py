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

from tests.slurm.upstream_check import CASES, RECORDED, SLURM_VERSION, inputs_digest

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


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_recording_is_of_what_the_program_writes_today(case: str):
    assert RECORDING["slurm_version"] == SLURM_VERSION
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
    for expected in ("ResumeRate=10", "TreeWidth=64", "Prolog=/slurm/custom_scripts/prolog.d/*"):
        assert expected in lines, expected
    [t4] = [x for x in lines if x.startswith("NodeName=aic-t4-[0-1] ")]
    assert "Gres=gpu:1" in t4.split() and "CPUs=4" in t4.split()  # n1-standard-8, SMT off
    assert partition_line(conf, "debug")["Default"] == "YES"
    assert "Oversubscribe" not in partition_line(conf, "debug")
    assert partition_line(conf, "t4")["MaxTime"] == "60"
    tpu = partition_line(conf, "tpu")
    assert (tpu["Oversubscribe"], tpu["ResumeTimeout"], tpu["DefMemPerCPU"]) == (
        "Exclusive",
        "600",
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
