"""How fast the commands answer before they build anything.

    uv run python -m benchmarks.front_door [--repeat 5]

Times, each in a fresh interpreter, the median of several runs: `--help` of the plan and the
workload command, and a workload submit whose `--image` is refused (a flag read before the
stack). Targets: `--help` under one second, the refused flag under three (it imports the
request's checks, which use pydantic). Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from graph.files import REPO_ROOT

SUBMIT = ("prod", "submit", "--team", "pretrain", "--slice", "v5p-train", "--name", "llm")
CASES: dict[str, tuple[tuple[str, ...], int, float]] = {
    "python -m plan --help": (("-m", "plan", "--help"), 0, 1.0),
    "python -m workload --help": (("-m", "workload", "--help"), 0, 1.0),
    "python -m workload ... --image 'bad image'": (
        ("-m", "workload", *SUBMIT, "--image", "bad image"),
        2,
        3.0,
    ),
}
"""What is timed -> (arguments, exit code expected, target in seconds)."""


def _once(argv: tuple[str, ...], code: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *argv], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != code:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    missed = 0
    for name, (argv, code, target) in CASES.items():
        median = statistics.median(_once(argv, code) for _ in range(args.repeat))
        verdict = "ok" if median < target else "MISSED"
        missed += median >= target
        print(f"{name}: {median:.2f} s (target < {target} s) {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
