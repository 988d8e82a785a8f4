"""The Cluster Toolkit blueprint keys people set, as this program takes them: each on the
resource or file Slurm-GCP reads it from, refused at its path where upstream's scripts or the
Compute Engine API would refuse it (tests/slurm/test_upstream.py shows what upstream's own
loader, conf generator and resume make of each)."""

from __future__ import annotations

from typing import Any

import yaml

from plan.diff import Op, diff
from tests.conftest import build_graph
from tests.slurm.test_cluster import content, objects
from tests.slurm.test_config import stack

CUSTOM = {"project": "my-images", "family": "slurm-hpc-custom"}
CUSTOM_PATH = "projects/my-images/global/images/family/slurm-hpc-custom"


def cpu_stack(**fields: Any) -> dict[str, Any]:
    return stack(
        cpuNodesets=[{"name": "cpu", "machineType": "n2-standard-32", **fields}],
        partitions=[
            {"name": "tpu", "nodesets": ["v4"], "default": True},
            {"name": "cpu", "nodesets": ["cpu"]},
        ],
    )


def template(graph: Any, nodeset: str = "cpu") -> dict[str, Any]:
    return graph.named(f"slurm-template-{nodeset}").inputs


def nodeset_yaml(graph: Any, nodeset: str = "cpu") -> dict[str, Any]:
    return yaml.safe_load(content(objects(graph)[f"tpu-files/nodeset_configs/{nodeset}.yaml"]))


def test_automatic_updates_stay_on_unless_a_vm_kind_turns_them_off():
    key = "google_disable_automatic_updates"
    default = build_graph(cpu_stack())
    for resource in ("slurm-controller", "slurm-login-login-0"):
        assert key not in default.named(resource).inputs["metadata"]
    assert key not in template(default)["metadata"]
    off_stack = cpu_stack(allowAutomaticUpdates=False)
    off_stack["ai-infra:slurm"] |= {
        "controller": {"allowAutomaticUpdates": False},
        "loginGroups": [{"name": "login", "allowAutomaticUpdates": False}],
    }
    off = build_graph(off_stack)
    for resource in ("slurm-controller", "slurm-login-login-0"):
        assert off.named(resource).inputs["metadata"][key] == "TRUE", resource
    assert template(off)["metadata"][key] == "TRUE"
    # The template's properties changed, so it is a new template under a new name.
    assert template(off)["name"] != template(default)["name"]


def test_controller_and_login_boot_from_their_own_images():
    graph = build_graph(
        stack(
            controller={"image": CUSTOM},
            loginGroups=[{"name": "login"}, {"name": "big", "image": {"name": "login-v3"}}],
        )
    )
    image = lambda r: graph.named(r).inputs["bootDisk"]["initializeParams"]["image"]  # noqa: E731
    assert image("slurm-controller") == CUSTOM_PATH
    assert image("slurm-login-login-0") == (
        "projects/schedmd-slurm-public/global/images/family/slurm-gcp-6-12-hpc-rocky-linux-8"
    )
    assert image("slurm-login-big-0") == "projects/schedmd-slurm-public/global/images/login-v3"


def test_a_new_controller_image_replaces_the_controller_and_the_login_vms():
    base = build_graph(stack())
    edited = build_graph(stack(controller={"image": CUSTOM}))
    changes = {c.resource.name: c.op for c in diff(base, edited) if not c.is_component}
    assert changes == {"slurm-controller": Op.REPLACE, "slurm-login-login-0": Op.REPLACE}


def test_bandwidth_tiers_set_the_nic_and_tier_1_the_egress_bandwidth():
    default = template(build_graph(cpu_stack()))
    [nic] = default["networkInterfaces"]
    assert "nicType" not in nic and "networkPerformanceConfig" not in default
    for tier, nic_type in (("virtio_enabled", "VIRTIO_NET"), ("gvnic_enabled", "GVNIC")):
        t = template(build_graph(cpu_stack(bandwidthTier=tier)))
        assert t["networkInterfaces"][0]["nicType"] == nic_type, tier
        assert "networkPerformanceConfig" not in t
        assert t["name"] != default["name"]
    tier_1 = template(
        build_graph(cpu_stack(machineType="c2-standard-60", bandwidthTier="tier_1_enabled"))
    )
    assert tier_1["networkInterfaces"][0]["nicType"] == "GVNIC"
    assert tier_1["networkPerformanceConfig"] == {"totalEgressBandwidthTier": "TIER_1"}


