"""Every cross-check of a stack config whose shapes are valid. Each system owns the checks of
its own keys and declares what it claims; this module asks each system of the registry in turn
(each sees the problems found before it) and then holds the claims against each other
(`stacks/claims.py`).
"""

from __future__ import annotations

from dataclasses import replace

from components.base import Problem
from stacks import claims, registry
from stacks.config import StackConfig


def problems(config: StackConfig) -> list[Problem]:
    """Every problem of a config whose shapes are valid, at its stack path."""
    view = registry.view(config)
    found: list[Problem] = []
    for system in registry.SYSTEMS:
        found += system.problems(replace(view, found=tuple(found)))
    return found + claims.problems(view)
