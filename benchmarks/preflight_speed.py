"""How fast preflight says there are no credentials.

    uv run python -m benchmarks.preflight_speed [--repeat 5]

Runs `python -m preflight dev` in a fresh interpreter where Application Default Credentials
cannot be found (no GOOGLE_APPLICATION_CREDENTIALS, an empty gcloud config directory, no GCE
check), the median of several runs: target under one second, against the plan build and the
client imports (tens of seconds of CPU) it answered after before. Exits non-zero when the
target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from graph.engine import REPO_ROOT

TARGET_SECONDS = 1.0


def _once(env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "preflight", "dev"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 2 or "application-default login" not in done.stderr:
        raise SystemExit(f"preflight did not stop for credentials:\n{done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as gcloud:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "GCE_METADATA_IP")
        }
        env |= {"CLOUDSDK_CONFIG": gcloud, "NO_GCE_CHECK": "true"}
        median = statistics.median(_once(env) for _ in range(args.repeat))
    verdict = "ok" if median < TARGET_SECONDS else "MISSED"
    print(f"preflight without credentials: {median:.2f} s (target < {TARGET_SECONDS} s) {verdict}")
    return 0 if median < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
