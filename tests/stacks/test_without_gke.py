"""Stacks without GKE (`ai-infra:cluster.enabled: false`): a Slurm-, GPU-cluster- or
TPU-VM-only stack builds no GKE cluster, CPU pool, JobSet or Kueue, keeps its network, buckets
and identities, refuses every key that needs the cluster at its path, and says so in the plan
and its outputs."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pulumi
import pytest

from graph.engine import record_program, run_program
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config
from tests.slurm.test_config import CLUSTER, REGION

NO_GKE = {"cluster": {"enabled": False}}


def slurm_only(**more: Any) -> dict[str, Any]:
    return with_config(**REGION, **NO_GKE, slurm=CLUSTER, **more)


def test_a_slurm_only_stack_builds_no_gke_and_keeps_network_buckets_and_identities():
    graph = build_graph(slurm_only(buckets=[{"name": "data"}]))
    types = {r.type for r in graph}
    assert not {t for t in types if t.startswith(("gcp:container/", "kubernetes:"))}, types
    assert "pulumi:providers:kubernetes" not in types
    assert not [r.urn for r in graph if r.name == "gke-nodes-sa"]
    for kept in ("network-subnet", "network-nat", "bucket-data-bucket", "slurm-controller"):
        assert graph.named(kept).urn
    with_gke = build_graph(with_config(**REGION, slurm=CLUSTER, buckets=[{"name": "data"}]))
    # Nothing outside GKE changes when it goes.
    gke_free = {r.urn for r in with_gke} - {
        r.urn
        for r in with_gke
        if r.type.startswith(("gcp:container/", "kubernetes:", "pulumi:providers:kubernetes"))
    }
    assert {r.urn for r in graph} <= gke_free


def test_a_tpu_vm_only_stack_builds_without_gke():
    graph = build_graph(with_config(**NO_GKE, tpuVms=[{"name": "vm", "accelerator": "v5p-8"}]))
    assert graph.of_type("pulumi-python:dynamic/tpu:QueuedResource")
    assert not graph.of_type("gcp:container/cluster:Cluster")


@pytest.mark.parametrize(
    ("key", "value", "path", "fix"),
    [
        ("tpuSlices", [{"name": "s", "accelerator": "v5p-8"}], "ai-infra:tpuSlices", "tpuVms"),
        (
            "gpuPools",
            [{"name": "g", "machineType": "g2-standard-4", "acceleratorType": "nvidia-l4"}],
            "ai-infra:gpuPools",
            "gpuClusters",
        ),
        (
            "workloadIdentities",
            [{"name": "wi", "namespace": "jobs", "serviceAccount": "runner"}],
            "ai-infra:workloadIdentities",
            "needs the GKE cluster",
        ),
        ("teams", [{"name": "vision"}], "ai-infra:teams", "needs the GKE cluster"),
        (
            "tpuProvisioner",
            {"enabled": True, "image": "us-docker.pkg.dev/p/r/prov@sha256:" + "0" * 64},
            "ai-infra:tpuProvisioner.enabled",
            "set it false",
        ),
        ("kueue", {"cohort": "mine"}, "ai-infra:kueue", "remove ai-infra:kueue"),
    ],
)
def test_keys_that_need_gke_are_refused_at_their_path(key, value, path, fix):
    graph, error = record_program(slurm_only(**{key: value}))
    assert isinstance(error, ConfigError), f"{key}: accepted"
    found = dict(error.rendered)
    assert path in found and fix in found[path], found
    assert graph.resources == []


def test_cluster_settings_without_a_cluster_are_refused_by_their_key():
    raw = with_config(
        **REGION, slurm=CLUSTER, cluster={"enabled": False, "cpuPool": {"spot": True}}
    )
    graph, error = record_program(raw)
    assert isinstance(error, ConfigError)
    assert dict(error.rendered)["ai-infra:cluster.cpuPool"].startswith("has no effect")
    assert graph.resources == []


def test_the_plan_and_outputs_say_there_is_no_cluster():
    from plan.render import render
    from stacks import environment, loading

    raw = slurm_only()
    graph = build_graph(raw, stack="nogke")
    plan = render(graph, loading.parse(raw, "nogke"), "nogke")
    assert "GKE:\n  not built (cluster.enabled: false)" in plan
    exported: dict[str, Any] = {}

    def program() -> None:
        env = environment.build(loading.load())
        assert env.gke is None
        with mock.patch.object(pulumi, "export", exported.__setitem__):
            environment.export(env)

    run_program(raw, program=program)
    assert "kubeconfig" not in exported and "clusterName" not in exported
    assert exported["workloadIdentities"] == {} and exported["teams"] == {}
    assert exported["slurm"]["controller"] == {"name": "tpu-controller", "zone": "us-central2-b"}
