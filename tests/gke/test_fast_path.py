"""Multislice on the fast path: every multi-host slice of every shipped stack runs on a jumbo-MTU
VPC with a NIC in each additional node network its family takes, unless its config opts out;
edits of those settings change what the provider would change (a VPC's MTU in place, a pool
by replacement) and say what they leave behind; bad input is refused at its path; and the
TPU provisioner's side is one value the controller reads."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.network import JUMBO_MTU
from graph.engine import Graph, list_stacks, load_stack_config, record_program
from plan.cli import main as plan_main
from plan.cli import mtu_changes
from plan.diff import Op, diff
from stacks import environment
from stacks.config import StackConfig
from stacks.environment import diff_notices
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config
from tests.gke.test_tpu_slices import extra_nics, slice_pools
from tests.stacks import test_bad_input

NETWORK = "gcp:compute/network:Network"
DIGEST = "sha256:" + "ab" * 32
IMAGE = f"us-docker.pkg.dev/test-project/images/tpu-provisioner@{DIGEST}"
DCN = {"additionalNodeNetworks": [{"name": "dcn-1", "subnetCidr": "10.200.0.0/24"}]}
V6E = {"name": "t", "accelerator": "v6e-16", "zone": "us-east5-b"}


@pytest.fixture(scope="module", params=list_stacks())
def shipped(request) -> tuple[StackConfig, Graph]:
    raw = load_stack_config(request.param)
    return parse(raw, request.param), build_graph(raw, stack=request.param)


def test_every_multi_host_slice_of_every_shipped_stack_is_on_the_fast_path(shipped):
    config, graph = shipped
    vpcs = {r.inputs["name"]: r.inputs.get("mtu") for r in graph.of_type(NETWORK)}
    opted_out_of_mtu = config.network.mtu is not None and config.network.mtu < JUMBO_MTU
    for entry in config.tpu_slices:
        shape = entry.shape
        if not shape.multi_host:
            continue
        pools = slice_pools(graph, entry.name)
        assert len(pools) == entry.count, entry.name
        if not opted_out_of_mtu:
            assert vpcs[config.network.vpc_name(config.prefix)] == JUMBO_MTU, entry.name
        if shape.family.additional_node_networks is None or entry.additional_node_networks == []:
            continue
        # The family takes additional node networks: the stack gives it some, and every pool
        # of the slice has a NIC in each, each VPC at the jumbo MTU too.
        assert config.network.additional_node_networks, (
            f"{entry.name} ({shape.family.prefix}) has no node network in the shipped stack"
        )
        for pool in pools:
            nics = extra_nics(pool)
            assert nics, pool.urn
            for vpc, _ in nics:
                assert opted_out_of_mtu or vpcs[vpc] == JUMBO_MTU, (pool.urn, vpc)
    if any(extra_nics(p) for p in graph.of_type("gcp:container/nodePool:NodePool")):
        assert graph.named("gke-cluster").inputs["enableMultiNetworking"] is True
    else:
        assert "enableMultiNetworking" not in graph.named("gke-cluster").inputs


def test_tpu_vms_of_several_slices_join_the_jumbo_vpc():
    graph = build_graph(
        with_config(
            tpuVms=[{"name": "ms", "accelerator": "v5p-16", "nodeCount": 2}],
        )
    )
    (queued,) = graph.of_type("pulumi-python:dynamic/tpu:QueuedResource")
    (vpc,) = graph.of_type(NETWORK)
    assert vpc.inputs["mtu"] == JUMBO_MTU
    assert queued.inputs["network"].endswith(f"/{vpc.inputs['name']}")


# Edits, as the offline diff shows them.


def stack(**overrides: Any) -> dict[str, Any]:
    return with_config(tpuSlices=[V6E, {"name": "p", "accelerator": "v5p-16"}], **overrides)


def test_changing_the_mtu_updates_the_vpcs_in_place_and_names_the_vms_that_keep_the_old_one():
    before_raw = stack(network={"mtu": 1460, **DCN})
    after_raw = stack(network={"mtu": 8896, **DCN})
    before, after = build_graph(before_raw), build_graph(after_raw)
    changes = diff(before, after)
    updated = {r.resource.name: r for r in changes}
    assert set(updated) == {"network-vpc", "network-dcn-1-vpc"}
    for change in updated.values():
        assert change.op is Op.UPDATE
        assert [(c.rendered_path, c.old, c.new) for c in change.changes] == [("mtu", 1460, 8896)]
    notices = diff_notices(parse(after_raw, "test"), mtu_changes(before, after))
    assert len(notices) == 2
    assert "updates ai-test-vpc in place" in notices[0]
    assert "GKE node pools cpu, system, t-0, p-0" in notices[0]
    assert "updates ai-test-dcn-1-vpc in place" in notices[1]
    assert diff_notices(parse(after_raw, "test"), mtu_changes(after, after)) == []


def test_the_diff_prints_the_mtu_notice(tmp_path: Path, capsys):
    def write(name: str, raw: dict[str, Any]) -> Path:
        path = tmp_path / f"Pulumi.{name}.yaml"
        path.write_text(yaml.safe_dump({"config": raw}))
        return path

    base = write("base", stack(network={"mtu": 1460}))
    edited = write("edited", stack())
    assert plan_main([str(edited), "--base", str(base)]) == 2
    out = capsys.readouterr().out
    assert "~ Network network-vpc" in out
    assert "    mtu: 1460 → 8896" in out
    assert "0 to replace" in out
    (notice,) = [line for line in out.splitlines() if line.startswith("! ")]
    assert "keeps MTU 1460 until it is stopped and started" in notice


def test_attaching_slices_to_a_node_network_replaces_exactly_their_pools():
    before = build_graph(stack())
    after = build_graph(stack(network=DCN))
    changes = diff(before, after)
    replaced = {r.resource.name for r in changes if r.op is Op.REPLACE}
    assert replaced == {"tpu-t-0"}  # v5p takes no node network
    (pool,) = [r for r in changes if r.resource.name == "tpu-t-0"]
    assert pool.resource.delete_before_replace
    updated = {r.resource.name: r for r in changes if r.op is Op.UPDATE}
    assert set(updated) == {"gke-cluster"}
    assert [(c.rendered_path, c.new) for c in updated["gke-cluster"].changes] == [
        ("enableMultiNetworking", True)
    ]
    created = {r.resource.name for r in changes if r.op is Op.CREATE and not r.is_component}
    # The rule admits the slices of the one flavor that attaches, from themselves only.
    assert created == {
        "network-dcn-1-vpc",
        "network-dcn-1-subnet",
        "dcn-dcn-1-v6e-16",
        "pod-networks-dcn-1-params",
        "pod-networks-dcn-1",
    }
    assert not changes.deleted


def test_a_shared_single_host_pool_is_replaced_delete_first_when_its_nics_change():
    serve = {"name": "s", "accelerator": "v6e-8", "zone": "us-east5-b"}
    before = build_graph(with_config(tpuSlices=[serve]))
    after = build_graph(with_config(tpuSlices=[serve], network=DCN))
    (change,) = [r for r in diff(before, after) if r.resource.name == "tpu-s-pool"]
    assert change.op is Op.REPLACE
    # The pool keeps its name, which GKE holds until the old pool is gone.
    assert change.resource.delete_before_replace


def test_changing_a_slices_host_maintenance_replaces_only_its_pools():
    reserved = {"provisioning": "reservation", "reservation": "r"}
    before = build_graph(with_config(tpuSlices=[{**V6E, **reserved}, {"name": "p", **P16}]))
    periodic = {**V6E, **reserved, "hostMaintenanceInterval": "PERIODIC"}
    after = build_graph(with_config(tpuSlices=[periodic, {"name": "p", **P16}]))
    changes = diff(before, after)
    assert {r.resource.name for r in changes if not r.is_component} == {"tpu-t-0"}
    (change,) = [r for r in changes if not r.is_component]
    assert change.op is Op.REPLACE
    assert [c.rendered_path for c in change.changes] == [
        "nodeConfig.hostMaintenancePolicy.maintenanceInterval"
    ]


P16 = {"accelerator": "v5p-16"}


# Bad input: refused at its path with a fix, nothing registered.

BAD: list[tuple[str, dict[str, Any], str, str]] = [
    ("mtu too large", {"network": {"mtu": 9000}}, "ai-infra:network.mtu", "1300 to 8896"),
    ("mtu too small", {"network": {"mtu": 1280}}, "ai-infra:network.mtu", "use 8896"),
    (
        "mtu of a VPC the program does not manage",
        {"network": {"existingVpc": "shared", "mtu": 8896}},
        "ai-infra:network.mtu",
        "remove mtu",
    ),
    (
        "node networks for a family that has no evidence of them",
        {
            "network": DCN,
            "tpuSlices": [{"name": "p", **P16, "additionalNodeNetworks": ["dcn-1"]}],
        },
        "ai-infra:tpuSlices[0].additionalNodeNetworks",
        "v6e and tpu7x only",
    ),
    (
        "a node network the stack does not have",
        {"network": DCN, "tpuSlices": [{**V6E, "additionalNodeNetworks": ["dcn-2"]}]},
        "ai-infra:tpuSlices[0].additionalNodeNetworks[0]",
        "known: dcn-1",
    ),
    (
        "a node network listed twice",
        {"network": DCN, "tpuSlices": [{**V6E, "additionalNodeNetworks": ["dcn-1", "dcn-1"]}]},
        "ai-infra:tpuSlices[0].additionalNodeNetworks[1]",
        "listed twice",
    ),
    (
        "node networks without Dataplane V2",
        {"network": DCN, "cluster": {"dataplaneV2": False}, "tpuSlices": [V6E]},
        "ai-infra:cluster.dataplaneV2",
        "additionalNodeNetworks: []",
    ),
    (
        "a node network overlapping the pods range",
        {"network": {"additionalNodeNetworks": [{"name": "d", "subnetCidr": "192.168.64.0/24"}]}},
        "ai-infra:network.additionalNodeNetworks[0].subnetCidr",
        "overlaps podsCidr",
    ),
    (
        "a node network overlapping a GPU cluster's subnet",
        {
            "network": {"additionalNodeNetworks": [{"name": "d", "subnetCidr": "10.130.0.0/24"}]},
            "gpuClusters": [
                {
                    "name": "g",
                    "machineType": "g2-standard-8",
                    "gpuType": "nvidia-l4",
                    "network": "new",
                }
            ],
        },
        "ai-infra:network.additionalNodeNetworks[0].subnetCidr",
        "overlaps gpuClusters[0] subnet 0 10.130.0.0/20",
    ),
    (
        "a node network too small for the hosts that attach",
        {
            "network": {"additionalNodeNetworks": [{"name": "d", "subnetCidr": "10.200.0.0/29"}]},
            "tpuSlices": [{**V6E, "count": 2}],
        },
        "ai-infra:network.additionalNodeNetworks[0].subnetCidr",
        "4 usable addresses, but 8 nodes",
    ),
    (
        "a node network named default",
        {"network": {"additionalNodeNetworks": [{"name": "default", "subnetCidr": "10.2.0.0/24"}]}},
        "ai-infra:network.additionalNodeNetworks[0].name",
        "choose another name",
    ),
    (
        "PERIODIC host maintenance on Spot capacity",
        {"tpuSlices": [{**V6E, "provisioning": "spot", "hostMaintenanceInterval": "PERIODIC"}]},
        "ai-infra:tpuSlices[0].hostMaintenanceInterval",
        "provisioning: reservation",
    ),
    (
        "a host maintenance interval GKE does not have",
        {"tpuSlices": [{**V6E, "hostMaintenanceInterval": "as_needed"}]},
        "ai-infra:tpuSlices[0].hostMaintenanceInterval",
        "'AS_NEEDED' or 'PERIODIC'",
    ),
]


@pytest.mark.parametrize(("case", "overrides", "path", "fix"), BAD, ids=[c[0] for c in BAD])
def test_bad_network_input_is_refused_at_its_path_before_anything_registers(
    case, overrides, path, fix
):
    test_bad_input.test_bad_input_is_refused_at_its_path_before_anything_registers(
        case, overrides, path, fix
    )


# The TPU provisioner's side, for its GCP_NODE_ADDITIONAL_NETWORKS.


def provisioner(quota: dict[str, int], **network: Any) -> dict[str, Any]:
    return with_config(
        cluster={"releaseChannel": "NONE", "maxPodsPerNode": 32},
        tpuProvisioner={"enabled": True, "image": IMAGE, "zone": "us-east5-b", "quota": quota},
        network={**DCN, **network},
    )


def test_provisioner_pools_take_the_node_networks_when_all_its_shapes_do():
    gke = parse(provisioner({"v6e-16": 2}), "test").gke
    assert gke.provisioner_additional_networks == [("ai-test-dcn-1-vpc", "ai-test-dcn-1-subnet")]
    assert gke.multi_networking
    assert gke.node_network_users() == {"dcn-1": [("the TPU provisioner's pools", 8)]}
    graph = build_graph(provisioner({"v6e-16": 2}))
    assert graph.named("gke-cluster").inputs["enableMultiNetworking"] is True
    assert graph.named("pod-networks-dcn-1").inputs["metadata"] == {"name": "dcn-1"}
    # v5p pools take none. (The controller gives every pool it creates the same networks;
    # a quota cannot mix v5p with v6e anyway, their boot disks differ.)
    v5p = copy.deepcopy(provisioner({"v5p-16": 1}))
    v5p["ai-infra:tpuProvisioner"]["zone"] = "us-east5-a"
    gke = parse(v5p, "test").gke
    assert gke.provisioner_additional_networks == []
    assert not gke.multi_networking


def test_provisioner_hosts_count_against_the_node_network():
    with pytest.raises(ConfigError) as raised:
        parse(
            provisioner(
                {"v6e-256": 1},
                additionalNodeNetworks=[{"name": "dcn-1", "subnetCidr": "10.200.0.0/27"}],
            ),
            "test",
        )
    message = dict(raised.value.rendered)["ai-infra:network.additionalNodeNetworks[0].subnetCidr"]
    assert "64 nodes" in message and "the TPU provisioner's pools" in message


def explicitly(quota: dict[str, int], network: str, subnet: str, **dcn: Any) -> dict[str, Any]:
    """The provisioner naming a node network itself, as `tpuProvisioner.additionalNodeNetworks`
    does."""
    raw = provisioner(quota, **dcn)
    raw["ai-infra:tpuProvisioner"]["additionalNodeNetworks"] = [
        {"network": network, "subnetwork": subnet}
    ]
    return raw


def test_naming_the_stacks_own_node_network_is_checked_as_the_default_path():
    # 20 v6e-256 slices are 1280 hosts; a /22 holds 1020.
    small = {"additionalNodeNetworks": [{"name": "dcn-1", "subnetCidr": "10.200.0.0/22"}]}
    raw = explicitly({"v6e-256": 20}, "ai-test-dcn-1-vpc", "ai-test-dcn-1-subnet", **small)
    with pytest.raises(ConfigError) as raised:
        parse(raw, "test")
    message = dict(raised.value.rendered)["ai-infra:network.additionalNodeNetworks[0].subnetCidr"]
    assert "1020 usable addresses, but 1280 nodes can attach to dcn-1" in message
    # Within capacity it is the stack's network: counted, and its pod network objects built.
    raw = explicitly({"v6e-16": 2}, "ai-test-dcn-1-vpc", "ai-test-dcn-1-subnet")
    assert parse(raw, "test").gke.node_network_users() == {
        "dcn-1": [("the TPU provisioner's pools", 8)]
    }
    assert build_graph(raw).named("pod-networks-dcn-1").inputs["metadata"] == {"name": "dcn-1"}


def test_naming_the_stacks_node_network_for_shapes_without_a_second_nic_is_refused():
    raw = explicitly({"v5p-16": 1}, "ai-test-dcn-1-vpc", "ai-test-dcn-1-subnet")
    raw["ai-infra:tpuProvisioner"]["zone"] = "us-east5-a"
    with pytest.raises(ConfigError) as raised:
        parse(raw, "test")
    message = dict(raised.value.rendered)["ai-infra:tpuProvisioner.additionalNodeNetworks[0]"]
    assert message.startswith("the controller gives every pool it creates this NIC, and v5p-16")
    assert "additional node networks are for v6e and tpu7x only" in message


def test_naming_a_node_network_vpc_with_another_subnet_is_refused():
    raw = explicitly({"v6e-16": 1}, "ai-test-dcn-1-vpc", "elsewhere")
    with pytest.raises(ConfigError) as raised:
        parse(raw, "test")
    path = "ai-infra:tpuProvisioner.additionalNodeNetworks[0].subnetwork"
    assert "whose only subnet is 'ai-test-dcn-1-subnet'" in dict(raised.value.rendered)[path]


def test_a_node_network_no_pool_uses_is_a_warning():
    # v5p takes no node network, so dcn-1 serves nothing.
    config = parse(
        with_config(tpuSlices=[{"name": "p", "accelerator": "v5p-16"}], network=DCN), "test"
    )
    (line,) = environment.warnings(config)
    assert line.startswith(
        "ai-infra:network.additionalNodeNetworks[0]: no TPU slice or TPU provisioner pool "
        "attaches to dcn-1"
    )
    assert environment.warnings(parse(stack(network=DCN), "test")) == []


def test_an_existing_vpc_named_like_a_node_network_vpc_is_refused():
    graph, error = record_program(
        with_config(network={"existingVpc": "ai-test-dcn-1-vpc", **DCN}),
    )
    assert isinstance(error, ConfigError)
    found = dict(error.rendered)
    assert "rename the network" in found["ai-infra:network.additionalNodeNetworks[0].name"]
    assert graph.resources == []


# What the plan shows.


def test_the_plan_shows_each_slices_nics_mtus_and_host_maintenance(capsys):
    assert plan_main(["prod"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "  ai-prod-vpc: mtu 8896 (default: jumbo frames for DCN traffic); subnet" in out
    assert "  ai-prod-dcn-1-vpc: mtu 8896; subnet 10.11.0.0/22 (additional node network dcn-1)" in (
        lines
    )
    section = lines[
        lines.index("TPU slices:") + 1 : lines.index(
            "Teams (namespace/queue, nominal quota, Google service account):"
        )
    ]
    entries = [
        i for i, line in enumerate(section) if line.startswith("  ") and not line.startswith("    ")
    ]
    nics = {
        section[i].split(":")[0].strip(): section[i + 1].strip()
        for i in entries
        if section[i + 1].strip().startswith("nics:")
    }
    v6e = (
        "nics: eth0 ai-prod-vpc mtu 8896, eth1 ai-prod-dcn-1-vpc mtu 8896, "
        "eth2 ai-prod-dcn-2-vpc mtu 8896; DCN 100 Gb/s per chip; libtpu's use of eth1.. "
        "undocumented, no bandwidth claimed for them; host maintenance AS_NEEDED"
    )
    assert nics == {
        "v5p-train": "nics: eth0 ai-prod-vpc mtu 8896; DCN 50 Gb/s per chip; host maintenance "
        "AS_NEEDED",
        "v6e-tune": v6e,
        "v6e-flex": v6e,
    }
    pools = {line.split()[2]: line for line in lines if " NodePool " in line}
    # Each slice says which DCN group its hosts talk in, and whose own it is.
    assert "    dcn: group v6e-256 (v6e-tune) reaches only its own hosts on dcn-1, dcn-2" in lines
    assert any(
        line.startswith("    team pretrain's own: nodes run as ai-prod-pretrain-nodes@")
        for line in lines
    )
    assert pools["tpu-v6e-tune-0"].endswith(
        "extraNics=ai-prod-dcn-1-vpc,ai-prod-dcn-2-vpc hostMaintenance=AS_NEEDED"
    )
    assert "extraNics" not in pools["tpu-v5p-train-0"]
    assert "extraNics" not in pools["gke-cpu"] and "hostMaintenance" not in pools["gke-cpu"]
    vpc = next(line for line in lines if " Network network-vpc " in line)
    assert vpc.endswith("name=ai-prod-vpc mtu=8896")


def test_the_plan_says_an_existing_vpc_keeps_its_own_mtu(tmp_path: Path, capsys):
    path = tmp_path / "Pulumi.shared.yaml"
    raw = with_config(network={"existingVpc": "shared-ml"}, tpuSlices=[{"name": "p", **P16}])
    path.write_text(yaml.safe_dump({"config": raw}))
    assert plan_main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "  shared-ml: its own MTU (existingVpc, not managed here);" in out
    assert "nics: eth0 shared-ml (existingVpc: its own MTU); DCN 50 Gb/s per chip" in out


def test_the_json_diff_carries_the_notices(tmp_path: Path, capsys):
    base = tmp_path / "Pulumi.base.yaml"
    base.write_text(yaml.safe_dump({"config": stack(network={"mtu": 1500})}))
    edited = tmp_path / "Pulumi.edited.yaml"
    edited.write_text(yaml.safe_dump({"config": stack()}))
    assert plan_main([str(edited), "--base", str(base), "--json"]) == 2
    document = json.loads(capsys.readouterr().out)
    (notice,) = document["diff"]["notices"]
    assert notice.startswith("MTU 1500 -> 8896 updates ")
    (change,) = document["diff"]["resources"]
    assert (change["op"], change["changes"][0]["path"]) == ("update", "mtu")


def test_gpu_cluster_vpcs_keep_their_own_mtus():
    graph = build_graph(
        with_config(
            **{"gcp:zone": "us-east5-a"},
            gpuClusters=[
                {
                    "name": "h100",
                    "machineType": "a3-highgpu-8g",
                    "gpuType": "nvidia-h100-80gb",
                    "gpuCount": 8,
                    "network": "multi-nic",
                    "diskType": "pd-ssd",
                }
            ],
        )
    )
    mtus = {r.inputs["name"]: r.inputs.get("mtu") for r in graph.of_type(NETWORK)}
    assert mtus.pop("ai-test-vpc") == JUMBO_MTU
    assert mtus == {"ai-test-h100-net0": 8896} | {f"ai-test-h100-net{k}": 8244 for k in range(1, 5)}
