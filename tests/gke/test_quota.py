"""`quota.allocate`: how each slice's chips (or a GPU pool's GPUs) are split among the teams'
ClusterQueues and the cohort. Numbers are exact: a quota that is off by one chip either
strands a chip or promises one that does not exist."""

from __future__ import annotations

import itertools

import pulumi
import pytest

from catalog.gpu import GPU_RESOURCE
from catalog.tpu import TPU_RESOURCE
from components.gke.config import GpuPoolConfig, Share, TeamConfig, TpuSliceConfig
from components.gke.quota import Allocation, Flavor, Source, allocate, derive_flavors
from stacks import environment
from stacks.loading import parse
from tests.conftest import build_graph, with_config


def flavor(name: str, *sources: tuple[str, int], slice_units: int = 1) -> Flavor:
    """A flavor over sources (name, units), divided in whole slices of `slice_units`."""
    return Flavor(
        name=name,
        resource=TPU_RESOURCE,
        node_labels={},
        tolerations=[],
        flex_start=False,
        sources=[Source(source, units, slice_units) for source, units in sources],
    )


def shares_of(*teams: TeamConfig) -> dict[str, dict[str, Share]]:
    """Shares as the stack passes them: parsed from the teams' `quota` as written in YAML."""
    return {team.name: dict(team.quota) for team in teams}


def team(name: str, **quota: object) -> TeamConfig:
    return TeamConfig.model_validate({"name": name, "quota": quota})


def totals(allocation: Allocation, flavors: list[Flavor]) -> dict[str, int]:
    return {
        f.name: sum(q[f.name] for q in allocation.teams.values()) + allocation.cohort[f.name]
        for f in flavors
    }


def test_implicit_split_leaves_the_remainder_with_the_cohort_whatever_the_order():
    flavors = [flavor("v5p-32", ("train", 10))]
    allocation = allocate(flavors, shares_of(team("a"), team("b"), team("c")))
    assert allocation.teams == {"a": {"v5p-32": 3}, "b": {"v5p-32": 3}, "c": {"v5p-32": 3}}
    assert allocation.cohort == {"v5p-32": 1}

    reordered = allocate(flavors, shares_of(team("c"), team("b"), team("a")))
    assert reordered == allocation


def sliced(name: str, source: str, slices: int, chips_per_slice: int) -> Flavor:
    return flavor(name, (source, slices * chips_per_slice), slice_units=chips_per_slice)


@pytest.mark.parametrize(
    ("slices", "teams", "each", "cohort"),
    [
        (1, 2, 0, 4),  # dev's one 4-chip slice between two teams: the cohort holds it
        (2, 2, 4, 0),
        (3, 2, 4, 4),  # one slice each, the third is the cohort's
        (5, 2, 8, 4),
        (2, 3, 0, 8),
        (6, 3, 8, 0),
    ],
)
def test_implicit_shares_are_whole_slices(slices: int, teams: int, each: int, cohort: int):
    flavors = [sliced("v5litepod-4", "dev", slices, 4)]
    allocation = allocate(flavors, shares_of(*(team(f"t{i}") for i in range(teams))))
    assert {q["v5litepod-4"] for q in allocation.teams.values()} == {each}
    assert allocation.cohort == {"v5litepod-4": cohort}


def test_the_rest_after_explicit_shares_is_split_in_whole_slices_too():
    # Two 64-chip slices: a names 32 chips (half a slice); the 96 left make one slice, which
    # does not divide between b and c, so the cohort keeps all 96.
    flavors = [sliced("v6e-64", "tune", 2, 64)]
    allocation = allocate(flavors, shares_of(team("a", tune=32), team("b"), team("c")))
    assert allocation.teams == {"a": {"v6e-64": 32}, "b": {"v6e-64": 0}, "c": {"v6e-64": 0}}
    assert allocation.cohort == {"v6e-64": 96}
    # A whole slice named leaves one whole slice, which the one other team gets.
    allocation = allocate(flavors, shares_of(team("a", tune=64), team("b")))
    assert allocation.teams == {"a": {"v6e-64": 64}, "b": {"v6e-64": 64}}
    assert allocation.cohort == {"v6e-64": 0}


