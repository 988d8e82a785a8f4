"""How the reachability section grows with the source ranges the firewall rules name.

    uv run python -m benchmarks.reachability_speed [--repeat 3]

Builds a recorded graph by hand (a cluster, its subnet, a node pool, three team namespaces
with a NetworkPolicy each, and ingress rules naming N distinct /32 source ranges, half of
them again in a second rule), then times `graph.reachability.lines` for N = 500 ... 4,000,
the median CPU time of several runs each (the machine is shared). Every range is a principal
of its own, so the section has N sources; the target is near-linear growth: doubling N at
most 2.5x the time, and 2,000 ranges within 5 s (issue 41 measured 105 s). Exits non-zero
when a target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from graph import reachability, types

SIZES = (500, 1000, 2000, 4000)


@dataclass
class Record:
    type: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)


class Recorded:
    def __init__(self, records: Sequence[Record]) -> None:
        self.records = list(records)

    def of_type(self, type_: str) -> list[Record]:
        return [r for r in self.records if r.type == type_]


def graph(ranges: int) -> Recorded:
    sources = [f"100.{i // 65536 % 64 + 64}.{i // 256 % 256}.{i % 256}/32" for i in range(ranges)]
    vpc = "bench-vpc"
    records = [
        Record(
            types.SUBNETWORK,
            {
                "name": "bench-subnet",
                "network": vpc,
                "ipCidrRange": "10.0.0.0/20",
                "secondaryIpRanges": [{"rangeName": "pods", "ipCidrRange": "10.64.0.0/14"}],
            },
        ),
        Record(
            types.CLUSTER,
            {
                "network": vpc,
                "datapathProvider": "ADVANCED_DATAPATH",
                "privateClusterConfig": {"masterIpv4CidrBlock": "172.16.0.0/28"},
            },
        ),
        Record(types.NODE_POOL, {"name": "cpu", "nodeConfig": {"tags": ["bench-node"]}}),
        Record(
            types.FIREWALL,
            {
                "name": "many",
                "network": vpc,
                "sourceRanges": sources,
                "targetTags": ["bench-node"],
                "allows": [{"protocol": "tcp", "ports": ["22", "8000-8100"]}],
            },
        ),
        Record(
            types.FIREWALL,
            {
                "name": "half",
                "network": vpc,
                "priority": 900,
                "sourceRanges": sources[::2],
                "denies": [{"protocol": "tcp", "ports": ["8050"]}],
            },
        ),
    ]
    for team in ("a", "b", "c"):
        labels = {reachability.TEAM_LABEL: team}
        records.append(Record(types.NAMESPACE, {"metadata": {"name": team, "labels": labels}}))
        spec = {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"ipBlock": {"cidr": "100.64.0.0/10"}}]}],
        }
        metadata = {"name": "p", "namespace": team}
        records.append(Record(types.NETWORK_POLICY, {"metadata": metadata, "spec": spec}))
    return Recorded(records)


def timed(ranges: int, repeat: int) -> tuple[float, int]:
    built = graph(ranges)
    times, shown = [], 0
    for _ in range(repeat):
        start = time.process_time()
        shown = len(reachability.lines(built))  # type: ignore[arg-type]
        times.append(time.process_time() - start)
    return statistics.median(times), shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="How the reachability section grows with source ranges."
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    results = {n: timed(n, args.repeat) for n in SIZES}
    missed = []
    print("| Source ranges | Lines | Time | x previous |")
    print("| --- | --- | --- | --- |")
    previous = None
    for n, (seconds, shown) in results.items():
        ratio = f"{seconds / previous:.2f}" if previous else ""
        print(f"| {n:,} | {shown:,} | {seconds:.2f} s | {ratio} |")
        if previous and seconds / previous > 2.5:
            missed.append(f"{n:,} ranges took {seconds / previous:.2f}x the time of half as many")
        previous = seconds
    if results[2000][0] > 5:
        missed.append(f"2,000 ranges took {results[2000][0]:.1f} s (target 5 s)")
    for line in missed:
        print(f"missed: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
