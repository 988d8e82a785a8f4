"""Buckets as the program registers them: their settings, per-member grants and protection."""

from __future__ import annotations

import pytest

from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import with_config

BUCKETS = [
    {
        "name": "data",
        "members": [{"member": "group:readers@example.com", "role": "roles/storage.objectViewer"}],
    },
    {"name": "ckpt", "softDeleteDays": 30, "versioning": True, "deleteAfterDays": 60},
]


def test_bucket_settings(build):
    graph = build(buckets=BUCKETS)
    ckpt = graph.named("bucket-ckpt-bucket").inputs
    assert ckpt["name"] == "test-project-ai-test-ckpt"
    assert ckpt["location"] == "US-EAST5"
    assert ckpt["softDeletePolicy"] == {"retentionDurationSeconds": 30 * 86_400}
    assert ckpt["versioning"] == {"enabled": True}
    assert ckpt["lifecycleRules"][0]["condition"] == {"age": 60}
    assert ckpt["lifecycleRules"][0]["action"] == {"type": "Delete"}
    data = graph.named("bucket-data-bucket").inputs
    assert data["softDeletePolicy"] == {"retentionDurationSeconds": 7 * 86_400}
    # `<owner>-<member slug>-<role key>`, the role as IAM writes it.
    grant = graph.named("bucket-data-group-readers-example.com-storage.objectViewer").inputs
    assert grant == {
        "bucket": "test-project-ai-test-data",
        "role": "roles/storage.objectViewer",
        "member": "group:readers@example.com",
    }


def test_protected_stack_protects_buckets(build):
    graph = build(buckets=BUCKETS, protect=True)
    for bucket in graph.of_type("gcp:storage/bucket:Bucket"):
        assert bucket.protect and bucket.inputs["forceDestroy"] is False, bucket.urn


def test_a_lifecycle_age_past_a_century_is_refused_at_its_path():
    with pytest.raises(ConfigError) as error:
        parse(with_config(buckets=[{"name": "b", "deleteAfterDays": 10**30}]), "test")
    assert "at most 36500" in dict(error.value.rendered)["ai-infra:buckets[0].deleteAfterDays"]
    assert parse(with_config(buckets=[{"name": "b", "deleteAfterDays": 36500}]), "test")
