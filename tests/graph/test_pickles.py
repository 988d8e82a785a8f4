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
