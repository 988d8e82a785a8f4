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
    """One zonal group: its target size, managed instances, resize requests, and the VMs'
    readiness signals. `signals` maps a VM to the values its guest attribute takes on
    successive reads (the last one for ever); a VM absent from it has none yet. `errors` maps a
    method to exceptions raised, one per call, before the call does anything.

    Resize requests go through the states Compute Engine documents ("About resize requests in
    a MIG"), each step one method: `accept` (CREATING to ACCEPTED), `provision` (capacity is
    found: the group's target grows by the request's count and its VMs appear, being created,
    while the request stays ACCEPTED), `settle` (every VM exists: SUCCEEDED), `fail` (an
    ACCEPTED request that was not served: FAILED), and `end_run` (the run is over: the
    request's VMs are deleted and the target shrinks). `cancel_request` takes an ACCEPTED
    request that is not being served, and refuses any other."""

    def __init__(
        self,
        *,
        target: int = 0,
        vms: Sequence[str] = (),
        signals: dict[str, list[str]] | None = None,
        errors: dict[str, list[Exception]] | None = None,
        operation_errors: dict[str, Exception] | None = None,
        group_exists: bool = True,
        accept_at_once: bool = True,
    ) -> None:
        self.target = max(target, len(vms))
        self.instances: dict[str, str] = {vm: "NONE" for vm in vms}
        """VM name -> its current action (NONE: running, CREATING: being created)."""
        self.owner: dict[str, str] = {}
        """VM name -> the request that created it."""
        self.signals = signals or {}
        self.errors = errors or {}
        self.operation_errors = operation_errors or {}
        self.group_exists = group_exists
        self.accept_at_once = accept_at_once
        self.requests: list[compute_v1.InstanceGroupManagerResizeRequest] = []
        self.serving: set[str] = set()
        """Requests whose VMs are being created (ACCEPTED, provisioning)."""
        self.refused: list[str] = []
        self.calls: list[tuple[str, float]] = []
        self._clock = 0
        self._vm_number = 0

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

    @property
    def vms(self) -> list[str]:
        return list(self.instances)

    def get_group(self, *, project: str, zone: str, group: str, timeout: float):
        self._called("get_group", timeout)
        return compute_v1.InstanceGroupManager(name=group, target_size=self.target)

    def list_instances(self, *, project: str, zone: str, group: str, timeout: float):
        self._called("list_instances", timeout)
        return [
            compute_v1.ManagedInstance(
                instance=f"https://www.googleapis.com/compute/v1/projects/{project}/zones/"
                f"{zone}/instances/{vm}",
                instance_status="RUNNING" if action == "NONE" else "PROVISIONING",
                current_action=action,
            )
            for vm, action in self.instances.items()
        ]

    def resize(self, *, project: str, zone: str, group: str, size: int, timeout: float):
        self._called("resize", timeout)
        error = self.operation_errors.get("resize")
        if error is None:
            # The group deletes the newest VMs beyond its new size.
            for vm in list(self.instances)[size:]:
                del self.instances[vm]
                self.owner.pop(vm, None)
            self.target = size
        return Operation(error)

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
            stored.state = "ACCEPTED" if self.accept_at_once else "CREATING"
            stored.creation_timestamp = (
                f"2026-11-27T00:{self._clock // 60:02d}:{self._clock % 60:02d}Z"
            )
            self.requests.append(stored)
        return Operation(error)

    def cancel_request(self, *, project: str, zone: str, group: str, name: str, timeout: float):
        self._called("cancel_request", timeout)
        for r in self.requests:
            if r.name == name:
                if r.state != "ACCEPTED" or name in self.serving:
                    self.refused.append(name)
                    raise api_exceptions.FailedPrecondition(
                        f"resize request {name} is {r.state}"
                        + (" and its VMs are being created" if name in self.serving else "")
                        + ": it cannot be cancelled"
                    )
                r.state = "CANCELLED"
                return Operation(self.operation_errors.get("cancel_request"))
        raise api_exceptions.NotFound(f"resize request {name} not found")

    # -- what Compute Engine does on its own ---------------------------------------------------

    def request(self, name: str) -> compute_v1.InstanceGroupManagerResizeRequest:
        (found,) = [r for r in self.requests if r.name == name]
        return found

    def accept(self, name: str) -> None:
        r = self.request(name)
        assert r.state == "CREATING"
        r.state = "ACCEPTED"

    def provision(self, name: str) -> None:
        """Capacity is found: the request's VMs are being created, all at once."""
        r = self.request(name)
        assert r.state == "ACCEPTED" and name not in self.serving
        self.serving.add(name)
        self.target += r.resize_by
        for _ in range(r.resize_by):
            self._vm_number += 1
            vm = f"vm-{self._vm_number}"
            self.instances[vm] = "CREATING"
            self.owner[vm] = name

    def settle(self, name: str) -> None:
        """Every VM of a request being served exists: the request SUCCEEDED."""
        assert name in self.serving
        self.serving.discard(name)
        self.request(name).state = "SUCCEEDED"
        for vm, owner in self.owner.items():
            if owner == name and vm in self.instances:
                self.instances[vm] = "NONE"

    def fail(self, name: str) -> None:
        r = self.request(name)
        assert r.state in ("CREATING", "ACCEPTED") and name not in self.serving
        r.state = "FAILED"

    def end_run(self, name: str | None = None) -> None:
        """The run duration is over: the group deletes the VMs the request (or, with no name,
        every request) created."""
        for vm in [v for v, owner in self.owner.items() if name in (None, owner)]:
            if vm in self.instances:
                del self.instances[vm]
                self.target -= 1
            del self.owner[vm]
        if name is None:
            for vm in list(self.instances):
                del self.instances[vm]
            self.target = 0

    def serve(self) -> None:
        """Capacity is found for every open request, and all their VMs come up."""
        for r in list(self.requests):
            if r.state == "CREATING":
                self.accept(r.name)
            if r.state == "ACCEPTED":
                if r.name not in self.serving:
                    self.provision(r.name)
                self.settle(r.name)

    def open_requests(self) -> list[tuple[str, int, int]]:
        return [
            (r.name, r.resize_by, int(r.requested_run_duration.seconds))
            for r in self.requests
            if r.state in ("CREATING", "ACCEPTED")
        ]

    # -- guest attributes -------------------------------------------------------------------

    def guest_attribute(self, *, project: str, zone: str, instance: str, key: str, timeout):
        self._called("guest_attribute", timeout)
        values = self.signals.get(instance)
        if not values:
            raise api_exceptions.NotFound(f"guest attribute {key} not found on {instance}")
        value = values.pop(0) if len(values) > 1 else values[0]
        return compute_v1.GuestAttributes(variable_key=key, variable_value=value)
