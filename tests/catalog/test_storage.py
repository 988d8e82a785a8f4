"""The storage catalog's facts, as the checks and mounts read them: capacity steps on both sides
of a threshold, the zones Managed Lustre is listed in, and gcsfuse settings that name real
flags."""

from __future__ import annotations

import pytest

from catalog import storage as catalog
from catalog.storage import FILESTORE_TIERS, GCSFUSE_FLAGS, LUSTRE_TIERS


@pytest.mark.parametrize(
    ("throughput", "good", "bad"),
    [
        (1000, [9000, 18000, 1530000, 1584000, 10008000], [8999, 9001, 1539000, 10080000]),
        (500, [18000, 3060000, 3168000, 20016000], [9000, 27000, 3078000]),
        (250, [36000, 6120000, 6336000, 40032000], [18000, 6156000]),
        (125, [72000, 144000, 12240000], [36000, 108000, 12312000]),
    ],
)
def test_lustre_capacities_follow_each_tiers_steps_on_both_sides_of_its_threshold(
    throughput, good, bad
):
    tier = LUSTRE_TIERS[throughput]
    assert [g for g in good if tier.capacity_problem(g)] == []
    assert all(tier.capacity_problem(b) for b in bad)


def test_a_capacity_off_the_steps_names_the_nearest_ones():
    message = LUSTRE_TIERS[1000].capacity_problem(20000)
    assert message is not None
    assert "18,000 and 27,000" in message
    assert "9,000 to 1,530,000 GiB in steps of 9,000" in message


def test_zonal_filestore_steps_by_256_gib_below_10_tib_and_2560_above():
    zonal = FILESTORE_TIERS["ZONAL"]
    assert zonal.capacity_problem(1024) is None
    assert zonal.capacity_problem(1280) is None
    assert zonal.capacity_problem(1100) is not None
    assert zonal.capacity_problem(9984) is None
    # Between the bands: 10 TiB is the upper band's first size, 9.9 TiB is in neither.
    assert zonal.capacity_problem(10137) is not None
    assert zonal.capacity_problem(10240) is None
    assert zonal.capacity_problem(12800) is None
    assert zonal.capacity_problem(11000) is not None
    assert zonal.capacity_problem(102400 + 2560) is not None


def test_basic_tiers_take_any_size_in_their_range():
    assert FILESTORE_TIERS["BASIC_HDD"].capacity_problem(1025) is None
    assert FILESTORE_TIERS["BASIC_SSD"].capacity_problem(2559) is not None


@pytest.mark.parametrize(
    ("zone", "listed"),
    [
        ("us-central1-f", True),
        ("us-central1-d", False),
        ("europe-west4-b", True),
        ("asia-east1-b", False),
        ("us-east5-a", False),
    ],
)
def test_lustre_zones_are_the_listed_ones(zone, listed):
    assert (catalog.lustre_zone_problem(zone) is None) is listed


def test_an_unlisted_region_names_the_escape_hatch():
    message = catalog.lustre_zone_problem("us-east5-a")
    assert message is not None and "allowUnlistedZone" in message and "us-central1" in message


def test_every_profile_setting_has_a_gcsfuse_flag():
    settings = {p for profile in catalog.GCSFUSE_PROFILES.values() for p, _ in profile.settings}
    settings |= {p for p, _ in catalog.GCSFUSE_FILE_CACHE}
    assert settings == set(GCSFUSE_FLAGS)


def test_the_checkpoint_profile_is_the_training_one_plus_range_reads_and_renames():
    training = dict(catalog.GCSFUSE_PROFILES["training"].settings)
    checkpoint = dict(catalog.GCSFUSE_PROFILES["checkpoint"].settings)
    assert checkpoint.items() > training.items()
    assert checkpoint["file-cache.cache-file-for-range-read"] == "true"
    assert training["metadata-cache.ttl-secs"] == "-1"
