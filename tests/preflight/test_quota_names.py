"""Quotas looked up by the names Google documents: v5e's serving quota by its display name,
Filestore Zonal and Regional (and the tiers they replace), Managed Lustre, and the reason
Compute Engine gives when it lists no quotas for a region."""

from __future__ import annotations

from google.cloud import compute_v1

from catalog import quota_names as names
from graph.capacity import Storage
from preflight import quota
from preflight.needs import Needs
from tests.preflight.conftest import PROJECT, live
from tests.preflight.fakes import World, quota_info

ZONE = (("zone", "us-west4-a"),)


def test_v5e_serving_quota_is_found_by_the_name_cloud_tpu_documents() -> None:
    for preemptible, shown in (
        (False, "TPU v5 lite pod cores for serving per project per zone"),
        (True, "Preemptible TPU v5 lite pod cores for serving per project per zone"),
    ):
        candidates = names.tpu_api("v5litepod", preemptible, "v5litepod-4", "zone")
        world = World(PROJECT)
        # An id preflight has never seen: only the display name can find it.
        info = quota_info(names.TPU_API, "SomeNewServingId", {ZONE: 8}, display_name=shown)
        world.quota_infos[names.TPU_API] = [info]
        found = quota._first(candidates, "us-west4-a", live(world))
        assert found is not None and (found.name, found.limit) == ("SomeNewServingId", 8.0)
    # Training sizes are held to the pod quota, not the serving one.
    pods = names.tpu_api("v5litepod", False, "v5litepod-16", "zone")
    assert not any("serving" in " ".join(n.display_names) for n in pods)  # type: ignore[union-attr]


def _share(kind: str, tier: str, gib: int) -> Storage:
    return Storage(
        key=f"urn:{kind}",
        label=f"{kind} x",
        config_key="storage.volumes[0]",
        kind=kind,
        tier=tier,
        region="us-central1",
        gib=gib,
    )


def _needs(*shares: Storage) -> Needs:
    return Needs(**{**{f.name: () for f in Needs.__dataclass_fields__.values()}, "shares": shares})


def test_filestore_zonal_and_regional_and_lustre_have_a_quota_question() -> None:
    needs = _needs(
        _share("filestore", "ZONAL", 2048),
        _share("filestore", "REGIONAL", 1024),
        _share("lustre", "500", 18000),
    )
    found = {n.subject: n for n in quota.quota_needs(needs, {})}
    assert {s: n.amount for s, n in found.items()} == {
        "Filestore ZONAL GiB": 2048,
        "Filestore REGIONAL GiB": 1024,
        "Managed Lustre 500 GiB": 18000,
    }
    # A project with the quota of the tier Zonal replaced is held to it.
    world = World(PROJECT)
    region = (("region", "us-central1"),)
    world.quota_infos[names.FILESTORE] = [
        quota_info(names.FILESTORE, "HighScaleSSDStorageGibPerRegion", {region: 1024})
    ]
    zonal = quota._resolve(found["Filestore ZONAL GiB"], live(world))
    assert zonal is not None and zonal[0].name == "HighScaleSSDStorageGibPerRegion"
    assert quota.judge(zonal[1], zonal[0]).status == "fail"


def test_a_region_s_quota_status_warning_is_the_reason_given() -> None:
    world = World(PROJECT)
    warning = compute_v1.QuotaStatusWarning(code="UNREACHABLE", message="quota backend down")
    world.regions["us-central1"] = compute_v1.Region(
        name="us-central1", quotas=[], quota_status_warning=warning
    )
    need = quota.QuotaNeed("nvidia-l4 GPUs", "us-central1", "GPUs", names.gpu("nvidia-l4", False))
    why = quota._absent(need, live(world))
    assert why.startswith("Compute Engine could not list the quotas of us-central1 (UNREACHABLE")
    assert "quota backend down" in why
