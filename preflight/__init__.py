"""Preflight: before `pulumi up`, check what the offline plan cannot know against the live
project, read-only, with Application Default Credentials: the project, billing and APIs, the
deploying identity's permissions, org policies, quota, reservations, what the zones offer, GKE
versions and bucket names. Each check derives what it asks from the built plan
(`preflight.needs`) and judges the answers in a pure function; `preflight.suite` runs them.

The package itself imports nothing heavy, so that `python -m preflight` without credentials
answers before any client library or the program is imported (`preflight.credentials`);
`CHECKS` and `run` load `preflight.suite` when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from preflight.suite import CHECKS, run

__all__ = ["CHECKS", "run"]


def __getattr__(name: str) -> Any:
    # PEP 562: the suite (and every Google client it imports) loads on first use.
    if name in __all__:
        from preflight import suite

        return getattr(suite, name)
    raise AttributeError(f"module 'preflight' has no attribute {name!r}")
