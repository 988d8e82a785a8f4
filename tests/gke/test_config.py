"""What the user writes for the GKE keys, validated apart from resources: slices against the
catalog and the region, pools, maintenance exclusions, the pods range, identities' buckets,
and grants that must not share a name."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config, with_mega_pool


def problems(**overrides: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as error:
        parse(with_config(**overrides), "test")
    return dict(error.value.rendered)


def test_slice_defaults_need_only_name_and_accelerator():
    config = parse(with_config(tpuSlices=[{"name": "a", "accelerator": "v6e-16"}]), "test")
    slice_ = config.tpu_slices[0]
    assert (slice_.count, slice_.provisioning, slice_.zone) == (1, "on-demand", None)
    assert config.context.zone_of(slice_.zone) == "us-east5-a"


def test_invalid_accelerator_size_lists_valid_sizes():
    found = problems(
        tpuSlices=[{"name": "a", "accelerator": "v5p-8"}, {"name": "b", "accelerator": "v5p-33"}]
    )
    assert list(found) == ["ai-infra:tpuSlices[1].accelerator"]
    assert "v5p sizes are v5p-8, v5p-16, v5p-32" in found["ai-infra:tpuSlices[1].accelerator"]


def test_topology_override_must_fit_the_size():
    found = problems(tpuSlices=[{"name": "a", "accelerator": "v5p-512", "topology": "8x8x8"}])
    assert "4x8x8, 4x4x16" in found["ai-infra:tpuSlices[0].topology"]


def test_slice_zone_outside_the_region():
    found = problems(tpuSlices=[{"name": "a", "accelerator": "v5p-8", "zone": "us-central1-a"}])
    assert "not in gcp:region us-east5" in found["ai-infra:tpuSlices[0].zone"]


def test_reservation_provisioning_needs_a_reservation_name():
    found = problems(
        tpuSlices=[{"name": "a", "accelerator": "v5p-8", "provisioning": "reservation"}]
    )
    assert "needs the reservation's name" in found["ai-infra:tpuSlices[0].reservation"]


def test_pods_range_must_hold_every_node_the_pools_can_reach():
    # A /20 pods range has 4,096 addresses. The regional CPU pool can reach 9 nodes at a /24
    # each (2,304); a v5p-1024 slice is 128 hosts at a /27 each (4,096): too much.
    found = problems(tpuSlices=[{"name": "a", "accelerator": "v5p-1024"}])
    assert "widen podsCidr" in found["ai-infra:network.podsCidr"]
    assert "'a' at 16 pods per node" in found["ai-infra:network.podsCidr"]
    # The seed reference, two v4-32 slices on a regional cluster, fits: 9 x 256 + 8 x 32.
    parse(
        with_config(
            **{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"},
            tpuSlices=[{"name": "a", "accelerator": "v4-32", "count": 2}],
        ),
        "test",
    )


def test_identity_bucket_reference_must_exist():
    found = problems(
        workloadIdentities=[
            {
                "name": "train",
                "namespace": "ns",
                "serviceAccount": "ksa",
                "buckets": {"data": "read"},
            }
        ]
    )
    assert "no bucket named 'data'" in found["ai-infra:workloadIdentities[0].buckets.data"]


def test_every_unknown_bucket_is_refused_where_named_with_the_known_ones_listed():
    found = problems(
        buckets=[{"name": "zeta"}, {"name": "alpha"}],
        teams=[
            {"name": "a", "buckets": {"alpha": "read", "beta": "write"}},
            {"name": "b", "buckets": {"zeta": "read"}},
        ],
        workloadIdentities=[
            {"name": "train", "namespace": "ns", "serviceAccount": "ksa", "buckets": {"x": "read"}}
        ],
    )
    unknown = {k: v for k, v in found.items() if "no bucket named" in v}
    assert unknown == {
        "ai-infra:teams[0].buckets.beta": "no bucket named 'beta' in ai-infra:buckets; known: "
        "alpha, zeta",
        "ai-infra:workloadIdentities[0].buckets.x": "no bucket named 'x' in ai-infra:buckets; "
        "known: alpha, zeta",
    }


def test_maintenance_exclusions_are_validated():
    found = problems(cluster={"maintenanceExclusions": [{"name": "a", "start": "next tuesday"}]})
    assert "RFC 3339" in found["ai-infra:cluster.maintenanceExclusions[0].start"]
    found = problems(
        cluster={
            "maintenanceExclusions": [
                {"name": "a", "start": "2026-12-01T00:00:00Z", "end": "2026-12-10T00:00:00Z"},
                {"name": "b", "start": "2026-12-11T00:00:00Z", "scope": "NO_UPGRADES"},
            ]
        }
    )
    assert list(found) == ["ai-infra:cluster.maintenanceExclusions[1].end"]
    assert "needs an end" in found["ai-infra:cluster.maintenanceExclusions[1].end"]


def test_flex_start_gpu_pools_rest_at_zero():
    found = problems(
        gpuPools=[
            {
                "name": "g",
                "machineType": "g2-standard-8",
                "acceleratorType": "nvidia-l4",
                "provisioning": "flex-start",
                "minNodes": 1,
                "maxNodes": 2,
            }
        ]
    )
    assert "set minNodes: 0" in found["ai-infra:gpuPools[0].minNodes"]


def test_grants_for_similar_members_do_not_collide():
    graph = build_graph(
        with_config(
            cluster={"rbacSecurityGroup": "gke-security-groups@example.com"},
            teams=[
                {"name": "a", "groups": ["ml@example.com"]},
                {"name": "b", "groups": ["ml@example.org"]},
            ],
            workloadIdentities=[
                {
                    "name": "w",
                    "namespace": "w",
                    "serviceAccount": "w",
                    "roles": ["roles/tpu.viewer", "projects/test-project/roles/tpu.viewer"],
                }
            ],
        )
    )
    viewers = {
        r.inputs["member"]
        for r in graph.of_type("gcp:projects/iAMMember:IAMMember")
        if r.inputs["role"] == "roles/container.clusterViewer"
    }
    assert viewers == {"group:ml@example.com", "group:ml@example.org"}


def test_flex_start_slices_must_be_in_a_zone_gke_lists_for_flex_start():
    # v6e is offered on demand in us-central1-b, but GKE's flex-start page does not list it.
    found = problems(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-a"},
        tpuSlices=[
            {
                "name": "flex",
                "accelerator": "v6e-16",
                "zone": "us-central1-b",
                "provisioning": "flex-start",
            },
            {"name": "ondemand", "accelerator": "v6e-16", "zone": "us-central1-b"},
        ],
    )
    assert list(found) == ["ai-infra:tpuSlices[0].zone"]
    assert found["ai-infra:tpuSlices[0].zone"].startswith(
        "GKE offers flex-start v6e in asia-northeast1-b, us-east5-a, us-east5-b, not us-central1-b"
    )
    assert "allowUnlistedZone: true" in found["ai-infra:tpuSlices[0].zone"]


def test_an_inherited_flex_start_zone_says_it_is_inherited():
    found = problems(
        **{"gcp:region": "us-west4", "gcp:zone": "us-west4-b"},
        tpuSlices=[{"name": "f", "accelerator": "v5litepod-16", "provisioning": "flex-start"}],
    )
    message = found["ai-infra:tpuSlices[0].zone"]
    assert message.startswith("the slice inherits gcp:zone us-west4-b: ")


@pytest.mark.parametrize(
    ("accelerator", "zone"),
    [("v6e-16", "us-east5-b"), ("v5p-16", "us-east5-a"), ("v6e-16", "us-east5-a")],
)
def test_flex_start_slices_in_a_listed_zone_are_accepted(accelerator: str, zone: str):
    slice_ = {"name": "f", "accelerator": accelerator, "zone": zone, "provisioning": "flex-start"}
    config = parse(with_config(tpuSlices=[slice_]), "test")
    assert config.tpu_slices[0].provisioning == "flex-start"


def test_the_escape_hatch_accepts_an_unlisted_flex_start_zone():
    slice_ = {
        "name": "f",
        "accelerator": "v6e-16",
        "zone": "us-central1-b",
        "provisioning": "flex-start",
        "allowUnlistedZone": True,
    }
    raw = with_config(**{"gcp:region": "us-central1", "gcp:zone": "us-central1-a"})
    raw["ai-infra:tpuSlices"] = [slice_]
    assert parse(raw, "test").tpu_slices[0].zone == "us-central1-b"


def test_v4_has_no_flex_start_even_with_the_escape_hatch():
    # GKE "About flex-start": "TPU v3 and v4 are not supported".
    found = problems(
        **{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"},
        tpuSlices=[
            {
                "name": "f",
                "accelerator": "v4-8",
                "provisioning": "flex-start",
                "allowUnlistedZone": True,
            }
        ],
    )
    message = found["ai-infra:tpuSlices[0].provisioning"]
    assert "GKE offers no flex-start for v4" in message
    assert message.endswith("(v5litepod, v5p, v6e, tpu7x)")


def test_tpu7x_flex_start_where_cluster_toolkit_runs_it_and_elsewhere_with_the_hatch():
    def slices(zone: str, **hatch: bool) -> dict[str, object]:
        entry = {"name": "f", "accelerator": "tpu7x-16", "provisioning": "flex-start"}
        return {
            "gcp:region": "us-central1",
            "gcp:zone": zone,
            "tpuSlices": [{**entry, **hatch}],
        }

    parse(with_config(**slices("us-central1-c")), "test")
    found = problems(**slices("us-central1-ai1a"))
    assert (
        "GKE offers flex-start tpu7x in us-central1-c, not us-central1-ai1a"
        in (found["ai-infra:tpuSlices[0].zone"])
    )
    parse(with_config(**slices("us-central1-ai1a", allowUnlistedZone=True)), "test")


def test_gpu_direct_pods_needs_a_fast_path_pool_and_not_restricted():
    found = problems(teams=[{"name": "a", "gpuDirectPods": True}])
    assert "no gpuPools entry is built on its fast path" in found["ai-infra:teams[0].gpuDirectPods"]
    with pytest.raises(ConfigError) as error:
        parse(
            with_mega_pool(
                teams=[{"name": "a", "gpuDirectPods": True, "podSecurity": "restricted"}]
            ),
            "test",
        )
    found = dict(error.value.rendered)
    assert "restricted level refuses host paths" in found["ai-infra:teams[0].gpuDirectPods"]
