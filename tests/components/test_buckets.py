"""Workload identities, buckets and GPU pools."""

from __future__ import annotations

BUCKETS = [
    {
        "name": "data",
        "members": [{"member": "group:readers@example.com", "role": "roles/storage.objectViewer"}],
    },
    {"name": "ckpt", "softDeleteDays": 30, "versioning": True, "deleteAfterDays": 60},
]
IDENTITY = {
    "name": "trainer",
    "namespace": "ml",
    "serviceAccount": "runner",
    "roles": ["roles/tpu.viewer"],
    "buckets": {"data": "read", "ckpt": "write"},
}


def test_workload_identity_binds_exactly_one_kubernetes_service_account(build):
    graph = build(buckets=BUCKETS, workloadIdentities=[IDENTITY])
    gsa = graph.named("wi-trainer-gsa")
    assert gsa.inputs["accountId"] == "ai-test-trainer"
    member = "serviceAccount:ai-test-trainer@test-project.iam.gserviceaccount.com"
    binding = graph.named("wi-trainer-workload-identity")
    assert binding.inputs["role"] == "roles/iam.workloadIdentityUser"
    assert binding.inputs["member"] == "serviceAccount:test-project.svc.id.goog[ml/runner]"
    assert gsa.urn in binding.dependencies
    role = graph.named("wi-trainer-tpu.viewer")
    assert (role.inputs["role"], role.inputs["member"]) == ("roles/tpu.viewer", member)
    grants = {
        g.inputs["bucket"]: g.inputs["role"]
        for g in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        if g.inputs["member"] == member
    }
    assert grants == {
        "test-project-ai-test-data": "roles/storage.objectViewer",
        "test-project-ai-test-ckpt": "roles/storage.objectUser",
    }
    # The identity pool exists once the cluster does: the account, and so the binding, wait.
    assert graph.named("gke-cluster").urn in gsa.dependencies


def test_bucket_settings(build):
    graph = build(buckets=BUCKETS)
    ckpt = graph.named("bucket-ckpt-bucket").inputs
    assert ckpt["name"] == "test-project-ai-test-ckpt"
    assert ckpt["location"] == "US-EAST5"
    assert ckpt["softDeletePolicy"] == {"retentionDurationSeconds": 30 * 86_400}
    assert ckpt["versioning"] == {"enabled": True}
    assert ckpt["lifecycleRules"][0]["condition"] == {"age": 60}
    assert ckpt["lifecycleRules"][0]["action"] == {"type": "Delete"}
    data = graph.named("bucket-data-bucket").inputs
    assert data["softDeletePolicy"] == {"retentionDurationSeconds": 7 * 86_400}
    grant = graph.named("bucket-data-group-readers-example.com-storage.objectviewer").inputs
    assert grant == {
        "bucket": "test-project-ai-test-data",
        "role": "roles/storage.objectViewer",
        "member": "group:readers@example.com",
    }


def test_protected_stack_protects_buckets(build):
    graph = build(buckets=BUCKETS, protect=True)
    for bucket in graph.of_type("gcp:storage/bucket:Bucket"):
        assert bucket.protect and bucket.inputs["forceDestroy"] is False, bucket.urn


def test_gpu_pool(build):
    graph = build(
        gpuPools=[
            {
                "name": "l4",
                "machineType": "g2-standard-24",
                "acceleratorType": "nvidia-l4",
                "acceleratorCount": 2,
                "driverVersion": "LATEST",
                "maxNodes": 4,
                "provisioning": "spot",
            }
        ]
    )
    pool = graph.named("gpu-l4-pool").inputs
    assert pool["nodeConfig"]["machineType"] == "g2-standard-24"
    assert pool["nodeConfig"]["guestAccelerators"] == [
        {
            "type": "nvidia-l4",
            "count": 2,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        }
    ]
    assert pool["autoscaling"]["totalMaxNodeCount"] == 4
    assert pool["nodeConfig"]["spot"] is True
    assert pool["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
