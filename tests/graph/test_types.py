"""Each resource type constant is one the program registers, spelt as the graph records it."""

from __future__ import annotations

from graph import types


def _constants() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(types).items()
        if name.isupper() and isinstance(value, str) and not name.endswith("_PREFIX")
    }


def test_every_type_constant_is_registered_by_a_stack_or_example(every_stack) -> None:
    registered = {r.type for built in every_stack.values() for r in built.graph}
    unknown = {n: v for n, v in _constants().items() if v not in registered}
    assert unknown.keys() <= {"STACK"}, f"no stack or example registers {unknown}"


def test_no_two_constants_name_one_type() -> None:
    values = list(_constants().values())
    assert len(values) == len(set(values))


def test_short_names_a_resource_as_the_plan_does() -> None:
    assert types.short(types.NODE_POOL) == "NodePool"
    assert types.short(types.QUEUED_RESOURCE) == "QueuedResource"
    assert types.is_kubernetes(types.CLUSTER_QUEUE) and not types.is_kubernetes(types.CLUSTER)
    assert types.is_provider(types.KUBERNETES_PROVIDER)
