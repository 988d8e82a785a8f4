"""GKE GPU node pools."""

from __future__ import annotations

import pytest

from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import with_config

GPU_L4 = {"machineType": "g2-standard-8", "acceleratorType": "nvidia-l4"}


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


def _pool_problems(**pool: object) -> dict[str, str]:
    entry = {"name": "g", **GPU_L4, **pool}
    with pytest.raises(ConfigError) as error:
        parse(with_config(gpuPools=[entry]), "test")
    return dict(error.value.rendered)


def test_gpu_pool_names_longer_than_gkes_limit_are_refused():
    found = _pool_problems(name="g" * 41)
    assert found == {
        "ai-infra:gpuPools[0].name": (
            "'" + "g" * 41 + "' is 41 characters; GKE node pool names are at most 40, so shorten it"
        )
    }
    parse(with_config(gpuPools=[{**GPU_L4, "name": "g" * 40}]), "test")


@pytest.mark.parametrize(
    ("machine", "gpu", "count", "refused", "accepted"),
    [
        # "a3-highgpu-1g, 2g and 4g come only as Spot or flex-start" (gpu_catalog.SERIES).
        (
            "a3-highgpu-1g",
            "nvidia-h100-80gb",
            1,
            ["on-demand", "reservation"],
            ["spot", "flex-start"],
        ),
        (
            "a3-ultragpu-8g",
            "nvidia-h200-141gb",
            8,
            ["on-demand"],
            ["spot", "reservation", "flex-start"],
        ),
        ("a4x-highgpu-4g", "nvidia-gb200", 4, ["on-demand", "spot", "flex-start"], ["reservation"]),
    ],
)
def test_gpu_pools_on_capacity_the_machine_is_not_sold_as_are_refused(
    machine, gpu, count, refused, accepted
):
    pool = {
        "machineType": machine,
        "acceleratorType": gpu,
        "acceleratorCount": count,
        "diskType": "hyperdisk-balanced",
        # Capacity alone: the GPU NICs of a3-ultragpu-8g are tests/gke/test_gpu_fast_path.py's.
        "gpuDirect": False,
    }
    for provisioning in refused:
        named = {"reservation": "gpu-reservation"} if provisioning == "reservation" else {}
        found = _pool_problems(**pool, **named, provisioning=provisioning)
        assert list(found) == ["ai-infra:gpuPools[0].provisioning"], provisioning
        assert machine in found["ai-infra:gpuPools[0].provisioning"]
    for provisioning in accepted:
        entry = {"name": "g", **pool, "provisioning": provisioning}
        if provisioning == "reservation":
            entry["reservation"] = "gpu-reservation"
        parse(with_config(gpuPools=[entry]), "test")
