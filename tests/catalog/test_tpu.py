"""The catalog against the Cloud TPU and GKE documentation, family by family."""

from __future__ import annotations

import math

import pytest

from catalog import tpu as tpu_catalog
from catalog.tpu import CatalogError, resolve


@pytest.mark.parametrize(
    ("accelerator", "machine_type", "topology", "hosts", "chips_per_host", "label"),
    [
        # Single-host shapes (tpu/docs/v5e, v6e; GKE concepts/tpus).
        ("v5litepod-1", "ct5lp-hightpu-1t", "1x1", 1, 1, "tpu-v5-lite-podslice"),
        ("v5litepod-4", "ct5lp-hightpu-4t", "2x2", 1, 4, "tpu-v5-lite-podslice"),
        ("v5litepod-8", "ct5lp-hightpu-8t", "2x4", 1, 8, "tpu-v5-lite-podslice"),
        ("v6e-1", "ct6e-standard-1t", "1x1", 1, 1, "tpu-v6e-slice"),
        ("v6e-4", "ct6e-standard-4t", "2x2", 1, 4, "tpu-v6e-slice"),
        ("v6e-8", "ct6e-standard-8t", "2x4", 1, 8, "tpu-v6e-slice"),
        ("v4-8", "ct4p-hightpu-4t", "2x2x1", 1, 4, "tpu-v4-podslice"),
        ("v5p-8", "ct5p-hightpu-4t", "2x2x1", 1, 4, "tpu-v5p-slice"),
        ("tpu7x-8", "tpu7x-standard-4t", "2x2x1", 1, 4, "tpu7x"),
        # Multi-host: v5e and v6e count chips, 4 per VM.
        ("v5litepod-16", "ct5lp-hightpu-4t", "4x4", 4, 4, "tpu-v5-lite-podslice"),
        ("v5litepod-256", "ct5lp-hightpu-4t", "16x16", 64, 4, "tpu-v5-lite-podslice"),
        ("v6e-16", "ct6e-standard-4t", "4x4", 4, 4, "tpu-v6e-slice"),
        ("v6e-64", "ct6e-standard-4t", "8x8", 16, 4, "tpu-v6e-slice"),
        ("v6e-256", "ct6e-standard-4t", "16x16", 64, 4, "tpu-v6e-slice"),
        # Multi-host: v4, v5p and tpu7x count TensorCores, 2 per chip, 4 chips per VM.
        ("v4-16", "ct4p-hightpu-4t", "2x2x2", 2, 4, "tpu-v4-podslice"),
        ("v4-32", "ct4p-hightpu-4t", "2x2x4", 4, 4, "tpu-v4-podslice"),
        ("v4-4096", "ct4p-hightpu-4t", "8x16x16", 512, 4, "tpu-v4-podslice"),
        ("v5p-16", "ct5p-hightpu-4t", "2x2x2", 2, 4, "tpu-v5p-slice"),
        ("v5p-32", "ct5p-hightpu-4t", "2x2x4", 4, 4, "tpu-v5p-slice"),
        ("v5p-128", "ct5p-hightpu-4t", "4x4x4", 16, 4, "tpu-v5p-slice"),
        ("v5p-12288", "ct5p-hightpu-4t", "16x16x24", 1536, 4, "tpu-v5p-slice"),
        ("tpu7x-16", "tpu7x-standard-4t", "2x2x2", 2, 4, "tpu7x"),
        ("tpu7x-64", "tpu7x-standard-4t", "2x4x4", 8, 4, "tpu7x"),
        ("tpu7x-128", "tpu7x-standard-4t", "4x4x4", 16, 4, "tpu7x"),
    ],
)
def test_documented_shapes(accelerator, machine_type, topology, hosts, chips_per_host, label):
    shape = resolve(accelerator)
    assert shape.machine_type == machine_type
    assert shape.topology == topology
    assert shape.hosts == hosts
    assert shape.chips_per_host == chips_per_host
    assert shape.gke_accelerator == label
    assert shape.multi_host == (hosts > 1)
    assert shape.node_labels == {
        "cloud.google.com/gke-tpu-accelerator": label,
        "cloud.google.com/gke-tpu-topology": topology,
    }


# The v5p table in tpu/docs/v5p: topology -> accelerator type, each the default for its size.
V5P_DOCUMENTED = {
    "2x2x1": "v5p-8",
    "2x2x2": "v5p-16",
    "2x4x4": "v5p-64",
    "4x4x4": "v5p-128",
    "4x4x8": "v5p-256",
    "4x8x8": "v5p-512",
    "8x8x8": "v5p-1024",
    "8x8x16": "v5p-2048",
    "8x16x16": "v5p-4096",
    "16x16x16": "v5p-8192",
    "16x16x24": "v5p-12288",
}


@pytest.mark.parametrize(("topology", "accelerator"), sorted(V5P_DOCUMENTED.items()))
def test_v5p_documented_table_is_the_default_topology(topology, accelerator):
    assert resolve(accelerator).topology == topology


def test_suffix_counts_tensorcores_or_chips():
    for family in tpu_catalog.FAMILIES:
        for size in tpu_catalog.valid_sizes(family.prefix):
            shape = resolve(f"{family.prefix}-{size}")
            chips = math.prod(int(d) for d in shape.topology.split("x"))
            assert shape.chips == chips, shape
            assert size == chips * (2 if family.suffix_counts == "TensorCores" else 1), shape


