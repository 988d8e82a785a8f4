"""Workload identities: a Google service account usable by exactly one Kubernetes one."""

from __future__ import annotations

from tests.components.test_buckets import BUCKETS

IDENTITY = {
    "name": "trainer",
    "namespace": "ml",
    "serviceAccount": "runner",
    "roles": ["roles/tpu.viewer"],
    "buckets": {"data": "read", "ckpt": "write"},
}


def test_workload_identity_binds_exactly_one_kubernetes_service_account(build):
    graph = build(buckets=BUCKETS, workloadIdentities=[IDENTITY])
    gsa = graph.named("wi-trainer-sa")
    assert gsa.inputs["accountId"] == "ai-test-trainer"
    member = "serviceAccount:ai-test-trainer@test-project.iam.gserviceaccount.com"
    binding = graph.named("wi-trainer-iam.workloadIdentityUser")
    assert binding.inputs["role"] == "roles/iam.workloadIdentityUser"
    assert binding.inputs["member"] == "serviceAccount:test-project.svc.id.goog[ml/runner]"
    assert gsa.urn in binding.dependencies, binding.urn
    role = graph.named("wi-trainer-tpu.viewer")
    assert (role.inputs["role"], role.inputs["member"]) == ("roles/tpu.viewer", member)
    grants = {
        g.name: (g.inputs["bucket"], g.inputs["role"])
        for g in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        if g.inputs["member"] == member
    }
    assert grants == {
        "wi-trainer-bucket-data-storage.objectViewer": (
            "test-project-ai-test-data",
            "roles/storage.objectViewer",
        ),
        "wi-trainer-bucket-ckpt-storage.objectUser": (
            "test-project-ai-test-ckpt",
            "roles/storage.objectUser",
        ),
    }
    # The identity pool exists once the cluster does: the account, and so the binding, wait.
    assert graph.named("gke-cluster").urn in gsa.dependencies, gsa.urn
