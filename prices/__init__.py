"""What a stack costs at list prices: the price catalog (`catalog.csv`, with the source and date
of every row), `python -m prices refresh` that rewrites it from the Cloud Billing Catalog API,
the cost of a stack from its config and the graph the program registers (read through
graph.capacity), and how the offline plan and diff print it: `PLAN_COSTING`, which
`python -m plan` hands the plan. Nothing here imports the plan.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from graph.model import Graph
from prices.catalog import Catalog, load
from prices.cost import CostReport, report
from prices.render import change_totals, cost_change, cost_change_json, cost_json, cost_section
from stacks.config import StackConfig

__all__ = [
    "PLAN_COSTING",
    "CostReport",
    "cost_change",
    "cost_change_json",
    "cost_json",
    "cost_section",
    "stack_cost",
]


@cache
def _catalog() -> Catalog:
    return load()


def stack_cost(config: StackConfig, graph: Graph) -> CostReport:
    """The cost of a stack at the catalog's list prices."""
    return report(config, graph, _catalog())


Side = tuple[StackConfig, Graph]


class PlanCosting:
    """The cost as the offline plan and diff show it (the plan's `Costing`)."""

    def section(self, side: Side) -> list[str]:
        return cost_section(stack_cost(*side))

    def document(self, side: Side) -> dict[str, Any]:
        return cost_json(stack_cost(*side))

    def change(self, before: Side | None, after: Side) -> list[str]:
        return cost_change(*self._reports(before, after))

    def change_document(self, before: Side | None, after: Side) -> dict[str, Any]:
        return cost_change_json(*self._reports(before, after))

    def change_totals(self, before: Side | None, after: Side) -> list[str]:
        return change_totals(*self._reports(before, after))

    @staticmethod
    def _reports(before: Side | None, after: Side) -> tuple[CostReport, CostReport]:
        """A new stack costs nothing before."""
        old = CostReport(lines=(), teams={}) if before is None else stack_cost(*before)
        return old, stack_cost(*after)


PLAN_COSTING = PlanCosting()
