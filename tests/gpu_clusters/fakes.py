"""A fake of what the GPU cluster providers call on Compute Engine, built on
`google-cloud-compute`'s own types: the group is an `InstanceGroupManager`, its VMs
`ManagedInstance`s, its resize requests `InstanceGroupManagerResizeRequest`s, guest attributes
`GuestAttributes`, errors api-core's exception classes. Every call must carry a deadline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.cloud import compute_v1

from tests.components.api_fakes import Clock

__all__ = ["Clock", "FakeCompute", "Operation"]


class Operation:
    """A finished operation; `error` is raised by `result`, as ExtendedOperation raises the
    operation's error."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.timeouts: list[float | None] = []

    def result(self, timeout: float | None = None) -> Any:
        self.timeouts.append(timeout)
        if self.error is not None:
            raise self.error
        return None


class FakeCompute:
    """One zonal group: its target size, resize requests, VMs and their readiness signals.
    `signals` maps a VM to the values its guest attribute takes on successive reads (the last
    one for ever); a VM absent from it has none yet. `errors` maps a method to exceptions
    raised, one per call, before the call does anything."""

    def __init__(
        self,
        *,
        target: int = 0,
        vms: Sequence[str] = (),
        signals: dict[str, list[str]] | None = None,
        errors: dict[str, list[Exception]] | None = None,
        operation_errors: dict[str, Exception] | None = None,
        group_exists: bool = True,
    ) -> None:
        self.target = target
        self.vms = list(vms)
        self.signals = signals or {}
        self.errors = errors or {}
        self.operation_errors = operation_errors or {}
        self.group_exists = group_exists
        self.requests: list[compute_v1.InstanceGroupManagerResizeRequest] = []
        self.calls: list[tuple[str, float]] = []
        self._clock = 0

    def _called(self, method: str, timeout: float) -> None:
        assert isinstance(timeout, int | float) and timeout > 0, f"{method} without a deadline"
        self.calls.append((method, timeout))
        if self.errors.get(method):
            raise self.errors[method].pop(0)
        if not self.group_exists:
            raise api_exceptions.NotFound("The resource 'instanceGroupManagers/g' was not found")

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]

    # -- the group --------------------------------------------------------------------------

    def get_group(self, *, project: str, zone: str, group: str, timeout: float):
        self._called("get_group", timeout)
        return compute_v1.InstanceGroupManager(name=group, target_size=self.target)

    def list_instances(self, *, project: str, zone: str, group: str, timeout: float):
        self._called("list_instances", timeout)
        return [
            compute_v1.ManagedInstance(
                instance=f"https://www.googleapis.com/compute/v1/projects/{project}/zones/"
                f"{zone}/instances/{vm}",
                instance_status="RUNNING",
                current_action="NONE",
            )
            for vm in self.vms
        ]

    def resize(self, *, project: str, zone: str, group: str, size: int, timeout: float):
        self._called("resize", timeout)
        self.target = size
        return Operation(self.operation_errors.get("resize"))

    # -- resize requests --------------------------------------------------------------------

    def list_requests(self, *, project: str, zone: str, group: str, timeout: float):
        self._called("list_requests", timeout)
        return [compute_v1.InstanceGroupManagerResizeRequest(r) for r in self.requests]

    def insert_request(self, *, project: str, zone: str, group: str, request, timeout: float):
        self._called("insert_request", timeout)
        if any(r.name == request.name for r in self.requests):
            raise api_exceptions.Conflict(f"resize request {request.name} already exists")
        error = self.operation_errors.get("insert_request")
        if error is None:
            self._clock += 1
            stored = compute_v1.InstanceGroupManagerResizeRequest(request)
            stored.state = "ACCEPTED"
            stored.creation_timestamp = f"2026-11-27T00:00:{self._clock:02d}Z"
            self.requests.append(stored)
        return Operation(error)

    def cancel_request(self, *, project: str, zone: str, group: str, name: str, timeout: float):
        self._called("cancel_request", timeout)
        for r in self.requests:
            if r.name == name:
                r.state = "CANCELLED"
                return Operation(self.operation_errors.get("cancel_request"))
        raise api_exceptions.NotFound(f"resize request {name} not found")

    # -- what Compute Engine does on its own ---------------------------------------------------

    def serve(self) -> None:
        """Capacity is found: every accepted request creates its VMs."""
        for r in self.requests:
            if r.state == "ACCEPTED":
                r.state = "SUCCEEDED"
                self.target += r.resize_by

    def end_run(self) -> None:
        """The run duration is over: the group deletes the VMs its requests created."""
        self.target = 0

    def open_requests(self) -> list[tuple[str, int, int]]:
        return [
            (r.name, r.resize_by, int(r.requested_run_duration.seconds))
            for r in self.requests
            if r.state == "ACCEPTED"
        ]

    # -- guest attributes -------------------------------------------------------------------

    def guest_attribute(self, *, project: str, zone: str, instance: str, key: str, timeout):
        self._called("guest_attribute", timeout)
        values = self.signals.get(instance)
        if not values:
            raise api_exceptions.NotFound(f"guest attribute {key} not found on {instance}")
        value = values.pop(0) if len(values) > 1 else values[0]
        return compute_v1.GuestAttributes(variable_key=key, variable_value=value)