def test_allocation_is_deterministic():
    flavors = [flavor("v5p-32", ("train", 11)), flavor("v6e-8", ("eval", 5))]
    shares = shares_of(team("a", train=3), team("b"), team("c"), team("d", eval="50%"))
    first = allocate(flavors, shares)
    assert all(allocate(flavors, shares) == first for _ in range(3))
    # train: 3 to a, 2 each to b, c, d, 2 to the cohort; eval: 2 to d (half of 5, rounded
    # down), 1 each to a, b, c.
    assert first.teams == {
        "a": {"v5p-32": 3, "v6e-8": 1},
        "b": {"v5p-32": 2, "v6e-8": 1},
        "c": {"v5p-32": 2, "v6e-8": 1},
        "d": {"v5p-32": 2, "v6e-8": 2},
    }
    assert first.cohort == {"v5p-32": 2, "v6e-8": 0}


def test_chips_fractions_and_percentages_come_off_the_top():
    flavors = [flavor("v5p-128", ("pretrain", 64))]
    teams = (team("a", pretrain=16), team("b", pretrain=0.25), team("c", pretrain="12.5%"))
    allocation = allocate(flavors, shares_of(*teams, team("d"), team("e")))
    # 16 + 16 + 8 named; the other 24 split between d and e.
    assert {name: q["v5p-128"] for name, q in allocation.teams.items()} == {
        "a": 16,
        "b": 16,
        "c": 8,
        "d": 12,
        "e": 12,
    }
    assert allocation.cohort == {"v5p-128": 0}


def test_a_fractional_share_rounds_down_and_the_rest_goes_on():
    flavors = [flavor("v5p-32", ("train", 10))]
    allocation = allocate(flavors, shares_of(team("a", train="33%"), team("b", train=0.5)))
    assert allocation.teams == {"a": {"v5p-32": 3}, "b": {"v5p-32": 5}}
    assert allocation.cohort == {"v5p-32": 2}


def test_a_whole_percentage_of_a_round_capacity_is_exact():
    """0.29 * 100 is 28.999999999999996 in floating point; '29%' of 100 chips is still 29."""
    flavors = [flavor("v5p-256", ("train", 100))]
    allocation = allocate(flavors, shares_of(team("a", train="29%"), team("b", train="57%")))
    assert allocation.teams == {"a": {"v5p-256": 29}, "b": {"v5p-256": 57}}


def test_the_cohort_holds_what_is_left_when_every_team_names_the_slice():
    flavors = [flavor("v5p-128", ("pretrain", 64))]
    allocation = allocate(flavors, shares_of(team("a", pretrain=16), team("b", pretrain="25%")))
    assert allocation.teams == {"a": {"v5p-128": 16}, "b": {"v5p-128": 16}}
    assert allocation.cohort == {"v5p-128": 32}


def test_without_teams_the_cohort_holds_everything():
    flavors = [flavor("v5p-32", ("train", 16)), flavor("gpu-l4", ("l4", 8))]
    allocation = allocate(flavors, {})
    assert allocation.teams == {}
    assert allocation.cohort == {"v5p-32": 16, "gpu-l4": 8}


def test_a_team_naming_one_slice_of_a_shape_shares_the_other_slices_of_that_shape():
    # Two entries of the same shape are one flavor; a share names one entry, not the flavor.
    flavors = [flavor("v5p-32", ("reserved", 16), ("spot", 32))]
    allocation = allocate(flavors, shares_of(team("a", reserved=16), team("b")))
    # reserved: 16 to a, none left for b; spot: 32 split between a and b.
    assert allocation.teams == {"a": {"v5p-32": 32}, "b": {"v5p-32": 16}}
    assert allocation.cohort == {"v5p-32": 0}


def test_zero_capacity_sources_give_zero_quota_but_keep_the_flavor():
    flavors = [flavor("v5p-32", ("parked", 0)), flavor("v6e-8", ("eval", 8))]
    allocation = allocate(flavors, shares_of(team("a", parked=0.5, eval=2), team("b")))
    assert allocation.teams == {"a": {"v5p-32": 0, "v6e-8": 2}, "b": {"v5p-32": 0, "v6e-8": 6}}
    assert allocation.cohort == {"v5p-32": 0, "v6e-8": 0}


