"""Which quota preflight looks for first, per kind of capacity: the names a project is likeliest
to have, with the reported usage, come before the rest."""

from __future__ import annotations

from catalog import quota_names as names
from catalog.quota_names import CloudQuota, Metric


def _first(found: tuple[names.QuotaName, ...]) -> str:
    head = found[0]
    return head.name if isinstance(head, Metric) else (head.ids or head.display_names)[0]


def test_cloud_tpu_quota_of_small_sizes_is_apart_from_pods() -> None:
    assert _first(names.tpu_api("v2", False, "v2-8")) == "TPUV2PerProjectPerZoneForTPUAPI"
    assert (
        _first(names.tpu_api("v2", True, "v2-32"))
        == "TPUV2sPreemptiblePodPerProjectPerZoneForTPUAPI"
    )
    serving, pod = names.tpu_api("v5litepod", False, "v5litepod-4")
    assert _first((serving,)) == "TPUV5sLitepodServingPerProjectPerZoneForTPUAPI"
    assert isinstance(pod, CloudQuota) and pod.display_names == (
        "TPU v5 lite pod cores per project per zone",
    )
    assert len(names.tpu_api("v5litepod", False, "v5litepod-16")) == 1
    assert names.tpu_api("tpu7x", False, "tpu7x-8") == (), "the Cloud TPU API has no tpu7x"


def test_compute_metrics_with_usage_come_before_cloud_quotas() -> None:
    assert _first(names.gpu("nvidia-l4", False)) == "NVIDIA_L4_GPUS"
    assert _first(names.gpu("nvidia-l4", True)) == "PREEMPTIBLE_NVIDIA_L4_GPUS"
    family = names.gpu("nvidia-h100-80gb", False)[1]
    assert isinstance(family, CloudQuota) and family.dimensions == (("gpu_family", "NVIDIA_H100"),)
    assert [_first((n,)) for n in names.cpus("N2")] == [
        "N2_CPUS",
        "CPUS-PER-VM-FAMILY-per-project-region",
        "CPUS",
    ]
    assert _first(names.gke_tpu("v5litepod", True)) == "PREEMPTIBLE_TPU_LITE_PODSLICE_V5"


def test_kinds_without_a_known_quota_have_no_candidates() -> None:
    assert names.gpu("nvidia-rtx-pro-6000", False) == ()
    assert names.gke_tpu("v2", False) == ()
    assert names.filestore("NO_SUCH_TIER") == ()
    # Zonal and Regional: their own id first, then that of the tier each replaced.
    assert [_first((n,)) for n in names.filestore("ZONAL")] == [
        "ZonalStorageGibPerRegion",
        "HighScaleSSDStorageGibPerRegion",
    ]


def test_preemptible_cloud_tpu_ids_put_preemptible_after_the_version() -> None:
    """As Google's quota errors spell them (catalog/quota_names.py, sources)."""
    (v4,) = names.tpu_api("v4", True, "v4-32", per="region")
    assert isinstance(v4, CloudQuota)
    assert v4.ids[0] == "TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI"
    (v5e,) = names.tpu_api("v5litepod", True, "v5litepod-16")
    assert isinstance(v5e, CloudQuota)
    assert v5e.ids == ("TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI",)
    (v6e,) = names.tpu_api("v6e", True, "v6e-8", per="region")
    assert isinstance(v6e, CloudQuota)
    assert v6e.ids == ("TPUV6EPreemptiblePerProjectPerRegionForTPUAPI",)
    (v2,) = names.tpu_api("v2", False, "v2-32", per="region")
    assert isinstance(v2, CloudQuota) and v2.ids == ("TPUV2sPodPerProjectPerRegionForTPUAPI",)
