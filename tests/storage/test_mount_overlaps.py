"""A mount at, above or under another is refused at its `mountPath`, naming the first mount
of the list it meets, however many there are: held against the rule itself (`nested`, pair by
pair) on lists drawn at random, through a TPU VM entry's `storage` list."""

from __future__ import annotations

import random

import pytest

from components.storage import nested
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.tpu_vms.test_vms import stack, vm

PARTS = ("a", "b", "a-1", "a.b")


def _config(paths: list[str]) -> dict:
    mounts = [{"volume": "data", "mountPath": path} for path in paths]
    return stack(
        buckets=[{"name": "data-bucket"}],
        storage={"volumes": [{"name": "data", "bucket": "data-bucket"}]},
        tpuVms=[vm(storage=mounts)],
    )


def _by_pairs(paths: list[str]) -> dict[str, str]:
    """What the rule says, pair by pair: each path against the earlier ones kept."""
    kept: list[tuple[str, str]] = []
    found = {}
    for i, path in enumerate(paths):
        other = next(((p, w) for p, w in kept if nested(path, p)), None)
        if other is None:
            kept.append((path, f"storage[{i}]"))
        else:
            found[f"ai-infra:tpuVms[0].storage[{i}].mountPath"] = (
                f"'{path}' overlaps {other[1]} at '{other[0]}'; every mount needs its own, "
                "unnested path"
            )
    return found


def _refused(paths: list[str]) -> dict[str, str]:
    try:
        parse(_config(paths), "test")
    except ConfigError as error:
        return dict(error.rendered)
    return {}


@pytest.mark.parametrize("seed", range(12))
def test_overlaps_are_the_rules_pair_by_pair(seed):
    draw = random.Random(seed)
    paths = [
        "/data/" + "/".join(draw.choice(PARTS) for _ in range(draw.randint(1, 4)))
        for _ in range(24)
    ]
    expected = _by_pairs(paths)
    assert expected, "the draw should hold overlaps"
    assert _refused(paths) == expected


def test_a_later_mount_under_two_earlier_ones_names_the_first_of_them():
    paths = ["/data/x/y", "/data/x", "/data/x/y/z"]
    assert _refused(paths) == _by_pairs(paths)
    assert "storage[0] at '/data/x/y'" in _refused(paths)["ai-infra:tpuVms[0].storage[1].mountPath"]
