"""TPU slice node pools: shape from the catalog, placement, provisioning, count."""

from __future__ import annotations

from catalog.tpu import resolve
from components import gke
from plan.diff import Op, diff
from stacks.loading import parse
from tests.conftest import with_config

POOL = "gcp:container/nodePool:NodePool"
NETWORKING = "networking.gke.io/v1"
NO_NETWORKS: dict[str, list[str]] = {"additionalNodeNetworks": []}
CENTRAL = {"gcp:region": "us-central1", "gcp:zone": "us-central1-a"}
"""us-central1 offers every family GKE runs: v5p and v5e in -a, v6e in -b, tpu7x in -c."""


def slice_pools(graph, slice_name):
    component = graph.named(f"tpu-{slice_name}")
    return sorted(
        (r for r in graph.children(component.urn) if r.type == POOL), key=lambda r: r.name
    )


def test_multi_host_slices_get_one_compact_pool_each_sized_to_the_hosts(build):
    graph = build(
        tpuSlices=[{"name": "train", "accelerator": "v5p-32", "count": 2}],
        cluster={"maxPodsPerNode": 32},
    )
    pools = slice_pools(graph, "train")
    assert [p.inputs["name"] for p in pools] == ["train-0", "train-1"]
    for pool in pools:
        assert pool.inputs["nodeCount"] == 4, pool.urn
        assert pool.inputs["nodeConfig"]["machineType"] == "ct5p-hightpu-4t"
        assert pool.inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "2x2x4"}
        assert pool.inputs["nodeLocations"] == ["us-east5-a"]
        assert pool.inputs["nodeConfig"]["gvnic"] == {"enabled": True}
        assert pool.inputs["management"]["autoRepair"] is True
        assert pool.inputs["upgradeSettings"]["maxSurge"] == 0


def test_identical_single_host_slices_share_a_pool(build):
    graph = build(tpuSlices=[{"name": "serve", "accelerator": "v6e-8", "count": 3}])
    (pool,) = slice_pools(graph, "serve")
    assert pool.inputs["name"] == "serve"
    assert pool.inputs["nodeCount"] == 3
    assert pool.inputs["nodeConfig"]["machineType"] == "ct6e-standard-8t"
    assert "placementPolicy" not in pool.inputs


