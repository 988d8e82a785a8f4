"""What preflight reads off a built plan: VMs with their machine types, zones, counts and
capacity, Cloud TPU API nodes, shares, buckets, grants and resource types. Config edits must
flow through the registered resources without preflight knowing the field."""

from __future__ import annotations

import copy

from components.locations import region_of
from graph.capacity import Machines
from graph.model import unwrap
from preflight.needs import Needs, derive, tpu_slices
from stacks.loading import parse
from tests.conftest import build_graph
from tests.preflight.conftest import STACK


def _by_source(needs: Needs, fragment: str) -> list[Machines]:
    found = [v for v in needs.vms if fragment in v.source]
    assert found, f"no VMs from {fragment}: {[v.source for v in needs.vms]}"
    return found


def test_gke_pools_carry_machine_zone_count_and_capacity(needs: Needs) -> None:
    (cpu,) = _by_source(needs, "NodePool gke-cpu")
    # A regional pool without node locations: GKE spreads maxNodes (3) over three zones.
    assert (cpu.machine_type, cpu.zones, cpu.full, cpu.capacity) == (
        "e2-standard-8",
        (),
        9,
        "on-demand",
    )
    (spot,) = _by_source(needs, "tpu-spot-0")
    assert spot.zones == ("us-central1-a",) and spot.full == 4 and spot.capacity == "spot"
    assert spot.tpu is not None and (spot.tpu.family.prefix, spot.tpu.chips) == ("v5p", 4)
    (held,) = _by_source(needs, "tpu-held-0")
    assert held.capacity == "reservation"
    assert held.reservation == "projects/capacity-pool/reservations/v5p-held"
    (v6e,) = _by_source(needs, "tpu-v6e-0")
    assert (v6e.capacity, v6e.full, v6e.zones) == ("spot", 4, ("us-central1-b",))
    (l4,) = _by_source(needs, "gpu-l4-pool")
    assert l4.gpus == (("nvidia-l4", 2),) and l4.full == 3 and l4.tpu is None


def test_provisioner_pools_count_at_the_quota_s_most(needs: Needs) -> None:
    (provisioned,) = _by_source(needs, "tpuProvisioner.quota.v5p-32")
    # Two v5p-32 slices of 4 hosts each, in the provisioner's zone, on demand.
    assert provisioned.machine_type == "ct5p-hightpu-4t"
    assert (provisioned.full, provisioned.capacity) == (8, "on-demand")
    assert provisioned.zones == ("us-central1-a",) and provisioned.gke


def test_instance_groups_take_their_template(needs: Needs) -> None:
    (group,) = _by_source(needs, "InstanceGroupManager")
    assert (group.machine_type, group.full, group.gpus) == (
        "a2-highgpu-2g",
        1,
        (("nvidia-tesla-a100", 2),),
    )
    assert group.images == (
        "projects/deeplearning-platform-release/global/images/family/"
        "pytorch-2-9-cu129-ubuntu-2404-nvidia-580",
    )
    # GPU clusters keep Secure Boot off (the DLVM's NVIDIA driver is unsigned).
    assert group.secure_boot is False


def test_instances_boot_their_image(needs: Needs) -> None:
    controller, login = _by_source(needs, "Instance slurm-")
    assert controller.machine_type == "c2-standard-4" and login.machine_type == "n2-standard-2"
    assert controller.images == (
        "projects/schedmd-slurm-public/global/images/family/slurm-gcp-6-12-hpc-rocky-linux-8",
    )
    assert controller.metadata["enable-oslogin"] == "TRUE"


def test_cloud_tpu_nodes_from_queued_resources_and_slurm(needs: Needs) -> None:
    queued, nodeset = needs.tpu_nodes
    slices = tpu_slices(queued)
    assert (slices.accelerator, queued.zone, slices.count, slices.cores) == (
        "v5p-8",
        "us-central1-a",
        2,
        8,
    )
    assert (queued.capacity, slices.runtime) == ("spot", "v2-alpha-tpuv5")
    # Slurm: four dynamic nodes of a one-worker v2-8 nodeset are four slices.
    slices = tpu_slices(nodeset)
    assert (slices.accelerator, nodeset.zone, slices.count) == ("v2-8", "us-central1-b", 4)
    assert slices.runtime == "tpu-vm-tf-2.14.0" and nodeset.capacity == "on-demand"


def test_shares_buckets_members_and_types(needs: Needs) -> None:
    assert sorted((s.region, s.tier, s.gib) for s in needs.shares) == [
        ("us-central1", "BASIC_HDD", 1024),
        ("us-central1", "BASIC_SSD", 2560),
    ]
    assert [name for _, name in needs.buckets] == [
        "ml-preflight-ai-preflight-data",
        "ml-preflight-ai-preflight-slurm-tpu",
    ]
    assert "group:ml-research@example.com" in {m for m, _ in needs.members}
    types = dict(needs.types)
    assert types["gcp:container/nodePool:NodePool"] == 6
    assert types["pulumi-python:dynamic/tpu:QueuedResource"] == 1
    assert not any(t.startswith("ai-infra:") for t in types), "components are not created"
    assert "ai-preflight-nodes@ml-preflight.iam.gserviceaccount.com" in needs.service_accounts
    assert set(needs.locations) == {"us-central1", "us-central1-a", "us-central1-b"}


def test_an_edit_flows_through_the_registered_resources() -> None:
    """Preflight reads the node pool the program registers, so a config change it has never
    heard of (here: count and provisioning of a slice) changes what it checks."""
    raw = copy.deepcopy(STACK)
    raw["ai-infra:tpuSlices"][0].update(count=3, provisioning="on-demand")
    needs = derive(parse(raw, "edit"), build_graph(raw, stack="edit"))
    spot_pools = _by_source(needs, "NodePool tpu-spot-")
    assert len(spot_pools) == 3
    assert {(v.full, v.capacity) for v in spot_pools} == {(4, "on-demand")}


def test_secrets_are_unwrapped_and_zones_map_to_regions() -> None:
    secret = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
    assert unwrap({"a": [{**secret, "value": "hidden"}]}) == {"a": ["hidden"]}
    assert region_of("us-east5-a") == "us-east5"
    assert region_of("us-central1-ai1a") == "us-central1"
    assert region_of("northamerica-northeast1") == "northamerica-northeast1"


def test_slurm_cpu_nodesets_count_at_their_most_with_their_template_image() -> None:
    """The controller creates CPU nodes from their template: preflight checks quota for every
    static and dynamic node, and the image and metadata the template gives them."""
    raw = copy.deepcopy(STACK)
    raw["ai-infra:slurm"]["cpuNodesets"] = [
        {
            "name": "cpu",
            "machineType": "n2-standard-8",
            "nodeCountStatic": 1,
            "nodeCountDynamicMax": 3,
            "spot": True,
        }
    ]
    raw["ai-infra:slurm"]["partitions"].append(
        {"name": "debug", "nodesets": ["cpu"], "exclusive": False}
    )
    needs = derive(parse(raw, "cpu"), build_graph(raw, stack="cpu"))
    (vms,) = [v for v in needs.vms if v.source.startswith("slurm.cpuNodesets[0]")]
    assert (vms.machine_type, vms.full, vms.capacity) == ("n2-standard-8", 4, "spot")
    assert vms.images == (
        "projects/schedmd-slurm-public/global/images/family/slurm-gcp-6-12-hpc-rocky-linux-8",
    )
    assert vms.metadata["enable-oslogin"] == "TRUE"
    assert "pulumi-python:dynamic/slurm:ComputeCleanup" in dict(needs.types)
