"""What `ai-infra:slurm` registers: the Slurm bucket and exactly the YAML the v6 controller
reads, `config.yaml` last, least-privilege accounts and the cluster's firewall."""

from __future__ import annotations

import re
import zlib
from typing import Any

import yaml

from graph.engine import Graph, Registration
from tests.conftest import build_graph
from tests.slurm.test_config import stack

PROJECT = "test-project"
CTL = f"serviceAccount:ai-test-slurm-ctl@{PROJECT}.iam.gserviceaccount.com"
TPU = f"serviceAccount:ai-test-slurm-tpu@{PROJECT}.iam.gserviceaccount.com"
LGN = f"serviceAccount:ai-test-slurm-lgn@{PROJECT}.iam.gserviceaccount.com"


def content(r: Registration) -> Any:
    """A BucketObject's content, which pulumi-gcp marks secret."""
    value = r.inputs["content"]
    return value["value"] if isinstance(value, dict) else value


def objects(graph: Graph) -> dict[str, Registration]:
    return {r.inputs["name"]: r for r in graph.of_type("gcp:storage/bucketObject:BucketObject")}


def test_nodeset_yaml_has_exactly_the_keys_the_controller_reads():
    graph = build_graph(
        stack(
            tpuNodesets=[
                {
                    "name": "v4",
                    "nodeType": "v4-8",
                    "nodeCountDynamicMax": 4,
                    "preemptible": True,
                    "networkStorage": [
                        {
                            "serverIp": "10.0.0.2",
                            "remoteMount": "/export",
                            "localMount": "/data",
                            "fsType": "nfs",
                        }
                    ],
                }
            ]
        )
    )
    document = yaml.safe_load(content(objects(graph)["tpu-files/nodeset_tpu_configs/v4.yaml"]))
    assert document == {
        "nodeset_name": "v4",
        "node_type": "v4-8",
        "accelerator_config": {"topology": "", "version": ""},
        "node_conf": {
            "CPUs": 240,
            "Boards": 1,
            "Sockets": 2,
            "CoresPerSocket": 60,
            "ThreadsPerCore": 2,
            "RealMemory": 400000,
        },
        "tf_version": "2.14.0",
        "preemptible": True,
        "preserve_tpu": False,
        "reserved": False,
        "node_count_static": 0,
        "node_count_dynamic_max": 4,
        "enable_public_ip": False,
        "zone": "us-central2-b",
        "project_id": PROJECT,
        "service_account": {
            "email": TPU.removeprefix("serviceAccount:"),
            "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
        },
        "data_disks": [],
        "docker_image": "us-docker.pkg.dev/schedmd-slurm-public/tpu/slurm-gcp-6-9:tf-2.14.0",
        "subnetwork": "ai-test-subnet",
        "network_storage": [
            {
                "server_ip": "10.0.0.2",
                "remote_mount": "/export",
                "local_mount": "/data",
                "fs_type": "nfs",
                "mount_options": "",
            }
        ],
        # What the tpu.py addition puts in each TPU VM's metadata (test_upstream).
        "metadata": {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"},
    }


def test_an_accelerator_config_nodeset_omits_node_type_and_writes_no_nulls():
    graph = build_graph(
        stack(
            tpuNodesets=[
                {
                    "name": "v4",
                    "acceleratorConfig": {"version": "V4", "topology": "2x2x1"},
                    "nodeCountDynamicMax": 1,
                }
            ]
        )
    )
    document = yaml.safe_load(content(objects(graph)["tpu-files/nodeset_tpu_configs/v4.yaml"]))
    assert "node_type" not in document
    assert document["accelerator_config"] == {"topology": "2x2x1", "version": "V4"}

    def nulls(value: Any) -> bool:
        if isinstance(value, dict):
            return any(nulls(v) for v in value.values())
        if isinstance(value, list):
            return any(nulls(v) for v in value)
        return value is None

    for name, r in objects(graph).items():
        if name.endswith(".yaml"):
            assert not nulls(yaml.safe_load(content(r))), name


def test_partition_and_login_group_yaml():
    graph = build_graph(stack())
    found = objects(graph)
    assert yaml.safe_load(content(found["tpu-files/partition_configs/tpu.yaml"])) == {
        "partition_name": "tpu",
        "partition_conf": {
            "SuspendTime": "300",
            "SuspendTimeout": "240",
            "ResumeTimeout": "600",
            "Default": "YES",
        },
        "partition_nodeset": [],
        "partition_nodeset_dyn": [],
        "partition_nodeset_tpu": ["v4"],
        "enable_job_exclusive": True,
    }
    assert yaml.safe_load(content(found["tpu-files/login_group_configs/login.yaml"])) == {
        "group_name": "login",
        "startup_scripts_timeout": 300,
        "network_storage": [],
    }


def test_config_yaml_carries_the_cluster_and_its_own_conf_templates():
    graph = build_graph(stack())
    document = yaml.safe_load(content(objects(graph)["tpu-files/config.yaml"]))
    assert {k: v for k, v in document.items() if not k.endswith("_tpl")} == {
        "slurm_cluster_name": "tpu",
        "project": PROJECT,
        "bucket_path": f"gs://{PROJECT}-ai-test-slurm-tpu/tpu-files",
        "enable_slurm_auth": False,
        "controller_state_disk": {"device_name": "tpu-controller-save"},
        # The Filestore /home, at the address the mock engine gives the instance.
        "network_storage": [
            {
                "server_ip": "192.0.2.2",
                "remote_mount": "/nfsshare",
                "local_mount": "/home",
                "fs_type": "nfs",
                "mount_options": "defaults,_netdev",
            }
        ],
        "cloud_parameters": {},
        "prolog_scripts": [],
        "epilog_scripts": [],
    }
    # conf.py fills these fields with str.format; a stray brace would break the render.
    fields = {
        "name": "tpu",
        "slurmctld_hosts": "SlurmctldHost=tpu-controller",
        "control_host_port": "6820",
        "auth_key": "munge",
        "state_save": "/var/spool/slurm",
        "slurmlog": "/var/log/slurm",
        "mpi_default": "none",
        "accounting_storage_host": "tpu-controller",
        "accounting_storage_backup_host": "",
        "dbd_host_str": "DbdHost=tpu-controller",
        "db_host": "localhost",
        "db_port": "3306",
        "db_name": "slurm_acct_db",
        "db_user": "slurm",
        "db_pass": '""',
    }
    slurm_conf = document["slurm_conf_tpl"].format(**fields)
    assert "ClusterName=tpu\nSlurmctldHost=tpu-controller\n" in slurm_conf
    # JWT beside munge, for `scontrol token` and slurmrestd, as Toolkit's template has it.
    assert "\nAuthAltTypes=auth/jwt\n" in slurm_conf
    assert "AuthAltParameters" not in slurm_conf  # slurmctld's key is StateSaveLocation's
    slurmdbd = document["slurmdbd_conf_tpl"].format(**fields)
    assert "\nAuthAltTypes=auth/jwt\n" in slurmdbd
    assert "\nAuthAltParameters=jwt_key=/var/spool/slurm/jwt_hs256.key\n" in slurmdbd
    assert slurm_conf.rstrip().endswith("include cloud.conf")
    assert "StorageLoc=slurm_acct_db" in document["slurmdbd_conf_tpl"].format(**fields)
    assert "ConstrainDevices=yes" in document["cgroup_conf_tpl"]


def test_config_yaml_is_written_after_every_other_object():
    graph = build_graph(
        stack(
            tpuNodesets=[
                {"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2, "startupScript": "x"},
                {"name": "b", "nodeType": "v4-8", "nodeCountDynamicMax": 2},
            ],
            partitions=[{"name": "tpu", "nodesets": ["v4"]}, {"name": "b", "nodesets": ["b"]}],
        )
    )
    found = objects(graph)
    config = found.pop("tpu-files/config.yaml")
    assert len(found) >= 6, sorted(found)
    assert "tpu-files/slurm-nodeset-v4-script-startup_sh" in found
    scripts = graph.named("slurm-scripts")
    assert scripts.type == "pulumi-python:dynamic/slurm:RuntimeScripts", scripts.urn
    found["runtime script zips"] = scripts
    missing = [name for name, r in found.items() if r.urn not in config.dependencies]
    assert not missing, f"config.yaml ({config.urn}) does not wait for {missing}"


def test_the_script_zips_go_under_the_cluster_files_at_the_pinned_commit():
    scripts = build_graph(stack()).named("slurm-scripts").inputs
    assert (scripts["bucket"], scripts["prefix"], scripts["commit"]) == (
        f"{PROJECT}-ai-test-slurm-tpu",
        "tpu-files",
        "079cf8349a96cfd433cb89945bc467af21818424",
    )
    assert sorted(scripts["zips"]) == ["slurm-gcp-devel-controller.zip", "slurm-gcp-devel.zip"]


def test_accounts_get_least_privilege_and_read_only_the_slurm_bucket():
    graph = build_graph(stack())
    accounts = {
        r.name: r.inputs["accountId"]
        for r in graph.of_type("gcp:serviceaccount/account:Account")
        if r.name.startswith("slurm")
    }
    assert accounts == {
        "slurm-ctl-sa": "ai-test-slurm-ctl",
        "slurm-tpu-sa": "ai-test-slurm-tpu",
        "slurm-lgn-sa": "ai-test-slurm-lgn",
    }
    project_roles = {
        (r.inputs["member"], r.inputs["role"])
        for r in graph.of_type("gcp:projects/iAMMember:IAMMember")
        if "slurm" in r.inputs["member"]
    }
    role = graph.named("slurm-ctl-role")
    assert role.inputs["roleId"] == "ai_test_slurm_ctl"
    # A TPU-only cluster: what tpu.py calls, and the VM listing slurmsync.py does.
    assert role.inputs["permissions"] == [
        "compute.instances.list",
        "tpu.acceleratorTypes.get",
        "tpu.nodes.create",
        "tpu.nodes.delete",
        "tpu.nodes.get",
        "tpu.nodes.list",
        "tpu.nodes.start",
        "tpu.nodes.stop",
        "tpu.operations.get",
    ]
    custom = f"projects/{PROJECT}/roles/ai_test_slurm_ctl"
    [grant] = [
        r for r in graph.of_type("gcp:projects/iAMMember:IAMMember") if r.inputs["role"] == custom
    ]
    assert role.urn in grant.dependencies, grant.urn
    assert project_roles == {
        (CTL, custom),
        (CTL, "roles/logging.logWriter"),
        (CTL, "roles/monitoring.metricWriter"),
        (TPU, "roles/logging.logWriter"),
        (TPU, "roles/monitoring.metricWriter"),
        (LGN, "roles/logging.logWriter"),
        (LGN, "roles/monitoring.metricWriter"),
    }
    [acts_as] = graph.of_type("gcp:serviceaccount/iAMMember:IAMMember")  # the TPU account only
    assert (acts_as.inputs["member"], acts_as.inputs["role"]) == (
        CTL,
        "roles/iam.serviceAccountUser",
    )
    assert acts_as.name == "slurm-ctl-tpu-iam.serviceAccountUser", acts_as.urn
    tpu_account = graph.named("slurm-tpu-sa")
    assert tpu_account.urn in acts_as.dependencies, acts_as.urn
    assert acts_as.inputs["serviceAccountId"].endswith(
        "ai-test-slurm-tpu@test-project.iam.gserviceaccount.com"
    )
    bucket_grants = {
        (r.inputs["bucket"], r.inputs["member"], r.inputs["role"])
        for r in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    }
    bucket = f"{PROJECT}-ai-test-slurm-tpu"
    assert bucket_grants == {
        (bucket, member, role)
        for member in (CTL, TPU, LGN)
        for role in ("roles/storage.objectViewer", "roles/storage.legacyBucketReader")
    }


def test_a_team_node_account_reads_the_bucket_and_the_controller_may_attach_it():
    email = "trainer@test-project.iam.gserviceaccount.com"
    nodeset = {"nodeType": "v4-8", "nodeCountDynamicMax": 1, "serviceAccountEmail": email}
    graph = build_graph(
        stack(
            # A nodeset named like one of the cluster's roles, two sharing one account, and
            # one on the cluster's TPU node account.
            tpuNodesets=[
                {"name": "tpu", **nodeset},
                {"name": "b", **nodeset},
                {"name": "c", "nodeType": "v4-8", "nodeCountDynamicMax": 1},
            ],
            partitions=[{"name": "tpu", "nodesets": ["tpu", "b", "c"]}],
        )
    )
    grants = [
        (r.inputs["member"], r.inputs["role"])
        for r in graph.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    ]
    assert len(grants) == len(set(grants)) == 8
    assert (TPU, "roles/storage.objectViewer") in grants
    assert (f"serviceAccount:{email}", "roles/storage.legacyBucketReader") in grants
    acts_as = {
        (r.inputs["serviceAccountId"].rsplit("/", 1)[1], r.inputs["member"], r.inputs["role"])
        for r in graph.of_type("gcp:serviceaccount/iAMMember:IAMMember")
    }
    assert acts_as == {
        (TPU.removeprefix("serviceAccount:"), CTL, "roles/iam.serviceAccountUser"),
        (email, CTL, "roles/iam.serviceAccountUser"),
    }
    document = yaml.safe_load(content(objects(graph)["tpu-files/nodeset_tpu_configs/tpu.yaml"]))
    assert document["service_account"]["email"] == email


def test_the_slurm_bucket_is_private_and_protected_in_prod():
    graph = build_graph({**stack(), "ai-infra:protect": True})
    bucket = graph.named("slurm-bucket-bucket")
    assert bucket.inputs["uniformBucketLevelAccess"] is True
    assert bucket.inputs["publicAccessPrevention"] == "enforced"
    assert bucket.protect and bucket.inputs["forceDestroy"] is False
    throwaway = build_graph(stack()).named("slurm-bucket-bucket")
    assert not throwaway.protect and throwaway.inputs["forceDestroy"] is True


def test_firewall_admits_the_cluster_to_itself_and_ssh_from_iap_only():
    graph = build_graph(stack())
    internal = graph.named("slurm-internal").inputs
    assert (internal["sourceTags"], internal["targetTags"]) == (["tpu"], ["tpu"])
    assert "sourceRanges" not in internal
    ssh = graph.named("slurm-iap-ssh").inputs
    assert ssh["sourceRanges"] == ["35.235.240.0/20"]
    assert ssh["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    assert ssh["targetTags"] == ["tpu"]


def test_a_stack_without_slurm_registers_nothing_of_it():
    graph = build_graph({k: v for k, v in stack().items() if k != "ai-infra:slurm"})
    assert not [r.urn for r in graph if "slurm" in r.urn]


def test_the_controller_is_private_shielded_and_boots_with_the_v6_metadata():
    graph = build_graph({**stack(), "ai-infra:protect": True})
    controller = graph.named("slurm-controller")
    i = controller.inputs
    assert (i["name"], i["machineType"], i["zone"]) == (
        "tpu-controller",
        "c2-standard-4",
        "us-central2-b",
    )
    assert i["bootDisk"]["initializeParams"] == {
        "image": "projects/schedmd-slurm-public/global/images/family/"
        "slurm-gcp-6-12-hpc-rocky-linux-8",
        "type": "pd-ssd",
        "size": 50,
    }
    [nic] = i["networkInterfaces"]
    assert "accessConfigs" not in nic or not nic["accessConfigs"]
    assert i["shieldedInstanceConfig"] == {
        "enableSecureBoot": True,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }
    assert i["serviceAccount"]["email"] == CTL.removeprefix("serviceAccount:")
    metadata = dict(i["metadata"])
    script = metadata.pop("startup-script")
    assert metadata == {
        "slurm_bucket_path": f"gs://{PROJECT}-ai-test-slurm-tpu/tpu-files",
        "slurm_cluster_name": "tpu",
        "slurm_instance_role": "controller",
        "universe_domain": "googleapis.com",
        "enable-oslogin": "TRUE",
        "block-project-ssh-keys": "TRUE",
    }
    assert "ai-infra-tpu-startup.sh" in script and 'exec "$SCRIPTS/setup.py"' in script
    # The cluster's tag (the one upstream's tpu.py gives TPU VMs) and the role's.
    assert i["tags"] == ["tpu", "tpu-controller"]
    assert i["labels"]["slurm_cluster_name"] == "tpu"
    state = graph.named("slurm-state")
    assert (state.inputs["name"], state.inputs["type"], state.inputs["size"]) == (
        "tpu-controller-save",
        "pd-ssd",
        50,
    )
    assert i["attachedDisks"][0]["deviceName"] == "tpu-controller-save"
    assert state.urn in controller.dependencies
    assert state.protect and controller.protect
    ctl_grants = [
        r.urn for r in graph if r.type.endswith("IAMMember") and r.inputs.get("member") == CTL
    ]
    assert len(ctl_grants) == 6
    assert set(ctl_grants) <= set(controller.dependencies)
    # It boots once the zips and config.yaml are in the bucket.
    assert graph.named("slurm-scripts").urn in controller.dependencies
    assert graph.named("slurm-config").urn in controller.dependencies


def test_login_nodes_join_their_group_with_their_own_account():
    graph = build_graph(
        stack(
            loginGroups=[
                {"name": "login", "count": 2, "machineType": "n2-standard-4"},
                {"name": "big", "machineType": "n2-highmem-8", "startupScript": "echo hi"},
            ]
        )
    )
    logins = {
        (group, i): graph.named(f"slurm-login-{group}-{i}")
        for group, i in (("login", 0), ("login", 1), ("big", 0))
    }
    controller = graph.named("slurm-controller")
    for (group, i), login in logins.items():
        assert login.inputs["name"] == f"tpu-{group}-{i}"
        assert login.inputs["serviceAccount"]["email"] == LGN.removeprefix("serviceAccount:")
        assert login.inputs["metadata"]["slurm_instance_role"] == "login"
        assert login.inputs["metadata"]["slurm_login_group"] == group
        assert "ai-infra-tpu-startup.sh" not in login.inputs["metadata"]["startup-script"]
        reads = graph.named("slurm-lgn-bucket-slurm-tpu-storage.objectViewer").urn
        assert reads in login.dependencies, login.urn
        assert graph.named("slurm-config").urn in login.dependencies, login.urn
        # A new controller replaces the login VMs, which mount its exports only at setup:
        # its replacing inputs' hash and its instance id (new with every replacement).
        generation, instance_id = login.inputs["metadata"]["ai_infra_controller_id"].split("-")
        assert re.fullmatch(r"[0-9a-f]{12}", generation)
        assert instance_id == str(zlib.crc32(b"tpu-controller"))
        assert login.replace_on_changes == ("metadata.ai_infra_controller_id",)
        assert controller.urn in login.dependencies
    assert logins[("big", 0)].inputs["machineType"] == "n2-highmem-8"
    # The default group keeps the resource names it had before there were groups.
    assert logins[("login", 0)].aliases and not logins[("big", 0)].aliases
    found = objects(graph)
    assert content(found["tpu-files/slurm-login-big-script-startup_sh"]) == "echo hi"
    assert (
        yaml.safe_load(content(found["tpu-files/login_group_configs/big.yaml"]))["group_name"]
        == "big"
    )


def test_replacing_the_controller_replaces_the_login_vms_and_nothing_else():
    from plan.diff import Op, diff

    before = build_graph(stack())
    after = build_graph(stack(controller={"diskType": "pd-balanced"}))
    changes = {c.resource.name: c.op for c in diff(before, after) if not c.is_component}
    assert changes == {"slurm-controller": Op.REPLACE, "slurm-login-login-0": Op.REPLACE}


def test_the_tpu_vms_boot_script_is_in_the_bucket_before_config_yaml():
    graph = build_graph(stack())
    found = objects(graph)
    boot = found["tpu-files/ai-infra-tpu-startup.sh"]
    assert "docker run" in content(boot)
    assert boot.urn in found["tpu-files/config.yaml"].dependencies


def test_the_tpu_vms_log_in_to_the_regional_registry_a_nodeset_s_image_is_in():
    image = "europe-west4-docker.pkg.dev/test-project/slurm/slurmd:tf-2.14.0"
    graph = build_graph(
        stack(
            tpuNodesets=[
                {"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2},
                {"name": "own", "nodeType": "v4-8", "nodeCountDynamicMax": 2, "dockerImage": image},
            ],
            partitions=[{"name": "tpu", "nodesets": ["v4", "own"]}],
        )
    )
    found = objects(graph)
    script = content(found["tpu-files/ai-infra-tpu-startup.sh"])
    assert (
        '{"credHelpers": {"europe-west4-docker.pkg.dev": "gcloud", "gcr.io": "gcloud", '
        '"us-docker.pkg.dev": "gcloud"}}'
    ) in script
    own = yaml.safe_load(content(found["tpu-files/nodeset_tpu_configs/own.yaml"]))
    assert own["docker_image"] == image


def slurm_plan(example: str) -> list[str]:
    from plan.render import render
    from stacks.loading import parse
    from tests.test_docs import examples

    raw = examples()[example].config
    graph = build_graph(raw, stack=example)
    plan = render(graph, parse(raw, example), example)
    part = plan.split("Slurm (controller, login, nodesets, partitions):\n", 1)[1]
    return part.split("\n\n", 1)[0].splitlines()


def test_the_docs_slurm_example_builds_and_the_plan_shows_it():
    assert slurm_plan("slurm") == [
        "  cluster tpu: controller tpu-controller (c2-standard-4) in us-central2-b, Slurm-GCP "
        "scripts of Cluster Toolkit v1.95.0",
        "  bucket path gs://my-ml-project-ai-slurm-slurm-tpu/tpu-files",
        "  /home: Filestore BASIC_HDD 1024 GiB ai-slurm-slurm-tpu-home",
        "  login group login: 1 x n2-standard-2",
        "    ssh: gcloud compute ssh tpu-login-0 --zone us-central2-b --project my-ml-project "
        "--tunnel-through-iap",
        "  nodeset v4: v4-8 in us-central2-b, 1 worker(s) per slice, 0 static + up to 4 "
        "dynamic nodes, runtime tpu-vm-tf-2.14.0",
        "  partition tpu (default): v4, exclusive, nodes must register within 600 s "
        "(ResumeTimeout)",
        "  controller ai-slurm-slurm-ctl@my-ml-project.iam.gserviceaccount.com: custom role "
        "with 9 permissions",
    ]


def test_the_plan_shows_a_multi_host_partition_s_slices_on_their_leaf_switches():
    lines = slurm_plan("slurm-multihost")
    assert "  nodeset debug: n2-standard-2 in us-central2-b, 0 static + up to 4 dynamic nodes" in (
        lines
    )
    assert (
        "  nodeset v4x16: v4-16 in us-central2-b, 2 worker(s) per slice, 0 static + up to 4 "
        "dynamic nodes (2 slices), runtime tpu-vm-tf-2.14.0"
    ) in lines
    assert (
        "  partition tpu: v4x16, exclusive, tree topology: one leaf switch per slice of 2 nodes, "
        "jobs wait for whole slices, nodes must register within 1200 s (ResumeTimeout)"
    ) in lines
    assert (
        "  partition debug (default): debug, nodes must register within 300 s (ResumeTimeout)"
    ) in lines


def test_the_stack_outputs_say_where_to_log_in_and_what_runs():
    from unittest import mock

    import pulumi

    from graph.engine import run_program
    from stacks import environment, loading

    exported: dict[str, Any] = {}

    def program() -> None:
        env = environment.build(loading.load())
        with mock.patch.object(pulumi, "export", exported.__setitem__):
            environment.export(env)

    run_program(
        stack(loginGroups=[{"name": "login", "count": 2}], debugPartition=True), program=program
    )
    assert exported["slurm"] == {
        "controller": {"name": "tpu-controller", "zone": "us-central2-b"},
        "bucketPath": f"gs://{PROJECT}-ai-test-slurm-tpu/tpu-files",
        "partitions": ["tpu", "debug"],
        "login": {
            f"tpu-login-{i}": f"gcloud compute ssh tpu-login-{i} --zone us-central2-b "
            f"--project {PROJECT} --tunnel-through-iap"
            for i in range(2)
        },
    }


def test_adding_a_nodeset_adds_its_files_and_touches_only_the_cleanup():
    before = build_graph(stack())
    after = build_graph(
        stack(
            tpuNodesets=[
                {"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2},
                {"name": "spot", "nodeType": "v4-8", "nodeCountDynamicMax": 2, "preemptible": True},
            ],
            partitions=[
                {"name": "tpu", "nodesets": ["v4"], "default": True},
                {"name": "spot", "nodesets": ["spot"]},
            ],
        )
    )
    old = {r.urn: r for r in before}
    new = {r.urn: r for r in after}
    assert set(old) <= set(new)
    assert sorted(r.name for u, r in new.items() if u not in old) == [
        "slurm-nodeset-spot",
        "slurm-partition-spot",
    ]
    changed = sorted(r.name for u, r in old.items() if r.inputs != new[u].inputs)
    assert changed == ["slurm-tpu-cleanup"], changed
    assert (
        new[graph_urn(after, "slurm-config")].dependencies
        != old[graph_urn(before, "slurm-config")].dependencies
    )


def graph_urn(graph: Graph, name: str) -> str:
    return graph.named(name).urn


def test_the_environment_records_where_the_slurm_cluster_comes_from():
    from graph.engine import run_program
    from stacks import environment
    from stacks.loading import parse

    raw = stack()
    built: list[environment.Environment] = []
    run_program(raw, program=lambda: built.append(environment.build(parse(raw, "test"))))
    [env] = built
    assert env.sources["slurm"] == "ai-infra:slurm"
    assert env.slurm is not None and env.slurm.bucket_path == (
        f"gs://{PROJECT}-ai-test-slurm-tpu/tpu-files"
    )


def test_node_accounts_exist_only_while_a_nodeset_runs_as_them():
    email = "trainer@test-project.iam.gserviceaccount.com"
    graph = build_graph(
        stack(
            tpuNodesets=[
                {
                    "name": "v4",
                    "nodeType": "v4-8",
                    "nodeCountDynamicMax": 1,
                    "serviceAccountEmail": email,
                }
            ]
        )
    )
    accounts = {r.inputs["accountId"] for r in graph.of_type("gcp:serviceaccount/account:Account")}
    assert {a for a in accounts if "slurm" in a} == {"ai-test-slurm-ctl", "ai-test-slurm-lgn"}
    [acts_as] = graph.of_type("gcp:serviceaccount/iAMMember:IAMMember")
    assert acts_as.inputs["serviceAccountId"].endswith(email)
