"""Pulumi dynamic providers for what a GPU cluster needs and pulumi-gcp cannot express, on
Google's `google-cloud-compute` client:

- `FlexCapacity` keeps a flex-start group at its size. pulumi-gcp's `ResizeRequest` is one
  immutable request: it adds `resizeBy` VMs to whatever runs, and nothing asks again once its
  VMs' run ends. Here every `pulumi up` reads the group's target size and its open requests,
  and asks with a new request for what is missing (or cancels what would overshoot), so
  `instanceCount` means the group's size.
- `StartupWait` makes `pulumi up` wait for the VMs' startup scripts: each VM's readiness
  signal (`components.startup`, a guest attribute) must say `done` within a bounded time, and
  a step that failed fails `pulumi up` with the VM's and the step's name.

Every call has a deadline and transient errors are retried (`components.api_calls`). This
module's path is in every stack's state (Pulumi pickles the providers by reference): keep it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pulumi
import pulumi.dynamic
from google.api_core import exceptions as api_exceptions
from google.cloud import compute_v1

from components.api_calls import RetryingCalls, describe_error
from components.startup import READY_PATH
from components.startup_wait import POLL_SECONDS, StartupWaitBase

OPEN_REQUEST_STATES = frozenset({"CREATING", "ACCEPTED"})
"""A resize request in these states may still create VMs (compute_v1
InstanceGroupManagerResizeRequest.State); the others are final."""
OPERATION_SECONDS = 600.0
"""How long an insert, cancel or resize operation is waited for."""
REQUEST_NAME = re.compile(r"(?P<prefix>.+)-(?P<n>[0-9]+)")


class Operation(Protocol):
    def result(self, timeout: float | None = None) -> Any: ...


class Compute(Protocol):
    """What the providers call on `compute_v1`'s clients; tests pass a fake on its types."""

    def get_group(
        self, *, project: str, zone: str, group: str, timeout: float
    ) -> compute_v1.InstanceGroupManager: ...

    def list_instances(
        self, *, project: str, zone: str, group: str, timeout: float
    ) -> Iterable[compute_v1.ManagedInstance]: ...

    def resize(
        self, *, project: str, zone: str, group: str, size: int, timeout: float
    ) -> Operation: ...

    def list_requests(
        self, *, project: str, zone: str, group: str, timeout: float
    ) -> Iterable[compute_v1.InstanceGroupManagerResizeRequest]: ...

    def insert_request(
        self,
        *,
        project: str,
        zone: str,
        group: str,
        request: compute_v1.InstanceGroupManagerResizeRequest,
        timeout: float,
    ) -> Operation: ...

    def cancel_request(
        self, *, project: str, zone: str, group: str, name: str, timeout: float
    ) -> Operation: ...

    def guest_attribute(
        self, *, project: str, zone: str, instance: str, key: str, timeout: float
    ) -> compute_v1.GuestAttributes: ...


class GoogleCompute:
    """`Compute` on the real clients, made when first used (a client holds a channel, and the
    provider is pickled into the stack's state)."""

    def __init__(
        self,
        groups: compute_v1.InstanceGroupManagersClient | None = None,
        requests: compute_v1.InstanceGroupManagerResizeRequestsClient | None = None,
        instances: compute_v1.InstancesClient | None = None,
    ) -> None:
        self.groups = groups or compute_v1.InstanceGroupManagersClient()
        self.requests = requests or compute_v1.InstanceGroupManagerResizeRequestsClient()
        self.instances = instances or compute_v1.InstancesClient()

    def get_group(self, *, project: str, zone: str, group: str, timeout: float):
        return self.groups.get(
            project=project, zone=zone, instance_group_manager=group, timeout=timeout
        )

    def list_instances(self, *, project: str, zone: str, group: str, timeout: float):
        return list(
            self.groups.list_managed_instances(
                project=project, zone=zone, instance_group_manager=group, timeout=timeout
            )
        )

    def resize(self, *, project: str, zone: str, group: str, size: int, timeout: float):
        return self.groups.resize(
            project=project, zone=zone, instance_group_manager=group, size=size, timeout=timeout
        )

    def list_requests(self, *, project: str, zone: str, group: str, timeout: float):
        return list(
            self.requests.list(
                project=project, zone=zone, instance_group_manager=group, timeout=timeout
            )
        )

    def insert_request(self, *, project: str, zone: str, group: str, request, timeout: float):
        return self.requests.insert(
            project=project,
            zone=zone,
            instance_group_manager=group,
            instance_group_manager_resize_request_resource=request,
            timeout=timeout,
        )

    def cancel_request(self, *, project: str, zone: str, group: str, name: str, timeout: float):
        return self.requests.cancel(
            project=project,
            zone=zone,
            instance_group_manager=group,
            resize_request=name,
            timeout=timeout,
        )

    def guest_attribute(self, *, project: str, zone: str, instance: str, key: str, timeout: float):
        # The flattened call has no variable_key; the request message does.
        request = compute_v1.GetGuestAttributesInstanceRequest(
            project=project, zone=zone, instance=instance, variable_key=key
        )
        return self.instances.get_guest_attributes(request=request, timeout=timeout)


