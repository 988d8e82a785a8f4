"""CPU nodesets as Toolkit's `schedmd-slurm-gcp-v6-nodeset` makes them: an instance template
renamed whenever it changes, `nodeset_configs/<name>.yaml` with every key the controller module
writes, the controller's role grown by what resume and suspend call, and nodes as private and
shielded as the rest; plus the cluster-wide storage, scripts and knobs that reach them."""

from __future__ import annotations

from typing import Any

import yaml

from components.slurm.permissions import CPU_PERMISSIONS, TPU_PERMISSIONS
from graph.engine import Graph
from plan.diff import Op, diff
from tests.conftest import build_graph
from tests.slurm.test_cluster import CTL, PROJECT, content, objects
from tests.slurm.test_config import stack

CPU_SA = f"ai-test-slurm-cpu@{PROJECT}.iam.gserviceaccount.com"
PARTITIONS = [
    {"name": "tpu", "nodesets": ["v4"], "default": True},
    {"name": "cpu", "nodesets": ["cpu"], "exclusive": False},
]


def cpu_stack(**fields: Any) -> dict[str, Any]:
    return stack(
        cpuNodesets=[{"name": "cpu", "machineType": "n2-standard-4", **fields}],
        partitions=PARTITIONS,
    )


def template(graph: Graph, nodeset: str = "cpu") -> dict[str, Any]:
    return graph.named(f"slurm-template-{nodeset}").inputs


