"""Bad storage input is refused at its config path, with a word of the fix, before anything
registers: one kind per volume, capacities off the service's steps, zones without the service,
grants to unknown teams or of one team's data to another, ranges that overlap or run short, and
names that collide once derived."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from graph.engine import record_program
from stacks.environment import warnings
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.storage.stack import VOLUMES, config, storage


def volumes(index: int, **fields: Any) -> list[dict[str, Any]]:
    """VOLUMES with entry `index` updated (a field set to None is removed)."""
    found = copy.deepcopy(VOLUMES)
    found[index].update(fields)
    found[index] = {k: v for k, v in found[index].items() if v is not None}
    return found


def refused(overrides: dict[str, Any]) -> dict[str, str]:
    graph, error = record_program(config(**overrides))
    assert isinstance(error, ConfigError), "accepted"
    assert graph.resources == [], [r.urn for r in graph]
    return dict(error.rendered)


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "two kinds in one volume",
        {"storage": storage(volumes=volumes(0, filestore={"capacityGib": 1024}))},
        "ai-infra:storage.volumes[0]",
        "exactly one of bucket, filestore",
    ),
    (
        "no kind at all",
        {"storage": storage(volumes=[{"name": "x"}])},
        "ai-infra:storage.volumes[0]",
        "sets none",
    ),
    (
        "two volumes of one name",
        {"storage": storage(volumes=[*VOLUMES, {"name": "data", "bucket": "datasets"}])},
        "ai-infra:storage.volumes[6].name",
        "unique",
    ),
    (
        "lustre capacity off its tier's step",
        {"storage": storage(volumes=volumes(2, lustre={"capacityGib": 20000, "throughput": 500}))},
        "ai-infra:storage.volumes[2].lustre.capacityGib",
        "18,000 and 36,000",
    ),
    (
        "lustre below its tier's minimum",
        {"storage": storage(volumes=volumes(2, lustre={"capacityGib": 9000, "throughput": 125}))},
        "ai-infra:storage.volumes[2].lustre.capacityGib",
        "72,000",
    ),
    (
        "lustre throughput the service has no tier for",
        {"storage": storage(volumes=volumes(2, lustre={"capacityGib": 18000, "throughput": 200}))},
        "ai-infra:storage.volumes[2].lustre.throughput",
        "1000",
    ),
    (
        "lustre in a region without it",
        {
            "gcp:region": "us-east5",
            "gcp:zone": "us-east5-a",
        },
        "ai-infra:storage.volumes[2].lustre.zone",
        "allowUnlistedZone",
    ),
    (
        "lustre in a zone of the region that lacks it",
        {
            "storage": storage(
                volumes=volumes(
                    2, lustre={"capacityGib": 18000, "throughput": 500, "zone": "us-central1-d"}
                )
            )
        },
        "ai-infra:storage.volumes[2].lustre.zone",
        "us-central1-a, us-central1-b",
    ),
    (
        "lustre in another region",
        {
            "storage": storage(
                volumes=volumes(
                    2, lustre={"capacityGib": 18000, "throughput": 500, "zone": "europe-west4-a"}
                )
            )
        },
        "ai-infra:storage.volumes[2].lustre.zone",
        "not in gcp:region",
    ),
    (
        "filestore share too small for its tier",
        {
            "storage": storage(
                volumes=volumes(3, filestore={"tier": "BASIC_SSD", "capacityGib": 1024})
            )
        },
        "ai-infra:storage.volumes[3].filestore.capacityGib",
        "2,560 to 65,433",
    ),
    (
        "zonal filestore off its 256 GiB step",
        {"storage": storage(volumes=volumes(3, filestore={"capacityGib": 1500}))},
        "ai-infra:storage.volumes[3].filestore.capacityGib",
        "1,536",
    ),
    (
        "filestore in a zone the region does not have",
        {
            "storage": storage(
                volumes=volumes(3, filestore={"capacityGib": 1024, "zone": "us-central1-e"})
            )
        },
        "ai-infra:storage.volumes[3].filestore.zone",
        "its zones are",
    ),
    (
        "filestore tier storage does not create",
        {
            "storage": storage(
                volumes=volumes(3, filestore={"tier": "ENTERPRISE", "capacityGib": 1024})
            )
        },
        "ai-infra:storage.volumes[3].filestore.tier",
        "ZONAL",
    ),
    (
        "read-write grant of one team's checkpoints to another",
        {"storage": storage(volumes=volumes(1, teams={"pretrain": "write", "research": "write"}))},
        "ai-infra:storage.volumes[1].teams.research",
        "sharedWrite",
    ),
    (
        "two writers and no owner",
        {"storage": storage(volumes=volumes(3, teams={"research": "write", "pretrain": "write"}))},
        "ai-infra:storage.volumes[3].teams",
        "name its owner",
    ),
    (
        "grant to a team that does not exist",
        {"storage": storage(volumes=volumes(0, teams={"vision": "read"}))},
        "ai-infra:storage.volumes[0].teams.vision",
        "no team named 'vision'",
    ),
    (
        "owner that does not exist",
        {"storage": storage(volumes=volumes(1, owner="vision"))},
        "ai-infra:storage.volumes[1].owner",
        "no team named",
    ),
    (
        "grant in a case the team map refuses",
        {"storage": storage(volumes=volumes(0, teams={"Research": "read"}))},
        "ai-infra:storage.volumes[0].teams.Research",
        "not a valid name",
    ),
    (
        "access the program does not know",
        {"storage": storage(volumes=volumes(0, teams={"research": "admin"}))},
        "ai-infra:storage.volumes[0].teams.research",
        "read",
    ),
    (
        "a profile on a file system",
        {"storage": storage(volumes=volumes(3, profile="checkpoint"))},
        "ai-infra:storage.volumes[3].profile",
        "remove it",
    ),
    (
        "a team granted a bucket twice",
        {"teams": [{"name": "pretrain", "buckets": {"datasets": "read"}}, {"name": "research"}]},
        "ai-infra:storage.volumes[0].teams.pretrain",
        "grant it in one place",
    ),
    (
        "buckets granted with the FUSE driver off",
        {"cluster": {"gcsFuseCsiDriver": False}},
        "ai-infra:storage.volumes[0].teams",
        "gcsFuseCsiDriver",
    ),
    (
        "created instances without a private services range",
        {"storage": {"volumes": copy.deepcopy(VOLUMES)}},
        "ai-infra:storage.privateServiceRange",
        "scratch, shared",
    ),
    (
        "a private services range nothing uses",
        {"storage": storage(volumes=VOLUMES[:2])},
        "ai-infra:storage.privateServiceRange",
        "remove privateServiceRange",
    ),
    (
        "private services range over the subnet",
        {"storage": storage(privateServiceRange="10.128.0.0/9")},
        "ai-infra:storage.privateServiceRange",
        "overlaps network.subnetCidr",
    ),
    (
        "private services range over a node network",
        {
            "network": {"additionalNodeNetworks": [{"name": "dcn", "subnetCidr": "10.200.4.0/24"}]},
        },
        "ai-infra:storage.privateServiceRange",
        "overlaps network.additionalNodeNetworks[0]",
    ),
    (
        "private services range over a GPU cluster's subnet",
        {"gpuClusters": [{"name": "gpu", "network": "new", "subnetCidr": "10.200.0.0/24"}]},
        "ai-infra:storage.privateServiceRange",
        "gpuClusters[0] subnet 0",
    ),
    (
        "private services range too small for a lustre instance",
        {"storage": storage(privateServiceRange="10.200.0.0/24")},
        "ai-infra:storage.privateServiceRange",
        "widen it",
    ),
    (
        "private services range with host bits",
        {"storage": storage(privateServiceRange="10.200.1.0/20")},
        "ai-infra:storage.privateServiceRange",
        "host bits",
    ),
    (
        "two lustre file systems of one name",
        {
            "storage": storage(
                volumes=[
                    *VOLUMES,
                    {"name": "scratch-2", "lustre": {"capacityGib": 18000, "throughput": 500}},
                    {
                        "name": "scratch2",
                        "lustre": {"capacityGib": 18000, "throughput": 500},
                    },
                ]
            )
        },
        "ai-infra:storage.volumes[7].lustre.filesystem",
        "also scratch-2's",
    ),
    (
        "lustre file system name too long",
        {
            "storage": storage(
                volumes=volumes(
                    2, lustre={"capacityGib": 18000, "throughput": 500, "filesystem": "scratchfs1"}
                )
            )
        },
        "ai-infra:storage.volumes[2].lustre.filesystem",
        "1 to 8 letters",
    ),
    (
        "volume name too long for its instance",
        {"storage": storage(volumes=volumes(3, name="s" * 41))},
        "ai-infra:storage.volumes[3].name",
        "40",
    ),
    (
        "a bucket name Cloud Storage refuses",
        {"storage": storage(volumes=volumes(0, bucket="my-google-data"))},
        "ai-infra:storage.volumes[0].bucket",
        "contains 'google'",
    ),
    (
        "a bucket name with a dash beside a dot",
        {"storage": storage(volumes=volumes(0, bucket="data-.example.com"))},
        "ai-infra:storage.volumes[0].bucket",
        "'-' next to a dot",
    ),
    (
        "a bucket name longer than 63 characters without dots",
        {"storage": storage(volumes=volumes(0, bucket="b" * 64))},
        "ai-infra:storage.volumes[0].bucket",
        "longer than Cloud Storage allows",
    ),
    (
        "an existing Lustre instance given a region",
        {
            "storage": storage(
                volumes=volumes(5, existingLustre={"instance": "legacy", "location": "us-central1"})
            )
        },
        "ai-infra:storage.volumes[5].existingLustre.location",
        "give its zone, e.g. us-central1-a",
    ),
    (
        "an unknown key",
        {"storage": storage(parallelstore=[{"name": "p"}])},
        "ai-infra:storage.parallelstore",
        "unknown field",
    ),
]


@pytest.mark.parametrize(("case", "overrides", "path", "fix"), CASES, ids=[c[0] for c in CASES])
def test_bad_storage_is_refused_at_its_path_before_anything_registers(case, overrides, path, fix):
    found = refused(overrides)
    assert path in found, f"{case}: {found}"
    assert fix in found[path], f"{case}: {found[path]}"


def test_shared_write_says_a_second_writer_is_meant():
    graph, error = record_program(
        config(
            storage=storage(
                volumes=volumes(
                    1, teams={"pretrain": "write", "research": "write"}, sharedWrite=True
                )
            )
        )
    )
    assert error is None, error
    pv = graph.named("storage-research-ckpt-pv")
    assert pv.inputs["spec"]["accessModes"] == ["ReadWriteMany"]


def test_an_unlisted_lustre_zone_is_accepted_when_said():
    graph, error = record_program(
        config(
            **{"gcp:region": "us-east5", "gcp:zone": "us-east5-a"},
            storage=storage(
                volumes=volumes(
                    2, lustre={"capacityGib": 18000, "throughput": 500, "allowUnlistedZone": True}
                )
            ),
        )
    )
    assert error is None, error
    assert graph.named("storage-scratch").inputs["location"] == "us-east5-a"


def test_a_filestore_volume_named_like_a_gpu_clusters_share_is_refused():
    found = refused(
        {
            "gpuClusters": [
                {"name": "gpu", "nfsShares": [{"mountPath": "/nfs"}], "zone": "us-central1-a"}
            ],
            "storage": storage(volumes=volumes(3, name="gpu-nfs0")),
        }
    )
    message = found["ai-infra:storage.volumes[3].name"]
    assert "Filestore instance 'ai-test-gpu-nfs0' already belongs to gpuClusters[0]" in message


def test_checkpoints_on_a_flat_bucket_are_warned_of_not_refused():
    flat = config(buckets=[{"name": "datasets"}, {"name": "checkpoints"}])
    found = warnings(parse(flat, "test"))
    assert any(
        w.startswith("ai-infra:storage.volumes[1].bucket: checkpoints on bucket 'checkpoints'")
        for w in found
    ), found
    assert not [w for w in warnings(parse(config(), "test")) if "storage" in w]


def test_a_team_granted_a_bucket_twice_is_refused_at_the_volumes_grant():
    teams = [
        {"name": "pretrain", "buckets": {"datasets": "read"}},
        {"name": "research", "buckets": {"checkpoints": "read"}},
    ]
    found = refused({"teams": teams})
    twice = {k: v for k, v in found.items() if "also lists bucket" in v}
    assert twice == {
        "ai-infra:storage.volumes[0].teams.pretrain": "team pretrain also lists bucket "
        "'datasets' in its own buckets; grant it in one place: remove it there, this grant "
        "gives the access and the volume",
        "ai-infra:storage.volumes[1].teams.research": "team research also lists bucket "
        "'checkpoints' in its own buckets; grant it in one place: remove it there, this grant "
        "gives the access and the volume",
    }
