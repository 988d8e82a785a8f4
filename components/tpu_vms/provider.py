"""A Pulumi dynamic provider for Cloud TPU queued resources, on Google's `google-cloud-tpu` client.

The provider's own `gcp.tpu.V2QueuedResource` (pulumi-gcp 10.2) takes only a node id, runtime,
accelerator and network per node spec: no multislice node count or prefix, no spot, reserved or
best-effort tier, no reservation, and no node service account, labels, metadata or data disks.
Requests go to the GA `tpu_v2` API, which has all of those but two; `tpu_v2alpha1` is used only
for what v2 lacks: the best-effort tier and the boot disk config (google-cloud-tpu 1.28.0). The
API has no update call for a queued resource: an input that reaches it replaces it, but what
UpdateNode changes on the running TPU VMs (`request.IN_PLACE_KEYS`).

Nothing that bills is left unrecorded. Every call has a deadline (the client sets none) and is
retried with back-off on transient errors. After the create request is sent, any failure
(refusal, FAILED or SUSPENDED, no ACTIVE in time, an interrupt) deletes what was created, or
says how to, before the error is raised, because Pulumi records nothing of a failed create.
If the provider is killed before it can clean up, the next `pulumi up` meets the queued
resource (409) and adopts it when it carries this entry's stack labels and node spec.

The messages it sends are built in `request.py`. This module's path is in every stack's state
(Pulumi pickles the provider by reference, with `_default_client` and `_utcnow`): keep it at
`components/tpu_vms/provider.py`. `components/tpu_vm_provider.py` stays for states written
before the move.
"""

from __future__ import annotations

import contextlib
import datetime
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import pulumi
import pulumi.dynamic
from google.api_core import exceptions as api_exceptions
from google.api_core import operation as api_operation
from google.cloud import tpu_v2, tpu_v2alpha1
from google.protobuf import field_mask_pb2

from components.api_calls import RetryingCalls, describe_error, utcnow
from components.startup import READY_PATH
from components.startup_wait import StartupWaitBase
from components.tpu_vms.request import (
    DEAD_STATES,
    EXTERNAL_IPS,
    GONE,
    IN_PLACE_KEYS,
    REPLACE_KEYS,
    UPDATE_FIELDS,
    UPDATE_KEYS,
    V2,
    V2ALPHA1,
    QueuedResourceError,
    QueuedResourceMessage,
    build_request,
    create_time,
    delete_command,
    echoed_nodes,
    failure_reason,
    node_names,
    node_update,
    prop,
    qualified_name,
    state_of,
    why_foreign,
)

NODE_UPDATE_SECONDS = 600.0
"""How long one TPU VM's update operation is waited for."""
ACCEPT_SECONDS = 600.0
"""How long to wait for the create operation, which ends when the request is accepted into the
queue (Google's python-docs-samples read the queueing policy from `operation.result()`)."""
DELETE_SECONDS = 30 * 60.0
"""How long a forced delete is waited for. No Cloud TPU doc bounds it; gcloud's `queued-resources
delete` waits at most 30 minutes (googlecloudsdk api_lib/util/waiter.py max_wait_ms=1800000),
where api-core's operation default would give up after 900 s."""


class TpuClient(Protocol):
    """What the provider calls on `tpu_v2.TpuClient` or `tpu_v2alpha1.TpuClient`; tests pass
    a fake."""

    def create_queued_resource(
        self, request: Any, *, timeout: float
    ) -> api_operation.Operation: ...

    def get_queued_resource(self, *, name: str, timeout: float) -> QueuedResourceMessage: ...

    def delete_queued_resource(
        self, request: Any, *, timeout: float
    ) -> api_operation.Operation: ...

    def get_node(self, *, name: str, timeout: float) -> Any: ...

    def get_guest_attributes(self, request: Any, *, timeout: float) -> Any: ...

    def update_node(
        self, *, node: Any, update_mask: field_mask_pb2.FieldMask, timeout: float
    ) -> api_operation.Operation: ...


class ForeignQueuedResource(QueuedResourceError):
    """A queued resource by this entry's id that this entry did not create."""


def _default_client(api: str = V2ALPHA1) -> TpuClient:
    # The default is what states pickled before the API choice called (no argument).
    return tpu_v2.TpuClient() if api == V2 else tpu_v2alpha1.TpuClient()


