"""What is keyed by a catalog is held to it: every GPU, machine family, TPU price family, disk
type and Filestore tier the program can price has its Billing Catalog label (or a reason it
has none), every storage kind the graph reads has a price and says whether a quota holds it,
and the docs' table of TPU families is the TPU catalog's."""

from __future__ import annotations

import re

from catalog import gpu, machines, price_labels, quota_names, tpu
from catalog import storage as storage_catalog
from graph.engine import REPO_ROOT
from prices.catalog import Kind, Status, load
from prices.cost import STORAGE_PRICES
from prices.coverage import DISK_TYPES, FILESTORE_TIERS, tpu_price_items
from prices.refresh import NOT_REFRESHED


def test_every_gpu_a_price_is_built_from_has_its_sku_label():
    gpus = set(gpu.N1_GPU_COUNTS)
    gpus |= {build.gpu for build in machines.BUILDS.values() if build.gpus}
    assert gpus - set(price_labels.GPU_LABELS) == set()


def test_every_machine_family_priced_has_its_sku_label():
    families = set(machines.FAMILIES)
    families |= {b.family for b in [*machines.BUILDS.values(), *machines.WHOLE_MACHINES.values()]}
    assert families - set(price_labels.FAMILY_LABELS) == set()


def test_every_tpu_price_family_has_its_label_or_no_price_to_refresh():
    priced = {row.item for row in load() if row.kind is Kind.TPU and row.status is Status.PRICED}
    items = {item for family in tpu.FAMILIES for item in tpu_price_items(family)}
    unlabelled = items - set(price_labels.TPU_LABELS) - set(NOT_REFRESHED)
    assert unlabelled & priced == set()
    assert set(price_labels.TPU_LABELS) <= items


def test_every_disk_type_a_catalog_names_is_priced_and_labelled():
    named = {family.boot_disk_type for family in tpu.FAMILIES if family.boot_disk_type}
    named |= {t for machine in gpu.FIXED_GPU_MACHINES.values() for t in machine.boot_disk_types}
    assert named <= set(DISK_TYPES)
    assert set(price_labels.DISK_LABELS) == set(DISK_TYPES)


def test_filestore_prices_are_asked_for_every_tier_the_storage_catalog_knows():
    assert set(FILESTORE_TIERS) == set(storage_catalog.FILESTORE_TIERS)
    assert set(price_labels.FILESTORE_WORDS) <= set(FILESTORE_TIERS)


def test_every_storage_kind_has_a_price_and_its_quota_is_one_of_them():
    kinds = {"disk", "filestore", "lustre"}
    capacity = (REPO_ROOT / "graph" / "capacity.py").read_text()
    assert kinds == set(re.findall(r'_held\(reading, r, "([a-z]+)"', capacity))
    assert set(STORAGE_PRICES) == kinds
    assert set(quota_names.STORAGE_QUOTAS) <= kinds


def _family_rows() -> dict[str, dict[str, str]]:
    """docs/gke.md's table of TPU families, by its Family column."""
    text = (REPO_ROOT / "docs" / "gke.md").read_text()
    table = text.split("| Family |", 1)[1].split("\n\n", 1)[0]
    header, _, *rows = ("| Family |" + table).strip().splitlines()
    names = [cell.strip() for cell in header.strip("|").split("|")]
    return {
        cells[0]: dict(zip(names, cells, strict=True))
        for row in rows
        if (cells := [cell.strip() for cell in row.strip("|").split("|")])
    }


def test_the_docs_table_of_tpu_families_is_the_catalogs():
    rows = _family_rows()
    gke = [family for family in tpu.FAMILIES if family.gke]
    assert len(rows) == len(gke)
    for family in gke:
        (row,) = [r for r in rows.values() if f"`{family.prefix}-" in r["Single-host"]]
        assert set(row["Zones (documented)"].split(", ")) == set(family.zones), family.prefix
        assert row["Boot disk"] == family.boot_disk_type, family.prefix
        assert row["Multi-host machine"].startswith(f"`{family.multi_host_machine_type}`")
        versions = row["GKE version / flex-start zones"]
        if family.min_gke_version:
            assert f"≥ {family.min_gke_version}" in versions, family.prefix
        for zone in family.flex_start_zones:
            assert zone in versions, (family.prefix, zone)
        if not family.flex_start_zones:
            assert "no flex-start" in versions, family.prefix