def _default_compute() -> Compute:
    return GoogleCompute()


class CapacityError(Exception):
    """What a provider could not do, with what to do about it."""


def request_state(request: compute_v1.InstanceGroupManagerResizeRequest) -> str:
    return request.state


def next_request_name(prefix: str, existing: Iterable[str]) -> str:
    """`<prefix>-<n>`, one past the highest of this prefix: request names are unique in their
    group, and the counter keeps them predictable (no random suffix)."""
    numbers = [
        int(m["n"])
        for name in existing
        if (m := REQUEST_NAME.fullmatch(name)) is not None and m["prefix"] == prefix
    ]
    return f"{prefix}-{max(numbers, default=0) + 1}"


@dataclass(frozen=True)
class Shortfall:
    """A flex-start group against its size: VMs it holds (its target size), VMs its open
    requests will add, and what they ask of a run."""

    target: int
    open_requests: tuple[tuple[str, int, int], ...]
    """(name, VMs, run seconds) of each request that may still create VMs, oldest first."""
    all_names: tuple[str, ...]

    @property
    def coming(self) -> int:
        return self.target + sum(count for _, count, _ in self.open_requests)


class FlexCapacityProvider(RetryingCalls, pulumi.dynamic.ResourceProvider):
    """Keeps a flex-start group at `size` VMs: asks for what is missing with a new resize
    request, cancels open requests that would overshoot, and shrinks a group that holds more
    than `size`."""

    _operation_seconds: float = OPERATION_SECONDS

    def __init__(
        self,
        compute_factory: Callable[[], Compute] = _default_compute,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._compute_factory = compute_factory
        self._sleep = sleep
        self._clock = clock

    def _where(self, props: Mapping[str, Any]) -> dict[str, str]:
        return {"project": props["project"], "zone": props["zone"], "group": props["group"]}

    def shortfall(self, compute: Compute, props: Mapping[str, Any]) -> Shortfall:
        where = self._where(props)
        group = self._call(lambda t: compute.get_group(**where, timeout=t))
        requests = self._call(lambda t: list(compute.list_requests(**where, timeout=t)))
        open_requests = tuple(
            (r.name, r.resize_by, int(r.requested_run_duration.seconds))
            for r in sorted(requests, key=lambda r: r.creation_timestamp)
            if request_state(r) in OPEN_REQUEST_STATES
        )
        return Shortfall(group.target_size, open_requests, tuple(r.name for r in requests))

    def _wait(self, operation: Operation, what: str) -> None:
        try:
            operation.result(timeout=self._operation_seconds)
        except api_exceptions.GoogleAPICallError as error:
            raise CapacityError(
                f"{what} failed: {describe_error(error, 'Compute Engine')}"
            ) from error

    def _cancel(self, compute: Compute, where: Mapping[str, str], name: str) -> None:
        """Cancels an open request; one already gone is fine."""
        try:
            operation = self._call(
                lambda t: compute.cancel_request(**where, name=name, timeout=t)  # type: ignore[arg-type]
            )
        except api_exceptions.NotFound:
            return
        self._wait(operation, f"cancelling resize request {name}")

    def ensure(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Brings the group to `size`; returns what it found and did."""
        compute = self._compute_factory()
        where = self._where(props)
        size, run = int(props["size"]), int(props["runSeconds"])
        now = self.shortfall(compute, props)
        cancelled: list[str] = []
        open_requests = list(now.open_requests)
        # An open request asks for another run length than the config now says, or would take
        # the group past its size: cancelled (newest first), its VMs asked again below.
        for name, count, seconds in reversed(now.open_requests):
            over = now.target + sum(c for _, c, _ in open_requests) - size
            if seconds == run and over <= 0:
                continue
            self._wait(
                self._call(
                    lambda t, name=name: compute.cancel_request(**where, name=name, timeout=t)
                ),
                f"cancelling resize request {name}",
            )
            cancelled.append(name)
            open_requests.remove((name, count, seconds))
        target = now.target
        if target > size:
            # More VMs run than the config asks for: the group shrinks (Compute Engine deletes
            # the surplus), as a group of fixed size would.
            self._wait(
                self._call(lambda t: compute.resize(**where, size=size, timeout=t)),
                f"resizing {props['group']} to {size}",
            )
            target = size
        missing = size - target - sum(count for _, count, _ in open_requests)
        requested = ""
        if missing > 0:
            requested = next_request_name(props["requestPrefix"], now.all_names)
            request = compute_v1.InstanceGroupManagerResizeRequest(
                name=requested,
                resize_by=missing,
                requested_run_duration=compute_v1.Duration(seconds=run),
                description=props["description"],
            )
            self._wait(
                self._call(lambda t: compute.insert_request(**where, request=request, timeout=t)),
                f"asking for {missing} flex-start VMs ({requested})",
            )
        return {
            **props,
            "running": target,
            "requested": requested,
            "requestedVms": max(missing, 0),
            "cancelled": cancelled,
        }

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(f"{props['group']}-capacity", self.ensure(props))

    def update(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(self.ensure(news))

    def live_gap(self, props: Mapping[str, Any]) -> int | None:
        """How many VMs the group lacks now, counting open requests, or None when the API
        cannot be asked (no credentials in a preview, an outage): one call each, as a preview
        should not wait out a retry budget."""
        try:
            compute = self._compute_factory()
            where = self._where(props)
            group = compute.get_group(**where, timeout=self._call_seconds)
            requests = compute.list_requests(**where, timeout=self._call_seconds)
        except Exception:  # a diff must not fail on a lookup it can do without
            return None
        coming = group.target_size + sum(
            r.resize_by for r in requests if request_state(r) in OPEN_REQUEST_STATES
        )
        return int(props["size"]) - coming

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        inputs = ("project", "zone", "group", "size", "runSeconds", "requestPrefix", "description")
        changed = [key for key in inputs if olds.get(key) != news.get(key)]
        # The run ended and the VMs are gone (or a request failed): `pulumi up` asks again.
        if not changed and (self.live_gap(news) or 0) != 0:
            changed.append("running")
        replaces = [key for key in ("project", "zone", "group") if key in changed]
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=replaces)

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, props)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Cancels the open requests, so none creates VMs after the stack let go of them; VMs
        already running stay until their run ends or the group goes."""
        compute = self._compute_factory()
        where = self._where(props)
        try:
            now = self.shortfall(compute, props)
        except api_exceptions.NotFound:
            return
        for name, _, _ in now.open_requests:
            self._cancel(compute, where, name)


class FlexCapacity(pulumi.dynamic.Resource, module="compute", name="FlexCapacity"):
    """A flex-start group's size, kept by resize requests."""

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: pulumi.dynamic.ResourceProvider | None = None,
    ) -> None:
        super().__init__(provider or FlexCapacityProvider(), name, dict(props), opts)


class StartupWaitProvider(StartupWaitBase):
    """Waits until every VM of a group reports `done` in its readiness signal."""

    WAIT_AGAIN_ON = ("project", "zone", "group", "size", "template")

    def __init__(
        self,
        compute_factory: Callable[[], Compute] = _default_compute,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self._compute_factory = compute_factory
        self._sleep = sleep
        self._clock = clock
        self._poll_seconds = poll_seconds
        self.what = "the group"

    def _signal(self, compute: Compute, props: Mapping[str, Any], instance: str) -> str | None:
        try:
            answer = self._call(
                lambda t: compute.guest_attribute(
                    project=props["project"],
                    zone=props["zone"],
                    instance=instance,
                    key=READY_PATH,
                    timeout=t,
                )
            )
        except api_exceptions.NotFound:
            # No such attribute yet: the script has not started.
            return None
        return answer.variable_value

    def signals(self, props: Mapping[str, Any]) -> tuple[dict[str, str | None], int]:
        compute = self._compute_factory()
        where = {"project": props["project"], "zone": props["zone"], "group": props["group"]}
        members = self._call(lambda t: list(compute.list_instances(**where, timeout=t)))
        names = [m.instance.rsplit("/", 1)[-1] for m in members]
        return {f"VM {n}": self._signal(compute, props, n) for n in names}, int(props["size"])

    def how_to_look(self, props: Mapping[str, Any], vm: str | None) -> str:
        name = vm.removeprefix("VM ") if vm else "<vm>"
        return (
            f"Its log: `gcloud compute instances get-serial-port-output {name} "
            f"--zone={props['zone']} --project={props['project']}` (lines "
            "`ai-infra-startup:`). A changed config reaches running VMs only when they are "
            f"recreated: `gcloud compute instance-groups managed rolling-action replace "
            f"{props['group']} --zone={props['zone']} --project={props['project']}`."
        )

    def resource_id(self, props: Mapping[str, Any]) -> str:
        return f"{props['group']}-startup"

    def wait(self, props: Mapping[str, Any]) -> list[str]:
        self.what = f"group {props['group']}"
        return [vm.removeprefix("VM ") for vm in super().wait(props)]


class StartupWait(pulumi.dynamic.Resource, module="compute", name="StartupWait"):
    """`pulumi up` waiting for a group's startup scripts to report done."""

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: pulumi.dynamic.ResourceProvider | None = None,
    ) -> None:
        super().__init__(provider or StartupWaitProvider(), name, dict(props), opts)
