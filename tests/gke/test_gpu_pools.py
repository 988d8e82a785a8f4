"""GKE GPU node pools."""

from __future__ import annotations


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