_utcnow = utcnow
"""Kept by this name: states pickled before the move name it as the provider's `_now`."""


def _describe(error: BaseException) -> str:
    if isinstance(error, QueuedResourceError):
        return str(error)
    return describe_error(error, "Cloud TPU")


class QueuedResourceProvider(RetryingCalls, pulumi.dynamic.ResourceProvider):
    """Create, read, diff and delete of one queued resource and the TPU VMs it holds."""

    # Class-level defaults: a provider unpickled from an older state has only the attributes
    # its __init__ set (unpickling does not call __init__).
    _accept_seconds: float = ACCEPT_SECONDS
    _delete_seconds: float = DELETE_SECONDS
    _now: Callable[[], datetime.datetime] = staticmethod(_utcnow)

    def __init__(
        self,
        client_factory: Callable[[str], TpuClient] = _default_client,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        poll_seconds: float = 30.0,
        now: Callable[[], datetime.datetime] = _utcnow,
    ) -> None:
        # A factory, not a client: the provider is pickled into the stack's state, and a
        # client holds a gRPC channel.
        self._client_factory = client_factory
        self._sleep = sleep
        self._clock = clock
        self._poll_seconds = poll_seconds
        self._now = now

    def _client(self, props: Mapping[str, Any]) -> TpuClient:
        return self._client_factory(prop(props, "apiVersion"))

    def _get(self, client: TpuClient, name: str) -> QueuedResourceMessage | None:
        try:
            return self._call(lambda t: client.get_queued_resource(name=name, timeout=t))
        except api_exceptions.NotFound:
            return None

    # -- create ------------------------------------------------------------------------------

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        client = self._client(props)
        name = qualified_name(props)
        deadline = self._clock() + float(props["timeoutSeconds"])
        try:
            refusal, adopted = self._request(client, props)
            resource = self._wait_until_active(client, props, deadline, refusal)
        except ForeignQueuedResource:
            raise
        except BaseException as error:
            note = self._clean_up(client, props)
            if not isinstance(error, Exception):
                # An interrupt stays an interrupt; the note says what was done about it.
                error.add_note(note)
                raise
            raise QueuedResourceError(f"{_describe(error)}. {note}") from error
        if adopted:
            pulumi.log.info(f"adopted queued resource {name}, which an earlier run created")
        return pulumi.dynamic.CreateResult(name, self._outputs(props, resource, adopted=adopted))

    def _request(
        self, client: TpuClient, props: Mapping[str, Any]
    ) -> tuple[api_exceptions.GoogleAPICallError | None, bool]:
        """Sends the create request. Returns the create operation's error, if the API refused
        the request, and whether an existing queued resource of this entry was adopted."""
        name = qualified_name(props)
        # A dead or deleting queued resource of this entry's is cleared once, then asked again.
        for _ in range(2):
            request_type = (
                tpu_v2.CreateQueuedResourceRequest
                if prop(props, "apiVersion") == V2
                else tpu_v2alpha1.CreateQueuedResourceRequest
            )
            request = request_type(
                parent=f"projects/{props['project']}/locations/{props['zone']}",
                queued_resource_id=props["queuedResourceId"],
                queued_resource=build_request(props, self._now()),
                # Idempotent request UUID: a retry after a lost answer is the same request.
                request_id=str(uuid.uuid4()),
            )
            try:
                operation = self._call(
                    lambda t, request=request: client.create_queued_resource(
                        request=request, timeout=t
                    )
                )
            except api_exceptions.AlreadyExists:
                existing = self._get(client, name)
                if existing is None:
                    continue
                if (why := why_foreign(existing, props)) is not None:
                    raise ForeignQueuedResource(
                        f"queued resource {name} already exists and is not this entry's ({why}); "
                        f"delete it (`{delete_command(props)}`) or rename the tpuVms entry"
                    ) from None
                state = state_of(existing)
                if state in DEAD_STATES or state == "DELETING":
                    self._delete(client, props)
                    continue
                return None, True
            return self._refusal(operation), False
        raise QueuedResourceError(
            f"queued resource {name} reappeared after it was deleted; delete it "
            f"(`{delete_command(props)}`) and run `pulumi up` again"
        )

    def _refusal(
        self, operation: api_operation.Operation
    ) -> api_exceptions.GoogleAPICallError | None:
        """The create operation's error: a request the API refused (invalid argument, quota)
        fails the operation and is never queued, so polling would only find no resource."""
        try:
            operation.result(timeout=self._accept_seconds)
        except api_exceptions.GoogleAPICallError as error:
            return error
        except TimeoutError:
            # concurrent.futures.TimeoutError is the builtin on Python 3.11: still creating,
            # which the wait below follows.
            return None
        return None

    def _wait_until_active(
        self,
        client: TpuClient,
        props: Mapping[str, Any],
        deadline: float,
        refusal: api_exceptions.GoogleAPICallError | None,
    ) -> QueuedResourceMessage:
        name = qualified_name(props)
        timeout = float(props["timeoutSeconds"])
        while True:
            resource = self._get(client, name)
            if resource is None:
                if refusal is not None:
                    raise QueuedResourceError(f"the request was refused: {_describe(refusal)}")
                raise QueuedResourceError(
                    f"queued resource {name} disappeared while `pulumi up` waited for it"
                )
            state = state_of(resource)
            if state == "ACTIVE":
                return resource
            if state in DEAD_STATES or state == "DELETING":
                raise QueuedResourceError(
                    f"queued resource {name} is {state}: {failure_reason(resource)}; for "
                    "capacity that is not taken back, use provisioning: reserved"
                )
            # CREATING, ACCEPTED, WAITING_FOR_RESOURCES (which tpu/docs/queued-resources says
            # replaced ACCEPTED) and PROVISIONING are on the way to ACTIVE.
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise QueuedResourceError(
                    f"queued resource {name} was still {state} after {timeout:.0f} s; raise "
                    "timeoutMinutes or use reserved capacity"
                )
            self._sleep(min(self._poll_seconds, remaining))

    def _clean_up(self, client: TpuClient, props: Mapping[str, Any]) -> str:
        """After a failed create: delete what it left, and say what became of it."""
        name = qualified_name(props)
        try:
            existing = self._get(client, name)
            if existing is None:
                return "No queued resource was left behind"
            if (why := why_foreign(existing, props)) is not None:
                return f"Queued resource {name} exists but is not this entry's ({why}): left alone"
            self._delete(client, props)
        except BaseException as error:  # a second interrupt must not hide the first
            return (
                f"Deleting queued resource {name} failed ({_describe(error)}), and it may bill "
                f"outside the stack's state: delete it with `{delete_command(props)}`"
            )
        return (
            f"Queued resource {name} was deleted with its TPU VMs, so nothing runs outside the "
            "stack's state; `pulumi up` asks again"
        )

    # -- read, diff, update ------------------------------------------------------------------

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        resource = self._get(self._client(props), id_)
        if resource is None:
            # An empty id tells the engine the resource is gone, so `pulumi refresh` drops it.
            return pulumi.dynamic.ReadResult("", {})
        return pulumi.dynamic.ReadResult(
            id_, self._outputs(props, resource, adopted=bool(props.get("adopted")))
        )

    def live_state(self, id_: str, olds: Mapping[str, Any]) -> str | None:
        """The queued resource's state now, GONE if the API has none, or the recorded state
        when the API cannot be asked (no credentials in a preview, an outage): one call, as a
        preview should not wait out a retry budget."""
        if not id_:
            return olds.get("state")
        try:
            client = self._client(olds)
            resource = client.get_queued_resource(name=id_, timeout=self._call_seconds)
        except api_exceptions.NotFound:
            return GONE
        except Exception:  # a diff must not fail on a lookup it can do without
            return olds.get("state")
        return state_of(resource)

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        replaces = [key for key in REPLACE_KEYS if prop(olds, key) != prop(news, key)]
        if prop(olds, EXTERNAL_IPS) != prop(news, EXTERNAL_IPS) and (
            prop(olds, "additionalNetworks") or prop(news, "additionalNetworks")
        ):
            replaces.append(EXTERNAL_IPS)
        # A preempted (SUSPENDED) or FAILED request never runs again, and one deleted outside
        # the stack is gone: the next `pulumi up` asks again by replacing it.
        state = self.live_state(_id, olds)
        if state in DEAD_STATES or state == GONE:
            replaces.append("state")
        changed = bool(replaces) or any(
            prop(olds, key) != prop(news, key) for key in (*IN_PLACE_KEYS, *UPDATE_KEYS)
        )
        # The id is fixed by config, so the old queued resource must go first or the new one
        # would meet a 409.
        return pulumi.dynamic.DiffResult(
            changes=changed, replaces=replaces, delete_before_replace=True
        )

    def update(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        # Only IN_PLACE_KEYS and UPDATE_KEYS reach here; diff replaces for the rest. The
        # queued resource itself is untouched, so what was read of it stays.
        changed = [key for key in IN_PLACE_KEYS if prop(olds, key) != prop(news, key)]
        if changed:
            self._update_nodes(olds, news, changed)
        kept = ("name", "state", "nodeNames", "adopted", "created")
        return pulumi.dynamic.UpdateResult({**news, **{k: olds[k] for k in kept if k in olds}})

    _node_update_seconds: float = NODE_UPDATE_SECONDS

    def _update_nodes(
        self, olds: Mapping[str, Any], news: Mapping[str, Any], changed: list[str]
    ) -> None:
        """Applies the changed in-place inputs to every TPU VM of the queued resource. Each VM
        keeps what this entry never set (labels or metadata Cloud TPU or a user added); a VM
        that fails is named, and the others are still updated: Pulumi keeps the old inputs of
        a failed update, so the next `pulumi up` applies the whole change again, which changes
        nothing on the VMs that have it."""
        # Only v2alpha1 updates data disks; it takes the other fields too.
        api = V2ALPHA1 if "dataDisks" in changed else prop(news, "apiVersion")
        client = self._client_factory(api)
        name = qualified_name(news)
        resource = self._get(client, name)
        state = state_of(resource) if resource is not None else GONE
        if state != "ACTIVE":
            why = f": {failure_reason(resource)}" if resource is not None else ""
            raise QueuedResourceError(
                f"queued resource {name} is {state}{why}, so its TPU VMs cannot take the new "
                f"{', '.join(changed)}; nothing was changed. Run `pulumi up` again: it sees the "
                "state and replaces the queued resource, asking again with the new values"
            )
        parent = f"projects/{news['project']}/locations/{news['zone']}/nodes"
        mask = field_mask_pb2.FieldMask(paths=[UPDATE_FIELDS[key] for key in changed])
        done: list[str] = []
        failed: list[str] = []
        for node in node_names(news["nodePrefix"], int(news["nodeCount"])):
            path = f"{parent}/{node}"
            try:
                current = self._call(lambda t, path=path: client.get_node(name=path, timeout=t))
                wanted = node_update(api, path, current, olds, news, changed)
                operation = self._call(
                    lambda t, wanted=wanted: client.update_node(
                        node=wanted, update_mask=mask, timeout=t
                    )
                )
                operation.result(timeout=self._node_update_seconds)
            except (api_exceptions.GoogleAPICallError, TimeoutError) as error:
                failed.append(f"{node} ({_describe(error)})")
                continue
            done.append(node)
        if failed:
            raise QueuedResourceError(
                f"updating {', '.join(changed)} in place: TPU VMs {', '.join(done) or 'none'} "
                f"took it, {'; '.join(failed)} did not. Nothing was replaced; run `pulumi up` "
                "again, which applies the whole change to every TPU VM once more"
            )

    # -- delete ------------------------------------------------------------------------------

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        self._delete(self._client(props), props)

    def _delete(self, client: TpuClient, props: Mapping[str, Any]) -> None:
        """Force-deletes the queued resource with its TPU VMs (as `queued-resources delete
        --force` does) and waits until the API no longer has it, or says what is still
        deleting."""
        name = qualified_name(props)
        request_type = (
            tpu_v2.DeleteQueuedResourceRequest
            if prop(props, "apiVersion") == V2
            else tpu_v2alpha1.DeleteQueuedResourceRequest
        )
        request = request_type(name=name, force=True, request_id=str(uuid.uuid4()))
        deadline = self._clock() + self._delete_seconds
        try:
            operation = self._call(
                lambda t: client.delete_queued_resource(request=request, timeout=t)
            )
        except api_exceptions.NotFound:
            return
        except api_exceptions.ClientError:
            # A queued resource already DELETING (an earlier, interrupted delete) is waited
            # for; anything else is the real error.
            existing = self._get(client, name)
            if existing is None:
                return
            if state_of(existing) != "DELETING":
                raise
        else:
            # Past this, the poll below says what is still deleting.
            with contextlib.suppress(TimeoutError):
                operation.result(timeout=self._delete_seconds)
        while (existing := self._get(client, name)) is not None:
            if self._clock() >= deadline:
                nodes = ", ".join(echoed_nodes(existing)) or "none listed"
                raise QueuedResourceError(
                    f"queued resource {name} is still {state_of(existing)} (TPU VMs: {nodes}) "
                    f"after {self._delete_seconds / 60:.0f} minutes of a forced delete. It is "
                    "going away; see `gcloud compute tpus queued-resources describe "
                    f"{props['queuedResourceId']} --zone={props['zone']} --project="
                    f"{props['project']}` and run the command again once it is gone"
                )
            self._sleep(self._poll_seconds)

    @staticmethod
    def _outputs(
        props: Mapping[str, Any], resource: QueuedResourceMessage, *, adopted: bool
    ) -> dict[str, Any]:
        return {
            **props,
            "name": resource.name,
            "state": state_of(resource),
            "nodeNames": node_names(props["nodePrefix"], int(props["nodeCount"])),
            "adopted": adopted,
            # Tells a new request from the one it replaced: the startup wait waits again.
            "created": create_time(resource),
        }


class QueuedResource(pulumi.dynamic.Resource, module="tpu", name="QueuedResource"):
    """A Cloud TPU queued resource: one or more TPU VM slices, requested and kept together."""

    created: pulumi.Output[str]
    """When Cloud TPU accepted this request: a replacement has another."""

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: pulumi.dynamic.ResourceProvider | None = None,
    ) -> None:
        super().__init__(
            provider or QueuedResourceProvider(),
            name,
            {**props, "created": None},
            opts,
        )


