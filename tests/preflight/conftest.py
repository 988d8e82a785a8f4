"""A stack that draws on every kind of capacity preflight checks, its plan and needs (built
once), and a `World` in which it passes: a project that has what the plan needs."""

from __future__ import annotations

import copy
import socket
from typing import Any

import pytest
from google.cloud import compute_v1, container_v1, orgpolicy_v2, service_usage_v1

from graph.engine import Graph
from preflight.live import Live, retry_policy
from preflight.needs import Needs, derive
from stacks.config import StackConfig
from stacks.loading import parse
from tests.conftest import build_graph
from tests.preflight.fakes import World, quota, quota_info

PROJECT = "ml-preflight"
STACK: dict[str, Any] = {
    "gcp:project": PROJECT,
    "gcp:region": "us-central1",
    "gcp:zone": "us-central1-a",
    "ai-infra:protect": False,
    "ai-infra:network": {"podsCidr": "10.64.0.0/14"},
    "ai-infra:cluster": {
        # The TPU provisioner needs a cluster without a release channel.
        "releaseChannel": "NONE",
        "maxPodsPerNode": 32,
        "rbacSecurityGroup": "gke-security-groups@example.com",
    },
    "ai-infra:tpuSlices": [
        # 4 hosts, 16 v5p chips on Spot: preemptible v5p quota.
        {"name": "spot", "accelerator": "v5p-32", "provisioning": "spot"},
        # 2 hosts from a reservation another project shares.
        {
            "name": "held",
            "accelerator": "v5p-16",
            "provisioning": "reservation",
            "reservation": "projects/capacity-pool/reservations/v5p-held",
        },
        # 4 hosts, 16 v6e chips on Spot: preemptible v6e quota. (Flex-start TPU slices
        # cannot share a cluster with the TPU provisioner; tests make one from this pool.)
        {
            "name": "v6e",
            "accelerator": "v6e-16",
            "zone": "us-central1-b",
            "provisioning": "spot",
        },
    ],
    "ai-infra:gpuPools": [
        {
            "name": "l4",
            "machineType": "g2-standard-24",
            "acceleratorType": "nvidia-l4",
            "acceleratorCount": 2,
            "maxNodes": 3,
        }
    ],
    "ai-infra:tpuProvisioner": {
        "enabled": True,
        "image": "us-docker.pkg.dev/ml-preflight/images/tpu-provisioner@sha256:" + "a" * 64,
        # Two v5p-32 slices on demand: 32 chips of on-demand v5p quota.
        "quota": {"v5p-32": 2},
    },
    # One a2-highgpu-2g (2 A100s) with a 2560 GiB BASIC_SSD Filestore share.
    "ai-infra:gpuClusters": [{"name": "demo", "nfsShares": [{"mountPath": "/nfs/home"}]}],
    # Two v5p-8 slices on Spot through the Cloud TPU API: 16 preemptible v5p cores.
    "ai-infra:tpuVms": [
        {"name": "mx", "accelerator": "v5p-8", "nodeCount": 2, "provisioning": "spot"}
    ],
    # Up to four v2-8 TPU VMs: 32 on-demand v2 cores, single-device quota; /home on a
    # 1024 GiB BASIC_HDD Filestore share (the Slurm default).
    "ai-infra:slurm": {
        "clusterName": "tpu",
        "tpuNodesets": [
            {"name": "v2", "nodeType": "v2-8", "nodeCountDynamicMax": 4, "zone": "us-central1-b"}
        ],
        "partitions": [{"name": "tpu", "nodesets": ["v2"]}],
    },
    "ai-infra:buckets": [{"name": "data"}],
    "ai-infra:teams": [{"name": "research", "groups": ["ml-research@example.com"]}],
}
ZONES = ("us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f")
DLVM = ("deeplearning-platform-release", "pytorch-2-9-cu129-ubuntu-2404-nvidia-580")
SLURM_IMAGE = ("schedmd-slurm-public", "slurm-gcp-6-12-hpc-rocky-linux-8")
REGION = (("region", "us-central1"),)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Preflight's tests answer from fakes: any socket they open is a bug."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a preflight test reached for the network: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="session")
def planned() -> tuple[StackConfig, Graph]:
    raw = copy.deepcopy(STACK)
    return parse(raw, "preflight"), build_graph(raw, stack="preflight")


@pytest.fixture(scope="session")
def needs(planned: tuple[StackConfig, Graph]) -> Needs:
    return derive(*planned)


