"""What every fake of a Google API client shares: a clock the provider under test sleeps on."""

from __future__ import annotations


class Clock:
    """A clock that only moves when the provider sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
