"""What a stack costs at list prices: the price catalog (`catalog.csv`, with the source and date
of every row), `python -m prices refresh` that rewrites it from the Cloud Billing Catalog API,
the cost of a stack from its config and the graph the program registers, and how the offline
plan and diff print it. The plan uses `stack_cost` and the `render` functions only.
"""

from __future__ import annotations

from functools import cache

from graph.model import Graph
from prices.catalog import Catalog, load
from prices.cost import CostReport, report
from prices.render import cost_change, cost_change_json, cost_json, cost_section
from stacks.config import StackConfig

__all__ = [
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
