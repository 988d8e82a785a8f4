"""Pulumi dynamic providers for what a GPU cluster needs and pulumi-gcp cannot express, on
Google's `google-cloud-compute` client:

- `FlexCapacity` keeps a flex-start group at its size. pulumi-gcp's `ResizeRequest` is one
  immutable request: it adds `resizeBy` VMs to whatever runs, and nothing asks again once its
  VMs' run ends. Here every `pulumi up` counts the group's VMs from its managed instances and
  its waiting requests, and asks with a new request for what is missing, so `instanceCount`
  means the group's size. Cluster Toolkit's Slurm flex path (v1.95.0 slurm_files/scripts/
  mig_flex.py) makes one group per request instead and deletes it whole; a cluster here is
  one group that users and Ray find by name, so it stays one group.
- `StartupWait` makes `pulumi up` wait for the VMs' startup scripts: each VM's readiness
  signal (`components.startup`, a guest attribute) must say `done` within a bounded time, and
  a step that failed fails `pulumi up` with the VM's and the step's name.

Every call has a deadline and transient errors are retried (`components.api_calls`); an API
refusal is a `CapacityError` that says what was being done and what the API answered. This
module's path is in every stack's state (Pulumi pickles the providers by reference): keep it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
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
InstanceGroupManagerResizeRequest.State); the others are final. An ACCEPTED request goes on
being ACCEPTED while the group creates its VMs (Compute Engine, "About resize requests in a
MIG": the group's target size grows by the request's count, and the request turns SUCCEEDED
once they all exist), so its VMs may be counted among the group's and the request's both."""
CANCELLABLE = "ACCEPTED"
"""Only an ACCEPTED request can be cancelled ("Cancel a resize request"); one whose VMs are
being created is refused, which `ensure` takes as the request being served."""
GONE_ACTIONS = frozenset({"DELETING", "ABANDONING"})
"""A managed instance with this current action is leaving the group and is not counted."""
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
class Waiting:
    """An open resize request: its name, VMs and run seconds."""

    name: str
    count: int
    run: int
    state: str


@dataclass(frozen=True)
class Capacity:
    """A flex-start group as the API shows it: the VMs it holds (running or being created,
    from its managed instances), how many of them are being created, and its open requests,
    oldest first."""

    vms: int
    creating: int
    waiting: tuple[Waiting, ...]
    names: tuple[str, ...]
    """Every request's name, finished ones too: new names count past them."""

    @property
    def coming(self) -> int:
        """VMs held or asked for. A request whose VMs are being created counts them twice,
        so this may run ahead of the truth, never behind: what is missing is never asked
        for twice."""
        return self.vms + sum(w.count for w in self.waiting)


@dataclass
class Outcome:
    cancelled: list[str] = field(default_factory=list)
    requested: str = ""
    requested_vms: int = 0
    resized: bool = False
    deferred: str = ""
    """Why the group could not be brought to its size yet; the next `pulumi up` finishes."""