def test_every_family_lands_on_its_machine_type_and_boot_disk(build):
    slices = [
        {"name": "a", "accelerator": "v4-16", "zone": "us-central2-b"},
        {"name": "b", "accelerator": "v5litepod-16", "zone": "us-central1-a"},
        {"name": "c", "accelerator": "v5p-16", "zone": "us-central1-a"},
        {"name": "d", "accelerator": "v6e-16", "zone": "us-central1-b"},
        {"name": "e", "accelerator": "v5litepod-1", "zone": "us-central1-a"},
        {"name": "f", "accelerator": "tpu7x-8", "zone": "us-central1-c"},
    ]
    disks = {"a": "pd-balanced", "b": "pd-balanced", "c": "pd-balanced"}
    disks |= {"d": "hyperdisk-balanced", "e": "pd-balanced", "f": "hyperdisk-balanced"}
    # v4 lives in us-central2 only; the other slices need a region of their own.
    v4 = build(**{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"}, tpuSlices=slices[:1])
    rest = build(**CENTRAL, tpuSlices=slices[1:])
    for entry in slices:
        graph = v4 if entry["name"] == "a" else rest
        shape = resolve(entry["accelerator"])
        (pool,) = slice_pools(graph, entry["name"])
        assert pool.inputs["nodeConfig"]["machineType"] == shape.machine_type, pool.urn
        assert pool.inputs["nodeCount"] == shape.hosts, pool.urn
        assert pool.inputs["nodeConfig"]["diskType"] == disks[entry["name"]], pool.urn
        assert pool.inputs["nodeLocations"] == [entry["zone"]], pool.urn


def test_tpu_pools_take_a_small_block_of_the_pods_range(build):
    graph = build(
        tpuSlices=[
            {"name": "a", "accelerator": "v5p-32"},
            {"name": "b", "accelerator": "v5p-8", "maxPodsPerNode": 32},
        ]
    )
    (a,) = slice_pools(graph, "a")
    (b,) = slice_pools(graph, "b")
    assert (a.inputs["maxPodsPerNode"], b.inputs["maxPodsPerNode"]) == (16, 32)


def test_tpu7x_multi_host_uses_a_workload_policy_instead_of_a_topology(build):
    graph = build(
        **CENTRAL, tpuSlices=[{"name": "iron", "accelerator": "tpu7x-128", "zone": "us-central1-c"}]
    )
    policy = graph.named("tpu-iron-workload-policy")
    assert policy.inputs["workloadPolicy"] == {
        "type": "HIGH_THROUGHPUT",
        "acceleratorTopology": "4x4x4",
    }
    assert policy.inputs["region"] == "us-central1"
    (pool,) = slice_pools(graph, "iron")
    assert pool.inputs["placementPolicy"] == {"type": "COMPACT", "policyName": "ai-test-iron"}
    assert "tpuTopology" not in pool.inputs["placementPolicy"]
    assert policy.urn in pool.dependencies
    assert pool.inputs["nodeCount"] == 16


def test_single_host_tpu7x_needs_no_policy(build):
    graph = build(
        **CENTRAL, tpuSlices=[{"name": "iron", "accelerator": "tpu7x-8", "zone": "us-central1-c"}]
    )
    assert not graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")


def test_spot_and_reservation(build):
    graph = build(
        tpuSlices=[
            {
                "name": "cheap",
                "accelerator": "v6e-4",
                "provisioning": "spot",
            },
            {
                "name": "held",
                "accelerator": "v5p-8",
                "provisioning": "reservation",
                "reservation": "v5p-res",
            },
        ]
    )
    (cheap,) = slice_pools(graph, "cheap")
    assert cheap.inputs["nodeConfig"]["spot"] is True
    assert "reservationAffinity" not in cheap.inputs["nodeConfig"]
    (held,) = slice_pools(graph, "held")
    assert "spot" not in held.inputs["nodeConfig"]
    assert held.inputs["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["v5p-res"],
    }


def test_flex_start_pools_rest_at_zero_with_queued_provisioning(build):
    graph = build(
        tpuSlices=[{"name": "flex", "accelerator": "v6e-16", "provisioning": "flex-start"}]
    )
    (pool,) = slice_pools(graph, "flex")
    inputs = pool.inputs
    assert inputs["queuedProvisioning"] == {"enabled": True}
    assert inputs["nodeConfig"]["flexStart"] is True
    assert inputs["initialNodeCount"] == 0 and "nodeCount" not in inputs
    # Per-zone bounds: GKE checks a multi-host slice against the per-zone maximum, which
    # total limits would leave at 0; the maximum is the slice's 4 hosts.
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4}
    assert inputs["management"]["autoRepair"] is False
    assert inputs["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "NO_RESERVATION"
    }


def test_count_zero_keeps_the_entry_but_creates_no_pool(build):
    graph = build(
        **CENTRAL,
        tpuSlices=[
            {"name": "idle", "accelerator": "v5p-64", "count": 0},
            {"name": "iron", "accelerator": "tpu7x-64", "count": 0, "zone": "us-central1-c"},
        ],
    )
    assert slice_pools(graph, "idle") == []
    assert not graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")


def test_slice_zone_override_and_no_wait_for_the_cpu_pool(build):
    graph = build(tpuSlices=[{"name": "b", "accelerator": "v6e-8", "zone": "us-east5-b"}])
    (pool,) = slice_pools(graph, "b")
    assert pool.inputs["nodeLocations"] == ["us-east5-b"]
    assert pool.inputs["cluster"] == "ai-test-gke"
    # Pools start beside the CPU pool: GKE runs operations on different pools concurrently.
    assert graph.named("gke-cluster").urn in pool.dependencies
    assert graph.named("gke-cpu").urn not in pool.dependencies


def test_release_channel_pools_hold_upgrades_until_end_of_support(build):
    hold = [{"exclusionUntilEndOfSupports": [{"enabled": True}]}]
    on_channel = build(tpuSlices=[{"name": "s", "accelerator": "v5p-16"}])
    (pool,) = slice_pools(on_channel, "s")
    assert pool.inputs["maintenancePolicies"] == hold
    assert pool.inputs["management"]["autoUpgrade"] is True
    off_channel = build(
        tpuSlices=[{"name": "s", "accelerator": "v5p-16"}], cluster={"releaseChannel": "NONE"}
    )
    (pool,) = slice_pools(off_channel, "s")
    assert "maintenancePolicies" not in pool.inputs
    assert pool.inputs["management"]["autoUpgrade"] is False


# Additional node networks and host maintenance.

DCN = {
    "additionalNodeNetworks": [
        {"name": "dcn-1", "subnetCidr": "10.200.0.0/24"},
        {"name": "dcn-2", "subnetCidr": "10.201.0.0/24"},
    ]
}


def extra_nics(pool):
    configs = (pool.inputs.get("networkConfig") or {}).get("additionalNodeNetworkConfigs") or []
    return [(c["network"], c["subnetwork"]) for c in configs]


def test_v6e_and_tpu7x_hosts_take_a_nic_in_every_node_network_by_default(build):
    graph = build(
        **CENTRAL,
        network=DCN,
        tpuSlices=[
            {"name": "trillium", "accelerator": "v6e-64", "count": 2, "zone": "us-central1-b"},
            {"name": "iron", "accelerator": "tpu7x-128", "zone": "us-central1-c"},
            {"name": "serve", "accelerator": "v6e-8", "zone": "us-central1-b"},
        ],
    )
    nics = [("ai-test-dcn-1-vpc", "ai-test-dcn-1-subnet")]
    nics += [("ai-test-dcn-2-vpc", "ai-test-dcn-2-subnet")]
    for name in ("trillium", "iron", "serve"):
        for pool in slice_pools(graph, name):
            assert extra_nics(pool) == nics, pool.urn
            # The pool waits for the VPCs and subnets its NICs are in.
            for network in ("dcn-1", "dcn-2"):
                assert graph.named(f"network-{network}-subnet").urn in pool.dependencies
    assert graph.named("gke-cluster").inputs["enableMultiNetworking"] is True


def test_families_without_evidence_take_no_node_network_and_slices_can_opt_out(build):
    graph = build(
        **CENTRAL,
        network=DCN,
        tpuSlices=[
            {"name": "v5p", "accelerator": "v5p-32"},
            {"name": "v5e", "accelerator": "v5litepod-16"},
            {"name": "out", "accelerator": "v6e-16", "zone": "us-central1-b", **NO_NETWORKS},
            {
                "name": "one",
                "accelerator": "v6e-16",
                "zone": "us-central1-b",
                "additionalNodeNetworks": ["dcn-2"],
            },
        ],
    )
    for name in ("v5p", "v5e", "out"):
        for pool in slice_pools(graph, name):
            assert "networkConfig" not in pool.inputs, pool.urn
    (one,) = slice_pools(graph, "one")
    assert extra_nics(one) == [("ai-test-dcn-2-vpc", "ai-test-dcn-2-subnet")]


def test_without_node_networks_in_use_the_cluster_is_left_as_it_was(build):
    for graph in (
        build(tpuSlices=[{"name": "s", "accelerator": "v6e-16", "zone": "us-east5-b"}]),
        build(network=DCN, tpuSlices=[{"name": "s", "accelerator": "v5p-16"}]),
    ):
        assert "enableMultiNetworking" not in graph.named("gke-cluster").inputs
        assert not graph.of_type(f"kubernetes:{NETWORKING}:Network")


def test_gke_network_objects_name_each_vpc_and_subnet_for_device_mode_pods(build):
    graph = build(
        network=DCN,
        tpuSlices=[
            {
                "name": "s",
                "accelerator": "v6e-16",
                "zone": "us-east5-b",
                "additionalNodeNetworks": ["dcn-1"],
            }
        ],
    )
    (params,) = graph.of_type(f"kubernetes:{NETWORKING}:GKENetworkParamSet")
    (network,) = graph.of_type(f"kubernetes:{NETWORKING}:Network")
    # Only the network a pool uses; dcn-2 has no node to take a NIC in it.
    assert params.inputs["metadata"] == {"name": "dcn-1"}
    assert params.inputs["spec"] == {
        "vpc": "ai-test-dcn-1-vpc",
        "vpcSubnet": "ai-test-dcn-1-subnet",
        "deviceMode": "NetDevice",
    }
    assert network.inputs["metadata"] == {"name": "dcn-1"}
    assert network.inputs["spec"] == {
        "type": "Device",
        "parametersRef": {
            "group": "networking.gke.io",
            "kind": "GKENetworkParamSet",
            "name": "dcn-1",
        },
    }
    # Facts of kubernetes/cloud-provider-gcp crd/config/crds (networking.gke.io v1): both
    # kinds are cluster-scoped; these are the spec fields and enums the CRDs define.
    assert set(params.inputs["spec"]) <= {"vpc", "vpcSubnet", "deviceMode", "podIPv4Ranges"}
    assert params.inputs["spec"]["deviceMode"] in ("DPDK-VFIO", "NetDevice")
    assert network.inputs["spec"]["type"] in ("L2", "L3", "Device")
    assert params.urn in network.dependencies
    assert graph.named("gke-cluster").urn in params.dependencies
    assert graph.named("network-dcn-1-subnet").urn in params.dependencies


def test_every_tpu_pool_carries_its_host_maintenance_interval_and_no_other_pool_does(build):
    graph = build(
        tpuSlices=[
            {"name": "a", "accelerator": "v5p-16"},
            {"name": "b", "accelerator": "v6e-8", "zone": "us-east5-b"},
            {
                "name": "c",
                "accelerator": "v5p-16",
                "provisioning": "reservation",
                "reservation": "periodic-res",
                "hostMaintenanceInterval": "PERIODIC",
            },
        ],
        gpuPools=[{"name": "g", "machineType": "g2-standard-8", "acceleratorType": "nvidia-l4"}],
    )
    intervals = {
        name: pool.inputs["nodeConfig"]["hostMaintenancePolicy"]["maintenanceInterval"]
        for name in "abc"
        for pool in slice_pools(graph, name)
    }
    assert intervals == {"a": "AS_NEEDED", "b": "AS_NEEDED", "c": "PERIODIC"}
    for other in ("gke-cpu", "gpu-g-pool"):
        assert "hostMaintenancePolicy" not in graph.named(other).inputs["nodeConfig"]


def test_a_switch_to_a_channel_replaces_every_tpu_pool_and_a_switch_to_none_none(build):
    # The provider sends the hold only on create: adding it must replace the slices' pools,
    # and the offline diff says so. Without auto-upgrade the hold does nothing, so a switch to
    # NONE keeps it (ignore_changes) and only turns auto-upgrade off in place. The CPU and GPU
    # pools keep upgrading and are untouched.
    config = dict(
        tpuSlices=[
            {"name": "multi", "accelerator": "v5p-16"},
            {"name": "single", "accelerator": "v5p-8", "count": 2},
        ],
        gpuPools=[{"name": "l4", "machineType": "g2-standard-8", "acceleratorType": "nvidia-l4"}],
    )
    none = build(cluster={"releaseChannel": "NONE"}, **config)
    regular = build(cluster={"releaseChannel": "REGULAR"}, **config)
    pools = {"tpu-multi-0", "tpu-single-pool"}

    changes = {c.resource.name: c for c in diff(none, regular) if not c.is_component}
    assert {name for name, c in changes.items() if c.op is Op.REPLACE} == pools
    for name in pools:
        hold = [c for c in changes[name].changes if c.path[0] == "maintenancePolicies"]
        assert hold and all(c.replaces for c in hold), name
        assert regular.named(name).delete_before_replace, name
    assert set(changes) == pools | {"gke-cluster"}

    changes = {c.resource.name: c for c in diff(regular, none) if not c.is_component}
    assert set(changes) == pools | {"gke-cluster"}
    for name in pools:
        assert changes[name].op is Op.UPDATE, name
        assert [(c.rendered_path, c.old, c.new) for c in changes[name].changes] == [
            ("management.autoUpgrade", True, False)
        ]
        assert none.named(name).ignore_changes == ("maintenancePolicies",)
    assert changes["gke-cluster"].op is Op.UPDATE


def test_the_plan_says_how_tpu_pools_upgrade_and_what_a_switch_does():
    for channel, expected in (
        ("STABLE", "on channel STABLE, TPU pools hold upgrades until end of support"),
        ("NONE", "releaseChannel NONE: TPU pools never auto-upgrade (CPU and GPU pools do)"),
    ):
        config = parse(
            with_config(
                cluster={"releaseChannel": channel},
                tpuSlices=[{"name": "s", "accelerator": "v5p-16"}],
            ),
            "test",
        )
        (slices,) = [lines for title, lines in gke.describe(config.gke) if title == "TPU slices"]
        (line,) = [line for line in slices if line.startswith("  upgrades: ")]
        assert expected in line
        assert "replaces every TPU pool" in line
