"""`ai-infra:tpuVms`: validation before anything is registered, what each entry registers, the
outputs MaxText's multihost runner needs, the offline plan, and the docs' example."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
import yaml

from catalog import tpu as tpu_catalog
from components.tpu_vms.request import REPLACE_KEYS
from graph.engine import Graph, record_program
from plan import cli as plan_main
from plan.diff import Op, diff
from stacks import environment, loading
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config
from tests.test_docs import examples

QR = "pulumi-python:dynamic/tpu:QueuedResource"
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
SEED = {"name": "maxtext", "accelerator": "v4-8", "nodeCount": 2, "provisioning": "reserved"}


def stack(**overrides: Any) -> dict[str, Any]:
    """The test stack in us-central2-b, the zone Cloud TPU documents for v4."""
    return with_config(**{"gcp:region": "us-central2", "gcp:zone": "us-central2-b", **overrides})


def vm(**fields: Any) -> dict[str, Any]:
    return {"name": "exp", "accelerator": "v4-8", **fields}


def rejected(config: dict[str, Any]) -> dict[str, str]:
    graph, error = record_program(config)
    assert isinstance(error, ConfigError), error
    assert graph.resources == [], [r.urn for r in graph]
    return dict(error.rendered)


@pytest.mark.parametrize(
    ("overrides", "path", "fix"),
    [
        ({"tpuVms": [vm(accelerator="v4-9")]}, "tpuVms[0].accelerator", "v4 sizes are"),
        ({"tpuVms": [vm(accelerator="tpu7x-8")]}, "tpuVms[0].accelerator", "tpuSlices"),
        (
            {"tpuVms": [vm(accelerator="v5p-8", runtimeVersion="tpu-ubuntu2204-base")]},
            "tpuVms[0].runtimeVersion",
            "v2-alpha-tpuv5",
        ),
        (
            {"tpuVms": [vm(runtimeVersion="v2-alpha-tpuv6e")]},
            "tpuVms[0].runtimeVersion",
            "tpu-ubuntu2204-base",
        ),
        (
            {"tpuVms": [vm(runtimeVersion="tpu-ubuntu2204-base\n")]},
            "tpuVms[0].runtimeVersion",
            "v4",
        ),
        ({"tpuVms": [vm(nodeCount=0)]}, "tpuVms[0].nodeCount", "must be at least 1"),
        ({"tpuVms": [vm(nodeCount=65)]}, "tpuVms[0].nodeCount", "must be at most 64"),
        ({"tpuVms": [vm(accelerator="v3-8", nodeCount=2)]}, "tpuVms[0].nodeCount", "v4 or later"),
        ({"tpuVms": [vm(reservation="r1")]}, "tpuVms[0].reservation", "provisioning: reserved"),
        (
            {"tpuVms": [vm(provisioning="reserved", reservation="projects/x/r")]},
            "tpuVms[0].reservation",
            "projects/PROJECT/reservations/NAME",
        ),
        ({"tpuVms": [vm(provisioning="flex-start")]}, "tpuVms[0].provisioning", "spot"),
        ({"tpuVms": [vm(provisioning="preemptible")]}, "tpuVms[0].provisioning", "best-effort"),
        ({"tpuVms": [vm(name="Exp")]}, "tpuVms[0].name", "lowercase"),
        ({"tpuVms": [vm(name="exp\n")]}, "tpuVms[0].name", "lowercase"),
        ({"tpuVms": [vm(), vm()]}, "tpuVms[1].name", "unique"),
        (
            {"tpuVms": [vm(name="a" * 40)]},
            "tpuVms[0].name",
            "service account id",
        ),
        ({"tpuVms": [vm(nodePrefix="p" * 62, nodeCount=12)]}, "tpuVms[0].nodePrefix", "63"),
        ({"tpuVms": [vm(zone="us-west4-a")]}, "tpuVms[0].zone", "not in gcp:region"),
        (
            {"tpuVms": [vm(serviceAccount="123456789-compute@developer.gserviceaccount.com")]},
            "tpuVms[0].serviceAccount",
            "default compute service account",
        ),
        (
            {
                "tpuVms": [
                    vm(
                        serviceAccount="trainer@other-proj.iam.gserviceaccount.com",
                        roles=["roles/tpu.viewer"],
                    )
                ]
            },
            "tpuVms[0].roles",
            "unset serviceAccount",
        ),
        ({"tpuVms": [vm(roles=["roles/editor"])]}, "tpuVms[0].roles[0]", "basic role"),
        ({"tpuVms": [vm(buckets={"nope": "read"})]}, "tpuVms[0].buckets.nope", "no bucket"),
        ({"tpuVms": [vm(labels={"Team": "a"})]}, "tpuVms[0].labels", "lowercase"),
        ({"tpuVms": [vm(metadata={"a b": "c"})]}, 'tpuVms[0].metadata["a b"]', "letters"),
        (
            {"tpuVms": [vm(labels={f"l{n}": "x" for n in range(63)})]},
            "tpuVms[0].labels",
            "keep at most",
        ),
        ({"tpuVms": [vm(timeoutMinutes=0)]}, "tpuVms[0].timeoutMinutes", "must be"),
        (
            # 64 x v4-4096 is 32768 hosts; a /20 has 4092 usable addresses.
            {"tpuVms": [vm(accelerator="v4-4096", nodeCount=64)]},
            "network.subnetCidr",
            "widen subnetCidr",
        ),
        (
            {"tpuVms": [vm(startupScript="x", metadata={"startup-script": "y"})]},
            "tpuVms[0].metadata.startup-script",
            "in startupScript instead",
        ),
        ({"tpuVms": [vm(startupScript="x" * 600_000)]}, "tpuVms[0].metadata", "512"),
        (
            {"tpuVms": [vm(startupScript="cat <<AI_INFRA_EOF\nx\nAI_INFRA_EOF\n")]},
            "tpuVms[0].startupScript",
            "rename that word",
        ),
        (
            {"tpuVms": [vm(metadata={"enable-guest-attributes": "FALSE"})]},
            "tpuVms[0].metadata.enable-guest-attributes",
            "readiness signal",
        ),
        ({"tpuVms": [vm(startupTimeoutMinutes=-1)]}, "tpuVms[0].startupTimeoutMinutes", "0"),
        (
            {
                "tpuVms": [
                    vm(
                        dataDisks=[
                            {"sourceDisk": "projects/test-project/zones/us-central2-a/disks/d"}
                        ]
                    )
                ]
            },
            "tpuVms[0].dataDisks[0].sourceDisk",
            "own zone",
        ),
        (
            {
                "tpuVms": [
                    vm(
                        nodeCount=2,
                        dataDisks=[
                            {
                                "sourceDisk": "projects/test-project/zones/us-central2-b/disks/d",
                                "mode": "READ_WRITE",
                            }
                        ],
                    )
                ]
            },
            "tpuVms[0].dataDisks[0].mode",
            "READ_ONLY",
        ),
        ({"tpuVms": [vm(publicIps=True)]}, "tpuVms[0].publicIps", "enablePublicIps"),
        (
            {"tpuVms": [vm(nodeCount=2), vm(name="other", nodePrefix="exp-1")]},
            "tpuVms[0].name",
            "--TPU_PREFIX=exp",
        ),
        (
            {"tpuVms": [vm(name="nodes")]},
            "tpuVms[0].name",
            "already belongs to cluster",
        ),
        (
            {"tpuSlices": [{"name": "old", "accelerator": "v3-32"}]},
            "tpuSlices[0].accelerator",
            "ai-infra:tpuVms",
        ),
        (
            {"tpuSlices": [{"name": "old", "accelerator": "v2-8"}]},
            "tpuSlices[0].accelerator",
            "ai-infra:tpuVms",
        ),
    ],
)
def test_bad_entries_name_their_path_and_fix_and_register_nothing(overrides, path, fix):
    found = rejected(stack(**overrides))
    key = f"ai-infra:{path}"
    assert key in found, found
    assert fix in found[key], found[key]


def built(*entries: dict[str, Any], **overrides: Any) -> Graph:
    return build_graph(stack(tpuVms=list(entries), **overrides))


def queued_resource(graph: Graph, name: str):
    return graph.named(f"tpuvm-{name}-qr")


def test_the_seed_example_registers_two_reserved_v4_8_slices_in_the_stack_network():
    graph = built(SEED)
    qr = queued_resource(graph, "maxtext")
    assert qr.type == QR
    i = qr.inputs
    assert i["acceleratorType"] == "v4-8"
    assert i["runtimeVersion"] == "tpu-ubuntu2204-base"
    assert (i["nodeCount"], i["nodePrefix"]) == (2, "maxtext")
    assert (i["capacity"], i["reservationName"]) == ("reserved", "")
    assert i["serviceAccount"] == "ai-test-maxtext@test-project.iam.gserviceaccount.com"
    assert i["enableExternalIps"] is False
    # The mock engine's self links end in the resource name.
    assert i["network"].endswith("/ai-test-vpc")
    assert i["subnetwork"].endswith("/ai-test-subnet")
    assert (i["project"], i["zone"], i["queuedResourceId"]) == (
        "test-project",
        "us-central2-b",
        "maxtext",
    )
    assert i["labels"] == {"managed-by": "pulumi", "ai-infra-stack": "ai-test"}
    assert qr.delete_before_replace, qr.urn
    # The VMs boot into the subnet and egress through the NAT; both come first.
    assert graph.named("network-nat").urn in qr.dependencies
    assert graph.named("network-subnet").urn in qr.dependencies


def test_the_dedicated_account_writes_logs_and_metrics_and_nothing_else():
    graph = built(SEED)
    account = graph.named("tpuvm-maxtext-sa")
    assert account.inputs["accountId"] == "ai-test-maxtext"
    component = graph.named("tpuvm-maxtext")
    grants = [r for r in graph.children(component.urn) if r.type.endswith("IAMMember")]
    assert sorted(g.inputs["role"] for g in grants) == [
        "roles/logging.logWriter",
        "roles/monitoring.metricWriter",
    ]
    assert {g.inputs["member"] for g in grants} == {
        "serviceAccount:ai-test-maxtext@test-project.iam.gserviceaccount.com"
    }
    qr = queued_resource(graph, "maxtext")
    assert {account.urn, *(g.urn for g in grants)} <= set(qr.dependencies)
    assert not any("compute@developer" in str(r.inputs) for r in graph), "default compute SA"


def test_bucket_access_and_extra_roles_go_to_the_dedicated_account_only_when_asked():
    graph = built(
        vm(buckets={"data": "read"}, roles=["roles/tpu.viewer"]),
        buckets=[{"name": "data"}],
    )
    bucket_grant = graph.named("tpuvm-exp-bucket-data-storage.objectViewer")
    assert bucket_grant.inputs["role"] == "roles/storage.objectViewer"
    assert (
        bucket_grant.inputs["member"]
        == "serviceAccount:ai-test-exp@test-project.iam.gserviceaccount.com"
    )
    assert graph.named("tpuvm-exp-tpu.viewer").inputs["role"] == "roles/tpu.viewer"
    plain = built(vm())
    assert not [r for r in plain if r.type == "gcp:storage/bucketIAMMember:BucketIAMMember"]


def test_an_existing_account_is_used_as_given_and_none_is_created():
    graph = built(vm(serviceAccount="trainer@other-proj.iam.gserviceaccount.com"))
    assert queued_resource(graph, "exp").inputs["serviceAccount"] == (
        "trainer@other-proj.iam.gserviceaccount.com"
    )
    assert not graph.of_type("gcp:serviceaccount/account:Account")[1:], "only the GKE node SA"


@pytest.mark.parametrize(
    ("accelerator", "zone", "runtime", "chips"),
    [
        ("v2-8", "us-central1-b", "tpu-ubuntu2204-base", 4),
        ("v3-32", "europe-west4-a", "tpu-ubuntu2204-base", 16),
        ("v4-16", "us-central2-b", "tpu-ubuntu2204-base", 8),
        ("v5litepod-16", "us-central1-a", "v2-alpha-tpuv5-lite", 16),
        ("v5p-32", "us-central1-a", "v2-alpha-tpuv5", 16),
        ("v6e-8", "us-central1-b", "v2-alpha-tpuv6e", 8),
    ],
)
def test_each_family_gets_its_documented_runtime(accelerator, zone, runtime, chips):
    region = zone.rsplit("-", 1)[0]
    entry = vm(accelerator=accelerator, zone=zone)
    config = loading.parse(
        stack(**{"gcp:region": region, "gcp:zone": zone}, tpuVms=[entry]), "test"
    )
    (entry,) = config.tpu_vms
    assert entry.runtime == runtime
    assert entry.chips == chips


def test_capacity_reservation_network_and_vm_settings_reach_the_queued_resource():
    graph = built(
        vm(
            name="spot",
            provisioning="spot",
            zone="us-central2-b",
            enablePublicIps=True,
            labels={"team": "research"},
            tags=["tpu"],
            startupScript="echo ready",
            metadata={"env": "dev"},
            timeoutMinutes=5,
        ),
        vm(name="held", provisioning="reserved", reservation="v4-res"),
        vm(name="shared", provisioning="reserved", reservation="projects/host-proj/reservations/r"),
        vm(
            name="elsewhere",
            provisioning="best-effort",
            network={
                "network": "projects/net-proj/global/networks/shared",
                "subnetwork": "projects/net-proj/regions/us-central2/subnetworks/tpu",
            },
        ),
    )
    spot = queued_resource(graph, "spot").inputs
    assert (spot["capacity"], spot["zone"], spot["enableExternalIps"]) == (
        "spot",
        "us-central2-b",
        True,
    )
    assert spot["labels"]["team"] == "research" and spot["tags"] == ["tpu", "ai-test-spot-tpu-vm"]
    metadata = dict(spot["metadata"])
    script = metadata.pop("startup-script")
    assert metadata == {
        "env": "dev",
        "enable-guest-attributes": "TRUE",
        "enable-oslogin": "TRUE",
        "block-project-ssh-keys": "TRUE",
    }
    # The entry's script is a step of the rendered one, which reports when it is done.
    assert "echo ready" in script.splitlines() and "STEP=startupScript" in script
    assert "guest-attributes/ai-infra/startup" in script
    assert spot["timeoutSeconds"] == 300
    assert queued_resource(graph, "held").inputs["reservationName"] == (
        "projects/test-project/locations/us-central2-b/reservations/v4-res"
    )
    assert queued_resource(graph, "shared").inputs["reservationName"] == (
        "projects/host-proj/locations/us-central2-b/reservations/r"
    )
    elsewhere = queued_resource(graph, "elsewhere").inputs
    assert elsewhere["capacity"] == "best-effort"
    assert elsewhere["network"] == "projects/net-proj/global/networks/shared"
    assert elsewhere["subnetwork"] == "projects/net-proj/regions/us-central2/subnetworks/tpu"


def _environment(config: dict[str, Any]) -> environment.Environment:
    captured: list[environment.Environment] = []

    def program() -> None:
        captured.append(environment.build(loading.load()))

    graph, error = record_program(config, program=program)
    assert error is None and len(graph) > 0
    return captured[0]


def test_outputs_name_every_tpu_vm_and_the_ssh_command_for_worker_0():
    env = _environment(stack(tpuVms=[SEED, vm(name="solo", nodePrefix="one")]))
    seed = env.tpu_vms["maxtext"]
    assert seed.node_names == ["maxtext-0", "maxtext-1"]
    assert seed.ssh_commands["maxtext-1"] == (
        "gcloud compute tpus tpu-vm ssh maxtext-1 --zone=us-central2-b --project=test-project "
        "--worker=0 --internal-ip"
    )
    # From outside the VPC: only the alpha command tunnels through IAP.
    assert seed.iap_ssh_commands["maxtext-1"] == (
        "gcloud alpha compute tpus tpu-vm ssh maxtext-1 --zone=us-central2-b "
        "--project=test-project --worker=0 --tunnel-through-iap"
    )
    # multihost_runner.py --TPU_PREFIX=one takes the VM named exactly `one`.
    assert env.tpu_vms["solo"].node_names == ["one"]
    assert env.sources["tpuvm-maxtext"] == "ai-infra:tpuVms[0]"


def test_the_offline_plan_shows_slices_chips_and_capacity(tmp_path):
    path = tmp_path / "Pulumi.vms.yaml"
    path.write_text(yaml.safe_dump({"config": stack(tpuVms=[SEED])}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert plan_main.main([str(path)]) == 0
    line = next(x for x in out.getvalue().splitlines() if "QueuedResource tpuvm-maxtext-qr" in x)
    assert "2 x v4-8" in line
    assert "slices=maxtext-0,maxtext-1" in line
    assert "chips=8" in line
    assert "capacity=reserved" in line
    assert "publicIps=False" in line


def test_the_docs_example_is_the_seed_entry():
    entries = examples()["tpu-vms"].config["ai-infra:tpuVms"]
    assert entries == [SEED]
    graph = build_graph(stack(tpuVms=entries))
    assert queued_resource(graph, "maxtext").inputs["nodeCount"] == 2


@pytest.mark.parametrize(
    ("accelerator", "topology", "hosts"),
    [
        # tpu/docs/v2, v3: 4 chips of 2 TensorCores per host, 2D tori up to 16x16 and 32x32.
        ("v2-8", "2x2", 1),
        ("v2-32", "4x4", 4),
        ("v2-512", "16x16", 64),
        ("v3-8", "2x2", 1),
        ("v3-64", "4x8", 8),
        ("v3-1024", "16x32", 128),
        ("v3-2048", "32x32", 256),
    ],
)
def test_v2_and_v3_shapes_are_tpu_vm_only(accelerator, topology, hosts):
    shape = tpu_catalog.resolve(accelerator)
    assert (shape.topology, shape.hosts, shape.chips_per_host) == (topology, hosts, 4)
    assert not shape.family.gke
    assert shape.family.tpu_vm_runtimes[0] == "tpu-ubuntu2204-base"


@pytest.mark.parametrize(
    ("accelerator", "runtime", "fine"),
    [
        ("v3-8", "tpu-vm-tf-2.16.1-pjrt", True),
        ("v4-32", "tpu-vm-tf-2.10.0-pod-v4", True),
        ("v4-8", "v2-alpha-tpuv4", True),
        ("v5p-8", "tpu-vm-tf-2.16.0-pod-pjrt", True),
        ("v5litepod-8", "v2-alpha-tpuv5", False),
        ("v6e-8", "tpu-ubuntu2204-base", False),
        ("v2-8", "v2-alpha-tpuv5-lite", False),
    ],
)
def test_runtime_compatibility_follows_the_software_versions_page(accelerator, runtime, fine):
    family = tpu_catalog.resolve(accelerator).family
    assert (tpu_catalog.runtime_problem(family, runtime) is None) == fine


@pytest.mark.parametrize(
    ("network", "path", "fix"),
    [
        (
            {
                "network": "shared",
                "subnetwork": "projects/p-12345/regions/us-central2/subnetworks/s",
            },
            "tpuVms[0].network.network",
            "projects/P/global/networks/N",
        ),
        (
            {
                "network": "projects/p-12345/global/networks/n",
                "subnetwork": "projects/p-12345/regions/us-central2/subnetworks/s t",
            },
            "tpuVms[0].network.subnetwork",
            "projects/P/regions/R/subnetworks/S",
        ),
        (
            {
                "network": "projects/p-12345/global/networks/n",
                "subnetwork": "projects/p-12345/regions/europe-west4/subnetworks/s",
            },
            "tpuVms[0].network.subnetwork",
            "europe-west4",
        ),
    ],
)
def test_another_network_must_be_a_full_path_in_the_region(network, path, fix):
    found = rejected(stack(tpuVms=[vm(network=network)]))
    assert fix in found[f"ai-infra:{path}"], found


def test_protected_stacks_protect_the_queued_resource_from_replacement_and_destroy():
    assert not queued_resource(built(vm()), "exp").protect
    protected = build_graph(stack(tpuVms=[vm()], protect=True))
    assert queued_resource(protected, "exp").protect


def test_an_entry_may_fill_every_label_the_tpu_api_has_room_for():
    # The TPU API client creates the queued resource, so pulumi-gcp adds no label of its own:
    # 64 - managed-by - ai-infra-stack leaves 62 for the entry.
    labels = {f"l{n}": "x" for n in range(62)}
    qr = queued_resource(built(vm(name="maxtext", labels=labels)), "maxtext")
    assert len(qr.inputs["labels"]) == 64, qr.urn
    problems = rejected(stack(tpuVms=[vm(labels={**labels, "l62": "x"})]))
    assert "keep at most 62" in problems["ai-infra:tpuVms[0].labels"], problems


def test_os_login_is_enforced_on_every_tpu_vm_whatever_else_the_metadata_holds():
    graph = built(vm(metadata={"env": "dev", "enable-oslogin-2fa": "TRUE"}), vm(name="bare"))
    for name in ("exp", "bare"):
        metadata = queued_resource(graph, name).inputs["metadata"]
        assert metadata["enable-oslogin"] == "TRUE", name
        assert metadata["block-project-ssh-keys"] == "TRUE", name
        assert "ssh-keys" not in metadata and "sshKeys" not in metadata
    assert queued_resource(graph, "exp").inputs["metadata"]["enable-oslogin-2fa"] == "TRUE"


def test_the_stack_network_lets_iap_reach_the_tpu_vms_on_port_22():
    graph = built(vm())
    rule = graph.named("network-allow-iap-ssh")
    assert rule.inputs["sourceRanges"] == ["35.235.240.0/20"]
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    # No target tags: it covers every VM of the network, TPU VMs included.
    assert "targetTags" not in rule.inputs
    # The mock engine's self links end in the resource name.
    assert queued_resource(graph, "exp").inputs["network"].endswith("/" + rule.inputs["network"])


@pytest.mark.parametrize(
    ("entry", "api"),
    [
        (vm(), "v2"),
        (vm(provisioning="spot"), "v2"),
        (vm(provisioning="reserved"), "v2"),
        (vm(provisioning="best-effort"), "v2alpha1"),
        (
            vm(
                bootDisk={
                    "kmsKey": "projects/test-project/locations/us-central2/keyRings/r/cryptoKeys/k"
                }
            ),
            "v2alpha1",
        ),
        (vm(bootDisk={}), "v2"),
    ],
)
def test_the_ga_api_serves_every_entry_but_what_only_v2alpha1_has(entry, api):
    assert queued_resource(built(entry), "exp").inputs["apiVersion"] == api


def test_queueing_networks_and_boot_disk_reach_the_queued_resource():
    extra = {
        "network": "projects/test-project/global/networks/dcn",
        "subnetwork": "projects/test-project/regions/us-central2/subnetworks/dcn",
        "queueCount": 8,
    }
    key = "projects/test-project/locations/us-central2/keyRings/r/cryptoKeys/k"
    entry = vm(
        timeoutMinutes=240,
        queueing={"validAfterDuration": "1h30m", "validUntilTime": "2026-12-01T02:00:00Z"},
        queueCount=4,
        additionalNetworks=[extra],
        bootDisk={"kmsKey": key, "confidentialCompute": True},
    )
    i = queued_resource(built(entry), "exp").inputs
    assert i["queueingPolicy"] == {
        "validAfterSeconds": 5400,
        "validUntilTime": "2026-12-01T02:00:00Z",
    }
    assert i["queueCount"] == 4
    assert i["additionalNetworks"] == [extra]
    assert i["bootDisk"] == {"kmsKeyName": key, "confidentialCompute": True}
    plain = queued_resource(built(vm()), "exp").inputs
    assert (plain["queueingPolicy"], plain["queueCount"], plain["bootDisk"]) == ({}, 0, {})
    assert plain["additionalNetworks"] == []


def test_pulumi_up_waits_for_every_workers_startup_script():
    graph = built(vm(name="maxtext", accelerator="v4-16", nodeCount=2, startupTimeoutMinutes=20))
    (wait,) = graph.of_type("pulumi-python:dynamic/tpu:StartupWait")
    qr = queued_resource(graph, "maxtext")
    assert wait.inputs["nodes"] == ["maxtext-0", "maxtext-1"]
    assert wait.inputs["workers"] == 2, "a v4-16 slice has two hosts"
    assert wait.inputs["timeoutSeconds"] == 20 * 60
    assert qr.urn in wait.dependencies
    assert not built(vm(startupTimeoutMinutes=0)).of_type("pulumi-python:dynamic/tpu:StartupWait")


def _edit(before: dict[str, Any], after: dict[str, Any]) -> tuple[Op, list[str]]:
    (change,) = [c for c in diff(built(before), built(after)) if c.resource.type == QR]
    return change.op, [c.rendered_path for c in change.changes]


@pytest.mark.parametrize(
    ("edit", "op"),
    [
        # Cloud TPU updates labels, metadata (the startup script is metadata), tags and data
        # disks on running TPU VMs: the provider does, and the plan agrees.
        ({"startupScript": "echo new"}, Op.UPDATE),
        ({"labels": {"team": "a"}}, Op.UPDATE),
        ({"tags": ["tpu"]}, Op.UPDATE),
        (
            {
                "dataDisks": [
                    {
                        "sourceDisk": "projects/test-project/zones/us-central2-b/disks/d",
                        "mode": "READ_WRITE",
                    }
                ]
            },
            Op.UPDATE,
        ),
        ({"provisioning": "spot"}, Op.REPLACE),
        ({"accelerator": "v4-16"}, Op.REPLACE),
        ({"queueCount": 2}, Op.REPLACE),
        ({"timeoutMinutes": 120}, Op.UPDATE),
        ({"queueing": {"validUntilDuration": "30m"}}, Op.UPDATE),
        # UpdateNode sets network_config.enable_external_ips on running TPU VMs.
        ({"enablePublicIps": True}, Op.UPDATE),
    ],
)
def test_the_plan_says_which_edits_replace_the_tpu_vms(edit, op):
    also = queued_resource(built(vm()), "exp").replace_on_changes
    assert [p.removesuffix(".*") for p in also] == list(REPLACE_KEYS)
    changed_op, paths = _edit(vm(), vm(**edit))
    assert changed_op == op, paths


def test_a_public_ip_replaces_tpu_vms_with_more_networks_and_the_plan_says_so():
    networks = {
        "additionalNetworks": [
            {
                "network": "projects/test-project/global/networks/dcn",
                "subnetwork": "projects/test-project/regions/us-central2/subnetworks/dcn",
            }
        ]
    }
    also = queued_resource(built(vm(**networks)), "exp").replace_on_changes
    assert "enableExternalIps" in also
    changed_op, paths = _edit(vm(**networks), vm(**networks, enablePublicIps=True))
    assert changed_op == Op.REPLACE, paths


def test_the_offline_plan_tells_how_the_request_waits_is_reached_and_comes_back(tmp_path):
    path = tmp_path / "Pulumi.vms.yaml"
    entries = [
        SEED,
        vm(
            name="spot",
            provisioning="spot",
            timeoutMinutes=120,
            queueing={"validAfterDuration": "30m"},
            additionalNetworks=[
                {
                    "network": "projects/test-project/global/networks/dcn",
                    "subnetwork": "projects/test-project/regions/us-central2/subnetworks/dcn",
                }
            ],
        ),
    ]
    path.write_text(yaml.safe_dump({"config": stack(tpuVms=entries)}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert plan_main.main([str(path)]) == 0
    text = out.getvalue()
    section = text[text.index("TPU VMs (queued resources):") :].split("\n\n")[0]
    assert (
        "request: TPU API v2; `pulumi up` waits 60 min for ACTIVE, else deletes it; queue "
        "window: now to +60m" in section
    )
    assert "waits 120 min for ACTIVE, else deletes it; queue window: +30m to +120m" in section
    assert "SSH: OS Login only, project SSH keys blocked; no public IPs (IAP or --internal-ip)" in (
        section
    )
    assert "networks: the stack's VPC, projects/test-project/global/networks/dcn" in section
    assert section.count("a SUSPENDED (preempted) or FAILED request") == 2
