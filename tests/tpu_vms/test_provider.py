"""The queued resource provider's create, read, diff and delete against a fake Cloud TPU client."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import tpu_v2alpha1 as tpu
from google.rpc import status_pb2
from pulumi.dynamic.dynamic import serialize_provider

from components.tpu_vms.provider import (
    QueuedResourceError,
    QueuedResourceProvider,
    build_request,
    node_names,
)
from plan.engine import REPO_ROOT

State = tpu.QueuedResourceState.State
NAME = "projects/p-123456/locations/us-central2-b/queuedResources/maxtext"

PROPS: dict[str, Any] = {
    "project": "p-123456",
    "zone": "us-central2-b",
    "queuedResourceId": "maxtext",
    "acceleratorType": "v4-8",
    "runtimeVersion": "tpu-ubuntu2204-base",
    "nodeCount": 2,
    "nodePrefix": "maxtext",
    "capacity": "reserved",
    "reservationName": "",
    "serviceAccount": "ai-dev-maxtext@p-123456.iam.gserviceaccount.com",
    "network": "projects/p-123456/global/networks/ai-dev-vpc",
    "subnetwork": "projects/p-123456/regions/us-central2/subnetworks/ai-dev-subnet",
    "enableExternalIps": False,
    "secureBoot": False,
    "metadata": {"startup-script": "echo hi"},
    "labels": {"managed-by": "pulumi"},
    "tags": [],
    "dataDisks": [],
    "timeoutSeconds": 600,
}


class Operation:
    def __init__(self) -> None:
        self.waited = False

    def result(self) -> None:
        self.waited = True


class FakeTpuClient:
    """Serves queued resource states in order (the last one forever) and records calls."""

    def __init__(
        self,
        states: list[State],
        *,
        error: str = "",
        initiator: tpu.QueuedResourceState.StateInitiator = (
            tpu.QueuedResourceState.StateInitiator.STATE_INITIATOR_UNSPECIFIED
        ),
        create_error: Exception | None = None,
        get_error: Exception | None = None,
        delete_error: Exception | None = None,
    ) -> None:
        self.states = list(states)
        self.error = error
        self.initiator = initiator
        self.create_error = create_error
        self.get_error = get_error
        self.delete_error = delete_error
        self.created: list[tpu.CreateQueuedResourceRequest] = []
        self.deleted: list[tpu.DeleteQueuedResourceRequest] = []
        self.operations: list[Operation] = []
        self.polls = 0

    def create_queued_resource(self, request: tpu.CreateQueuedResourceRequest) -> Operation:
        if self.create_error:
            raise self.create_error
        self.created.append(request)
        return Operation()

    def get_queued_resource(self, *, name: str) -> tpu.QueuedResource:
        if self.get_error:
            raise self.get_error
        self.polls += 1
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        status = tpu.QueuedResourceState(state=state, state_initiator=self.initiator)
        if self.error:
            status.failed_data = tpu.QueuedResourceState.FailedData(
                error=status_pb2.Status(code=8, message=self.error)
            )
        return tpu.QueuedResource(name=name, state=status)

    def delete_queued_resource(self, request: tpu.DeleteQueuedResourceRequest) -> Operation:
        if self.delete_error:
            raise self.delete_error
        self.deleted.append(request)
        operation = Operation()
        self.operations.append(operation)
        return operation


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


def provider(client: FakeTpuClient, clock: Clock | None = None) -> QueuedResourceProvider:
    clock = clock or Clock()
    return QueuedResourceProvider(
        client_factory=lambda: client, sleep=clock.sleep, clock=clock, poll_seconds=30
    )


def test_create_waits_through_accepted_and_provisioning_until_active():
    client = FakeTpuClient(
        [State.ACCEPTED, State.WAITING_FOR_RESOURCES, State.PROVISIONING, State.ACTIVE]
    )
    clock = Clock()
    result = provider(client, clock).create(dict(PROPS))
    assert result.id == NAME
    assert result.outs is not None
    assert result.outs["state"] == "ACTIVE"
    assert result.outs["nodeNames"] == ["maxtext-0", "maxtext-1"]
    assert client.polls == 4 and clock.sleeps == [30, 30, 30]
    (request,) = client.created
    assert request.parent == "projects/p-123456/locations/us-central2-b"
    assert request.queued_resource_id == "maxtext"
    spec = request.queued_resource.tpu.node_spec[0]
    assert spec.multi_node_params.node_count == 2
    assert spec.multi_node_params.node_id_prefix == "maxtext"
    assert request.queued_resource.guaranteed.reserved is True
    assert client.deleted == []


@pytest.mark.parametrize(
    ("state", "error", "initiator", "reason"),
    [
        (State.FAILED, "no capacity for v4-8 in us-central2-b", 0, "no capacity for v4-8"),
        (State.SUSPENDED, "", tpu.QueuedResourceState.StateInitiator.SERVICE, "preemption"),
        (State.SUSPENDING, "", tpu.QueuedResourceState.StateInitiator.USER, "a user ended it"),
    ],
)
def test_a_dead_request_is_deleted_and_the_error_says_which_state_and_why(
    state, error, initiator, reason
):
    client = FakeTpuClient([State.PROVISIONING, state], error=error, initiator=initiator)
    with pytest.raises(QueuedResourceError) as raised:
        provider(client).create(dict(PROPS))
    message = str(raised.value)
    assert f"is {state.name}" in message and reason in message
    (deleted,) = client.deleted
    assert deleted.name == NAME and deleted.force is True
    assert client.operations[0].waited


def test_a_request_not_active_in_time_is_deleted_and_the_wait_is_bounded():
    client = FakeTpuClient([State.WAITING_FOR_RESOURCES])
    clock = Clock()
    with pytest.raises(QueuedResourceError, match="still WAITING_FOR_RESOURCES after 600 s"):
        provider(client, clock).create({**PROPS, "timeoutSeconds": 600})
    assert clock.now == 600
    assert client.polls == 21
    assert [d.force for d in client.deleted] == [True]


def test_a_409_on_create_names_the_fix_and_deletes_nothing_it_does_not_own():
    client = FakeTpuClient([State.ACTIVE], create_error=api_exceptions.AlreadyExists("exists"))
    with pytest.raises(QueuedResourceError) as raised:
        provider(client).create(dict(PROPS))
    message = str(raised.value)
    assert "already exists" in message and "pulumi import" in message and "--force" in message
    assert client.deleted == [] and client.polls == 0


def test_delete_forces_and_waits_for_the_operation():
    client = FakeTpuClient([State.ACTIVE])
    provider(client).delete(NAME, dict(PROPS))
    (deleted,) = client.deleted
    assert deleted.name == NAME and deleted.force is True
    assert client.operations[0].waited


def test_delete_of_a_resource_already_gone_succeeds():
    client = FakeTpuClient([State.ACTIVE], delete_error=api_exceptions.NotFound("gone"))
    provider(client).delete(NAME, dict(PROPS))


def test_other_delete_errors_propagate():
    client = FakeTpuClient([State.ACTIVE], delete_error=api_exceptions.PermissionDenied("no"))
    with pytest.raises(api_exceptions.PermissionDenied):
        provider(client).delete(NAME, dict(PROPS))


def test_read_reports_a_resource_deleted_outside_pulumi_as_gone():
    client = FakeTpuClient([State.ACTIVE], get_error=api_exceptions.NotFound("gone"))
    result = provider(client).read(NAME, dict(PROPS))
    assert result.id == "" and result.outs == {}


def test_read_reports_the_live_state():
    client = FakeTpuClient([State.SUSPENDED])
    result = provider(client).read(NAME, dict(PROPS))
    assert result.id == NAME
    assert result.outs is not None and result.outs["state"] == "SUSPENDED"


def test_every_api_input_replaces_and_only_the_wait_bound_updates_in_place():
    p = provider(FakeTpuClient([State.ACTIVE]))
    same = p.diff(NAME, dict(PROPS), dict(PROPS))
    assert not same.changes and same.replaces == []
    more = p.diff(NAME, dict(PROPS), {**PROPS, "nodeCount": 3, "labels": {"a": "b"}})
    assert more.changes and more.replaces == ["nodeCount", "labels"]
    assert more.delete_before_replace is True
    longer = p.diff(NAME, dict(PROPS), {**PROPS, "timeoutSeconds": 7200})
    assert longer.changes and longer.replaces == []
    updated = p.update(NAME, dict(PROPS), {**PROPS, "timeoutSeconds": 7200})
    assert updated.outs is not None and updated.outs["timeoutSeconds"] == 7200


def test_one_slice_is_requested_by_node_id_not_multi_node_params():
    # MultiNodeParams.node_count "needs to be > 1" (v2alpha1 API reference).
    request = build_request({**PROPS, "nodeCount": 1, "nodePrefix": "solo"})
    spec = request.tpu.node_spec[0]
    assert spec.node_id == "solo"
    assert "multi_node_params" not in spec
    assert node_names("solo", 1) == ["solo"]


@pytest.mark.parametrize(
    ("capacity", "tier"),
    [
        ("on-demand", None),
        ("spot", "spot"),
        ("best-effort", "best_effort"),
        ("reserved", "guaranteed"),
    ],
)
def test_capacity_maps_to_exactly_one_tier(capacity, tier):
    request = build_request({**PROPS, "capacity": capacity})
    tiers = [t for t in ("spot", "best_effort", "guaranteed") if t in request]
    assert tiers == ([tier] if tier else [])


def test_a_named_reservation_and_the_node_settings_reach_the_request():
    reservation = "projects/p-123456/locations/us-central2-b/reservations/v4-res"
    disk = {"sourceDisk": "projects/p-123456/zones/us-central2-b/disks/data", "mode": "READ_ONLY"}
    request = build_request({**PROPS, "reservationName": reservation, "dataDisks": [disk]})
    assert request.reservation_name == reservation
    node = request.tpu.node_spec[0].node
    assert node.accelerator_type == "v4-8"
    assert node.runtime_version == "tpu-ubuntu2204-base"
    assert node.network_config.enable_external_ips is False
    assert node.network_config.subnetwork == PROPS["subnetwork"]
    assert node.service_account.email == PROPS["serviceAccount"]
    assert list(node.service_account.scope) == ["https://www.googleapis.com/auth/cloud-platform"]
    assert dict(node.metadata) == {"startup-script": "echo hi"}
    assert node.data_disks[0].mode == tpu.AttachedDisk.DiskMode.READ_ONLY


def test_an_unknown_capacity_is_refused_rather_than_sent_as_on_demand():
    with pytest.raises(ValueError, match="flex-start"):
        build_request({**PROPS, "capacity": "flex-start"})


def test_the_provider_survives_pulumis_serialization_into_a_fresh_process():
    """Pulumi pickles the provider into the state and runs it in another process; a client
    held in the provider (a gRPC channel) would not pickle, and a broken import would fail."""
    blob = serialize_provider(QueuedResourceProvider())
    code = (
        "import base64, sys, dill\n"
        "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
        "d = p.diff('x', {'nodeCount': 1}, {'nodeCount': 2})\n"
        "print(type(p).__name__, d.replaces, d.delete_before_replace)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        input=blob,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert result.stdout.split() == ["QueuedResourceProvider", "['nodeCount']", "True"]
