"""examples/: valid against the upstream JobSet CRD and consistent with the stack they target."""

from __future__ import annotations

import yaml

from components.tpu_catalog import ACCELERATOR_LABEL, TOPOLOGY_LABEL, TPU_RESOURCE
from plan.engine import REPO_ROOT, load_stack_config
from stacks.loading import parse
from tests.conftest import build_graph
from tests.gke.test_kueue import nominal, objects_of
from workload.schemas import validate

EXAMPLE = REPO_ROOT / "examples" / "multislice-jobset.yaml"


def test_multislice_jobset_matches_the_jobset_crd():
    jobset = yaml.safe_load(EXAMPLE.read_text())
    assert validate(jobset) == []
    assert jobset["metadata"]["annotations"] == {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"
    }


def test_multislice_jobset_fits_the_prod_stack():
    jobset = yaml.safe_load(EXAMPLE.read_text())
    raw = load_stack_config("prod")
    config = parse(raw, "prod")
    graph = build_graph(raw, stack="prod")
    labels = jobset["metadata"]["labels"]
    namespace = jobset["metadata"]["namespace"]

    local_queues = {
        (q["metadata"]["namespace"], q["metadata"]["name"]): q
        for q in objects_of(graph, "LocalQueue").values()
    }
    local_queue = local_queues[(namespace, labels["kueue.x-k8s.io/queue-name"])]
    assert labels["kueue.x-k8s.io/priority-class"] in objects_of(graph, "WorkloadPriorityClass")

    (job,) = jobset["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    flavors = [
        f
        for f in objects_of(graph, "ResourceFlavor").values()
        if f["spec"].get("nodeLabels", {}).get(ACCELERATOR_LABEL)
        == pod["nodeSelector"][ACCELERATOR_LABEL]
        and f["spec"]["nodeLabels"][TOPOLOGY_LABEL] == pod["nodeSelector"][TOPOLOGY_LABEL]
    ]
    assert len(flavors) == 1
    flavor = flavors[0]["metadata"]["name"]
    (slice_,) = [
        s for s in config.tpu_slices if s.shape.topology == pod["nodeSelector"][TOPOLOGY_LABEL]
    ]
    shape = slice_.shape
    assert job["template"]["spec"]["parallelism"] == shape.hosts
    assert job["template"]["spec"]["completions"] == shape.hosts
    assert pod["containers"][0]["resources"]["limits"][TPU_RESOURCE] == shape.chips_per_host
    assert job["replicas"] <= slice_.count
    queue = objects_of(graph, "ClusterQueue")[local_queue["spec"]["clusterQueue"]]
    assert nominal(queue)[flavor][TPU_RESOURCE] >= job["replicas"] * shape.chips
    assert pod["serviceAccountName"] == next(
        t.service_account for t in config.teams if t.name == namespace
    )
