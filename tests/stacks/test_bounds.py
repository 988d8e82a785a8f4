"""Every list and map a stack file can write is bounded at its own path: a walk over the
config models fails for a collection field without a bound, so a new field cannot skip one;
a few paths are checked for the refusal (path and message) and for accepting the limit."""

from __future__ import annotations

import importlib
import pkgutil
import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import pytest
from pydantic.fields import FieldInfo

import components
from components.base import (
    MAX_ENTRIES,
    MAX_KUEUE_FLAVORS,
    MAX_LABELS,
    MAX_METADATA_ENTRIES,
    MAX_PRIORITY_CLASSES,
    MAX_ROLES,
    ConfigModel,
)
from components.gke.config.cluster import MAX_EXCLUSIONS
from components.network import MAX_NODE_NETWORKS
from stacks.config import StackConfig
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import with_config
from tests.tpu_vms.test_vms import stack, vm

COLLECTIONS = (list, dict, set, frozenset, tuple)


def _bound(metadata: list[Any]) -> int | None:
    """The most entries `metadata` lets a collection hold: a `Field(max_length=...)` (also
    inside an `Annotated` of a union) or `components.base.at_most`."""
    for item in metadata:
        if isinstance(item, FieldInfo) and (inner := _bound(list(item.metadata))) is not None:
            return inner
        if isinstance(item, annotated_types.MaxLen):
            return item.max_length
        declared = getattr(getattr(item, "func", None), "described", None)
        if declared is not None and "maxProperties" in declared[1]:
            return declared[1]["maxProperties"]
    return None


REACHED: set[type] = set()
"""Every config model the walk followed."""


