"""What an edit does to a running Slurm cluster, as the diff says it: which edits slurmsync
reads within half a minute (restarting slurmctld), which reach only VMs set up later, what a
lower node count deletes, and what removing a partition does to its jobs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from components.slurm import edit_notices
from graph.engine import record_program
from plan import base as bases
from plan.cli import Report
from stacks.loading import parse
from tests.slurm.test_config import stack

BASE: dict[str, Any] = {
    "cpuNodesets": [
        {
            "name": "c2",
            "machineType": "c2-standard-60",
            "nodeCountStatic": 1,
            "nodeCountDynamicMax": 8,
        }
    ],
    "tpuNodesets": [{"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2}],
    "partitions": [
        {"name": "tpu", "nodesets": ["v4"], "default": True},
        {"name": "cpu", "nodesets": ["c2"]},
    ],
}


def notices(**changes: Any) -> list[str]:
    after = copy.deepcopy(BASE)
    for key, value in changes.items():
        after[key] = value
    before_config = parse(stack(**BASE), "test").slurm
    after_config = parse(stack(**after), "test").slurm
    return edit_notices(before_config, after_config)


def cpu(**fields: Any) -> list[dict[str, Any]]:
    return [{**BASE["cpuNodesets"][0], **fields}]


def test_no_edit_says_nothing_and_new_or_removed_clusters_are_the_plan_s():
    assert notices() == []
    config = parse(stack(**BASE), "test").slurm
    assert edit_notices(None, config) == edit_notices(config, None) == []


def test_a_partition_option_reaches_the_running_controller_through_slurmsync():
    partitions = copy.deepcopy(BASE["partitions"])
    partitions[1]["partitionConf"] = {"MaxTime": "60"}
    [notice] = notices(partitions=partitions)
    assert notice.startswith("Slurm tpu: within about 30 s of `pulumi up`, slurmsync")
    assert "restarts slurmctld" in notice


def test_removing_a_partition_says_its_jobs_go():
    found = notices(partitions=BASE["partitions"][:1], cpuNodesets=[])
    assert any("partition cpu goes" in n and "kills its running jobs" in n for n in found)


def test_a_lower_node_count_names_the_nodes_whose_vms_slurmsync_deletes():
    found = notices(cpuNodesets=cpu(nodeCountDynamicMax=4))
    [lost] = [n for n in found if "loses nodes" in n]
    assert "tpu-c2-[5-8]" in lost and "deletes their VMs" in lost
    assert not [n for n in notices(cpuNodesets=cpu(nodeCountDynamicMax=10)) if "loses" in n]


def test_a_template_change_reaches_only_nodes_created_after_it():
    found = notices(cpuNodesets=cpu(spot=True))
    assert any("c2's nodes are made from a new instance template" in n for n in found)
    # A count is the nodeset file's, not the template's.
    assert not [n for n in notices(cpuNodesets=cpu(nodeCountDynamicMax=9)) if "template" in n]


def test_startup_scripts_run_at_setup_only():
    found = notices(
        cpuNodesets=cpu(startupScript="echo hi"),
        controller={"startupScript": "echo hi"},
        loginGroups=[{"name": "login", "startupScript": "echo hi"}],
    )
    assert any("c2's startup script runs on nodes set up from now on" in n for n in found)
    assert any("the controller's startup script" in n for n in found)
    assert any("login group login's VMs read their script" in n for n in found)


def test_the_diff_carries_the_notices(tmp_path: Path):
    partitions = copy.deepcopy(BASE["partitions"])
    partitions[1]["partitionConf"] = {"MaxTime": "60"}
    before_raw, after_raw = stack(**BASE), stack(**{**BASE, "partitions": partitions})
    path = tmp_path / "Pulumi.edit.yaml"
    path.write_text(yaml.safe_dump({"config": after_raw}))
    config, graph = parse(after_raw, "edit"), record_program(after_raw, stack="edit")[0]
    old_graph = record_program(before_raw, stack="edit")[0]
    base = bases.Base(old_graph, "old", config=parse(before_raw, "edit"))
    report = Report("edit", path, config, graph, "old", base)
    [notice] = report.json()["diff"]["notices"]
    assert "slurmsync" in notice
    assert f"! {notice}" in report.text()