class FlexCapacityProvider(RetryingCalls, pulumi.dynamic.ResourceProvider):
    """Keeps a flex-start group at `size` VMs: asks for what is missing with a new resize
    request; on a changed config, cancels waiting requests that would overshoot or that ask for
    another run length, and shrinks a group that holds more than `size`. On an unchanged
    config it acts only when VMs are missing (or an earlier run could not finish)."""

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

    def capacity(self, compute: Compute, props: Mapping[str, Any]) -> Capacity:
        where = self._where(props)
        members = self._call(lambda t: list(compute.list_instances(**where, timeout=t)))
        present = [m for m in members if m.current_action not in GONE_ACTIONS]
        requests = self._call(lambda t: list(compute.list_requests(**where, timeout=t)))
        waiting = tuple(
            Waiting(r.name, r.resize_by, int(r.requested_run_duration.seconds), r.state)
            for r in sorted(requests, key=lambda r: r.creation_timestamp)
            if request_state(r) in OPEN_REQUEST_STATES
        )
        return Capacity(
            vms=len(present),
            creating=sum(1 for m in present if m.current_action == "CREATING"),
            waiting=waiting,
            names=tuple(r.name for r in requests),
        )

    def _wait(self, operation: Operation, what: str) -> None:
        try:
            operation.result(timeout=self._operation_seconds)
        except (api_exceptions.GoogleAPICallError, TimeoutError) as error:
            raise CapacityError(
                f"{what} failed: {describe_error(error, 'Compute Engine')}"
            ) from None

    def _act(self, what: str, call: Callable[[float], Operation]) -> None:
        """One call and its operation; a refusal of either is a CapacityError naming `what`."""
        try:
            operation = self._call(call)
        except api_exceptions.GoogleAPICallError as error:
            raise CapacityError(
                f"{what} failed: {describe_error(error, 'Compute Engine')}"
            ) from None
        self._wait(operation, what)

    def _cancel(self, compute: Compute, where: Mapping[str, str], name: str) -> bool:
        """Cancels a waiting request: True when it is cancelled or gone, False when the API
        refuses because it is being served (its VMs are being created)."""
        try:
            operation = self._call(
                lambda t: compute.cancel_request(**where, name=name, timeout=t)  # type: ignore[arg-type]
            )
        except api_exceptions.NotFound:
            return True
        except (
            api_exceptions.FailedPrecondition,
            api_exceptions.BadRequest,
            api_exceptions.Conflict,
        ):
            return False
        except api_exceptions.GoogleAPICallError as error:
            raise CapacityError(
                f"cancelling resize request {name} failed: "
                f"{describe_error(error, 'Compute Engine')}"
            ) from None
        self._wait(operation, f"cancelling resize request {name}")
        return True

    def _trim(
        self, compute: Compute, props: Mapping[str, Any], now: Capacity, done: Outcome
    ) -> Capacity:
        """A changed config: waiting requests that ask for another run length, or that take
        the group past its size, are cancelled (newest first), then a group holding more VMs
        than its size shrinks. Nothing is cancelled while VMs are being created: a request
        being served cannot be (`CANCELLABLE`), and which one it is the API does not say."""
        where = self._where(props)
        size, run = int(props["size"]), int(props["runSeconds"])
        waiting = list(now.waiting)
        over = now.coming - size
        unwanted = [w for w in reversed(now.waiting) if w.run != run or over > 0]
        if unwanted and now.creating:
            done.deferred = (
                f"{now.creating} VM(s) are being created for a resize request, which cannot be "
                "cancelled; the next `pulumi up` finishes once they exist"
            )
            return now
        for w in reversed(now.waiting):
            if w.run == run and over <= 0:
                continue
            if w.state != CANCELLABLE or not self._cancel(compute, where, w.name):
                done.deferred = (
                    f"resize request {w.name} is being served and cannot be cancelled; the "
                    "next `pulumi up` finishes once its VMs exist"
                )
                break
            done.cancelled.append(w.name)
            waiting.remove(w)
            over -= w.count
        if now.vms > size and not waiting and not done.deferred:
            self._act(
                f"resizing {props['group']} to {size}",
                lambda t: compute.resize(**where, size=size, timeout=t),
            )
            done.resized = True
            return Capacity(size, 0, (), now.names)
        return Capacity(now.vms, now.creating, tuple(waiting), now.names)

    def ensure(self, props: Mapping[str, Any], *, changed: bool = True) -> dict[str, Any]:
        """Brings the group to `size`; returns what it found and did. Unless `changed`, only
        missing VMs are asked for."""
        compute = self._compute_factory()
        where = self._where(props)
        size, run = int(props["size"]), int(props["runSeconds"])
        try:
            now = self.capacity(compute, props)
        except api_exceptions.GoogleAPICallError as error:
            raise CapacityError(
                f"reading flex-start group {props['group']} failed: "
                f"{describe_error(error, 'Compute Engine')}"
            ) from None
        done = Outcome()
        if changed:
            now = self._trim(compute, props, now, done)
        missing = size - now.coming
        if missing > 0 and not done.deferred:
            done.requested = next_request_name(props["requestPrefix"], now.names)
            request = compute_v1.InstanceGroupManagerResizeRequest(
                name=done.requested,
                resize_by=missing,
                requested_run_duration=compute_v1.Duration(seconds=run),
                description=props["description"],
            )
            self._act(
                f"asking for {missing} flex-start VMs ({done.requested})",
                lambda t: compute.insert_request(**where, request=request, timeout=t),
            )
            done.requested_vms = missing
        if done.deferred:
            pulumi.log.warn(f"flex-start group {props['group']}: {done.deferred}")
        return {
            **props,
            "running": now.vms,
            "requested": done.requested,
            "requestedVms": done.requested_vms,
            "cancelled": done.cancelled,
            "deferred": done.deferred,
        }

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(f"{props['group']}-capacity", self.ensure(props))

    def update(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        changed = bool(olds.get("deferred")) or any(olds.get(k) != news.get(k) for k in INPUTS)
        return pulumi.dynamic.UpdateResult(self.ensure(news, changed=changed))

    def live_gap(self, props: Mapping[str, Any]) -> int | None:
        """How many VMs the group lacks now, counting waiting requests, or None when the API
        cannot be asked (no credentials in a preview, an outage): one call each, as a preview
        should not wait out a retry budget."""
        try:
            compute = self._compute_factory()
            where = self._where(props)
            members = compute.list_instances(**where, timeout=self._call_seconds)
            requests = compute.list_requests(**where, timeout=self._call_seconds)
        except Exception:  # a diff must not fail on a lookup it can do without
            return None
        vms = sum(1 for m in members if m.current_action not in GONE_ACTIONS)
        coming = vms + sum(r.resize_by for r in requests if request_state(r) in OPEN_REQUEST_STATES)
        return int(props["size"]) - coming

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        # The run ended and the VMs are gone (or a request failed), or the last `pulumi up`
        # could not finish: `pulumi up` asks again. VMs beyond the size on an unchanged config
        # are left alone.
        if not changed and (olds.get("deferred") or (self.live_gap(news) or 0) > 0):
            changed.append("running")
        replaces = [key for key in ("project", "zone", "group") if key in changed]
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=replaces)

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, props)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Cancels the waiting requests, so none creates VMs after the stack let go of them;
        VMs already running, or being created, stay until their run ends or the group goes."""
        compute = self._compute_factory()
        where = self._where(props)
        try:
            now = self.capacity(compute, props)
        except api_exceptions.NotFound:
            return
        except api_exceptions.GoogleAPICallError as error:
            raise CapacityError(
                f"reading flex-start group {props['group']} failed: "
                f"{describe_error(error, 'Compute Engine')}"
            ) from None
        for w in now.waiting:
            if w.state == CANCELLABLE:
                self._cancel(compute, where, w.name)


INPUTS = ("project", "zone", "group", "size", "runSeconds", "requestPrefix", "description")
"""The resource's inputs, as the program sets them."""


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