class StartupWaitProvider(StartupWaitBase):
    """Waits until every worker of every TPU VM of a queued resource reports `done` in its
    readiness signal, read per worker through the TPU API's GetGuestAttributes (the way
    gcloud's `tpu-vm ssh` reads each worker's host name)."""

    WAIT_AGAIN_ON = ("project", "zone", "nodes", "workers", "requestedAt")
    what = "the TPU VMs"
    timeout_key = "startupTimeoutMinutes"

    def __init__(
        self,
        client_factory: Callable[[str], TpuClient] = _default_client,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        poll_seconds: float = 30.0,
    ) -> None:
        self._client_factory = client_factory
        self._sleep = sleep
        self._clock = clock
        self._poll_seconds = poll_seconds

    def resource_id(self, props: Mapping[str, Any]) -> str:
        return f"{props['queuedResourceId']}-startup"

    def signals(self, props: Mapping[str, Any]) -> tuple[dict[str, str | None], int]:
        client = self._client_factory(prop(props, "apiVersion"))
        parent = f"projects/{props['project']}/locations/{props['zone']}/nodes"
        workers = int(props["workers"])
        found: dict[str, str | None] = {}
        for node in props["nodes"]:
            request = tpu_v2.GetGuestAttributesRequest(
                name=f"{parent}/{node}", query_path=READY_PATH
            )
            try:
                answer = self._call(
                    lambda t, request=request: client.get_guest_attributes(
                        request=request, timeout=t
                    )
                )
            except api_exceptions.NotFound:
                continue
            for worker, attributes in enumerate(answer.guest_attributes):
                values = [
                    item.value
                    for item in attributes.query_value.items
                    if f"{item.namespace}/{item.key}" == READY_PATH
                ]
                found[f"TPU VM {node} worker {worker}"] = values[0] if values else None
        return found, workers * len(props["nodes"])

    def how_to_look(self, props: Mapping[str, Any], vm: str | None) -> str:
        node, worker = (vm.split()[2], vm.split()[-1]) if vm else ("<node>", "0")
        return (
            "Its log: `gcloud alpha compute tpus tpu-vm ssh "
            f"{node} --zone={props['zone']} --project={props['project']} --worker={worker} "
            "--tunnel-through-iap --command='sudo journalctl -u google-startup-scripts "
            "--no-pager'` (lines `ai-infra-startup:`). A fixed startupScript reaches running "
            "TPU VMs in place and runs at their next boot, or now with `sudo "
            "google_metadata_script_runner startup` on every worker (`python -m hosts`)."
        )


class StartupWait(pulumi.dynamic.Resource, module="tpu", name="StartupWait"):
    """`pulumi up` waiting for the startup scripts of a queued resource's TPU VMs."""

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: pulumi.dynamic.ResourceProvider | None = None,
    ) -> None:
        super().__init__(provider or StartupWaitProvider(), name, dict(props), opts)
