"""Which quota preflight looks for first, per kind of capacity: the names a project is likeliest
to have, with the reported usage, come before the rest."""

from __future__ import annotations

from preflight import quota_names as names
from preflight.quota_names import CloudQuota, Metric


def _first(found: tuple[names.QuotaName, ...]) -> str:
    head = found[0]
    return head.name if isinstance(head, Metric) else (head.ids or head.display_names)[0]


def test_cloud_tpu_quota_of_small_sizes_is_apart_from_pods() -> None:
    assert _first(names.tpu_api("v2", False, "v2-8")) == "TPUV2PerProjectPerZoneForTPUAPI"
    assert (
        _first(names.tpu_api("v2", True, "v2-32"))
        == "TPUV2sPodPreemptiblePerProjectPerZoneForTPUAPI"
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
    assert names.filestore("ZONAL") == ()
