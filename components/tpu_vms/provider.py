"""A Pulumi dynamic provider for Cloud TPU queued resources, on Google's `google-cloud-tpu` client.

The provider's own `gcp.tpu.V2QueuedResource` (pulumi-gcp 10.2) takes only a node id, runtime,
accelerator and network per node spec: no multislice node count or prefix, no spot, reserved or
best-effort tier, no reservation, and no node service account, labels, metadata or data disks.
Requests go to the GA `tpu_v2` API, which has all of those but two; `tpu_v2alpha1` is used only
for what v2 lacks: the best-effort tier and the boot disk config (google-cloud-tpu 1.28.0). The
API has no update call for a queued resource: every input that reaches it replaces it.

Nothing that bills is left unrecorded. Every call has a deadline (the client sets none) and is
retried with back-off on transient errors. After the create request is sent, any failure
(refusal, FAILED or SUSPENDED, no ACTIVE in time, an interrupt) deletes what was created, or
says how to, before the error is raised, because Pulumi records nothing of a failed create.
If the provider is killed before it can clean up, the next `pulumi up` meets the queued
resource (409) and adopts it when it carries this entry's stack labels and node spec.

This module's path is in every stack's state (Pulumi pickles the provider by reference): keep
it at `components/tpu_vms/provider.py`. `components/tpu_vm_provider.py` stays for states
written before the move.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

import pulumi
import pulumi.dynamic
from google.api_core import exceptions as api_exceptions
from google.api_core import operation as api_operation
from google.cloud import tpu_v2, tpu_v2alpha1
from google.protobuf import field_mask_pb2

from components.api_calls import RetryingCalls, describe_error, utcnow
from components.startup import READY_PATH
from components.startup_wait import StartupWaitBase

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
V2 = "v2"
V2ALPHA1 = "v2alpha1"
DEAD_STATES = frozenset({"FAILED", "SUSPENDING", "SUSPENDED"})
"""A queued resource in these states never becomes ACTIVE again; it stays until deleted
(tpu/docs/queued-resources: a SUSPENDED request "is no longer eligible for further
allocation"; a FAILED one "remains in the queue until it is explicitly deleted")."""
GONE = "GONE"
"""The state `diff` reports for a queued resource the API no longer has."""
CAPACITY = ("on-demand", "reserved", "spot", "best-effort")
REPLACE_KEYS = (
    "project",
    "zone",
    "queuedResourceId",
    "acceleratorType",
    "runtimeVersion",
    "nodeCount",
    "nodePrefix",
    "capacity",
    "reservationName",
    "serviceAccount",
    "network",
    "subnetwork",
    "queueCount",
    "additionalNetworks",
    "secureBoot",
    "bootDisk",
)
"""Inputs that reach the TPU VMs and that Cloud TPU cannot change on them: the queued resource
has no update call, and UpdateNode takes none of these."""
EXTERNAL_IPS = "enableExternalIps"
IN_PLACE_KEYS = ("labels", "metadata", "tags", "dataDisks", EXTERNAL_IPS)
"""Inputs Cloud TPU changes on running TPU VMs: UpdateNode's update_mask takes labels, metadata,
tags and `network_config.enable_external_ips` (tpu_v2 and tpu_v2alpha1 UpdateNodeRequest,
google-cloud-tpu 1.28.0), and data_disks through v2alpha1, as gcloud alpha's `tpu-vm
attach-disk` and `detach-disk` send it (gcloud 578.0.0 surface/compute/tpus/tpu_vm/
attach_disk.py: UpdateNode with update_mask 'data_disks'). `update` applies them to every TPU
VM of the queued resource; nothing is replaced. The public IP is the first network's
`network_config`: with `additionalNetworks` the TPU VMs carry `network_configs` instead, which
the mask does not reach, so there a change of it replaces them."""
UPDATE_FIELDS = {
    "labels": "labels",
    "metadata": "metadata",
    "tags": "tags",
    "dataDisks": "data_disks",
    EXTERNAL_IPS: "network_config.enable_external_ips",
}
"""Each in-place input's field in UpdateNode's update_mask."""
NODE_UPDATE_SECONDS = 600.0
"""How long one TPU VM's update operation is waited for."""
UPDATE_KEYS = ("timeoutSeconds", "queueingPolicy", "apiVersion")
"""Inputs that shape only how a request waits, or which API surface serves it: a change is
recorded without touching the ACTIVE queued resource, and applies to its next request."""
INPUT_DEFAULTS: dict[str, Any] = {
    "queueCount": 0,
    "additionalNetworks": [],
    "bootDisk": {},
    "queueingPolicy": {},
    # States written before the GA surface was used were created through v2alpha1.
    "apiVersion": V2ALPHA1,
}
"""Inputs added since the first release, as a state written before them reads: the same
request, so that upgrading the program replaces nothing on their account."""

ACCEPT_SECONDS = 600.0
"""How long to wait for the create operation, which ends when the request is accepted into the
queue (Google's python-docs-samples read the queueing policy from `operation.result()`)."""
DELETE_SECONDS = 30 * 60.0
"""How long a forced delete is waited for. No Cloud TPU doc bounds it; gcloud's `queued-resources
delete` waits at most 30 minutes (googlecloudsdk api_lib/util/waiter.py max_wait_ms=1800000),
where api-core's operation default would give up after 900 s."""

QueuedResourceMessage = tpu_v2.QueuedResource | tpu_v2alpha1.QueuedResource


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


class QueuedResourceError(Exception):
    """A queued resource that did not become ACTIVE or go away; the message says why and what
    to do."""


class ForeignQueuedResource(QueuedResourceError):
    """A queued resource by this entry's id that this entry did not create."""


def _default_client(api: str = V2ALPHA1) -> TpuClient:
    # The default is what states pickled before the API choice called (no argument).
    return tpu_v2.TpuClient() if api == V2 else tpu_v2alpha1.TpuClient()


_utcnow = utcnow
"""Kept by this name: states pickled before the move name it as the provider's `_now`."""


def _input(props: Mapping[str, Any], key: str) -> Any:
    return props.get(key, INPUT_DEFAULTS.get(key))


def qualified_name(props: Mapping[str, Any]) -> str:
    return (
        f"projects/{props['project']}/locations/{props['zone']}"
        f"/queuedResources/{props['queuedResourceId']}"
    )


def delete_command(props: Mapping[str, Any]) -> str:
    return (
        f"gcloud compute tpus queued-resources delete {props['queuedResourceId']} "
        f"--zone={props['zone']} --project={props['project']} --force"
    )


def node_names(prefix: str, node_count: int) -> list[str]:
    """The TPU VMs a queued resource creates: one node named `prefix`, or for a multislice
    request `prefix-0` ... `prefix-(n-1)` (MultisliceParams.node_id_prefix in the v2 API).
    MaxText's multihost_runner.py finds exactly these with `--TPU_PREFIX=<prefix>`."""
    if node_count == 1:
        return [prefix]
    return [f"{prefix}-{i}" for i in range(node_count)]


def _queueing_policy(
    policy: Mapping[str, Any], now: datetime.datetime, wait_seconds: float
) -> tpu_v2.QueuedResource.QueueingPolicy:
    """The request's queueing policy. Its bounds are one oneof (QueueingPolicy.
    start_timing_constraints), so an earliest and a latest start together become a
    `valid_interval`, as gcloud builds it. Without a latest start the request expires when
    `pulumi up` stops waiting for it, so a request whose `pulumi up` was killed cannot start
    billing later."""
    after = _instant(policy, "validAfter", now)
    until = _instant(policy, "validUntil", now) or now + datetime.timedelta(seconds=wait_seconds)
    qp = tpu_v2.QueuedResource.QueueingPolicy
    if after is None:
        if "validUntilTime" in policy:
            return qp(valid_until_time=until)
        return qp(valid_until_duration=until - now)
    if after >= until:
        raise QueuedResourceError(
            f"the request may start from {after.isoformat()} but must start by "
            f"{until.isoformat()}; move validAfter earlier, or raise timeoutMinutes"
        )
    # google.type.Interval; proto-plus takes datetimes for its Timestamp fields.
    return qp(valid_interval={"start_time": after, "end_time": until})


def _instant(
    policy: Mapping[str, Any], bound: str, now: datetime.datetime
) -> datetime.datetime | None:
    if f"{bound}Seconds" in policy:
        return now + datetime.timedelta(seconds=int(policy[f"{bound}Seconds"]))
    if f"{bound}Time" in policy:
        return datetime.datetime.fromisoformat(policy[f"{bound}Time"])
    return None


def build_request(
    props: Mapping[str, Any], now: datetime.datetime | None = None
) -> QueuedResourceMessage:
    """The QueuedResource for the provider's inputs, of the API surface `apiVersion` names."""
    project, zone = props["project"], props["zone"]
    primary = tpu_v2.NetworkConfig(
        network=props["network"],
        subnetwork=props["subnetwork"],
        enable_external_ips=bool(props["enableExternalIps"]),
        queue_count=int(_input(props, "queueCount")),
    )
    node = tpu_v2.Node(
        accelerator_type=props["acceleratorType"],
        runtime_version=props["runtimeVersion"],
        service_account=tpu_v2.ServiceAccount(
            email=props["serviceAccount"], scope=[CLOUD_PLATFORM_SCOPE]
        ),
        shielded_instance_config=tpu_v2.ShieldedInstanceConfig(
            enable_secure_boot=bool(props["secureBoot"])
        ),
        labels=dict(props["labels"]),
        metadata=dict(props["metadata"]),
        tags=list(props["tags"]),
        data_disks=[
            tpu_v2.AttachedDisk(source_disk=d["sourceDisk"], mode=d["mode"])
            for d in props["dataDisks"]
        ],
    )
    extra = [
        tpu_v2.NetworkConfig(
            network=n["network"], subnetwork=n["subnetwork"], queue_count=int(n["queueCount"])
        )
        for n in _input(props, "additionalNetworks")
    ]
    # Node: "network_config and network_configs are mutually exclusive".
    if extra:
        node.network_configs = [primary, *extra]
    else:
        node.network_config = primary
    spec = tpu_v2.QueuedResource.Tpu.NodeSpec(
        parent=f"projects/{project}/locations/{zone}", node=node
    )
    count = int(props["nodeCount"])
    if count == 1:
        spec.node_id = props["nodePrefix"]
    else:
        # MultisliceParams: "node_count ... must be greater than 1"; one oneof with node_id.
        spec.multislice_params = tpu_v2.QueuedResource.Tpu.NodeSpec.MultisliceParams(
            node_count=count, node_id_prefix=props["nodePrefix"]
        )
    request = tpu_v2.QueuedResource(
        tpu=tpu_v2.QueuedResource.Tpu(node_spec=[spec]),
        queueing_policy=_queueing_policy(
            _input(props, "queueingPolicy"), now or _utcnow(), float(props["timeoutSeconds"])
        ),
    )
    capacity = props["capacity"]
    if capacity not in CAPACITY:
        raise ValueError(f"capacity '{capacity}' is not one of {', '.join(CAPACITY)}")
    if capacity == "reserved":
        # gcloud's GA `--reserved` asks for any matching reservation in the zone this way
        # (command_lib/compute/tpus/queued_resources/util.py).
        request.reservation_name = (
            props["reservationName"] or f"projects/{project}/locations/{zone}/reservations/-"
        )
    elif capacity == "spot":
        request.spot = tpu_v2.QueuedResource.Spot()
    if _input(props, "apiVersion") == V2:
        if capacity == "best-effort" or _input(props, "bootDisk"):
            raise ValueError("best-effort capacity and bootDisk need apiVersion v2alpha1")
        return request
    return _v2alpha1(request, props)


def _v2alpha1(request: tpu_v2.QueuedResource, props: Mapping[str, Any]) -> QueuedResourceMessage:
    """The same request on the v2alpha1 surface, plus what only it has."""
    # Through JSON, which carries the well-known types (the interval's timestamps) as the API
    # does; the two surfaces name the multislice parameters differently.
    data = json.loads(
        tpu_v2.QueuedResource.to_json(
            request, preserving_proto_field_name=True, always_print_fields_with_no_presence=False
        )
    )
    for spec in data["tpu"]["node_spec"]:
        if "multislice_params" in spec:
            spec["multi_node_params"] = spec.pop("multislice_params")
    alpha = cast(
        tpu_v2alpha1.QueuedResource, tpu_v2alpha1.QueuedResource.from_json(json.dumps(data))
    )
    if props["capacity"] == "reserved":
        # gcloud alpha's `--reserved` is Guaranteed.reserved, with the reservation if named.
        alpha.guaranteed = tpu_v2alpha1.QueuedResource.Guaranteed(reserved=True)
        alpha.reservation_name = props["reservationName"]
    elif props["capacity"] == "best-effort":
        alpha.best_effort = tpu_v2alpha1.QueuedResource.BestEffort()
    boot = _input(props, "bootDisk")
    if boot:
        config = tpu_v2alpha1.BootDiskConfig(
            enable_confidential_compute=bool(boot.get("confidentialCompute", False))
        )
        if boot.get("kmsKeyName"):
            config.customer_encryption_key = tpu_v2alpha1.CustomerEncryptionKey(
                kms_key_name=boot["kmsKeyName"]
            )
        alpha.tpu.node_spec[0].node.boot_disk_config = config
    return alpha


def _state(resource: QueuedResourceMessage) -> str:
    return tpu_v2.QueuedResourceState.State(resource.state.state).name


def _failure_reason(resource: QueuedResourceMessage) -> str:
    state = resource.state
    error = state.failed_data.error if "failed_data" in state else None
    if error is not None and error.message:
        return error.message
    initiator = tpu_v2.QueuedResourceState.StateInitiator(state.state_initiator).name
    if initiator == "SERVICE":
        return "the Cloud TPU service ended it (for spot or best-effort capacity: preemption)"
    if initiator == "USER":
        return "a user ended it"
    return "no reason given"


def _echoed_nodes(resource: QueuedResourceMessage) -> list[str]:
    """The TPU VM names a queued resource holds: GET lists one node spec per node with its
    `node_id` (what gcloud's `queued-resources ssh` iterates), or the multislice parameters."""
    names: list[str] = []
    for spec in resource.tpu.node_spec:
        params = (
            spec.multislice_params
            if isinstance(spec, tpu_v2.QueuedResource.Tpu.NodeSpec)
            else spec.multi_node_params
        )
        if spec.node_id:
            names.append(spec.node_id)
        elif params.node_count:
            names += node_names(params.node_id_prefix, params.node_count)
    return sorted(names)


def _merged(current: Mapping[str, str], old: Mapping[str, str], new: Mapping[str, str]):
    """`current` with what this entry set before (`old`) replaced by what it sets now."""
    return {**{k: v for k, v in current.items() if k not in old}, **new}


def _node_update(
    api: str,
    path: str,
    current: Any,
    olds: Mapping[str, Any],
    news: Mapping[str, Any],
    changed: list[str],
) -> Any:
    """The Node message UpdateNode takes for `changed`, on the API surface `api`: each field
    as the TPU VM has it now, less what the entry set before, plus what it sets now."""
    types: Any = tpu_v2 if api == V2 else tpu_v2alpha1
    node = types.Node(name=path)
    if "labels" in changed:
        node.labels = _merged(current.labels, _input(olds, "labels"), _input(news, "labels"))
    if "metadata" in changed:
        node.metadata = _merged(
            current.metadata, _input(olds, "metadata"), _input(news, "metadata")
        )
    if "tags" in changed:
        old_tags = set(_input(olds, "tags"))
        kept = [t for t in current.tags if t not in old_tags]
        node.tags = list(dict.fromkeys([*kept, *_input(news, "tags")]))
    if "dataDisks" in changed:
        old_disks = {d["sourceDisk"] for d in _input(olds, "dataDisks")}
        disks = [
            types.AttachedDisk(source_disk=d.source_disk, mode=d.mode)
            for d in current.data_disks
            if d.source_disk not in old_disks
        ]
        disks += [
            types.AttachedDisk(source_disk=d["sourceDisk"], mode=d["mode"])
            for d in _input(news, "dataDisks")
        ]
        node.data_disks = disks
    if EXTERNAL_IPS in changed:
        node.network_config = types.NetworkConfig(
            enable_external_ips=bool(_input(news, EXTERNAL_IPS))
        )
    return node


def _create_time(resource: QueuedResourceMessage) -> str:
    # proto-plus gives a Timestamp field as a datetime, or None while unset.
    created: Any = resource.create_time
    return created.isoformat() if created else ""


def why_foreign(resource: QueuedResourceMessage, props: Mapping[str, Any]) -> str | None:
    """Why an existing queued resource by this entry's id is not the one this entry asks for,
    or None when it is: the same TPU VMs, accelerator, software and account, carrying every
    label the entry sets (the stack's `ai-infra-stack` among them)."""
    specs = list(resource.tpu.node_spec)
    if not specs:
        return "it holds no TPU node spec"
    node = specs[0].node
    wanted = {
        "accelerator type": (node.accelerator_type, props["acceleratorType"]),
        "software version": (node.runtime_version, props["runtimeVersion"]),
        "service account": (node.service_account.email, props["serviceAccount"]),
        "TPU VMs": (
            ", ".join(_echoed_nodes(resource)),
            ", ".join(sorted(node_names(props["nodePrefix"], int(props["nodeCount"])))),
        ),
    }
    for what, (got, want) in wanted.items():
        if got != want:
            return f"its {what} is '{got}', this entry's '{want}'"
    missing = sorted(k for k, v in props["labels"].items() if node.labels.get(k) != v)
    if missing:
        return f"it lacks this entry's labels {', '.join(missing)}"
    return None


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
        return self._client_factory(_input(props, "apiVersion"))

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
                if _input(props, "apiVersion") == V2
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
                state = _state(existing)
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
            state = _state(resource)
            if state == "ACTIVE":
                return resource
            if state in DEAD_STATES or state == "DELETING":
                raise QueuedResourceError(
                    f"queued resource {name} is {state}: {_failure_reason(resource)}; for "
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
        return _state(resource)

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        replaces = [key for key in REPLACE_KEYS if _input(olds, key) != _input(news, key)]
        if _input(olds, EXTERNAL_IPS) != _input(news, EXTERNAL_IPS) and (
            _input(olds, "additionalNetworks") or _input(news, "additionalNetworks")
        ):
            replaces.append(EXTERNAL_IPS)
        # A preempted (SUSPENDED) or FAILED request never runs again, and one deleted outside
        # the stack is gone: the next `pulumi up` asks again by replacing it.
        state = self.live_state(_id, olds)
        if state in DEAD_STATES or state == GONE:
            replaces.append("state")
        changed = bool(replaces) or any(
            _input(olds, key) != _input(news, key) for key in (*IN_PLACE_KEYS, *UPDATE_KEYS)
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
        changed = [key for key in IN_PLACE_KEYS if _input(olds, key) != _input(news, key)]
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
        api = V2ALPHA1 if "dataDisks" in changed else _input(news, "apiVersion")
        client = self._client_factory(api)
        name = qualified_name(news)
        resource = self._get(client, name)
        state = _state(resource) if resource is not None else GONE
        if state != "ACTIVE":
            why = f": {_failure_reason(resource)}" if resource is not None else ""
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
                wanted = _node_update(api, path, current, olds, news, changed)
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
            if _input(props, "apiVersion") == V2
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
            if _state(existing) != "DELETING":
                raise
        else:
            # Past this, the poll below says what is still deleting.
            with contextlib.suppress(TimeoutError):
                operation.result(timeout=self._delete_seconds)
        while (existing := self._get(client, name)) is not None:
            if self._clock() >= deadline:
                nodes = ", ".join(_echoed_nodes(existing)) or "none listed"
                raise QueuedResourceError(
                    f"queued resource {name} is still {_state(existing)} (TPU VMs: {nodes}) "
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
            "state": _state(resource),
            "nodeNames": node_names(props["nodePrefix"], int(props["nodeCount"])),
            "adopted": adopted,
            # Tells a new request from the one it replaced: the startup wait waits again.
            "created": _create_time(resource),
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
        client = self._client_factory(_input(props, "apiVersion"))
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
