"""`pulumi up` waiting for the startup scripts of VMs it created: the part of a dynamic provider
that GPU clusters and TPU VMs share. Each VM (or TPU worker) reports through its readiness
signal (`components.startup`): `pulumi up` returns once every one says `done`, fails at once
naming the VM and the step when one says `failed: <step>`, and fails when the bound runs out
naming each VM that had not finished and what it last said.

A system subclasses `StartupWaitBase` with how to read the signals (`signals`) and how a user
looks at a VM's log (`how_to_look`); this module's path is pickled into stacks' state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.dynamic

from components.api_calls import RetryingCalls
from components.startup import parse_signal

POLL_SECONDS = 30.0


class StartupFailed(Exception):
    """A VM's startup script reported a failed step, or did not report in time."""


class StartupWaitBase(RetryingCalls, pulumi.dynamic.ResourceProvider):
    """Waits until every expected VM reports `done`. `timeoutSeconds` bounds the wait;
    `WAIT_AGAIN_ON` are the inputs whose change waits again (new VMs boot a new script)."""

    WAIT_AGAIN_ON: tuple[str, ...] = ()
    _poll_seconds: float = POLL_SECONDS
    what = "VMs"
    timeout_key = "startupTimeoutMinutes"

    def signals(self, props: Mapping[str, Any]) -> tuple[dict[str, str | None], int]:
        """(each VM's raw signal, None where it has set none yet; how many VMs there should
        be)."""
        raise NotImplementedError

    def how_to_look(self, props: Mapping[str, Any], vm: str | None) -> str:
        raise NotImplementedError

    def resource_id(self, props: Mapping[str, Any]) -> str:
        raise NotImplementedError

    def wait(self, props: Mapping[str, Any]) -> list[str]:
        """The VMs, once each reports `done`."""
        timeout = float(props["timeoutSeconds"])
        deadline = self._clock() + timeout
        while True:
            raw, expected = self.signals(props)
            states = {vm: parse_signal(value) for vm, value in sorted(raw.items())}
            for vm, (state, step) in states.items():
                if state == "failed":
                    raise StartupFailed(
                        f"{vm} of {self.what}: its startup script's step '{step}' failed. "
                        f"{self.how_to_look(props, vm)}"
                    )
            if len(states) >= expected and all(s == "done" for s, _ in states.values()):
                return list(states)
            if self._clock() >= deadline:
                waiting = [
                    f"{vm} ({'no signal yet' if s == 'missing' else s})"
                    for vm, (s, _) in states.items()
                    if s != "done"
                ]
                if expected > len(states):
                    waiting.append(f"{expected - len(states)} VM(s) not there yet")
                look = self.how_to_look(props, next(iter(states), None))
                raise StartupFailed(
                    f"the startup scripts of {self.what} did not finish within "
                    f"{timeout / 60:.0f} minutes: {', '.join(waiting)}. {look} Raise "
                    f"{self.timeout_key} if the steps are slow but sound."
                )
            self._sleep(min(self._poll_seconds, max(deadline - self._clock(), 0.0)))

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(
            self.resource_id(props), {**props, "vms": self.wait(props)}
        )

    def update(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult({**news, "vms": self.wait(news)})

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        # Waiting creates nothing, so nothing is replaced.
        keys = ("timeoutSeconds", *self.WAIT_AGAIN_ON)
        return pulumi.dynamic.DiffResult(changes=any(olds.get(k) != news.get(k) for k in keys))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, props)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        return None