A3_MEGA: dict[str, Any] = {"machineType": "a3-megagpu-8g", "diskType": "pd-ssd"}


def test_a_specific_reservation_is_named_as_util_py_reads_it_and_lets_the_controller_read_it():
    graph = build_graph(cpu_stack(**A3_MEGA, reservation="a3-block"))
    document = nodeset_yaml(graph)
    assert document["reservation_name"] == "projects/test-project/reservations/a3-block"
    assert document["zone_policy_allow"] == ["us-central2-b"]
    shared = nodeset_yaml(
        build_graph(cpu_stack(**A3_MEGA, reservation="projects/host-project/reservations/a3"))
    )
    assert shared["reservation_name"] == "projects/host-project/reservations/a3"
    permissions = graph.named("slurm-ctl-role").inputs["permissions"]
    assert {"compute.reservations.get", "compute.resourcePolicies.use"} <= set(permissions)
    assert "compute.resourcePolicies.create" not in permissions
    # Consumed through resume's instanceProperties, not the template (Toolkit's does alike).
    assert "reservationAffinity" not in template(graph)


def test_compact_placement_is_the_controller_s_to_create_with_its_max_distance():
    graph = build_graph(cpu_stack(enablePlacement=True, placementMaxDistance=2))
    document = nodeset_yaml(graph)
    assert (document["enable_placement"], document["placement_max_distance"]) == (True, 2)
    permissions = graph.named("slurm-ctl-role").inputs["permissions"]
    assert {"compute.resourcePolicies.create", "compute.resourcePolicies.delete"} <= set(
        permissions
    )
    off = nodeset_yaml(build_graph(cpu_stack()))
    assert (off["enable_placement"], off["placement_max_distance"]) == (False, None)


def test_a_flex_start_nodeset_gets_a_flex_template_groups_and_their_cleanup():
    graph = build_graph(
        cpu_stack(**A3_MEGA, dwsFlex={"maxRunDuration": 7200, "useJobDuration": True})
    )
    document = nodeset_yaml(graph)
    assert document["dws_flex"] == {
        "enabled": True,
        "max_run_duration": 7200,
        "use_job_duration": True,
        "use_bulk_insert": False,
    }
    t = template(graph)
    assert t["scheduling"] == {
        "onHostMaintenance": "TERMINATE",
        "automaticRestart": False,
        "provisioningModel": "FLEX_START",
        "instanceTerminationAction": "DELETE",
        "maxRunDuration": {"seconds": 7200},
    }
    assert t["reservationAffinity"] == {"type": "NO_RESERVATION"}
    permissions = graph.named("slurm-ctl-role").inputs["permissions"]
    assert "compute.instanceGroupManagers.create" in permissions
    cleanup = graph.named("slurm-flex-cleanup")
    assert cleanup.type == "pulumi-python:dynamic/slurm:FlexCleanup"
    assert cleanup.inputs["nodesets"] == [{"name": "cpu", "zone": "us-central2-b"}]
    # Destroy deletes dependents first: the controller, then the groups, then CPU VMs left.
    assert cleanup.urn in graph.named("slurm-controller").dependencies
    assert graph.named("slurm-compute-cleanup").urn in cleanup.dependencies
    assert not [r for r in build_graph(cpu_stack(**A3_MEGA, spot=True)) if "flex" in r.name]


def test_extra_disks_and_local_ssds_are_the_template_s_and_the_ssds_are_mounted_at_boot():
    graph = build_graph(
        cpu_stack(
            machineType="n2-standard-32",
            additionalDisks=[{"deviceName": "scratch", "diskType": "pd-ssd", "diskSizeGb": 500}],
            localSsd={"count": 4, "mountPath": "/mnt/ssd"},
        )
    )
    t = template(graph)
    boot, scratch, *ssds = t["disks"]
    assert boot["boot"] is True
    assert (scratch["deviceName"], scratch["diskType"], scratch["diskSizeGb"]) == (
        "scratch",
        "pd-ssd",
        500,
    )
    assert (scratch["type"], scratch["autoDelete"], scratch["boot"]) == ("PERSISTENT", True, False)
    assert len(ssds) == 4
    assert all(
        (d["type"], d["diskType"], d["diskSizeGb"], d["interface"])
        == ("SCRATCH", "local-ssd", 375, "NVME")
        for d in ssds
    )
    assert (
        "mount -t ext4 -o discard,defaults,nofail /dev/md/localssd /mnt/ssd"
        in (t["metadata"]["startup-script"])
    )
    # A machine that brings its own local SSDs gets them mounted, none added.
    own = template(build_graph(cpu_stack(**A3_MEGA, localSsd={})))
    assert [d.get("diskType") for d in own["disks"]] == ["pd-ssd"]
    assert "/mnt/localssd" in own["metadata"]["startup-script"]
    plain = template(build_graph(cpu_stack()))
    assert "mdadm" not in plain["metadata"]["startup-script"]


