"""A fake Cloud TPU client built on google-cloud-tpu's and google-api-core's own types: queued
resources are `tpu_v2.QueuedResource` messages, errors are api-core's exception classes, and
finished operations are api-core `Operation`s, so the provider meets what the real client
returns. Every call must carry a deadline, as a call without one could hang forever."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.api_core import operation as api_operation
from google.cloud import tpu_v2, tpu_v2alpha1
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2
from google.rpc import status_pb2

from tests.components.api_fakes import Clock

__all__ = [
    "Clock",
    "FakeTpuClient",
    "Initiator",
    "Lost",
    "PendingOperation",
    "State",
    "done_operation",
    "factory",
]

State = tpu_v2.QueuedResourceState.State
Initiator = tpu_v2.QueuedResourceState.StateInitiator


@dataclass
class Lost:
    """A create the server carried out whose answer never arrived: the call raises `error`."""

    error: Exception


class PendingOperation:
    """An operation that never finishes: `result` raises what api-core raises at its timeout
    (concurrent.futures.TimeoutError, the builtin TimeoutError on Python 3.11)."""

    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def result(self, timeout: float | None = None) -> Any:
        self.timeouts.append(timeout)
        raise TimeoutError(f"Operation did not complete within the designated timeout {timeout}")


def done_operation(
    result: Any = None, error: status_pb2.Status | None = None
) -> api_operation.Operation:
    """A finished long-running operation, as api-core wraps one from the API."""
    pb = operations_pb2.Operation(name="projects/p/locations/z/operations/op-1", done=True)
    if error is not None:
        pb.error.CopyFrom(error)
    else:
        response = any_pb2.Any()
        response.Pack(
            type(result).pb(result) if result is not None else empty_pb2.Empty()  # type: ignore[arg-type]
        )
        pb.response.CopyFrom(response)
    result_type = type(result) if result is not None else empty_pb2.Empty
    return api_operation.Operation(pb, lambda **_: pb, lambda **_: None, result_type=result_type)


class FakeTpuClient:
    """One queued resource's life. While it exists, `get` serves `states` in order (the last
    one for ever); a forced delete makes it DELETING for `delete_lingers` more gets, then gone.
    `*_errors` are raised, one per call, before the call does anything."""

    def __init__(
        self,
        states: list[State],
        *,
        exists: Any = None,
        error: str = "",
        initiator: Initiator = Initiator.STATE_INITIATOR_UNSPECIFIED,
        create_errors: Sequence[Exception | Lost] = (),
        operation_error: status_pb2.Status | None = None,
        create_hangs: bool = False,
        get_errors: Sequence[Exception] = (),
        delete_errors: Sequence[Exception] = (),
        delete_hangs: bool = False,
        delete_lingers: int = 0,
        update_errors: dict[str, api_exceptions.GoogleAPICallError] | None = None,
        signals: dict[str, list[list[str | None]]] | None = None,
    ) -> None:
        self.states = list(states)
        self.resource = exists
        self.error = error
        self.initiator = initiator
        self.create_errors = list(create_errors)
        self.operation_error = operation_error
        self.create_hangs = create_hangs
        self.get_errors = list(get_errors)
        self.delete_errors = list(delete_errors)
        self.delete_hangs = delete_hangs
        self.delete_lingers = delete_lingers
        self.update_errors = dict(update_errors or {})
        """TPU VM name -> the error its update operation ends with (once)."""
        self.nodes: dict[str, Any] = {}
        """The TPU VMs the queued resource holds, by name, as Node messages."""
        self.updates: list[tuple[str, list[str]]] = []
        self.signals = signals or {}
        """TPU VM name -> what GetGuestAttributes answers on successive calls (the last one
        for ever): each worker's readiness signal, None where it has set none."""
        self.deleting: int | None = None
        self.created: list[Any] = []
        self.deleted: list[Any] = []
        self.operations: list[Any] = []
        self.calls: list[tuple[str, float]] = []
        self.polls = 0

    def _called(self, method: str, timeout: float | None) -> None:
        assert isinstance(timeout, int | float) and timeout > 0, f"{method} without a deadline"
        self.calls.append((method, timeout))

    def create_queued_resource(self, request: Any, *, timeout: float) -> Any:
        self._called("create", timeout)
        self.created.append(request)
        if self.create_errors:
            scripted = self.create_errors.pop(0)
            if not isinstance(scripted, Lost):
                raise scripted
            self._create(request)
            raise scripted.error
        if self.resource is not None:
            raise api_exceptions.AlreadyExists(f"{request.queued_resource_id} already exists")
        if self.operation_error is not None:
            return done_operation(error=self.operation_error)
        self._create(request)
        if self.create_hangs:
            return PendingOperation()
        return done_operation(self.resource)

    def _create(self, request: Any) -> None:
        self.resource = type(request.queued_resource)(request.queued_resource)
        self.resource.name = f"{request.parent}/queuedResources/{request.queued_resource_id}"
        for spec in self.resource.tpu.node_spec:
            params: Any = getattr(spec, "multislice_params", None) or getattr(
                spec, "multi_node_params", None
            )
            names = (
                [spec.node_id]
                if spec.node_id
                else [f"{params.node_id_prefix}-{i}" for i in range(params.node_count)]
            )
            for name in names:
                node = type(spec.node)(spec.node)
                node.name = f"{spec.parent}/nodes/{name}"
                self.nodes[node.name] = node

    def get_node(self, *, name: str, timeout: float) -> Any:
        self._called("get_node", timeout)
        if name not in self.nodes:
            raise api_exceptions.NotFound(f"{name} not found")
        node = self.nodes[name]
        return type(node)(node)

    def get_guest_attributes(self, request: Any, *, timeout: float) -> Any:
        self._called("get_guest_attributes", timeout)
        node = request.name.rsplit("/", 1)[-1]
        answers = self.signals.get(node)
        if not answers:
            raise api_exceptions.NotFound(f"{request.name} not found")
        workers = answers.pop(0) if len(answers) > 1 else answers[0]
        namespace, key = request.query_path.split("/")
        return tpu_v2.GetGuestAttributesResponse(
            guest_attributes=[
                tpu_v2.GuestAttributes(
                    query_path=request.query_path,
                    query_value=tpu_v2.GuestAttributesValue(
                        items=[]
                        if value is None
                        else [
                            tpu_v2.GuestAttributesEntry(namespace=namespace, key=key, value=value)
                        ]
                    ),
                )
                for value in workers
            ]
        )

    def update_node(self, *, node: Any, update_mask: Any, timeout: float) -> Any:
        """UpdateNode: copies the masked fields onto the stored TPU VM; an `update_errors`
        entry for it fails the operation instead, changing nothing."""
        self._called("update_node", timeout)
        if node.name not in self.nodes:
            raise api_exceptions.NotFound(f"{node.name} not found")
        short = node.name.rsplit("/", 1)[-1]
        paths = list(update_mask.paths)
        self.updates.append((short, paths))
        if short in self.update_errors:
            error = self.update_errors.pop(short)
            code = error.grpc_status_code.value[0] if error.grpc_status_code else 13
            return done_operation(error=status_pb2.Status(code=code, message=error.message))
        stored = self.nodes[node.name]
        for path in paths:
            if path == "labels":
                stored.labels = dict(node.labels)
            elif path == "metadata":
                stored.metadata = dict(node.metadata)
            elif path == "tags":
                stored.tags = list(node.tags)
            elif path == "data_disks":
                # The same TPU VM through either API surface: carried over as plain values.
                stored.data_disks = [
                    {"source_disk": d.source_disk, "mode": type(d).DiskMode(d.mode).name}
                    for d in node.data_disks
                ]
            elif path == "network_config.enable_external_ips":
                if stored.network_configs:
                    raise api_exceptions.InvalidArgument(
                        "network_config is unset on a TPU VM with network_configs"
                    )
                stored.network_config.enable_external_ips = node.network_config.enable_external_ips
            else:
                raise api_exceptions.InvalidArgument(f"update_mask {path} is not supported")
        return done_operation()

    def get_queued_resource(self, *, name: str, timeout: float) -> Any:
        self._called("get", timeout)
        if self.get_errors:
            raise self.get_errors.pop(0)
        if self.resource is None:
            raise api_exceptions.NotFound(f"{name} not found")
        self.polls += 1
        if self.deleting is not None:
            if self.deleting == 0:
                self.resource = None
                self.nodes.clear()
                self.deleting = None
                raise api_exceptions.NotFound(f"{name} not found")
            self.deleting -= 1
            state = State.DELETING
        else:
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        resource = self.resource
        api: Any = tpu_v2alpha1 if isinstance(resource, tpu_v2alpha1.QueuedResource) else tpu_v2
        status = api.QueuedResourceState(state=int(state), state_initiator=int(self.initiator))
        if self.error:
            status.failed_data = api.QueuedResourceState.FailedData(
                error=status_pb2.Status(code=8, message=self.error)
            )
        answer: Any = type(resource)(resource)
        answer.state = status
        return answer

    def delete_queued_resource(self, request: Any, *, timeout: float) -> Any:
        self._called("delete", timeout)
        if self.delete_errors:
            raise self.delete_errors.pop(0)
        if self.resource is None:
            raise api_exceptions.NotFound(f"{request.name} not found")
        self.deleted.append(request)
        if self.deleting is None:
            self.deleting = self.delete_lingers
        operation: Any = PendingOperation() if self.delete_hangs else done_operation()
        self.operations.append(operation)
        return operation


def factory(client: FakeTpuClient, apis: list[str] | None = None) -> Callable[[str], Any]:
    """A client factory that hands out `client` and records which API surface was asked for."""

    def make(api: str) -> FakeTpuClient:
        if apis is not None:
            apis.append(api)
        return client

    return make
