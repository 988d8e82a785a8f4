"""Team CPU and memory quota derived from the nodes behind their TPU and GPU quota: a job that
takes a team's whole accelerator quota needs no borrowed CPU, so another team's small job
cannot reclaim it for CPU."""

from __future__ import annotations

import math

from catalog.tpu import resolve
from components.gke.quota import GIB, MIB, allocatable, gpu_node, tpu_node
from graph.engine import load_stack_config
from stacks import environment
from stacks.loading import parse
from tests.conftest import build_graph, with_config
from tests.gke.test_kueue import nominal, objects_of


def test_allocatable_follows_gkes_reservation_brackets():
    # 4 vCPUs: 6% + 1% + 2 x 0.5% of a core; 16 GiB: 25% of 4, 20% of 4, 10% of 8, and the
    # 100 MiB eviction threshold.
    assert allocatable(4, 16) == (4000 - 60 - 10 - 10, 16 * GIB - math.ceil(2.6 * GIB) - 100 * MIB)
    # A v6e host: 180 vCPUs, 720 GiB; above 4 cores 0.25%, above 128 GiB 2%.
    cpu, memory = allocatable(180, 720)
    assert cpu == 180_000 - 80 - 440
    reserved = (1 + 0.8 + 0.8 + 0.06 * 112 + 0.02 * 592) * GIB + 100 * MIB
    assert memory == 720 * GIB - math.ceil(reserved)


def test_node_shapes_come_from_the_catalogs():
    v6e = tpu_node(resolve("v6e-256"))
    assert (v6e.machine_type, v6e.units) == ("ct6e-standard-4t", 4)
    assert (v6e.cpu_millis, v6e.memory_bytes) == allocatable(180, 720)
    assert gpu_node("a3-highgpu-8g", 8) is not None
    # N1 machines take attached GPUs; the catalog has no memory figure for them.
    assert gpu_node("n1-standard-8", 1) is None


def test_a_v6e_256_job_of_32_cores_per_pod_runs_on_finetunes_own_cpu():
    graph = build_graph(load_stack_config("prod"), stack="prod")
    queue = objects_of(graph, "ClusterQueue")["finetune"]
    quota = nominal(queue)
    # finetune holds three of prod's four v6e-256 slices; one job on all of them asks 32
    # cores and no more than its share of memory on each of 3 x 64 hosts.
    hosts = int(quota["v6e-256"]["google.com/tpu"]) // 4
    assert hosts == 192
    cpu = int(quota["cpu"]["cpu"])
    assert cpu >= hosts * 32
    node = tpu_node(resolve("v6e-256"))
    assert cpu == hosts * node.cpu_millis // 1000
    assert quota["cpu"]["memory"] == f"{hosts * node.memory_bytes // GIB}Gi"


def test_teams_and_the_cohort_hold_the_cpu_of_every_node_behind_the_quota():
    # Two v5p-32 slices among three teams: two teams get one each, one team none, so its
    # jobs borrow the slices and their CPU from the cohort together.
    raw = with_config(
        tpuSlices=[{"name": "train", "accelerator": "v5p-32", "count": 3}],
        teams=[{"name": "a"}, {"name": "b"}, {"name": "c", "quota": {"train": 0}}],
    )
    graph = build_graph(raw)
    queues = objects_of(graph, "ClusterQueue")
    cohort = objects_of(graph, "Cohort")["ai-infra"]
    node = tpu_node(resolve("v5p-32"))
    per_slice = 4 * node.cpu_millis // 1000
    assert [int(nominal(queues[t])["cpu"]["cpu"]) for t in "abc"] == [per_slice, per_slice, 0]
    assert int(nominal(cohort)["cpu"]["cpu"]) == per_slice
    assert nominal(cohort)["v5p-32"]["google.com/tpu"] == 16


def test_cpu_set_below_the_nodes_behind_the_quota_is_a_warning():
    raw = with_config(
        tpuSlices=[{"name": "train", "accelerator": "v5p-32"}],
        teams=[{"name": "a", "cpu": 100, "memory": "100Gi"}],
    )
    found = environment.warnings(parse(raw, "test"))
    assert [line.split(":")[1] for line in found] == [
        "teams[0].cpu",
        "teams[0].memory",
    ]
    assert "below the 829 the nodes behind" in found[0]
    set_high = with_config(
        tpuSlices=[{"name": "train", "accelerator": "v5p-32"}],
        teams=[{"name": "a", "cpu": 1000, "memory": "4000Gi"}],
    )
    assert environment.warnings(parse(set_high, "test")) == []
    (queue,) = objects_of(build_graph(set_high), "ClusterQueue").values()
    assert nominal(queue)["cpu"] == {"cpu": "1000", "memory": "4000Gi"}


def test_a_gpu_pool_the_catalog_cannot_size_says_so():
    raw = with_config(
        gpuPools=[
            {
                "name": "t4",
                "machineType": "n1-standard-8",
                "acceleratorType": "nvidia-tesla-t4",
                "maxNodes": 2,
            }
        ],
        teams=[{"name": "a"}],
    )
    config = parse(raw, "test")
    (line,) = environment.warnings(config)
    assert line.startswith("ai-infra:teams[0].cpu: the catalog has no vCPU and memory figures")
    assert "gpu-t4" in line
    sections = dict(environment.describe(config))
    teams = "\n".join(sections["Teams (namespace/queue, nominal quota, Google service account)"])
    assert "cpu 0, memory 0Gi" in teams