def test_the_plan_says_what_sets_a_nodeset_apart():
    from components.slurm import describe
    from stacks.loading import parse

    config = parse(
        cpu_stack(
            **A3_MEGA,
            reservation="a3-block",
            enablePlacement=True,
            placementMaxDistance=2,
            bandwidthTier="gvnic_enabled",
            localSsd={},
            additionalDisks=[{"deviceName": "data"}],
            allowAutomaticUpdates=False,
        ),
        "test",
    )
    assert config.slurm is not None
    [(_, lines)] = describe(config.slurm, config.context)
    [line] = [x for x in lines if x.startswith("  nodeset cpu:")]
    assert line == (
        "  nodeset cpu: a3-megagpu-8g in us-central2-b, 0 static + up to 10 dynamic nodes, "
        "8 x nvidia-h100-mega-80gb, reservation a3-block, compact placement at max distance 2, "
        "gVNIC, its local SSDs at /mnt/localssd, 1 extra disk(s), automatic updates off, "
        "secure boot off"
    )


def test_a3_mega_nodes_get_a_gpu_nic_per_network_at_the_gpudirect_mtu():
    graph = build_graph(cpu_stack(**A3_MEGA, gpuNetworks={"subnetCidr": "10.200.0.0/24"}))
    t = template(graph)
    host, *gpu = t["networkInterfaces"]
    assert host["nicType"] == "GVNIC" and "network" not in host
    assert len(gpu) == 8 and {n["nicType"] for n in gpu} == {"GVNIC"}
    vpcs = {r.name: r.inputs for r in graph.of_type("gcp:compute/network:Network")}
    subnets = {r.name: r.inputs for r in graph.of_type("gcp:compute/subnetwork:Subnetwork")}
    for k in range(1, 9):
        vpc = vpcs[f"slurm-template-cpu-net{k}"]
        assert (vpc["name"], vpc["mtu"]) == (f"ai-test-slurm-tpu-cpu-net{k}", 8244)
        assert subnets[f"slurm-template-cpu-subnet{k}"]["ipCidrRange"] == f"10.200.{k - 1}.0/24"
    rules = [
        r for r in graph.of_type("gcp:compute/firewall:Firewall") if "-net" in r.inputs["name"]
    ]
    assert len(rules) == 8 and all(r.inputs["sourceRanges"][0].startswith("10.200.") for r in rules)


def test_a3_ultra_nodes_get_a_second_host_nic_and_eight_mrdma_nics_on_a_roce_vpc():
    graph = build_graph(
        cpu_stack(
            machineType="a3-ultragpu-8g",
            diskType="hyperdisk-balanced",
            reservation="a3u",
            gpuNetworks={},
        )
    )
    nics = template(graph)["networkInterfaces"]
    assert [n.get("nicType") for n in nics] == ["GVNIC", "GVNIC", *["MRDMA"] * 8]
    rdma = graph.named("slurm-template-cpu-rdma").inputs
    assert rdma["networkProfile"] == (
        "projects/test-project/global/networkProfiles/us-central2-b-vpc-roce"
    )
    assert (rdma["name"], rdma["mtu"]) == ("ai-test-slurm-tpu-cpu-rdma", 8896)
    assert graph.named("slurm-template-cpu-net1").inputs["mtu"] == 8896
    rdma_subnets = [
        r for r in graph.of_type("gcp:compute/subnetwork:Subnetwork") if "rdma" in r.name
    ]
    assert [r.inputs["ipCidrRange"] for r in rdma_subnets] == [
        f"10.200.{16 * k}.0/20" for k in range(1, 9)
    ]
    # No firewall on the RoCE VPC (gpu-rdma-vpc makes none).
    assert not [r for r in graph.of_type("gcp:compute/firewall:Firewall") if "rdma" in r.name]


