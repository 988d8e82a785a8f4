"""Every shipped stack and every docs example, each built once under the mock engine with its
validated config: what the graph readers are held to."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from graph.engine import engine_config, list_stacks, load_stack_config
from graph.model import Graph
from stacks.config import StackConfig
from stacks.loading import parse
from tests.conftest import build_graph
from tests.test_docs import examples


@dataclass(frozen=True)
class Built:
    config: StackConfig
    graph: Graph


@pytest.fixture(scope="session")
def every_stack() -> dict[str, Built]:
    """`Pulumi.<stack>.yaml` by stack name and docs examples by `example NAME`."""
    raws = {stack: load_stack_config(stack) for stack in list_stacks()}
    raws |= {f"example {name}": engine_config(e.config) for name, e in examples().items()}
    return {
        name: Built(parse(raw, "test"), build_graph(raw, stack="test"))
        for name, raw in raws.items()
    }
