"""Edits `pulumi up` cannot finish, or that lose what the diff must call data, gate as such:
a Basic Filestore shrink (the API refuses it), a Lustre replace under its fixed instance id,
an instance template's labels (replaced, not updated), the Slurm controller's /home on its
boot disk, and a TPU slice pool that goes in a protected stack."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from graph import types
from graph.model import Registration
from plan.cli import EXIT_CHANGES, EXIT_REFUSED, main
from plan.diff import Op, ResourceChange, diff
from plan.hazards import Hazard, Kind, collides
from plan.verdicts import Effect
from tests.conftest import BASE_CONFIG, build_graph
from tests.plan.test_diff import write

STORAGE: dict[str, Any] = {
    **BASE_CONFIG,
    "gcp:region": "us-central1",
    "gcp:zone": "us-central1-a",
    "ai-infra:storage": {
        "privateServiceRange": "10.200.0.0/20",
        "volumes": [
            {"name": "shared", "filestore": {"tier": "BASIC_HDD", "capacityGib": 2048}},
            {"name": "zonal", "filestore": {"capacityGib": 2048}},
            {"name": "scratch", "lustre": {"capacityGib": 18000, "throughput": 500}},
        ],
    },
}


def _with(config: dict[str, Any], index: int, kind: str, **spec: Any) -> dict[str, Any]:
    edited = copy.deepcopy(config)
    edited["ai-infra:storage"]["volumes"][index][kind].update(spec)
    return edited


def _only(changes, type_: str, name: str):
    (found,) = [c for c in changes if c.resource.type == type_ and name in c.resource.name]
    return found


def test_a_basic_filestore_shrink_cannot_complete_and_a_zonal_one_can():
    before = build_graph(STORAGE)
    shrunk = _with(
        _with(STORAGE, 0, "filestore", capacityGib=1024), 1, "filestore", capacityGib=1024
    )
    changes = diff(before, build_graph(shrunk))
    basic = _only(changes, types.FILESTORE, "shared")
    assert basic.op is Op.UPDATE
    (change,) = basic.changes
    assert change.effect is Effect.FAILS and "scales up only" in change.note
    assert basic.blocked.startswith("cannot complete: fileShares.capacityGb")
    zonal = _only(changes, types.FILESTORE, "zonal")
    assert zonal.op is Op.UPDATE and not zonal.blocked
    grown = _with(STORAGE, 0, "filestore", capacityGib=4096)
    assert not _only(diff(before, build_graph(grown)), types.FILESTORE, "shared").blocked


def test_the_gate_exits_3_on_a_basic_filestore_shrink(tmp_path: Path, capsys):
    base = write(tmp_path / "base" / "Pulumi.gate.yaml", STORAGE)
    now = write(tmp_path / "Pulumi.gate.yaml", _with(STORAGE, 0, "filestore", capacityGib=1024))
    assert main([str(now), "--base", str(base)]) == EXIT_REFUSED
    assert "(refused at apply)" in capsys.readouterr().out
    now = write(tmp_path / "Pulumi.gate.yaml", _with(STORAGE, 0, "filestore", capacityGib=4096))
    assert main([str(now), "--base", str(base)]) == EXIT_CHANGES


def test_a_lustre_replace_deletes_first_so_its_fixed_id_is_free():
    before = build_graph(STORAGE)
    changes = diff(before, build_graph(_with(STORAGE, 2, "lustre", throughput=1000)))
    lustre = _only(changes, types.LUSTRE, "scratch")
    assert lustre.op is Op.REPLACE and lustre.delete_before_replace and not lustre.blocked
    assert lustre.destructive


def test_a_lustre_replace_created_first_under_its_own_id_is_said_to_fail():
    (old,) = build_graph(STORAGE).of_type(types.LUSTRE)
    assert "409 ALREADY_EXISTS" in collides(old, old)
    renamed = Registration(**{**vars(old), "inputs": {**old.inputs, "instanceId": "other"}})
    assert collides(renamed, old) == ""


SLURM: dict[str, Any] = {
    **BASE_CONFIG,
    "gcp:region": "us-central1",
    "gcp:zone": "us-central1-a",
    "ai-infra:slurm": {
        "clusterName": "tpu",
        "tpuNodesets": [
            {"name": "v2", "nodeType": "v2-8", "nodeCountDynamicMax": 2, "zone": "us-central1-b"}
        ],
        "partitions": [{"name": "tpu", "nodesets": ["v2"]}],
    },
}


def _controller_hazards(home: dict[str, Any]) -> tuple[list[Hazard], ResourceChange]:
    config = copy.deepcopy(SLURM)
    config["ai-infra:slurm"]["home"] = home
    gone = {k: v for k, v in config.items() if k != "ai-infra:slurm"}
    changes = diff(build_graph(config), build_graph({**gone, "ai-infra:tpuSlices": []}))
    controller = _only(changes, types.INSTANCE, "slurm-controller")
    assert controller.op is Op.DELETE
    return [h for h in controller.hazards if "boot disk" in h.message], controller


def test_slurm_home_on_the_controller_boot_disk_is_data_and_gates_destructive(tmp_path: Path):
    lost, controller = _controller_hazards({"filestore": False})
    assert [h.kind for h in lost] == [Kind.DATA_LOSS] and controller.destructive
    kept, controller = _controller_hazards({"filestore": True})
    assert kept == [] and not controller.destructive
    on_disk = copy.deepcopy(SLURM)
    on_disk["ai-infra:slurm"]["home"] = {"filestore": False}
    base = write(tmp_path / "base" / "Pulumi.gate.yaml", on_disk)
    now = write(tmp_path / "Pulumi.gate.yaml", {k: v for k, v in SLURM.items() if "slurm" not in k})
    assert main([str(now), "--base", str(base)]) == EXIT_CHANGES
    assert main([str(now), "--base", str(base), "--fail-on-destructive"]) == EXIT_REFUSED


def test_deleting_a_tpu_slice_pool_says_the_running_jobs_lose_their_slice():
    slices = {**BASE_CONFIG, "ai-infra:tpuSlices": [{"name": "a", "accelerator": "v6e-4"}]}
    for protect, said in ((True, "in this protected stack, a TPU slice"), (False, "a TPU slice")):
        config = {**slices, "ai-infra:protect": protect}
        after = {**config, "ai-infra:tpuSlices": []}
        changes = diff(build_graph(config), build_graph(after))
        pool = next(c for c in changes if c.resource.type == types.NODE_POOL)
        assert pool.op is Op.DELETE
        (hazard,) = pool.hazards
        assert hazard.kind is Kind.AVAILABILITY and hazard.message.startswith(said)
        assert "4 v6e chips" in hazard.message
