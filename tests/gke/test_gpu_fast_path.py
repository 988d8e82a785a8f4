"""GKE GPU pools on their machine's fast path: A3 High (GPUDirect-TCPX), A3 Mega
(GPUDirect-TCPXO), A3 Ultra and A4 (RDMA) take their GPU NICs as additional node networks, GKE's
pod network objects for them, and GKE's NCCL plugin installer pinned to a commit; a pool that
would run NCCL on one NIC is refused without a range or warned when opted out."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import pytest

from components.gke.gpu_direct import INSTALLERS_COMMIT
from graph.engine import Graph
from plan.diff import Op, diff
from stacks import environment
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config

POOLS = {
    "tcpx": ("a3-highgpu-8g", "nvidia-h100-80gb", "pd-balanced"),
    "tcpxo": ("a3-megagpu-8g", "nvidia-h100-mega-80gb", "pd-balanced"),
    "rdma": ("a3-ultragpu-8g", "nvidia-h200-141gb", "hyperdisk-balanced"),
}


def pool(transport: str, **fields: Any) -> dict[str, Any]:
    machine, gpu, disk = POOLS[transport]
    return {
        "name": "a3",
        "machineType": machine,
        "acceleratorType": gpu,
        "acceleratorCount": 8,
        "maxNodes": 4,
        "provisioning": "spot",
        "diskType": disk,
        "gpuSubnetCidr": "10.140.0.0/28",
        **fields,
    }


def stack(*pools: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    return with_config(gpuPools=list(pools), **overrides)


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as error:
        parse(raw, "test")
    return dict(error.value.rendered)


def of(graph: Graph, kind: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in graph.of_type(kind)}


@pytest.mark.parametrize(
    ("transport", "gvnics", "rdma", "gpu_mtu"),
    [("tcpx", 4, 0, 8244), ("tcpxo", 8, 0, 8244), ("rdma", 1, 8, 8896)],
)
def test_each_fast_path_pool_takes_its_gpu_nics(transport, gvnics, rdma, gpu_mtu):
    graph = build_graph(stack(pool(transport)))
    nics = graph.named("gpu-a3-pool").inputs["networkConfig"]["additionalNodeNetworkConfigs"]
    assert len(nics) == gvnics + rdma
    vpcs = {r.inputs["name"]: r.inputs for r in graph.of_type("gcp:compute/network:Network")}
    subnets = {
        r.inputs["name"]: r.inputs for r in graph.of_type("gcp:compute/subnetwork:Subnetwork")
    }
    # Consecutive /28s from the pool's range, one per NIC, each in the VPC the pool names.
    cidrs = [subnets[n["subnetwork"]]["ipCidrRange"] for n in nics]
    assert cidrs == [str(ipaddress.IPv4Network(f"10.140.0.{16 * k}/28")) for k in range(len(nics))]
    for nic in nics[:gvnics]:
        assert vpcs[nic["network"]]["mtu"] == (8896 if rdma else gpu_mtu)
        assert "networkProfile" not in vpcs[nic["network"]]
    if rdma:
        (roce,) = {n["network"] for n in nics[gvnics:]}
        assert vpcs[roce]["mtu"] == gpu_mtu
        assert vpcs[roce]["networkProfile"].endswith("/networkProfiles/us-east5-a-vpc-roce")
    # A rule inside each gVNIC subnet; none on the RoCE VPC (Cluster Toolkit's gpu-rdma-vpc).
    rules = {r.inputs["network"] for r in graph.of_type("gcp:compute/firewall:Firewall")}
    assert {n["network"] for n in nics[:gvnics]} <= rules
    assert not any(n["network"] in rules for n in nics[gvnics:])
    params = of(graph, "kubernetes:networking.gke.io/v1:GKENetworkParamSet")
    networks = of(graph, "kubernetes:networking.gke.io/v1:Network")
    assert [(p["spec"]["vpc"], p["spec"]["vpcSubnet"]) for p in params.values()] == [
        (n["network"], n["subnetwork"]) for n in nics
    ]
    modes = [p["spec"]["deviceMode"] for p in params.values()]
    assert modes == ["NetDevice"] * gvnics + ["RDMA"] * rdma
    assert set(networks) == set(params)
    assert graph.named("gke-cluster").inputs["enableMultiNetworking"] is True


def test_the_installers_are_gkes_manifests_at_one_commit():
    graph = build_graph(
        stack(pool("tcpxo"), pool("rdma", name="ultra", gpuSubnetCidr="10.141.0.0/28"))
    )
    files = [r.inputs["file"] for r in graph.of_type("kubernetes:yaml/v2:ConfigFile")]
    assert files == [
        f"https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
        f"{INSTALLERS_COMMIT}/{path}"
        for path in (
            "gpudirect-rdma/nccl-rdma-installer.yaml",
            "nri_device_injector/nri-device-injector.yaml",
            "gpudirect-tcpxo/nccl-tcpxo-installer.yaml",
        )
    ]
    assert re.fullmatch(r"[0-9a-f]{40}", INSTALLERS_COMMIT)


def test_an_l4_pool_takes_no_gpu_nics_and_no_installer():
    raw = stack(
        {
            "name": "l4",
            "machineType": "g2-standard-24",
            "acceleratorType": "nvidia-l4",
            "acceleratorCount": 2,
        }
    )
    graph = build_graph(raw)
    assert "networkConfig" not in graph.named("gpu-l4-pool").inputs
    assert not graph.of_type("kubernetes:yaml/v2:ConfigFile")
    assert "enableMultiNetworking" not in graph.named("gke-cluster").inputs
    assert environment.warnings(parse(raw, "test")) == []


REFUSED = [
    (pool("tcpxo", gpuSubnetCidr=None), "gpuPools[0].gpuSubnetCidr", "take 8 more NICs"),
    (pool("tcpx", maxNodes=20), "gpuPools[0].gpuSubnetCidr", "12 usable addresses, but"),
    (pool("tcpx", gpuSubnetCidr="255.255.255.224/28"), "gpuPools[0].gpuSubnetCidr", "run past"),
    (
        {
            "name": "l4",
            "machineType": "g2-standard-8",
            "acceleratorType": "nvidia-l4",
            "gpuSubnetCidr": "10.140.0.0/28",
        },
        "gpuPools[0].gpuSubnetCidr",
        "only for pools of a3-highgpu-8g",
    ),
]


@pytest.mark.parametrize(
    ("entry", "path", "message"), REFUSED, ids=[r[1] + r[2][:12] for r in REFUSED]
)
def test_bad_gpu_nic_input_is_refused_at_its_path(entry, path, message):
    found = problems(stack(entry))
    assert message in found[f"ai-infra:{path}"]


def test_gpu_network_names_must_fit_compute_engines_63_characters():
    # 20 + 1 + 20 + len("-gpu4-internal") fits; 20 + 1 + 38 + 14 does not.
    parse(stack(pool("tcpx", name="a-long-gpu-pool-name"), prefix="prefix-of-20-chars-x"), "test")
    long = stack(
        pool("tcpx", name="a-very-long-gpu-pool-name-of-thirty9x"), prefix="prefix-of-20-chars-x"
    )
    assert "longer than Compute Engine's 63" in problems(long)["ai-infra:gpuPools[0].name"]


def test_gpu_subnets_may_not_overlap_the_stacks_ranges():
    found = problems(stack(pool("tcpx", gpuSubnetCidr="10.129.0.0/28")))
    assert found["ai-infra:gpuPools[0].gpuSubnetCidr"] == (
        "GPU subnet 10.129.0.0/28 overlaps network.subnetCidr 10.129.0.0/20; pick a free range "
        "for the pool's GPU subnets"
    )
    two = stack(pool("tcpx"), pool("tcpx", name="b", gpuSubnetCidr="10.140.0.32/28"))
    message = problems(two)["ai-infra:gpuPools[1].gpuSubnetCidr"]
    assert "overlaps gpuPools[0] GPU subnet 2 10.140.0.32/28" in message


def test_gpu_nics_need_dataplane_v2():
    found = problems(stack(pool("tcpx"), cluster={"dataplaneV2": False}))
    assert "gpuDirect: false" in found["ai-infra:cluster.dataplaneV2"]


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (pool("tcpxo", gpuDirect=False, gpuSubnetCidr=None), "gpuDirect is false"),
        (
            {
                "name": "gb",
                "machineType": "a4x-highgpu-4g",
                "acceleratorType": "nvidia-gb200",
                "acceleratorCount": 4,
                "provisioning": "reservation",
                "reservation": "r",
                "diskType": "hyperdisk-balanced",
            },
            "its GKE fast path (NVIDIA's DRA driver and compute domains) is not built here",
        ),
    ],
)
def test_a_pool_that_would_run_nccl_on_one_nic_is_warned_about(entry, why):
    (line,) = environment.warnings(parse(stack(entry), "test"))
    assert line.startswith("ai-infra:gpuPools[0].gpuDirect: ")
    assert why in line and "multi-node NCCL runs over the node's one NIC" in line


def test_turning_the_fast_path_off_replaces_the_pool_and_removes_its_networks():
    before = build_graph(stack(pool("tcpx")))
    after = build_graph(stack(pool("tcpx", gpuDirect=False, gpuSubnetCidr=None)))
    changes = {c.resource.name: c.op for c in diff(before, after) if not c.is_component}
    assert changes["gpu-a3-pool"] is Op.REPLACE
    deleted = {name for name, op in changes.items() if op is Op.DELETE}
    assert {"gpu-a3-gpu0-vpc", "gpu-a3-gpu0-subnet", "gpu-direct-nccl-tcpx-installer"} <= deleted


def test_a_gpu_subnet_names_the_first_range_it_overlaps():
    found = problems(
        stack(
            pool("tcpx", name="a", gpuSubnetCidr="10.140.0.0/24"),
            pool("tcpx", name="b", gpuSubnetCidr="10.150.0.0/24"),
            # Its first subnet is b's second: b's is the first range it meets.
            pool("tcpx", name="c", gpuSubnetCidr="10.150.1.0/24"),
            # Inside the pods range, which comes before every pool's.
            pool("tcpx", name="d", gpuSubnetCidr="192.168.64.0/24"),
        )
    )
    assert {k: v for k, v in found.items() if "pick a free range for" in v} == {
        "ai-infra:gpuPools[2].gpuSubnetCidr": "GPU subnet 10.150.1.0/24 overlaps gpuPools[1] "
        "GPU subnet 1 10.150.1.0/24; pick a free range for the pool's GPU subnets",
        "ai-infra:gpuPools[3].gpuSubnetCidr": "GPU subnet 192.168.64.0/24 overlaps "
        "network.podsCidr 192.168.64.0/20; pick a free range for the pool's GPU subnets",
    }
