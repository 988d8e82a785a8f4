"""A storage volume's owner and grants cannot be walked around by aliasing: one volume per
bucket or instance (by name, by full bucket name, an existing instance naming the stack's own),
so no second volume carries a write grant past the first's. Refused at the aliasing
volume's path before anything registers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from graph.engine import record_program
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.storage.stack import VOLUMES, config, storage

SLURM = {
    "clusterName": "tpu",
    "tpuNodesets": [{"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2}],
    "partitions": [{"name": "tpu", "nodesets": ["v4"], "default": True}],
}
V4 = {"gcp:region": "us-central2", "gcp:zone": "us-central2-b"}


def plus(*extra: dict[str, Any]) -> dict[str, Any]:
    return storage(volumes=[*copy.deepcopy(VOLUMES), *extra])


def refused(overrides: dict[str, Any]) -> dict[str, str]:
    graph, error = record_program(config(**overrides))
    assert isinstance(error, ConfigError), "accepted"
    assert graph.resources == [], [r.urn for r in graph]
    return dict(error.rendered)


@pytest.mark.parametrize(
    ("extra", "path", "first"),
    [
        # the same stack bucket by its entry name, with a write grant the first withholds
        ({"name": "data2", "bucket": "datasets", "teams": {"research": "write"}}, "bucket", 0),
        # the same bucket by its full GCS name
        ({"name": "ckpt2", "bucket": "test-project-ai-test-checkpoints"}, "bucket", 1),
        # an existing Filestore naming the share the stack creates
        ({"name": "alias", "existingFilestore": {"instance": "ai-test-shared"}}, "existing", 3),
        # an existing Lustre naming the instance the stack creates
        ({"name": "alias", "existingLustre": {"instance": "ai-test-scratch"}}, "existing", 2),
        # two volumes on one existing instance
        ({"name": "again", "existingFilestore": {"instance": "legacy-nfs"}}, "existing", 4),
    ],
)
def test_a_second_volume_on_the_same_data_is_refused(extra, path, first):
    found = refused({"storage": plus(extra)})
    (key,) = [k for k in found if k.startswith("ai-infra:storage.volumes[6].")]
    assert path in key.rsplit(".", 1)[1].lower(), key
    assert f"storage.volumes[{first}]" in found[key] and "second volume" in found[key]


def test_a_bucket_of_another_project_is_one_volume_too():
    other = {"name": "ext", "bucket": "someone-elses-bucket"}
    alias = {**other, "name": "ext2", "teams": {"research": "write"}}
    found = refused({"storage": plus(other, alias)})
    assert "storage.volumes[6]" in found["ai-infra:storage.volumes[7].bucket"]


@pytest.mark.parametrize(
    "grants",
    [{}, {"teams": {"research": "read"}}, {"owner": "research", "teams": {"research": "write"}}],
)
def test_a_second_profile_on_a_bucket_granted_alike_stays_accepted(grants):
    # Toolkit's A3 Ultra and A4 blueprints mount one bucket twice, for training and for
    # checkpoints; with the same owner and grants the second volume widens nothing.
    first = {"name": "ext", "bucket": "someone-elses-bucket", **grants}
    second = {**first, "name": "ext-ckpt", "profile": "checkpoint"}
    parse(config(storage=plus(first, second)), "t")


@pytest.mark.parametrize(
    "second",
    [
        {"teams": {"research": "write"}},
        {"owner": "research"},
        {"teams": {"research": "read", "pretrain": "read"}},
    ],
)
def test_a_second_profile_that_grants_otherwise_is_refused(second):
    first = {"name": "ext", "bucket": "someone-elses-bucket", "teams": {"research": "read"}}
    alias = {"name": "ext-ckpt", "bucket": "someone-elses-bucket", **second}
    alias = {**alias, "teams": second.get("teams", {})}
    found = refused({"storage": plus(first, alias)})
    assert "second volume" in found["ai-infra:storage.volumes[7].bucket"]


def test_distinct_data_stays_accepted():
    parse(config(storage=plus({"name": "more", "existingFilestore": {"instance": "x-nfs"}})), "t")


def slurm_stack(*extra: dict[str, Any]) -> dict[str, Any]:
    entry = {"name": "slurmfiles", "bucket": "test-project-ai-test-slurm-tpu"}
    volumes = [copy.deepcopy(VOLUMES[0]), {**entry, "teams": {"research": "read"}}, *extra]
    return config(**V4, slurm=SLURM, storage={"volumes": volumes})


@pytest.mark.parametrize("bucket", ["test-project-ai-test-slurm-tpu"])
def test_the_slurm_bucket_cannot_be_written_through_a_second_volume(bucket):
    """storage refuses a write grant on the Slurm bucket's volume; a second volume on it,
    which would carry a write grant of its own, is refused as an alias."""
    alias = {"name": "again", "bucket": bucket, "teams": {"pretrain": "read"}}
    graph, error = record_program(slurm_stack(alias))
    assert isinstance(error, ConfigError) and graph.resources == []
    assert "second volume" in dict(error.rendered)["ai-infra:storage.volumes[2].bucket"]


def test_reading_the_slurm_bucket_through_one_volume_stays_allowed():
    parse(slurm_stack(), "test")
