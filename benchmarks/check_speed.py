"""How the config checks grow with the lists they read.

    uv run python -m benchmarks.check_speed [--repeat 3] [--case NAME ...]

For each list a stack may hold, builds valid stacks with 1/8, 1/4, 1/2 and all of the entries
its bound allows (`components.base.MAX_ENTRIES` and the bounds of each config model), parses
each once, then times every check the stack runs on it (`stacks.checks.problems`, which asks
each system and then holds their claims against each other, and the stack warnings): the
median of several runs (the machine is shared). Prints the time per entry and the ratio of
the largest stack's time per entry to the smallest's; near-linear checks keep it under 2 (the
command exits 1 otherwise).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from components.base import MAX_ENTRIES, MAX_OPENINGS, MAX_SOURCES
from stacks import checks, environment
from stacks.config import StackConfig
from stacks.loading import parse

TPU_REGION = {"gcp:region": "us-central2", "gcp:zone": "us-central2-b"}
GPU_REGION = {"gcp:region": "us-east5", "gcp:zone": "us-east5-a"}


def _stack(region: dict[str, str], **keys: Any) -> dict[str, Any]:
    return {
        "gcp:project": "bench-project",
        "ai-infra:protect": False,
        **region,
        **{f"ai-infra:{key}": value for key, value in keys.items()},
    }


def _volumes(count: int) -> dict[str, Any]:
    return {
        "buckets": [{"name": f"data-{i}"} for i in range(count)],
        "storage": {"volumes": [{"name": f"v{i}", "bucket": f"data-{i}"} for i in range(count)]},
    }


def tpu_vms(n: int) -> dict[str, Any]:
    """TPU VM entries of 8 VMs each, their prefixes nested (`a`, `a-x`, ...) but apart, each
    mounting a bucket at a path of its own under one directory."""
    entries = [
        {
            "name": f"v{i // 8}" + "-x" * (i % 8),
            "accelerator": "v4-8",
            "nodeCount": 8,
            "storage": [{"volume": "v0", "mountPath": f"/data/vm{i}"}],
        }
        for i in range(n)
    ]
    return _stack(TPU_REGION, tpuVms=entries, **_volumes(1))


def tpu_vm_mounts(n: int) -> dict[str, Any]:
    """One TPU VM entry's `storage` list: mounts side by side in a tree of directories."""
    mounts = [
        {"volume": f"v{i % 8}", "mountPath": f"/data/{i % 4}/{i // 4 % 4}/m{i}"} for i in range(n)
    ]
    entry = {"name": "vm", "accelerator": "v4-8", "storage": mounts}
    return _stack(TPU_REGION, tpuVms=[entry], **_volumes(8))


def gpu_clusters(n: int) -> dict[str, Any]:
    """GPU clusters with logins, whose names start alike (`g0`, `g0x`, ...) without nesting."""
    entries = [
        {"name": f"g{i // 8}" + "x" * (i % 8), "logins": [{"member": "group:ml@example.com"}]}
        for i in range(n)
    ]
    return _stack(GPU_REGION, gpuClusters=entries)


def gpu_pools(n: int) -> dict[str, Any]:
    """A3 High pools on their fast path, each with four GPU subnets of its own (/25s side by
    side), which every later pool's are held against."""
    entries = [
        {
            "name": f"p{i}",
            "machineType": "a3-highgpu-8g",
            "acceleratorType": "nvidia-h100-80gb",
            "acceleratorCount": 8,
            "maxNodes": 1,
            "provisioning": "spot",
            "diskType": "pd-balanced",
            "gpuSubnetCidr": f"10.{140 + i // 128}.{i % 128 * 2}.0/25",
        }
        for i in range(n)
    ]
    return _stack(GPU_REGION, gpuPools=entries, network={"podsCidr": "10.0.0.0/12"})


def storage_volumes(n: int) -> dict[str, Any]:
    """Bucket volumes, each owned by one of four teams, which the others read."""
    teams = [f"t{k}" for k in range(4)]
    config = _volumes(n)
    for i, volume in enumerate(config["storage"]["volumes"]):
        owner = teams[i % 4]
        volume["owner"] = owner
        volume["teams"] = {t: "write" if t == owner else "read" for t in teams}
    return _stack(TPU_REGION, teams=[{"name": t} for t in teams], **config)


def teams(n: int) -> dict[str, Any]:
    """Teams, each with a group, a role and a bucket of its own."""
    entries = [
        {
            "name": f"team{i}",
            "groups": [f"team{i}@example.com"],
            "roles": ["roles/logging.logWriter"],
            "buckets": {f"data-{i}": "write"},
        }
        for i in range(n)
    ]
    return _stack(
        TPU_REGION,
        teams=entries,
        buckets=[{"name": f"data-{i}"} for i in range(n)],
        cluster={"rbacSecurityGroup": "gke-security-groups@example.com"},
    )


def tpu_slices(n: int) -> dict[str, Any]:
    """Spot v4 slices."""
    entries = [{"name": f"s{i}", "accelerator": "v4-8", "provisioning": "spot"} for i in range(n)]
    return _stack(TPU_REGION, tpuSlices=entries, network={"podsCidr": "10.0.0.0/12"})


def network_allow(n: int) -> dict[str, Any]:
    """`network.allow` entries to the TPU VMs, each with `MAX_SOURCES` /32s of one block."""
    entries = [
        {
            "name": f"a{i}",
            "sources": [f"10.{i}.{k // 256}.{k % 256}/32" for k in range(MAX_SOURCES)],
            "ports": ["tcp:8080"],
            "to": "tpuVms",
        }
        for i in range(n)
    ]
    vm = {"name": "vm", "accelerator": "v4-8"}
    return _stack(TPU_REGION, network={"allow": entries}, tpuVms=[vm])


@dataclass(frozen=True)
class Case:
    make: Callable[[int], dict[str, Any]]
    bound: int
    """The most entries the list may hold."""


CASES = {
    "tpuVms": Case(tpu_vms, MAX_ENTRIES),
    "tpuVms[].storage": Case(tpu_vm_mounts, 64),
    "gpuClusters": Case(gpu_clusters, MAX_ENTRIES),
    # Kueue's 64 flavors of a resource group bound the distinct GPU pools (one flavor each).
    "gpuPools": Case(gpu_pools, 64),
    "storage.volumes": Case(storage_volumes, 64),
    "teams": Case(teams, MAX_ENTRIES),
    "tpuSlices": Case(tpu_slices, MAX_ENTRIES),
    "network.allow": Case(network_allow, MAX_OPENINGS),
}


def _check(config: StackConfig) -> None:
    found = checks.problems(config)
    assert not found, found[:3]
    environment.warnings(config)


def _median(config: StackConfig, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        _check(config)
        times.append(time.process_time() - started)
    return statistics.median(times)


def run(name: str, case: Case, repeat: int) -> float:
    per_entry = []
    for n in (case.bound // 8, case.bound // 4, case.bound // 2, case.bound):
        config = parse(case.make(n), "bench")
        took = _median(config, repeat)
        per_entry.append(took / n)
        print(f"{name:18} {n:>5} entries: {took:7.3f} s, {took / n * 1000:7.3f} ms per entry")
    return per_entry[-1] / per_entry[0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    args = parser.parse_args()
    ratios = {name: run(name, CASES[name], args.repeat) for name in args.case or CASES}
    for name, ratio in ratios.items():
        print(f"{name:18} time per entry, largest / smallest: {ratio:.2f} (target < 2)")
    return 0 if all(ratio < 2 for ratio in ratios.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
