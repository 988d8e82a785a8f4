"""What Pulumi pickles into state stays importable where it is (docs/adr/0004): the modules every
shipped stack's and docs example's dynamic providers load are the pinned ones, each at its
path, and the pre-move alias still serves the queued resource provider."""

from __future__ import annotations

import importlib

from plan.replacements import pickled_modules
from tests.graph.conftest import Built

PINNED = {
    "components.api_calls",
    "components.gpu_clusters.provider",
    "components.slurm.cleanup",
    "components.slurm.scripts",
    "components.tpu_vms.provider",
}
"""Modules a provider pickle names, by reference: moving one breaks refresh and destroy of
every running stack that holds it."""


def test_provider_pickles_load_only_the_pinned_modules(every_stack: dict[str, Built]):
    found = {
        module
        for built in every_stack.values()
        for r in built.graph
        if "__provider" in r.inputs
        for module in pickled_modules(r.inputs)
        if module.startswith("components")
    }
    assert found == PINNED
    for module in PINNED:
        importlib.import_module(module)


def test_the_queued_resource_provider_answers_at_its_old_path():
    old = importlib.import_module("components.tpu_vm_provider")
    new = importlib.import_module("components.tpu_vms.provider")
    assert old.QueuedResourceProvider is new.QueuedResourceProvider
    assert old._default_client is new._default_client


def test_recording_a_program_leaves_the_pickler_as_it_found_it():
    """pulumi.dynamic wraps pickle's `_batch_setitems` once per serialized provider and never
    restores it; the engine puts it back after each run, so a process that records many
    programs never pickles through a growing chain of wrappers (it ended in RecursionError
    after some hundreds of dynamic resources)."""
    import pickle

    from graph.engine import record_program
    from tests.tpu_vms.test_vms import stack, vm

    before = pickle._Pickler._batch_setitems  # type: ignore[attr-defined]
    config = stack(**{"ai-infra:tpuVms": [vm()]})
    for _ in range(3):
        graph, error = record_program(config)
        assert error is None, error
        assert any(r.type.startswith("pulumi-python:dynamic") for r in graph.resources)
        assert pickle._Pickler._batch_setitems is before  # type: ignore[attr-defined]