def test_flavors_from_config_count_chips_and_gpus():
    # A count: 0 slice is a flavor with nothing behind it; a GPU pool counts GPUs at max nodes.
    slices = [
        TpuSliceConfig(name="train", accelerator="v5p-32", count=2),
        TpuSliceConfig(name="parked", accelerator="v6e-16", count=0),
    ]
    pools = [
        GpuPoolConfig.model_validate(
            {
                "name": "l4",
                "machineType": "g2-standard-24",
                "acceleratorType": "nvidia-l4",
                "acceleratorCount": 2,
                "maxNodes": 3,
            }
        )
    ]
    flavors = derive_flavors(slices, pools)
    sources = [
        (f.name, f.resource, [(s.name, s.units, s.slice_units) for s in f.sources]) for f in flavors
    ]
    assert sources == [
        ("v5p-32", TPU_RESOURCE, [("train", 32, 16)]),
        ("v6e-16", TPU_RESOURCE, [("parked", 0, 16)]),
        ("gpu-l4", GPU_RESOURCE, [("l4", 6, 1)]),
    ]
    allocation = allocate(flavors, shares_of(team("a", l4=1), team("b"), team("c")))
    # Two 16-chip slices among three teams: none each, both with the cohort. GPUs are
    # divided one by one.
    assert allocation.teams == {
        "a": {"v5p-32": 0, "v6e-16": 0, "gpu-l4": 1},
        "b": {"v5p-32": 0, "v6e-16": 0, "gpu-l4": 2},
        "c": {"v5p-32": 0, "v6e-16": 0, "gpu-l4": 2},
    }
    assert allocation.cohort == {"v5p-32": 32, "v6e-16": 0, "gpu-l4": 1}


SHARE_CHOICES: tuple[object | None, ...] = (None, 0, 1, 3, 0.5, 0.3, "10%", "100%")
"""Per team and source: no share (None), chips, fractions, percentages."""


@pytest.mark.parametrize("capacity", [0, 1, 7, 16, 64])
def test_teams_and_cohort_add_up_to_the_capacity_of_every_flavor(capacity: int):
    flavors = [flavor("shape", ("first", capacity), ("second", capacity + 3))]
    checked = 0
    for choice in itertools.product(SHARE_CHOICES, repeat=3):
        teams = []
        for i, share in enumerate(choice):
            quota = {} if share is None else {"first": share}
            teams.append(team(f"t{i}", **quota))
        shares = shares_of(*teams)
        named = sum(
            int(s * capacity) if isinstance(s, float) else s
            for s in (q.get("first") for q in shares.values())
            if s is not None
        )
        if named > capacity:
            continue  # over-subscribed shares are a config error, checked before allocation
        checked += 1
        allocation = allocate(flavors, shares)
        assert totals(allocation, flavors) == {"shape": 2 * capacity + 3}, choice
        quotas = [allocation.teams[t.name]["shape"] for t in teams]
        assert all(q >= 0 for q in quotas), choice
        # "second" is named by nobody: its units split three ways, the remainder stays.
        implicit = sum(s is None for s in choice)
        rest = capacity - named
        left = rest - rest // implicit * implicit if implicit else rest
        assert allocation.cohort["shape"] == left + (capacity + 3) % 3, choice
    assert checked > 100


# An explicit share that is not whole slices: accepted, with a warning in the plan and in
# `pulumi up`.

PART_SLICE = dict(
    tpuSlices=[{"name": "train", "accelerator": "v5p-32", "count": 2}],
    gpuPools=[{"name": "l4", "machineType": "g2-standard-8", "acceleratorType": "nvidia-l4"}],
    teams=[
        {"name": "a", "quota": {"train": 24, "l4": 1}},
        {"name": "b", "quota": {"train": "25%"}},
        {"name": "c", "quota": {"train": 0}},
    ],
)


def test_a_share_that_is_not_whole_slices_is_a_warning_not_an_error(monkeypatch):
    logged: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *_, **__: logged.append(message))
    config = parse(with_config(**PART_SLICE), "test")
    found = environment.warnings(config)
    assert found == [
        "ai-infra:teams[0].quota.train: 24 chips is not a whole number of 'train' slices (16 "
        "chips each): the team runs 1 slice(s) on its own quota and 8 chips only lend to "
        "others; give 16 or 32 chips, or the fraction that makes them",
        "ai-infra:teams[1].quota.train: 8 chips is not a whole number of 'train' slices (16 "
        "chips each): the team runs no job on its own quota and 8 chips only lend to others; "
        "give 16 chips, or the fraction that makes them",
    ]
    graph = build_graph(with_config(**PART_SLICE))
    assert graph.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    assert logged == found
    sections = dict(environment.describe(config))
    assert sections["Warnings"] == [f"  {line}" for line in found]


def test_whole_slice_shares_warn_nothing():
    whole = {**PART_SLICE, "teams": [{"name": "a", "quota": {"train": "50%"}}, {"name": "b"}]}
    config = parse(with_config(**whole), "test")
    assert environment.warnings(config) == []
    assert "Warnings" not in dict(environment.describe(config))
