"""The GPU machine catalog: fixed GPU complements, vCPUs, N1 attachments and limits, boot disks,
NIC layouts, capacity types and placement."""

from __future__ import annotations

import pytest

from catalog.gpu import (
    N1_MAX_VCPUS,
    arm,
    bare_metal,
    boot_disk_problem,
    capacity_problem,
    compact_limit,
    fixed_gpus,
    gpu_problem,
    group_placement,
    max_distance_problem,
    max_nics,
    n1_problem,
    nic_layout,
    roce_profile,
    series_capacity,
    smt,
)
from catalog.gpu import vcpus as catalog_vcpus


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


def test_g4_and_a4x_max_are_in_the_catalog():
    for machine, gpus in [("g4-standard-48", 1), ("g4-standard-384", 8)]:
        assert gpu_problem(machine, "nvidia-rtx-pro-6000", gpus) is None
        assert boot_disk_problem(machine, "pd-ssd") is not None
    # The fractional-GPU G4 types cannot be written as a GPU count.
    assert gpu_problem("g4-standard-12", "nvidia-rtx-pro-6000", 1) is not None
    assert gpu_problem("a4x-maxgpu-4g-metal", "nvidia-gb300", 4) is None
    assert bare_metal("a4x-maxgpu-4g-metal") and not bare_metal("a4x-highgpu-4g")
    assert arm("a4x-maxgpu-4g-metal") and not smt("a4x-maxgpu-4g-metal")
    assert capacity_problem("g4-standard-96", "on-demand") is None
    assert "reservation" in (capacity_problem("a4x-maxgpu-4g-metal", "spot") or "")
    capacity = series_capacity("a4x-maxgpu-4g-metal")
    assert capacity is not None and capacity.reservation_bound == "required"


@pytest.mark.parametrize(
    ("machine", "gpu", "count", "ok"),
    [
        ("n1-standard-96", "nvidia-tesla-v100", 1, False),
        ("n1-standard-8", "nvidia-tesla-v100", 1, True),
        ("n1-highmem-16", "nvidia-tesla-v100", 1, False),
        ("n1-standard-96", "nvidia-tesla-v100", 8, True),
        ("n1-standard-64", "nvidia-tesla-t4", 2, False),
        ("n1-standard-32", "nvidia-tesla-t4", 1, True),
        ("n1-standard-32", "nvidia-tesla-p100", 1, False),
    ],
)
def test_n1_vcpus_are_limited_by_the_gpus_attached(machine, gpu, count, ok):
    assert gpu_problem(machine, gpu, count) is None
    problem = n1_problem(machine, gpu, count)
    assert (problem is None) is ok, problem
    if problem:
        limit = N1_MAX_VCPUS[gpu][count]
        assert f"at most {limit}" in problem
        suggested = int(problem.split("use n1-standard-")[1].split(" ")[0])
        assert suggested <= limit


@pytest.mark.parametrize(
    ("machine", "vcpus", "nics"),
    [
        ("n1-standard-2", 2, 2),
        ("n1-standard-1", 1, 2),
        ("g2-standard-4", 4, 4),
        ("g2-standard-96", 96, 8),
        ("a2-highgpu-1g", 12, 8),
        ("a3-highgpu-8g", 208, 8),
        ("a4x-highgpu-4g", 140, 8),
    ],
)
def test_nics_are_capped_by_vcpus(machine, vcpus, nics):
    assert catalog_vcpus(machine) == vcpus
    assert max_nics(machine) == nics


def test_nic_layouts_of_gpudirect_and_rdma():
    high, mega = nic_layout("a3-highgpu-8g"), nic_layout("a3-megagpu-8g")
    assert high is not None and (high.gpu_nics, high.gpu_mtu, high.host_mtu) == (4, 8244, 8896)
    assert (high.transport, high.nics) == ("tcpx", 5)
    assert mega is not None and (mega.transport, mega.nics) == ("tcpxo", 9)
    for machine, rdma_nics in [("a3-ultragpu-8g", 8), ("a4-highgpu-8g", 8), ("a4x-highgpu-4g", 4)]:
        layout = nic_layout(machine)
        assert layout is not None and layout.rdma
        assert (layout.host_nics, layout.gpu_nics, layout.gpu_mtu) == (2, rdma_nics, 8896)
    assert nic_layout("a2-highgpu-8g") is None
    profile = roce_profile("p", "us-east5-a")
    assert profile == "projects/p/global/networkProfiles/us-east5-a-vpc-roce"


@pytest.mark.parametrize(
    ("machine", "provisioning", "placement"),
    [
        # Workload policies only where the AI Hypercomputer table lists the capacity type.
        ("a3-highgpu-8g", "on-demand", None),
        ("a3-megagpu-8g", "on-demand", None),
        ("a3-highgpu-8g", "spot", "workload"),
        ("a3-megagpu-8g", "reservation", "workload"),
        ("a3-megagpu-8g", "flex-start", None),
        ("a3-ultragpu-8g", "flex-start", "workload"),
        ("a4-highgpu-8g", "spot", "workload"),
        ("a4x-highgpu-4g", "reservation", "workload"),
        # Compact placement for general-purpose GPUs, not with reservations or flex-start.
        ("a2-ultragpu-8g", "on-demand", "compact"),
        ("g2-standard-96", "spot", "compact"),
        ("g4-standard-48", "on-demand", "compact"),
        ("g4-standard-48", "flex-start", None),
        ("a3-highgpu-2g", "spot", "compact"),
        ("a3-edgegpu-8g-nolssd", "on-demand", "compact"),
        ("a2-highgpu-8g", "reservation", None),
        ("n1-standard-8", "on-demand", None),
    ],
)
def test_placement_follows_machine_and_capacity(machine, provisioning, placement):
    assert group_placement(machine, provisioning) == placement


def test_compact_limits_per_max_distance():
    assert [compact_limit("a2-highgpu-8g", d) for d in (1, 2, 3, None)] == [22, 150, 1500, 1500]
    assert compact_limit("a3-highgpu-4g", 2) == 256
    assert max_distance_problem("a3-highgpu-4g", 1) is not None
    assert max_distance_problem("a2-highgpu-8g", 1) is None


@pytest.mark.parametrize(
    ("machine", "allowed"),
    [
        ("a3-highgpu-4g", {"spot", "flex-start"}),
        ("a3-highgpu-8g", {"on-demand", "spot", "flex-start", "reservation"}),
        ("a3-ultragpu-8g", {"spot", "flex-start", "reservation"}),
        ("a4-highgpu-8g", {"spot", "flex-start", "reservation"}),
        ("a4x-highgpu-4g", {"reservation"}),
        ("a2-highgpu-1g", {"on-demand", "spot", "reservation"}),
        ("n1-standard-8", {"on-demand", "spot", "reservation"}),
    ],
)
def test_capacity_types_per_family(machine, allowed):
    offered = {p for p in ("on-demand", "spot", "flex-start", "reservation")}
    assert {p for p in offered if capacity_problem(machine, p) is None} == allowed
    refused = offered - allowed
    for provisioning in refused:
        assert "set provisioning to" in (capacity_problem(machine, provisioning) or "")


def test_smt():
    assert smt("a2-highgpu-2g") and not smt("a4x-highgpu-4g")