def test_the_plan_shows_a_gpu_nodeset_s_extra_nics():
    from components.slurm import describe
    from stacks.loading import parse

    config = parse(cpu_stack(**A3_MEGA, gpuNetworks={"subnetCidr": "10.200.0.0/24"}), "test")
    assert config.slurm is not None
    [(_, lines)] = describe(config.slurm, config.context)
    [line] = [x for x in lines if x.startswith("  nodeset cpu:")]
    assert ", 8 more NICs (tcpxo) from 10.200.0.0/24," in line, line


def test_the_plan_preflight_and_cost_see_how_each_nodeset_gets_its_capacity():
    from plan.render import render
    from preflight.needs import derive
    from prices import stack_cost
    from stacks.loading import parse

    raw = stack(
        tpuNodesets=[],
        cpuNodesets=[
            {"name": "resv", **A3_MEGA, "reservation": "a3-block", "nodeCountDynamicMax": 2},
            {"name": "flex", **A3_MEGA, "dwsFlex": {}, "nodeCountDynamicMax": 2},
            {
                "name": "disks",
                "machineType": "n2-standard-32",
                "additionalDisks": [{"deviceName": "d", "diskType": "pd-ssd", "diskSizeGb": 500}],
                "nodeCountDynamicMax": 2,
            },
        ],
        partitions=[
            {"name": "gpu", "nodesets": ["resv", "flex"]},
            {"name": "d", "nodesets": ["disks"]},
        ],
    )
    graph, config = build_graph(raw), parse(raw, "test")
    plan = render(graph, config, "test")
    assert (
        "Slurm nodesets: resv up to 2 x a3-megagpu-8g with 8 x nvidia-h100-mega-80gb = 16 GPUs, "
        "reservation projects/test-project/reservations/a3-block"
    ) in plan
    assert (
        "Slurm nodesets: flex up to 2 x a3-megagpu-8g with 8 x nvidia-h100-mega-80gb = 16 GPUs, "
        "flex-start" in plan
    )
    [disks_cost] = [x for x in stack_cost(config, graph).lines if x.label.endswith(" disks")]
    # The boot disk (pd-balanced) and the extra pd-ssd disk of each of the two VMs at most.
    assert [(p.quote.what, p.full) for p in disks_cost.parts if p.quote.what.endswith(" GB")] == [
        ("pd-balanced GB", 100),
        ("pd-ssd GB", 1000),
    ]
    vms = {vm.source: vm for vm in derive(config, graph).vms}
    resv = vms["slurm.cpuNodesets[0] resv"]
    assert (resv.capacity, resv.reservation, resv.full) == (
        "reservation",
        "projects/test-project/reservations/a3-block",
        2,
    )
    assert vms["slurm.cpuNodesets[1] flex"].capacity == "flex-start"


def test_a_flex_start_partition_waits_for_capacity_as_toolkit_forces_it():
    from components.slurm import describe
    from stacks.loading import parse

    raw = stack(
        tpuNodesets=[],
        cpuNodesets=[
            {"name": "flex", **A3_MEGA, "dwsFlex": {}},
            {"name": "resv", **A3_MEGA, "reservation": "a3-block"},
        ],
        partitions=[
            {"name": "flex", "nodesets": ["flex"]},
            {"name": "resv", "nodesets": ["resv"], "partitionConf": {"ResumeTimeout": "900"}},
        ],
    )
    graph = build_graph(raw)
    files = objects(graph)
    flex = yaml.safe_load(content(files["tpu-files/partition_configs/flex.yaml"]))
    resv = yaml.safe_load(content(files["tpu-files/partition_configs/resv.yaml"]))
    assert flex["partition_conf"]["ResumeTimeout"] == "65535"
    assert resv["partition_conf"]["ResumeTimeout"] == "900"
    config = parse(raw, "test").slurm
    assert config is not None
    [(_, lines)] = describe(config, parse(raw, "test").context)
    assert (
        "  partition flex: flex, exclusive, nodes waited for until flex-start capacity comes "
        "(ResumeTimeout 65535)"
    ) in lines


