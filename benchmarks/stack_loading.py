"""How the stack-file reader grows with its input.

    uv run python -m benchmarks.stack_loading [--repeat 3]

Reads stack files of growing size (one mapping of many entries, up to the largest file the
reader accepts, `stacks.inputs.FILE_LIMIT`). Prints the median time per size and the ratio of
the largest file's time per entry to the smallest's; a near-linear reader keeps it under 2 (it
exits 1 otherwise).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable

from stacks.inputs import FILE_LIMIT
from stacks.loading import read_stack_text
from stacks.messages import ConfigError


def _labels_file(entries: int) -> str:
    lines = "".join(f"    key{i}: value{i}\n" for i in range(entries))
    return f"config:\n  gcp:project: bench-project\n  ai-infra:labels:\n{lines}"


def _read(text: str) -> None:
    # Past the config limit the file is refused, after it was read whole.
    with contextlib.suppress(ConfigError):
        read_stack_text(text)


def _median(run: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    per_entry = []
    entries = 1000
    while len(_labels_file(entries)) <= FILE_LIMIT:
        text = _labels_file(entries)
        took = _median(lambda text=text: _read(text), args.repeat)
        per_entry.append(took / entries)
        print(f"stack file {len(text):>9,} chars, {entries:>6,} entries: {took:.3f} s")
        entries *= 2
    ratio = per_entry[-1] / per_entry[0]
    print(f"time per entry, largest / smallest: {ratio:.2f} (target < 2)")
    return 0 if ratio < 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