def _collections(
    annotation: Any, metadata: list[Any], path: str, seen: frozenset[type]
) -> Iterator[tuple[str, int | None]]:
    """(path, bound) of every list and map under `annotation`, models followed."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *extra = get_args(annotation)
        yield from _collections(inner, [*extra, *metadata], path, seen)
    elif origin in (Union, types.UnionType):
        for option in get_args(annotation):
            if option is not type(None):
                yield from _collections(option, metadata, path, seen)
    elif origin in COLLECTIONS:
        yield path, _bound(metadata)
        for arg in get_args(annotation):
            if arg is not Ellipsis:
                yield from _collections(arg, [], f"{path}[]", seen)
    elif origin is Literal:
        return
    elif isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        if annotation in seen:
            return
        REACHED.add(annotation)
        for name, info in annotation.model_fields.items():
            key = info.alias or name
            yield from _collections(
                info.annotation,
                list(info.metadata),
                f"{path}.{key}" if path else key,
                seen | {annotation},
            )
    elif annotation in COLLECTIONS:
        yield path, _bound(metadata)


FOUND = list(_collections(StackConfig, [], "", frozenset()))


def test_the_walk_reaches_every_system():
    # Guards the walk itself: it would pass vacuously if it stopped following models.
    heads = {path.split(".")[0].split("[")[0] for path, _ in FOUND}
    assert {"labels", "network", "cluster", "teams", "tpuVms", "slurm", "storage"} <= heads
    assert {"gpuClusters", "workloadIdentities", "tpuProvisioner", "kueue", "monitoring"} <= heads
    assert len(FOUND) > 70, len(FOUND)


def _subclasses(model: type) -> Iterator[type]:
    for sub in model.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_the_walk_reaches_every_config_model_of_the_program():
    # A model the stack config does not reach would escape the bound check below.
    for module in pkgutil.walk_packages(components.__path__, "components."):
        importlib.import_module(module.name)
    missed = sorted(m.__qualname__ for m in _subclasses(ConfigModel) if m not in REACHED)
    assert not missed, missed


def test_every_list_and_map_of_the_stack_config_is_bounded_at_its_path():
    unbounded = [path for path, bound in FOUND if bound is None]
    assert not unbounded, (
        "bound these with Field(max_length=...) for a list or components.base.at_most for a "
        f"map, citing the cloud's limit or a documented program bound: {unbounded}"
    )


def _roles(count: int) -> list[str]:
    return [f"roles/example.role{i}" for i in range(count)]


def _labels(count: int) -> dict[str, str]:
    return {f"k{i}": "v" for i in range(count)}


def _exclusion(i: int) -> dict[str, str]:
    return {
        "name": f"x{i}",
        "startTime": f"2030-01-{i % 28 + 1:02d}T00:00:00Z",
        "endTime": f"2030-01-{i % 28 + 1:02d}T08:00:00Z",
    }


REFUSED = [
    (
        {"labels": _labels(MAX_LABELS + 1)},
        "ai-infra:labels",
        "holds 65 entries; at most 64 (GCP allows 64 labels per resource)",
    ),
    (
        {"tpuVms": [vm(labels=_labels(MAX_LABELS + 1))]},
        "ai-infra:tpuVms[0].labels",
        "at most 64 (GCP allows 64 labels per resource)",
    ),
    (
        {"tpuVms": [vm(metadata={f"k{i}": "v" for i in range(MAX_METADATA_ENTRIES + 1)})]},
        "ai-infra:tpuVms[0].metadata",
        f"at most {MAX_METADATA_ENTRIES} (a bound of this program's",
    ),
    (
        {"teams": [{"name": "a", "roles": _roles(MAX_ROLES + 1)}]},
        "ai-infra:teams[0].roles",
        f"holds {MAX_ROLES + 1} entries; at most {MAX_ROLES}, remove some",
    ),
    (
        {"teams": [{"name": "a", "quota": {f"s{i}": 1 for i in range(MAX_KUEUE_FLAVORS + 1)}}]},
        "ai-infra:teams[0].quota",
        "at most 64 (one Kueue flavor each, 64 per queue)",
    ),
    (
        {"kueue": {"priorityClasses": {f"p{i}": i for i in range(MAX_PRIORITY_CLASSES + 1)}}},
        "ai-infra:kueue.priorityClasses",
        f"at most {MAX_PRIORITY_CLASSES}",
    ),
    (
        {"cluster": {"maintenanceExclusions": [_exclusion(i) for i in range(MAX_EXCLUSIONS + 1)]}},
        "ai-infra:cluster.maintenanceExclusions",
        f"at most {MAX_EXCLUSIONS}, remove some",
    ),
    (
        {
            "network": {
                "additionalNodeNetworks": [
                    {"name": f"n{i}", "cidr": f"10.{100 + i}.0.0/20"}
                    for i in range(MAX_NODE_NETWORKS + 1)
                ]
            }
        },
        "ai-infra:network.additionalNodeNetworks",
        f"at most {MAX_NODE_NETWORKS}, remove some",
    ),
    (
        {"tpuProvisioner": {"podToNodeLabels": [f"k{i}" for i in range(MAX_LABELS + 1)]}},
        "ai-infra:tpuProvisioner.podToNodeLabels",
        f"at most {MAX_LABELS}, remove some",
    ),
    (
        {
            "storage": {
                "volumes": [
                    {
                        "name": "data",
                        "bucket": "data",
                        "teams": {f"t{i}": "read" for i in range(MAX_ENTRIES + 1)},
                    }
                ]
            }
        },
        "ai-infra:storage.volumes[0].teams",
        f"at most {MAX_ENTRIES} (one per ai-infra:teams entry)",
    ),
]


@pytest.mark.parametrize(("overrides", "path", "message"), REFUSED, ids=[p for _, p, _ in REFUSED])
def test_a_collection_past_its_bound_is_refused_at_its_path(overrides, path, message):
    with pytest.raises(ConfigError) as error:
        parse(stack(**overrides), "test")
    found = dict(error.value.rendered)
    assert path in found, found
    assert message in found[path], found[path]


def test_a_map_past_its_bound_is_one_problem_not_one_per_entry():
    # at_most counts before pydantic validates entries: 5,000 bad values give one problem.
    buckets = {f"b{i}": "everything" for i in range(5000)}
    with pytest.raises(ConfigError) as error:
        parse(with_config(teams=[{"name": "a", "buckets": buckets}]), "test")
    assert [path for path, _ in error.value.rendered] == ["ai-infra:teams[0].buckets"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"teams": [{"name": "a", "roles": _roles(MAX_ROLES)}]},
        {
            "workloadIdentities": [
                {"name": "w", "namespace": "a", "serviceAccount": "s", "roles": _roles(MAX_ROLES)}
            ]
        },
        {"kueue": {"priorityClasses": {f"p{i}": i for i in range(MAX_PRIORITY_CLASSES)}}},
        # The program and the provider add two labels of their own to a TPU VM.
        {"tpuVms": [vm(labels=_labels(MAX_LABELS - 2))]},
        {"tpuVms": [vm(metadata={f"k{i}": "v" for i in range(MAX_METADATA_ENTRIES)})]},
        {"tpuProvisioner": {"podToNodeLabels": [f"k{i}" for i in range(MAX_LABELS)]}},
    ],
    ids=["team roles", "identity roles", "priority classes", "labels", "metadata", "pod labels"],
)
def test_a_collection_at_its_bound_is_accepted(overrides):
    parse(stack(**overrides), "test")