def test_multi_host_tpu_partitions_wait_for_the_slice_create_and_setup():
    from tests.slurm.test_config import MULTI_HOST

    graph = build_graph(
        stack(
            debugPartition=True,
            tpuNodesets=[MULTI_HOST, {"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2}],
            partitions=[
                {"name": "tpu", "nodesets": ["v4x32"]},
                {"name": "one", "nodesets": ["v4"], "default": True},
            ],
        )
    )
    files = objects(graph)
    conf = lambda p: yaml.safe_load(content(files[f"tpu-files/partition_configs/{p}.yaml"]))  # noqa: E731
    # tpu.py's create wait (900 s) and the setup's scripts (300 s); one TPU VM, Toolkit's 600.
    assert conf("tpu")["partition_conf"]["ResumeTimeout"] == "1200"
    assert conf("one")["partition_conf"]["ResumeTimeout"] == "600"
    assert conf("debug")["partition_conf"]["ResumeTimeout"] == "300"


def test_slurm_is_told_to_wait_for_whole_slices_beside_the_user_s_scheduler_options():
    from tests.slurm.test_config import MULTI_HOST

    def scheduler(**fields: Any) -> list[str] | None:
        graph = build_graph(stack(debugPartition=True, **fields))
        document = yaml.safe_load(content(objects(graph)["tpu-files/config.yaml"]))
        return document["cloud_parameters"].get("scheduler_parameters")

    multi = {"tpuNodesets": [MULTI_HOST], "partitions": [{"name": "tpu", "nodesets": ["v4x32"]}]}
    # conf.py's own default, kept, with the switch wait after it.
    assert scheduler(**multi) == [
        "bf_continue",
        "salloc_wait_nodes",
        "ignore_prefer_validation",
        "max_switch_wait=2147483647",
    ]
    assert scheduler(**multi, cloudParameters={"schedulerParameters": ["bf_window=2880"]}) == [
        "bf_window=2880",
        "max_switch_wait=2147483647",
    ]
    # Single-host slices leave conf.py's default alone.
    assert scheduler() is None


def test_static_nodes_stay_up_in_an_exclusive_partition_and_dynamic_ones_power_down():
    from tests.slurm.test_config import MULTI_HOST

    graph = build_graph(
        stack(
            tpuNodesets=[{**MULTI_HOST, "nodeCountStatic": 4, "nodeCountDynamicMax": 4}],
            cpuNodesets=[
                {"name": "mega", **A3_MEGA, "nodeCountStatic": 2, "nodeCountDynamicMax": 0},
                {"name": "dyn", "machineType": "n2-standard-32"},
            ],
            partitions=[
                {"name": "tpu", "nodesets": ["v4x32"]},
                {"name": "mega", "nodesets": ["mega"], "default": True},
                {"name": "dyn", "nodesets": ["dyn"]},
            ],
        )
    )
    files = objects(graph)
    doc = lambda p: yaml.safe_load(content(files[f"tpu-files/partition_configs/{p}.yaml"]))  # noqa: E731
    for name in ("tpu", "mega"):
        # Jobs keep nodes of their own (conf.py: Oversubscribe=Exclusive), and the static
        # nodes are not powered down after each (PowerDownOnIdle=NO over conf.py's YES).
        assert doc(name)["enable_job_exclusive"] is True, name
        assert doc(name)["partition_conf"]["PowerDownOnIdle"] == "NO", name
    assert "PowerDownOnIdle" not in doc("dyn")["partition_conf"]


def test_threads_per_core_and_node_conf_reach_the_template_and_the_nodeset_file():
    default = build_graph(cpu_stack(**A3_MEGA))
    smt = build_graph(
        cpu_stack(
            **A3_MEGA, threadsPerCore=2, nodeConf={"coresPerSocket": "52", "ThreadsPerCore": "2"}
        )
    )
    assert template(default)["advancedMachineFeatures"] == {"threadsPerCore": 1}
    assert template(smt)["advancedMachineFeatures"] == {"threadsPerCore": 2}
    assert template(smt)["name"] != template(default)["name"]
    # Written as Slurm spells the options; conf.py puts them over what it derives.
    assert nodeset_yaml(smt)["node_conf"] == {"CoresPerSocket": "52", "ThreadsPerCore": "2"}
    assert nodeset_yaml(default)["node_conf"] == {}
