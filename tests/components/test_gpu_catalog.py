"""The GPU machine catalog: fixed GPU complements, N1 attachments and boot disks."""

from __future__ import annotations

import pytest

from components.gpu_catalog import boot_disk_problem, fixed_gpus, gpu_problem


@pytest.mark.parametrize(
    ("machine", "gpu", "count"),
    [
        ("a2-highgpu-2g", "nvidia-tesla-a100", 2),
        ("a2-ultragpu-8g", "nvidia-a100-80gb", 8),
        ("a3-highgpu-8g", "nvidia-h100-80gb", 8),
        ("a3-megagpu-8g", "nvidia-h100-mega-80gb", 8),
        ("a3-ultragpu-8g", "nvidia-h200-141gb", 8),
        ("a4-highgpu-8g", "nvidia-b200", 8),
        ("g2-standard-24", "nvidia-l4", 2),
        ("g2-standard-32", "nvidia-l4", 1),
        ("a3-edgegpu-8g-nolssd", "nvidia-h100-80gb", 8),
    ],
)
def test_fixed_complements(machine, gpu, count):
    fixed = fixed_gpus(machine)
    assert fixed is not None and (fixed.gpu_type, fixed.gpu_count) == (gpu, count)
    assert gpu_problem(machine, gpu, count) is None


def test_a_mismatched_complement_names_what_the_machine_carries():
    problem = gpu_problem("g2-standard-24", "nvidia-l4", 4)
    assert problem is not None and "comes with 2 x nvidia-l4" in problem
    problem = gpu_problem("a3-highgpu-8g", "nvidia-tesla-a100", 8)
    assert problem is not None and "8 x nvidia-h100-80gb" in problem


def test_n1_takes_only_attachable_gpus_in_allowed_counts():
    assert gpu_problem("n1-standard-8", "nvidia-tesla-t4", 4) is None
    assert gpu_problem("n1-standard-8", "nvidia-tesla-v100", 8) is None
    assert "counts of 1, 2, 4" in (gpu_problem("n1-standard-8", "nvidia-tesla-t4", 3) or "")
    assert "attach only" in (gpu_problem("n1-standard-8", "nvidia-l4", 1) or "")


def test_unknown_machine_types_are_refused():
    assert "not a GPU machine type" in (gpu_problem("e2-standard-8", "nvidia-l4", 1) or "")


def test_hyperdisk_only_machines_refuse_persistent_disk_boot():
    assert "hyperdisk-balanced" in (boot_disk_problem("a3-ultragpu-8g", "pd-balanced") or "")
    assert boot_disk_problem("a4-highgpu-8g", "hyperdisk-balanced") is None
    assert boot_disk_problem("g2-standard-8", "hyperdisk-balanced") is not None
    assert boot_disk_problem("a3-highgpu-8g", "pd-ssd") is None


def test_nic_layouts_placement_smt_and_capacity_for_gpu_clusters():
    from components.gpu_catalog import capacity_problem, group_placement, nic_layout, smt

    high, mega = nic_layout("a3-highgpu-8g"), nic_layout("a3-megagpu-8g")
    assert high is not None and (high.gpu_nics, high.gpu_mtu, high.host_mtu) == (4, 8244, 8896)
    assert mega is not None and mega.gpu_nics == 8
    assert nic_layout("a2-highgpu-8g") is None
    assert [group_placement(m) for m in ("a2-ultragpu-8g", "g2-standard-96", "a3-highgpu-2g")] == [
        "compact"
    ] * 3
    assert group_placement("a3-megagpu-8g") == "workload"
    assert group_placement("a3-edgegpu-8g-nolssd") == "compact"
    assert group_placement("n1-standard-8") is None
    assert smt("a2-highgpu-2g") and not smt("a4x-highgpu-4g")
    assert capacity_problem("a3-highgpu-4g", spot=False) is not None
    assert capacity_problem("a3-highgpu-4g", spot=True) is None
    assert capacity_problem("a3-highgpu-8g", spot=False) is None
    assert "reservations" in (capacity_problem("a4x-highgpu-4g", spot=True) or "")
