"""How fast the offline plan is, and how it grows with slices and teams.

    uv run python -m benchmarks.plan_speed [--repeat 5]

Measures, each as the median of several runs:
1. the bare import of the SDK modules the program uses, in a fresh interpreter;
2. the dev plan (`python -m plan dev`), in a fresh interpreter: target within 1.5x of (1),
   and again with PYTHONDONTWRITEBYTECODE=1 (the plan caches the SDKs' bytecode itself, so
   it must cost the same);
3. in one interpreter, the program for a small and a generated large stack (64 slices, 100
   teams), and a trivial program registering the same numbers of resources through the same
   mock engine. The program's cost per extra resource must stay within 1.3x of the trivial
   program's, i.e. plan time grows linearly and the program adds no work of its own per
   resource;
4. the share of the large plan's profiled time spent in this repository's own code, which
   separates the program's own work from the SDK's cost of serialising richer inputs.
Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from graph.engine import REPO_ROOT

SDK_IMPORTS = """
import pulumi, pydantic, yaml
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
# The SDKs load submodules lazily: touch every class the program uses so they really load.
used = (gcp.compute.Network, gcp.compute.Firewall, gcp.compute.ResourcePolicy,
        gcp.container.Cluster, gcp.container.NodePool, gcp.projects.Service,
        gcp.serviceaccount.Account, gcp.storage.Bucket, k8s.Provider,
        k8s.core.v1.Namespace, k8s.rbac.v1.RoleBinding, k8s.helm.v3.Release,
        k8s.yaml.v2.ConfigGroup, k8s.apiextensions.CustomResource, k8s.meta.v1.ObjectMetaArgs)
"""
SHAPES = {
    "v5p-32": "us-central1-a",
    "v5p-128": "us-central1-a",
    "v6e-16": "us-central1-b",
    "v6e-64": "us-central1-b",
    "v5litepod-16": "us-central1-a",
    "v5p-64": "us-central1-a",
    "tpu7x-64": "us-central1-c",
    "v6e-8": "us-central1-b",
}
"""Shapes the large stack cycles through, each in a us-central1 zone that offers it."""


def _provisioning(i: int, accelerator: str) -> dict[str, Any]:
    """On-demand, Spot and flex-start in turn. GKE lists no us-central1 zone for flex-start
    TPUs and none at all for tpu7x: flex-start takes the zone escape hatch, tpu7x Spot."""
    kind = ("on-demand", "spot", "flex-start")[i % 3]
    if kind != "flex-start":
        return {"provisioning": kind}
    if accelerator.startswith("tpu7x"):
        return {"provisioning": "spot"}
    return {"provisioning": "flex-start", "allowUnlistedZone": True}


def generated_config(slices: int, teams: int) -> dict[str, Any]:
    """A valid stack with `slices` slice entries and `teams` teams."""
    return {
        "gcp:project": "bench-project",
        "gcp:region": "us-central1",
        "gcp:zone": "us-central1-a",
        "ai-infra:protect": False,
        "ai-infra:network": {
            "podsCidr": "10.0.0.0/10",
            "servicesCidr": "10.128.0.0/16",
            "subnetCidr": "10.130.0.0/20",
        },
        "ai-infra:cluster": {
            "maxPodsPerNode": 32,
            "rbacSecurityGroup": "gke-security-groups@example.com",
        },
        "ai-infra:tpuSlices": [
            {
                "name": f"s{i:03d}",
                "accelerator": list(SHAPES)[i % len(SHAPES)],
                "zone": list(SHAPES.values())[i % len(SHAPES)],
                **_provisioning(i, list(SHAPES)[i % len(SHAPES)]),
            }
            for i in range(slices)
        ],
        "ai-infra:buckets": [{"name": "data"}],
        "ai-infra:teams": [
            {
                "name": f"team{i:03d}",
                "groups": [f"team{i:03d}@example.com"],
                "buckets": {"data": "read"},
            }
            for i in range(teams)
        ],
    }


def _subprocess_seconds(code: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(code, cwd=REPO_ROOT, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _seconds(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), count


def _program(config: dict[str, Any]) -> Callable[[], int]:
    from graph.engine import run_program

    return lambda: len(run_program(config, stack="bench"))


def _trivial(count: int) -> Callable[[], int]:
    import pulumi_gcp as gcp

    from graph.engine import run_program

    def program() -> None:
        for i in range(count):
            gcp.projects.Service(f"r{i}", project="bench-project", service="x.googleapis.com")

    return lambda: len(run_program({"gcp:project": "bench-project"}, program=program))


def _own_code_share(config: dict[str, Any]) -> float:
    """Fraction of profiled time spent in this repository's own code (not the SDKs)."""
    import cProfile
    import pstats

    run = _program(config)
    profile = cProfile.Profile()
    profile.runcall(run)
    stats = pstats.Stats(profile)
    root = str(REPO_ROOT)
    total = own = 0.0
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        if filename.startswith(root) and "/.venv/" not in filename:
            own += tottime
    return own / total


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    python = sys.executable

    imports = _subprocess_seconds([python, "-c", SDK_IMPORTS], args.repeat)
    dev_plan = _subprocess_seconds([python, "-m", "plan", "dev"], args.repeat)
    no_bytecode_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    dev_plan_no_write = _subprocess_seconds(
        [python, "-m", "plan", "dev"], args.repeat, env=no_bytecode_env
    )

    _program(generated_config(1, 1))()  # warm caches shared by every run
    small_t, small_n = _seconds(_program(generated_config(8, 10)), args.repeat)
    large_t, large_n = _seconds(_program(generated_config(64, 100)), args.repeat)
    trivial_small_t, _ = _seconds(_trivial(small_n), args.repeat)
    trivial_large_t, _ = _seconds(_trivial(large_n), args.repeat)
    per_resource = (large_t - small_t) / (large_n - small_n)
    engine_per_resource = (trivial_large_t - trivial_small_t) / (large_n - small_n)

    own_share = _own_code_share(generated_config(64, 100))
    import_ratio = dev_plan / imports
    resource_ratio = per_resource / engine_per_resource
    rows = [
        ("bare SDK import (fresh interpreter)", f"{imports:.2f} s"),
        ("dev plan, `python -m plan dev` (fresh interpreter)", f"{dev_plan:.2f} s"),
        ("dev plan / SDK import (target <= 1.5)", f"{import_ratio:.2f}"),
        ("dev plan with PYTHONDONTWRITEBYTECODE=1", f"{dev_plan_no_write:.2f} s"),
        (f"program, 8 slices + 10 teams ({small_n} resources)", f"{small_t:.2f} s"),
        (f"program, 64 slices + 100 teams ({large_n} resources)", f"{large_t:.2f} s"),
        ("program, per extra resource", f"{per_resource * 1000:.2f} ms"),
        ("mock engine alone, per extra resource", f"{engine_per_resource * 1000:.2f} ms"),
        ("program / mock engine per resource (target <= 1.3)", f"{resource_ratio:.2f}"),
        ("share of the large plan spent in this repository's code", f"{own_share:.1%}"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0 if import_ratio <= 1.5 and resource_ratio <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