def passing_world() -> World:
    """A project with room for everything STACK plans."""
    region = compute_v1.Region(
        name="us-central1",
        zones=[
            f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{z}" for z in ZONES
        ],
        quotas=[
            quota("CPUS", 400, 20),
            quota("A2_CPUS", 48),
            quota("C2_CPUS", 24),
            quota("N2_CPUS", 24, 2),
            quota("NVIDIA_L4_GPUS", 8),
            quota("NVIDIA_A100_GPUS", 4),
            quota("IN_USE_ADDRESSES", 8, 1),
        ],
    )
    general = {"e2-standard-8": 8, "e2-standard-4": 4}
    compute_quotas = [
        quota_info("compute.googleapis.com", "TPU-V5P-per-project-region", {REGION: 64}),
        quota_info(
            "compute.googleapis.com", "PREEMPTIBLE-TPU-V5P-per-project-region", {REGION: 64}
        ),
        quota_info(
            "compute.googleapis.com", "PREEMPTIBLE-TPU-V6E-per-project-region", {REGION: 64}
        ),
        quota_info(
            "compute.googleapis.com",
            "CPUS-PER-VM-FAMILY-per-project-region",
            {(*REGION, ("vm_family", "G2")): 96, REGION: 0},
        ),
    ]
    tpu_quotas = [
        quota_info(
            "tpu.googleapis.com",
            "TPUV5PPreemptiblePerProjectPerZoneForTPUAPI",
            {(("zone", "us-central1-a"),): 64},
            display_name="Preemptible TPU v5p cores per project per zone",
        ),
        quota_info(
            "tpu.googleapis.com",
            "TPUV2PerProjectPerZoneForTPUAPI",
            {(("zone", "us-central1-b"),): 64},
            display_name="TPU v2 cores per project per zone",
        ),
        # The per-region limits hold too; this one counts chips.
        quota_info(
            "tpu.googleapis.com",
            "TPUV5PPreemptiblePerProjectPerRegionForTPUAPI",
            {REGION: 32},
            display_name="Preemptible TPU v5p chips per project per region",
        ),
        quota_info(
            "tpu.googleapis.com",
            "TPUV2PerProjectPerRegionForTPUAPI",
            {REGION: 64},
            display_name="TPU v2 cores per project per region",
        ),
    ]
    regular = container_v1.ServerConfig.ReleaseChannelConfig(
        channel=container_v1.ReleaseChannel.Channel.REGULAR,
        default_version="1.34.1-gke.1000",
        valid_versions=["1.34.1-gke.1000", "1.33.5-gke.1200"],
    )
    reservation = compute_v1.Reservation(
        name="v5p-held",
        zone="https://www.googleapis.com/compute/v1/projects/capacity-pool/zones/us-central1-a",
        status="READY",
        specific_reservation_required=True,
        specific_reservation=compute_v1.AllocationSpecificSKUReservation(
            count=2,
            in_use_count=0,
            instance_properties=compute_v1.AllocationSpecificSKUAllocationReservedInstanceProperties(
                machine_type="ct5p-hightpu-4t"
            ),
        ),
        share_settings=compute_v1.ShareSettings(
            share_type="SPECIFIC_PROJECTS",
            project_map={PROJECT: compute_v1.ShareSettingsProjectConfig(project_id=PROJECT)},
        ),
    )
    return World(
        project=PROJECT,
        services={"containerfilesystem.googleapis.com": service_usage_v1.State.DISABLED},
        regions={"us-central1": region},
        global_quotas=[quota("CPUS_ALL_REGIONS", 1000, 100), quota("GPUS_ALL_REGIONS", 16)],
        reservations={("capacity-pool", "us-central1-a", "v5p-held"): reservation},
        machine_types={
            "us-central1-a": {
                **general,
                "g2-standard-24": 24,
                "a2-highgpu-2g": 24,
                "c2-standard-4": 4,
                "n2-standard-2": 2,
                "ct5p-hightpu-4t": 208,
            },
            "us-central1-b": {**general, "ct6e-standard-4t": 180},
            "us-central1-c": dict(general),
            "us-central1-f": dict(general),
        },
        accelerator_types={"us-central1-a": {"nvidia-l4": 8, "nvidia-tesla-a100": 16}},
        families={
            DLVM: compute_v1.Image(name="pytorch-2-9-cu129-v20261101", status="READY"),
            SLURM_IMAGE: compute_v1.Image(
                name="slurm-gcp-6-12-hpc-rocky-linux-8-v1", status="READY"
            ),
        },
        tpu_types={"us-central1-a": {"v5p-8"}, "us-central1-b": {"v2-8"}},
        runtimes={
            "us-central1-a": ["tpu-ubuntu2204-base", "v2-alpha-tpuv5"],
            "us-central1-b": ["tpu-ubuntu2204-base", "tpu-vm-tf-2.14.0"],
        },
        server_configs={
            "us-central1": container_v1.ServerConfig(
                default_cluster_version="1.34.1-gke.1000",
                valid_master_versions=["1.34.1-gke.1000", "1.33.5-gke.1200", "1.32.9-gke.100"],
                valid_image_types=["COS_CONTAINERD", "UBUNTU_CONTAINERD"],
                channels=[regular],
            )
        },
        quota_infos={
            "compute.googleapis.com": compute_quotas,
            "tpu.googleapis.com": tpu_quotas,
            "file.googleapis.com": [
                quota_info("file.googleapis.com", "PremiumStorageGbPerRegion", {REGION: 10240}),
                quota_info("file.googleapis.com", "StandardStorageGbPerRegion", {REGION: 10240}),
            ],
        },
        policies={
            "gcp.resourceLocations": orgpolicy_v2.Policy(
                spec=orgpolicy_v2.PolicySpec(
                    rules=[
                        orgpolicy_v2.PolicySpec.PolicyRule(
                            values=orgpolicy_v2.PolicySpec.PolicyRule.StringValues(
                                allowed_values=["in:us-central1-locations", "us"]
                            )
                        )
                    ]
                )
            )
        },
    )


@pytest.fixture
def world() -> World:
    return passing_world()


def live(world: World) -> Live:
    """Preflight's reader on the fake clients, retrying fast."""
    return Live(world.project, world.clients(), retry=retry_policy(0.001, 0.002, 0.5))
