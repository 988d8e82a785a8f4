"""The stack config as a whole, apart from resources: its defaults, keys and shapes, every bad
input named at its path with its fix, all problems reported together, and a bad config
registering nothing at all. Each system's own checks are tested in its folder."""

from __future__ import annotations

from typing import Any

import pytest

from graph.engine import record_program
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import with_config


def problems(**overrides: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as error:
        parse(with_config(**overrides), "test")
    return dict(error.value.rendered)


def test_minimal_config_takes_the_documented_defaults():
    config = parse(with_config(), "test")
    assert config.prefix == "ai-test"
    assert config.network.subnet_cidr == "10.129.0.0/20"
    assert config.network.pods_cidr == "192.168.64.0/20"
    assert config.network.services_cidr == "192.168.80.0/20"
    assert config.cluster.regional is True
    assert config.cluster.release_channel == "REGULAR"
    assert config.tpu_slices == [] and config.buckets == [] and config.gpu_pools == []


def test_values_arrive_as_json_strings_like_the_pulumi_engine_sends_them():
    config = parse(
        with_config(**{"tpuSlices": '[{"name": "a", "accelerator": "v5p-32"}]', "protect": "true"}),
        "test",
    )
    assert config.tpu_slices[0].shape.hosts == 4
    assert config.protect is True


def test_unknown_top_level_key_is_an_error():
    found = problems(tpuSlice=[{"name": "a", "accelerator": "v5p-8"}])
    assert "unknown config key" in found["ai-infra:tpuSlice"]
    assert "tpuSlices" in found["ai-infra:tpuSlice"]


@pytest.mark.parametrize(
    ("overrides", "path", "valid"),
    [
        (
            {"tpuSlices": [{"name": "a", "accelerator": "v5p-8", "zones": "x"}]},
            "ai-infra:tpuSlices[0].zones",
            "zone",
        ),
        ({"network": {"subnetCIDR": "10.0.0.0/20"}}, "ai-infra:network.subnetCIDR", "subnetCidr"),
        (
            {"cluster": {"cpuPool": {"machine": "e2-standard-4"}}},
            "ai-infra:cluster.cpuPool.machine",
            "machineType",
        ),
        (
            {
                "buckets": [
                    {
                        "name": "b",
                        "members": [
                            {"member": "group:g@x.com", "role": "roles/x", "condition": "y"}
                        ],
                    }
                ]
            },
            "ai-infra:buckets[0].members[0].condition",
            "role",
        ),
    ],
)
def test_unknown_nested_fields_are_errors_that_list_valid_fields(overrides, path, valid):
    found = problems(**overrides)
    assert path in found, found
    assert "unknown field" in found[path] and valid in found[path]


@pytest.mark.parametrize(
    ("network", "path", "fragment"),
    [
        ({"subnetCidr": "10.129.0.0/33"}, "ai-infra:network.subnetCidr", "not an IPv4 CIDR"),
        ({"podsCidr": "banana"}, "ai-infra:network.podsCidr", "not an IPv4 CIDR"),
        (
            {"servicesCidr": "192.168.80.1/20"},
            "ai-infra:network.servicesCidr",
            "write the range as 192.168.80.0/20",
        ),
        ({"podsCidr": "10.129.0.0/16"}, "ai-infra:network.podsCidr", "overlaps subnetCidr"),
        ({"masterCidr": "172.16.0.0/24"}, "ai-infra:network.masterCidr", "needs a /28"),
    ],
)
def test_malformed_and_overlapping_cidrs(network, path, fragment):
    found = problems(network=network)
    assert fragment in found[path], found


def test_default_zone_outside_the_region():
    found = problems(**{"gcp:zone": "europe-west4-a"})
    assert "not in gcp:region" in found["gcp:zone"]


def test_missing_project():
    config = with_config()
    del config["gcp:project"]
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    assert dict(error.value.rendered) == {"gcp:project": "is required"}


@pytest.mark.parametrize("role", ["roles/owner", "roles/editor", "roles/viewer"])
def test_basic_roles_are_refused(role):
    found = problems(
        workloadIdentities=[
            {"name": "train", "namespace": "ns", "serviceAccount": "ksa", "roles": [role]}
        ]
    )
    assert "basic role" in found["ai-infra:workloadIdentities[0].roles[0]"]


def test_all_problems_are_reported_together():
    found = problems(
        tpuSlices=[{"name": "a", "accelerator": "v5p-33"}],
        network={"podsCidr": "nope"},
        bogus=1,
    )
    assert {
        "ai-infra:tpuSlices[0].accelerator",
        "ai-infra:network.podsCidr",
        "ai-infra:bogus",
    } <= set(found)


def test_cross_checks_are_reported_together():
    found = problems(
        tpuSlices=[
            {"name": "a", "accelerator": "v5p-8", "zone": "us-west1-a"},
            {"name": "a", "accelerator": "v5p-16"},
        ],
        buckets=[{"name": "b", "forceDestroy": True}],
        protect=True,
    )
    assert "ai-infra:tpuSlices[0].zone" in found
    assert "names must be unique" in found["ai-infra:tpuSlices[1].name"]
    assert "must not be force-destroyed" in found["ai-infra:buckets[0].forceDestroy"]


def test_public_bucket_members_are_refused():
    found = problems(
        buckets=[
            {"name": "b", "members": [{"member": "allUsers", "role": "roles/storage.objectViewer"}]}
        ]
    )
    assert "public" in found["ai-infra:buckets[0].members[0].member"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"tpuSlices": [{"name": "a", "accelerator": "v5p-33"}]},
        {"bogus": True},
        {"network": {"podsCidr": "10.129.0.0/20"}},
        {"tpuSlices": [{"name": "a", "accelerator": "v5p-8", "zone": "us-west1-b"}]},
        {"gcp:project": None},
    ],
)
def test_bad_config_registers_no_resource(overrides):
    config = with_config(**overrides)
    config = {k: v for k, v in config.items() if v is not None}
    graph, error = record_program(config)
    assert isinstance(error, ConfigError)
    assert graph.resources == [], [r.urn for r in graph]


def test_the_harness_sees_resources_registered_before_an_error():
    """The check above can fail: a program that registers, then raises, leaves a graph."""

    def program():
        import pulumi_gcp as gcp

        gcp.projects.Service("early", project="p", service="compute.googleapis.com")
        raise ConfigError([])

    graph, error = record_program(with_config(), program=program)
    assert isinstance(error, ConfigError)
    assert [r.name for r in graph] == ["early"]


def test_the_benchmark_stacks_are_valid_configs():
    """benchmarks/plan_speed.py measures generated stacks; they must stay ones we accept."""
    from benchmarks.plan_speed import generated_config

    config = parse(generated_config(64, 100), "bench")
    assert len(config.tpu_slices) == 64 and len(config.teams) == 100
