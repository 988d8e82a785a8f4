"""Cost reports of configs built under the mock engine, at the repository's catalog."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from prices import stack_cost
from prices.cost import CostReport, Line
from stacks.loading import parse
from tests.conftest import build_graph, with_config

Cost = Callable[..., CostReport]


def cost_of(raw: dict[str, Any], stack: str = "test") -> CostReport:
    return stack_cost(parse(raw, stack), build_graph(raw, stack=stack))


@pytest.fixture
def cost() -> Cost:
    """`cost(tpuSlices=[...])`: the report of BASE_CONFIG (us-east5) with these keys."""

    def _cost(stack: str = "test", **overrides: Any) -> CostReport:
        return cost_of(with_config(**overrides), stack)

    return _cost


def line(report: CostReport, label: str) -> Line:
    found = [x for x in report.lines if x.label == label]
    assert len(found) == 1, [x.label for x in report.lines]
    return found[0]
