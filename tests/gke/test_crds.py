"""The upstream CRDs kept in the repo are the releases the program installs."""

from __future__ import annotations

from components.gke.kueue import CHARTS
from workload.schemas import CRDS, validate


def test_crd_folders_match_the_pinned_charts():
    folders = {path.name for path in CRDS.iterdir() if path.is_dir()}
    pinned = {f"{chart.name}-v{chart.version}" for chart in CHARTS.values()}
    assert folders == pinned


def test_a_kind_without_a_crd_is_an_error():
    assert validate({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology"}) == [
        "no CRD for ('kueue.x-k8s.io/v1beta2', 'Topology')"
    ]