def test_every_3d_topology_follows_the_documented_rule():
    # A <= B <= C, and all dimensions at most 4 or all multiples of 4 (tpu/docs/types-topologies).
    for family in tpu_catalog.FAMILIES:
        for topology in family.multi_host_topologies:
            dims = [int(d) for d in topology.split("x")]
            assert dims == sorted(dims), topology
            if len(dims) == 3:
                assert all(d <= 4 for d in dims) or all(d % 4 == 0 for d in dims), topology


def test_default_topology_is_closest_to_a_cube():
    assert tpu_catalog.topologies_for("v5p-512") == ["4x8x8", "4x4x16"]
    assert resolve("v5p-512", "4x4x16").hosts == 64
    assert resolve("v5p-768").topology == "4x8x12"


def test_tpu7x_multi_host_needs_a_workload_policy_but_single_host_does_not():
    assert resolve("tpu7x-64").needs_workload_policy
    assert not resolve("tpu7x-8").needs_workload_policy
    assert not resolve("v5p-64").needs_workload_policy


@pytest.mark.parametrize(
    ("accelerator", "expected"),
    [
        ("v5p-33", "v5p sizes are v5p-8, v5p-16, v5p-32"),
        ("v5p-24", "the suffix counts TensorCores"),
        ("v6e-2", "v6e sizes are v6e-1, v6e-4, v6e-8, v6e-16, v6e-32, v6e-64, v6e-128, v6e-256"),
        ("v5litepod-512", "v5litepod sizes are v5litepod-1"),
        ("v5p-99999", "v5p-12288"),
        ("v7-8", "use one of v4-<size>, v5litepod-<size>, v5p-<size>, v6e-<size>, tpu7x-<size>"),
        ("v5e-4", "is not a Cloud TPU accelerator type"),
    ],
)
def test_invalid_sizes_list_the_valid_ones(accelerator, expected):
    with pytest.raises(CatalogError) as error:
        resolve(accelerator)
    assert expected in str(error.value)


def test_topology_that_does_not_fit_lists_the_ones_that_do():
    with pytest.raises(CatalogError, match="valid topologies for v5p-512 are 4x8x8, 4x4x16"):
        resolve("v5p-512", "8x8x8")


# Google's xpk (system_characteristics.py) lists one v5p topology per size; up to the documented
# 16x16x24 maximum, each must be the default the catalog picks for that size.
XPK_V5P = (
    "2x2x1 2x2x2 2x2x4 2x4x4 4x4x4 4x4x8 4x4x12 4x8x8 4x4x20 4x8x12 4x4x28 8x8x8 4x12x12 4x8x20 "
    "4x4x44 8x8x12 4x4x52 4x8x28 4x12x20 8x8x16 4x4x68 8x12x12 4x4x76 8x8x20 4x12x28 4x8x44 "
    "4x4x92 8x12x16 4x20x20 4x8x52 12x12x12 8x8x28 4x4x116 8x12x20 4x4x124 8x16x16 4x12x44 "
    "4x8x68 4x20x28 12x12x16 4x4x148 4x8x76 4x12x52 8x16x20 4x4x164 8x12x28 4x4x172 8x8x44 "
    "12x12x20 4x8x92 4x4x188 12x16x16 4x28x28 8x20x20 4x12x68 8x8x52 4x4x212 12x12x24 4x20x44 "
    "8x16x28 4x12x76 4x8x116 4x4x236 12x16x20 4x4x244 4x8x124 12x12x28 16x16x16 4x20x52 "
    "8x12x44 8x8x68 4x12x92 8x20x28 12x16x24 4x8x148 12x20x20 8x8x76 4x28x44 8x12x52 16x16x20 "
    "12x12x36 4x8x164 12x16x28 4x20x68 4x8x172 4x12x116 8x16x44 12x20x24 4x28x52 8x8x92 "
    "4x12x124 4x8x188 4x20x76 16x16x24"
).split()


@pytest.mark.parametrize("topology", XPK_V5P)
def test_v5p_defaults_agree_with_xpk(topology):
    chips = math.prod(int(d) for d in topology.split("x"))
    assert resolve(f"v5p-{2 * chips}").topology == topology


def test_flex_start_zones_are_zones_of_the_family():
    # A flex-start zone the general zone check refused could never be used.
    for family in tpu_catalog.FAMILIES:
        assert set(family.flex_start_zones) <= set(family.zones), family.prefix
    offered = {f.prefix: f.flex_start_zones for f in tpu_catalog.FAMILIES if f.flex_start}
    assert offered == {
        "v5litepod": ("us-west4-a",),
        "v5p": ("us-east5-a",),
        "v6e": ("asia-northeast1-b", "us-east5-a", "us-east5-b"),
        # Where Cluster Toolkit's tpu7x flex-start blueprints run it.
        "tpu7x": ("us-central1-c",),
    }


def test_every_tpu_host_has_its_vcpus_and_memory():
    # The team CPU/memory quota sizes each TPU node from these (components/gke/quota.py).
    assert set(tpu_catalog.HOST_SHAPES) == set(tpu_catalog.TPU_HOSTS)
    assert all(v > 0 and m > 0 for v, m in tpu_catalog.HOST_SHAPES.values())