def test_a_cpu_nodeset_gets_a_private_shielded_template_with_the_v6_boot():
    graph = build_graph(cpu_stack(nodeCountStatic=1, nodeCountDynamicMax=3))
    t = template(graph)
    assert t["name"].startswith("tpu-cpu-") and len(t["name"]) == len("tpu-cpu-") + 10
    assert t["machineType"] == "n2-standard-4"
    [disk] = t["disks"]
    assert disk["sourceImage"] == (
        "projects/schedmd-slurm-public/global/images/family/slurm-gcp-6-12-hpc-rocky-linux-8"
    )
    assert (disk["diskType"], disk["diskSizeGb"], disk["boot"]) == ("pd-balanced", 50, True)
    [nic] = t["networkInterfaces"]
    assert not nic.get("accessConfigs")
    assert t["serviceAccount"] == {
        "email": CPU_SA,
        "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    assert t["shieldedInstanceConfig"] == {
        "enableSecureBoot": True,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }
    assert t["advancedMachineFeatures"] == {"threadsPerCore": 1}
    assert t["tags"] == ["tpu", "tpu-compute"]
    assert {k: t["labels"][k] for k in ("slurm_cluster_name", "slurm_instance_role")} == {
        "slurm_cluster_name": "tpu",
        "slurm_instance_role": "compute",
    }
    metadata = dict(t["metadata"])
    script = metadata.pop("startup-script")
    assert metadata == {
        "slurm_bucket_path": f"gs://{PROJECT}-ai-test-slurm-tpu/tpu-files",
        "slurm_cluster_name": "tpu",
        "slurm_instance_role": "compute",
        "universe_domain": "googleapis.com",
        "enable-oslogin": "TRUE",
        "block-project-ssh-keys": "TRUE",
    }
    assert 'exec "$SCRIPTS/setup.py"' in script and "ai-infra-tpu-startup.sh" not in script
    assert t["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert t["scheduling"]["provisioningModel"] == "STANDARD"


def test_the_nodeset_yaml_has_every_key_the_v6_controller_writes():
    graph = build_graph(cpu_stack(zones=["us-central2-b"], nodeCountDynamicMax=3))
    document = yaml.safe_load(content(objects(graph)["tpu-files/nodeset_configs/cpu.yaml"]))
    link = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/{template(graph)['name']}"
    # Toolkit's partition.tf `nodesets`, plus `instance_properties` (slurm_files main.tf).
    assert document == {
        "nodeset_name": "cpu",
        "node_conf": {},
        "dws_flex": {
            "enabled": False,
            "max_run_duration": 604800,
            "use_job_duration": False,
            "use_bulk_insert": False,
        },
        "instance_template": link,
        "node_count_dynamic_max": 3,
        "node_count_static": 0,
        "subnetwork": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/ai-test-subnet",
        "reservation_name": "",
        "future_reservation": "",
        "maintenance_interval": None,
        "instance_properties_json": "null",
        "instance_properties": None,
        "enable_placement": False,
        "placement_max_distance": None,
        "network_storage": [],
        "zone_target_shape": "ANY_SINGLE_ZONE",
        "zone_policy_allow": ["us-central2-b"],
        # The region's other zones, as the nodeset module derives them (main.tf zones_deny).
        "zone_policy_deny": ["us-central2-a", "us-central2-c", "us-central2-d"],
        "enable_maintenance_reservation": False,
        "enable_opportunistic_maintenance": False,
        "accelerator_topology": None,
    }
    partition = yaml.safe_load(content(objects(graph)["tpu-files/partition_configs/cpu.yaml"]))
    assert partition == {
        "partition_name": "cpu",
        "partition_conf": {"SuspendTime": "300", "SuspendTimeout": "120", "ResumeTimeout": "300"},
        "partition_nodeset": ["cpu"],
        "partition_nodeset_dyn": [],
        "partition_nodeset_tpu": [],
        "enable_job_exclusive": False,
    }


def test_every_template_change_gets_a_new_name_and_nothing_else_renames_it():
    """The controller caches a template's properties under its name for as long as it runs
    (util.py template_info): a changed template under an old name would never be read."""
    base = build_graph(cpu_stack())
    name = template(base)["name"]
    for change in ({"machineType": "n2-standard-8"}, {"spot": True}, {"diskSizeGb": 100}):
        assert template(build_graph(cpu_stack(**change)))["name"] != name, change
    for same in ({"nodeCountDynamicMax": 2}, {"startupScript": "echo hi"}):
        assert template(build_graph(cpu_stack(**same)))["name"] == name, same


def test_a_template_change_replaces_the_template_and_updates_the_yaml_in_place():
    before = build_graph(cpu_stack())
    after = build_graph(cpu_stack(machineType="n2-standard-8"))
    changes = {c.resource.name: c.op for c in diff(before, after) if not c.is_component}
    # The template is immutable; the nodeset file naming it is uploaded again in place
    # (`content` is not ForceNew in google-beta: plan/forcenew.json).
    assert changes == {"slurm-template-cpu": Op.REPLACE, "slurm-nodeset-cpu": Op.UPDATE}


def test_spot_and_gpu_nodesets_get_the_scheduling_and_accelerators_compute_needs():
    graph = build_graph(
        stack(
            cpuNodesets=[
                {"name": "spot", "machineType": "n2-standard-4", "spot": True},
                {
                    "name": "t4",
                    "machineType": "n1-standard-8",
                    "gpu": {"type": "nvidia-tesla-t4", "count": 2},
                },
                {"name": "l4", "machineType": "g2-standard-4"},
            ],
            partitions=[
                {"name": "tpu", "nodesets": ["v4"]},
                {"name": "cpu", "nodesets": ["spot", "t4", "l4"]},
            ],
        )
    )
    spot = template(graph, "spot")["scheduling"]
    assert (spot["provisioningModel"], spot["preemptible"], spot["automaticRestart"]) == (
        "SPOT",
        True,
        False,
    )
    assert spot["instanceTerminationAction"] == "DELETE"
    assert template(graph, "t4")["guestAccelerators"] == [{"type": "nvidia-tesla-t4", "count": 2}]
    # A g2's L4 comes with the machine type; the template names it so conf.py sees a GPU.
    assert template(graph, "l4")["guestAccelerators"] == [{"type": "nvidia-l4", "count": 1}]
    for nodeset in ("t4", "l4"):
        # SchedMD's NVIDIA drivers are unsigned (slurm-gcp docs/images.md).
        assert template(graph, nodeset)["shieldedInstanceConfig"]["enableSecureBoot"] is False


def test_the_controller_role_grows_by_what_resume_and_suspend_call_for_cpu_nodes():
    tpu_only = build_graph(stack()).named("slurm-ctl-role").inputs["permissions"]
    with_cpu = build_graph(cpu_stack()).named("slurm-ctl-role").inputs["permissions"]
    assert set(with_cpu) - set(tpu_only) == set(CPU_PERMISSIONS)
    # bulkInsert from a template whose image is in the user's project, not SchedMD's public
    # one, needs the image's useReadOnly (issue 29: such nodesets failed at job time).
    assert "compute.images.useReadOnly" in with_cpu
    assert set(TPU_PERMISSIONS) <= set(tpu_only)
    assert "compute.subnetworks.useExternalIp" not in with_cpu
    public = build_graph(cpu_stack(enablePublicIps=True)).named("slurm-ctl-role").inputs
    assert "compute.subnetworks.useExternalIp" in public["permissions"]
    cpu_only = build_graph(
        stack(
            tpuNodesets=[],
            cpuNodesets=[{"name": "cpu"}],
            partitions=[{"name": "cpu", "nodesets": ["cpu"]}],
        )
    )
    assert not [
        p for p in cpu_only.named("slurm-ctl-role").inputs["permissions"] if p.startswith("tpu.")
    ]
    # Predefined roles far wider than that are gone.
    roles = {r.inputs["role"] for r in cpu_only.of_type("gcp:projects/iAMMember:IAMMember")}
    assert not roles & {"roles/tpu.admin", "roles/compute.instanceAdmin.v1"}


def test_the_controller_may_act_as_the_cpu_node_account_and_it_reads_the_bucket():
    graph = build_graph(cpu_stack())
    acts_as = {
        (r.inputs["serviceAccountId"].rsplit("/", 1)[1], r.inputs["member"])
        for r in graph.of_type("gcp:serviceaccount/iAMMember:IAMMember")
    }
    assert (CPU_SA, CTL) in acts_as
    readers = {
        r.inputs["member"] for r in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    }
    assert f"serviceAccount:{CPU_SA}" in readers
    # The node account exists only while a nodeset runs as it.
    assert not [r for r in build_graph(stack()) if r.name == "slurm-cpu-sa"]


def test_the_debug_partition_is_toolkit_s_example():
    graph = build_graph(
        stack(debugPartition=True, partitions=[{"name": "tpu", "nodesets": ["v4"]}])
    )
    assert template(graph, "debug")["machineType"] == "n2-standard-2"
    found = objects(graph)
    debug = yaml.safe_load(content(found["tpu-files/nodeset_configs/debug.yaml"]))
    assert (debug["node_count_static"], debug["node_count_dynamic_max"]) == (0, 4)
    partition = yaml.safe_load(content(found["tpu-files/partition_configs/debug.yaml"]))
    assert partition["partition_conf"]["Default"] == "YES"
    assert partition["enable_job_exclusive"] is False


def test_home_is_a_filestore_share_every_vm_mounts_and_prod_protects_it():
    graph = build_graph({**cpu_stack(), "ai-infra:protect": True})
    home = graph.named("slurm-home")
    assert (home.inputs["name"], home.inputs["tier"], home.inputs["location"]) == (
        "ai-test-slurm-tpu-home",
        "BASIC_HDD",
        "us-central2-b",
    )
    # Only the stack's subnet mounts it, and egress to it is the cluster's VMs' alone.
    assert home.inputs["fileShares"] == {
        "name": "nfsshare",
        "capacityGb": 1024,
        "nfsExportOptions": [
            {
                "ipRanges": ["10.129.0.0/20"],
                "accessMode": "READ_WRITE",
                "squashMode": "NO_ROOT_SQUASH",
            }
        ],
    }
    deny, clients = graph.named("slurm-home-deny").inputs, graph.named("slurm-home-clients").inputs
    assert deny["direction"] == clients["direction"] == "EGRESS"
    assert deny["destinationRanges"] == clients["destinationRanges"] == ["192.0.2.0/29"]
    assert "targetTags" not in deny and deny["denies"] == [{"protocol": "all"}]
    assert clients["targetTags"] == ["tpu"] and clients["priority"] < 1000
    assert home.protect
    document = yaml.safe_load(content(objects(graph)["tpu-files/config.yaml"]))
    assert document["network_storage"][0]["local_mount"] == "/home"
    without = build_graph(stack(home={"filestore": False}))
    assert not without.of_type("gcp:filestore/instance:Instance")
    document = yaml.safe_load(content(objects(without)["tpu-files/config.yaml"]))
    assert document["network_storage"] == []


def test_cluster_storage_scripts_and_knobs_reach_config_yaml_and_the_bucket():
    graph = build_graph(
        cpu_stack(
            startupScript="echo node",
            networkStorage=[
                {"serverIp": "10.0.0.5", "remoteMount": "/x", "fsType": "nfs", "localMount": "/x"}
            ],
        )
        | {
            "ai-infra:slurm": {
                **cpu_stack()["ai-infra:slurm"],
                "cpuNodesets": [
                    {"name": "cpu", "startupScript": "echo node"},
                ],
                "controller": {"startupScript": "echo controller"},
                "networkStorage": [
                    {
                        "serverIp": "10.0.0.9",
                        "remoteMount": "/data",
                        "fsType": "nfs",
                        "localMount": "/data",
                    }
                ],
                "cloudParameters": {
                    "resumeRate": 10,
                    "suspendTimeout": 600,
                    "schedulerParameters": ["bf_continue", "bf_window=2880"],
                    "treeWidth": 64,
                },
                "prologScripts": [{"name": "gpu-check.sh", "content": "#!/bin/bash\ntrue\n"}],
                "epilogScripts": [{"name": "clean_tmp.sh", "content": "#!/bin/bash\ntrue\n"}],
            }
        }
    )
    found = objects(graph)
    document = yaml.safe_load(content(found["tpu-files/config.yaml"]))
    assert document["network_storage"][1] == {
        "server_ip": "10.0.0.9",
        "remote_mount": "/data",
        "local_mount": "/data",
        "fs_type": "nfs",
        "mount_options": "",
    }
    assert document["cloud_parameters"] == {
        "resume_rate": 10,
        "suspend_timeout": 600,
        "scheduler_parameters": ["bf_continue", "bf_window=2880"],
        "tree_width": 64,
    }
    # Object names setup.py installs as prolog.d/gpu-check.sh and epilog.d/clean_tmp.sh.
    assert document["prolog_scripts"] == ["gpu-check_sh"]
    assert document["epilog_scripts"] == ["clean_tmp_sh"]
    assert content(found["tpu-files/slurm-prolog-script-gpu-check_sh"]).startswith("#!/bin/bash")
    assert "tpu-files/slurm-epilog-script-clean_tmp_sh" in found
    assert content(found["tpu-files/slurm-controller-script-startup_sh"]) == "echo controller"
    assert content(found["tpu-files/slurm-nodeset-cpu-script-startup_sh"]) == "echo node"
    config = graph.named("slurm-config")
    for name, r in found.items():
        if name != "tpu-files/config.yaml":
            assert r.urn in config.dependencies, name


def test_a_lustre_mount_turns_secure_boot_off_where_it_is_mounted():
    lustre = {
        "serverIp": "10.0.0.2@tcp",
        "remoteMount": "/lustrefs",
        "fsType": "lustre",
        "localMount": "/lustre",
    }
    everywhere = build_graph(
        cpu_stack()
        | {"ai-infra:slurm": {**cpu_stack()["ai-infra:slurm"], "networkStorage": [lustre]}}
    )
    # The cluster's storage is mounted on every VM, the CPU nodes' too.
    for vm in ("slurm-controller", "slurm-login-login-0", "slurm-template-cpu"):
        assert everywhere.named(vm).inputs["shieldedInstanceConfig"]["enableSecureBoot"] is False
    one_group = build_graph(
        stack(loginGroups=[{"name": "login"}, {"name": "lus", "networkStorage": [lustre]}])
    )
    secure = {
        name: one_group.named(name).inputs["shieldedInstanceConfig"]["enableSecureBoot"]
        for name in ("slurm-controller", "slurm-login-login-0", "slurm-login-lus-0")
    }
    assert secure == {
        "slurm-controller": True,
        "slurm-login-login-0": True,
        "slurm-login-lus-0": False,
    }
