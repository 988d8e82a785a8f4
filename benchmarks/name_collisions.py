"""The broad sweep for names that collide after derivation (tests/stacks/collisions.py).

    uv run python -m benchmarks.name_collisions [--seed NAME ...] [--runs N]

From every shipped stack, every docs example and the tests' seed, it generates the edits that
splice one name into another's derived names, and sets each name field to every other one;
validates each, builds those validation accepts (about 3 s each; `--runs` bounds them per
seed) and prints every duplicate URN or cloud name. Exits 1 if any accepted config collides.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from graph.engine import list_stacks, load_stack_config
from tests.stacks.collisions import accepted, candidates, judge
from tests.stacks.test_name_collisions import SEED
from tests.test_docs import examples

SLURM = {
    "clusterName": "hpc",
    "loginGroups": [{"name": "login", "count": 2}],
    "cpuNodesets": [
        {"name": "c2", "machineType": "c2-standard-60", "nodeCountDynamicMax": 20},
        {
            "name": "t4",
            "machineType": "n1-standard-8",
            "gpu": {"type": "nvidia-tesla-t4", "count": 1},
            "nodeCountDynamicMax": 4,
        },
    ],
    "partitions": [
        {"name": "compute", "nodesets": ["c2"], "default": True},
        {"name": "gpu", "nodesets": ["t4"]},
    ],
}
T4_POOL = {
    "name": "t4",
    "machineType": "n1-standard-8",
    "acceleratorType": "nvidia-tesla-t4",
    "acceleratorCount": 1,
    "maxNodes": 2,
}
EVERYTHING = {
    **SEED,
    "ai-infra:slurm": SLURM,
    "ai-infra:gpuPools": [T4_POOL],
    "ai-infra:tpuSlices": [{"name": "s5e", "accelerator": "v5litepod-8"}],
    "ai-infra:workloadIdentities": [
        {"name": "trainer", "namespace": "serving", "serviceAccount": "trainer"}
    ],
    "ai-infra:buckets": [{"name": "datasets"}],
}
"""The tests' seed with every other system beside it, for names joined across systems."""


def seeds() -> dict[str, dict[str, Any]]:
    """Every seed by name, as Python values by config key."""
    found: dict[str, dict[str, Any]] = {"tests": SEED, "everything": EVERYTHING}
    for stack in list_stacks():
        raw = load_stack_config(stack)
        found[stack] = {
            k: json.loads(v) if k.startswith("ai-infra:") and v[:1] in "[{" else v
            for k, v in raw.items()
        }
    found |= {f"example {name}": e.config for name, e in examples().items()}
    return found


def sweep(name: str, seed: dict[str, Any], runs: int) -> int:
    """The collisions found from one seed."""
    start = time.perf_counter()
    edits = candidates(seed)
    built = accepted(seed, edits)
    hits = 0
    for path, value, config in built[:runs]:
        outcome = judge(config)
        for line in [*outcome.collisions, *([outcome.error] if outcome.error else [])]:
            hits += 1
            print(f"  {'.'.join(map(str, path))} = {value!r}: {line}")
    print(
        f"{name}: {len(edits)} edits, {len(built)} accepted, {min(runs, len(built))} built, {hits} "
        f"collisions, {time.perf_counter() - start:.0f} s",
        flush=True,
    )
    return hits


def main() -> int:
    parser = argparse.ArgumentParser(description="Sweep for names that collide after derivation")
    parser.add_argument("--seed", action="append", help="a seed's name (default: all)")
    parser.add_argument("--runs", type=int, default=1000, help="most builds per seed")
    args = parser.parse_args()
    chosen = {k: v for k, v in seeds().items() if not args.seed or k in args.seed}
    hits = sum(sweep(name, seed, args.runs) for name, seed in chosen.items())
    return 1 if hits else 0


if __name__ == "__main__":
    raise SystemExit(main())
