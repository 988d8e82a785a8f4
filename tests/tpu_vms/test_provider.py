"""The queued resource provider against a fake Cloud TPU client on the library's own types: the
request it builds, how it waits, and every way a create can fail after the request was sent,
none of which may leave a queued resource billing outside the stack's state."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import tpu_v2, tpu_v2alpha1
from google.rpc import error_details_pb2, status_pb2

from components.api_calls import CALL_SECONDS
from components.tpu_vms.provider import (
    DELETE_SECONDS,
    ForeignQueuedResource,
    QueuedResourceError,
    QueuedResourceProvider,
    build_request,
    node_names,
)
from tests.tpu_vms.fakes import Clock, FakeTpuClient, Initiator, Lost, State, factory

NAME = "projects/p-123456/locations/us-central2-b/queuedResources/maxtext"
NOW = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)
DELETE_COMMAND = (
    "gcloud compute tpus queued-resources delete maxtext --zone=us-central2-b "
    "--project=p-123456 --force"
)

OLD_PROPS: dict[str, Any] = {
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
    "labels": {"managed-by": "pulumi", "ai-infra-stack": "ai-dev"},
    "tags": [],
    "dataDisks": [],
    "timeoutSeconds": 600,
}
"""The inputs of a queued resource as the first release recorded them."""
PROPS: dict[str, Any] = {
    **OLD_PROPS,
    "metadata": {
        "startup-script": "echo hi",
        "enable-oslogin": "TRUE",
        "block-project-ssh-keys": "TRUE",
    },
    "queueCount": 0,
    "additionalNetworks": [],
    "bootDisk": {},
    "queueingPolicy": {},
    "apiVersion": "v2",
}


def provider(client: FakeTpuClient, clock: Clock | None = None, **kwargs: Any):
    clock = clock or Clock()
    p = QueuedResourceProvider(
        client_factory=factory(client, kwargs.pop("apis", None)),
        sleep=clock.sleep,
        clock=clock,
        poll_seconds=30,
        now=lambda: NOW,
    )
    for key, value in kwargs.items():
        setattr(p, f"_{key}", value)
    return p


def existing(props: dict[str, Any], **changes: Any) -> Any:
    """The queued resource a create of `props` left behind, with node fields changed."""
    resource = build_request(props, NOW)
    for key, value in changes.items():
        setattr(resource.tpu.node_spec[0].node, key, value)
    resource.name = NAME
    return resource


def quota_error(message: str) -> api_exceptions.ResourceExhausted:
    info = error_details_pb2.ErrorInfo(reason="RESOURCE_QUOTA_EXCEEDED", domain="googleapis.com")
    return api_exceptions.ResourceExhausted(message, error_info=info)


# -- the request ------------------------------------------------------------------------------


def test_create_waits_through_accepted_and_provisioning_until_active():
    client = FakeTpuClient(
        [State.ACCEPTED, State.WAITING_FOR_RESOURCES, State.PROVISIONING, State.ACTIVE]
    )
    clock = Clock()
    apis: list[str] = []
    result = provider(client, clock, apis=apis).create(dict(PROPS))
    assert result.id == NAME
    assert result.outs is not None
    assert (result.outs["state"], result.outs["adopted"]) == ("ACTIVE", False)
    assert result.outs["nodeNames"] == ["maxtext-0", "maxtext-1"]
    assert client.polls == 4 and clock.sleeps == [30, 30, 30]
    (request,) = client.created
    assert isinstance(request, tpu_v2.CreateQueuedResourceRequest) and apis == ["v2"]
    assert request.parent == "projects/p-123456/locations/us-central2-b"
    assert request.queued_resource_id == "maxtext"
    assert len(request.request_id) == 36, "an idempotency UUID"
    spec = request.queued_resource.tpu.node_spec[0]
    assert (spec.multislice_params.node_count, spec.multislice_params.node_id_prefix) == (
        2,
        "maxtext",
    )
    # GA's --reserved: any matching reservation in the zone.
    assert request.queued_resource.reservation_name == (
        "projects/p-123456/locations/us-central2-b/reservations/-"
    )
    # Without queueing bounds the request expires when `pulumi up` stops waiting.
    policy = request.queued_resource.queueing_policy
    assert policy.valid_until_duration == datetime.timedelta(seconds=600)
    assert client.deleted == []
    assert {method for method, _ in client.calls} == {"create", "get"}
    assert all(timeout == CALL_SECONDS for _, timeout in client.calls), client.calls


def test_one_slice_is_requested_by_node_id_not_multislice_params():
    request = build_request({**PROPS, "nodeCount": 1, "nodePrefix": "solo"}, NOW)
    spec = request.tpu.node_spec[0]
    assert spec.node_id == "solo"
    assert "multislice_params" not in spec
    assert node_names("solo", 1) == ["solo"]


@pytest.mark.parametrize(
    ("capacity", "api", "tiers", "reservation"),
    [
        ("on-demand", "v2", [], ""),
        ("spot", "v2", ["spot"], ""),
        ("reserved", "v2", [], "projects/p-123456/locations/us-central2-b/reservations/-"),
        ("reserved", "v2alpha1", ["guaranteed"], ""),
        ("best-effort", "v2alpha1", ["best_effort"], ""),
    ],
)
def test_capacity_maps_to_the_tier_each_api_surface_spells_it_with(
    capacity, api, tiers, reservation
):
    request = build_request({**PROPS, "capacity": capacity, "apiVersion": api}, NOW)
    module = tpu_v2 if api == "v2" else tpu_v2alpha1
    assert isinstance(request, module.QueuedResource)
    offered = [t for t in ("spot", "best_effort", "guaranteed") if t in type(request).meta.fields]
    assert [t for t in offered if t in request] == tiers
    assert request.reservation_name == reservation
    if api == "v2alpha1" and capacity == "reserved":
        assert request.guaranteed.reserved is True
    if api == "v2alpha1":
        # The multislice parameters keep their values across the surfaces' two spellings.
        params = request.tpu.node_spec[0].multi_node_params
        assert (params.node_count, params.node_id_prefix) == (2, "maxtext")


def test_the_ga_surface_refuses_what_only_v2alpha1_has():
    with pytest.raises(ValueError, match="v2alpha1"):
        build_request({**PROPS, "capacity": "best-effort"}, NOW)
    with pytest.raises(ValueError, match="flex-start"):
        build_request({**PROPS, "capacity": "flex-start"}, NOW)


def test_a_named_reservation_and_the_node_settings_reach_the_request():
    reservation = "projects/p-123456/locations/us-central2-b/reservations/v4-res"
    disk = {"sourceDisk": "projects/p-123456/zones/us-central2-b/disks/data", "mode": "READ_ONLY"}
    request = build_request({**PROPS, "reservationName": reservation, "dataDisks": [disk]}, NOW)
    assert request.reservation_name == reservation
    node = request.tpu.node_spec[0].node
    assert node.accelerator_type == "v4-8"
    assert node.runtime_version == "tpu-ubuntu2204-base"
    assert node.network_config.enable_external_ips is False
    assert node.network_config.subnetwork == PROPS["subnetwork"]
    assert "network_configs" not in node
    assert node.service_account.email == PROPS["serviceAccount"]
    assert list(node.service_account.scope) == ["https://www.googleapis.com/auth/cloud-platform"]
    assert node.metadata["enable-oslogin"] == "TRUE"
    assert node.data_disks[0].mode == tpu_v2.AttachedDisk.DiskMode.READ_ONLY


def test_additional_networks_and_queue_counts_become_network_configs():
    extra = {
        "network": "projects/p-123456/global/networks/dcn",
        "subnetwork": "projects/p-123456/regions/us-central2/subnetworks/dcn",
        "queueCount": 8,
    }
    node = build_request({**PROPS, "queueCount": 4, "additionalNetworks": [extra]}, NOW)
    configs = node.tpu.node_spec[0].node.network_configs
    # network_config and network_configs are mutually exclusive: only the list is sent.
    assert "network_config" not in node.tpu.node_spec[0].node
    assert [(c.network, c.queue_count) for c in configs] == [
        (PROPS["network"], 4),
        (extra["network"], 8),
    ]
    assert configs[1].enable_external_ips is False


def test_a_boot_disk_key_goes_through_v2alpha1():
    key = "projects/p-123456/locations/us-central2/keyRings/r/cryptoKeys/k"
    request = build_request(
        {**PROPS, "apiVersion": "v2alpha1", "bootDisk": {"kmsKeyName": key}}, NOW
    )
    assert isinstance(request, tpu_v2alpha1.QueuedResource)
    boot = request.tpu.node_spec[0].node.boot_disk_config
    assert boot.customer_encryption_key.kms_key_name == key
    assert boot.enable_confidential_compute is False


@pytest.mark.parametrize(
    ("policy", "field", "expected"),
    [
        ({"validUntilSeconds": 300}, "valid_until_duration", datetime.timedelta(seconds=300)),
        (
            {"validUntilTime": "2026-03-01T13:00:00Z"},
            "valid_until_time",
            datetime.datetime(2026, 3, 1, 13, 0, tzinfo=datetime.UTC),
        ),
    ],
)
def test_a_latest_start_is_sent_as_written(policy, field, expected):
    request = build_request({**PROPS, "queueingPolicy": policy}, NOW)
    assert getattr(request.queueing_policy, field) == expected


def test_an_earliest_start_becomes_an_interval_that_ends_when_pulumi_stops_waiting():
    # QueueingPolicy's bounds are one oneof: gcloud sends after + until as valid_interval.
    request = build_request({**PROPS, "queueingPolicy": {"validAfterSeconds": 120}}, NOW)
    interval = request.queueing_policy.valid_interval
    assert interval.start_time.ToDatetime(datetime.UTC) == NOW + datetime.timedelta(minutes=2)
    assert interval.end_time.ToDatetime(datetime.UTC) == NOW + datetime.timedelta(minutes=10)
    alpha = build_request(
        {**PROPS, "apiVersion": "v2alpha1", "queueingPolicy": {"validAfterSeconds": 120}}, NOW
    )
    assert alpha.queueing_policy.valid_interval == interval
    with pytest.raises(QueuedResourceError, match="move validAfter earlier"):
        build_request(
            {**PROPS, "queueingPolicy": {"validAfterTime": "2026-03-01T12:30:00+00:00"}}, NOW
        )


# -- never an orphan --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "transient",
    [
        api_exceptions.ServiceUnavailable("503"),
        api_exceptions.DeadlineExceeded("deadline"),
        api_exceptions.TooManyRequests("429 rate"),
        api_exceptions.ResourceExhausted("Quota exceeded for 'Requests per minute'"),
        api_exceptions.InternalServerError("500"),
    ],
)
def test_transient_errors_are_retried_with_back_off_as_the_same_request(transient):
    client = FakeTpuClient(
        [State.ACTIVE],
        create_errors=[transient, transient],
        get_errors=[transient],
    )
    clock = Clock()
    result = provider(client, clock).create(dict(PROPS))
    assert result.outs is not None and result.outs["state"] == "ACTIVE"
    assert clock.sleeps == [1, 2, 1], "back-off per call"
    assert len({r.request_id for r in client.created}) == 1, "retries reuse the request id"
    assert client.deleted == []


def test_a_lost_answer_to_create_is_adopted_not_duplicated_or_orphaned():
    # The server created it but the answer timed out; the retry meets a 409 whose queued
    # resource is this entry's.
    client = FakeTpuClient(
        [State.PROVISIONING, State.ACTIVE],
        create_errors=[Lost(api_exceptions.DeadlineExceeded("deadline"))],
    )
    result = provider(client).create(dict(PROPS))
    assert result.outs is not None
    assert (result.outs["state"], result.outs["adopted"]) == ("ACTIVE", True)
    assert len(client.created) == 2 and client.deleted == []


def test_a_run_killed_mid_wait_is_adopted_by_the_next_pulumi_up():
    client = FakeTpuClient([State.WAITING_FOR_RESOURCES, State.ACTIVE], exists=existing(PROPS))
    result = provider(client).create(dict(PROPS))
    assert result.outs is not None and result.outs["adopted"] is True
    assert client.deleted == []


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"labels": {"managed-by": "pulumi", "ai-infra-stack": "other"}}, "ai-infra-stack"),
        ({"labels": {}}, "lacks this entry's labels"),
        ({"accelerator_type": "v4-16"}, "accelerator type is 'v4-16'"),
        ({"runtime_version": "v2-alpha-tpuv4"}, "software version"),
    ],
)
def test_a_409_for_a_queued_resource_why_foreign_names_the_fix_and_deletes_nothing(changes, why):
    client = FakeTpuClient([State.ACTIVE], exists=existing(PROPS, **changes))
    with pytest.raises(ForeignQueuedResource) as raised:
        provider(client).create(dict(PROPS))
    message = str(raised.value)
    assert why in message and DELETE_COMMAND in message and "rename" in message
    assert "pulumi import" not in message, "import cannot adopt a dynamic resource"
    assert client.deleted == []


@pytest.mark.parametrize(("state", "lingers"), [(State.SUSPENDED, 0), (State.DELETING, 2)])
def test_a_dead_or_deleting_queued_resource_of_this_entry_is_cleared_and_asked_again(
    state, lingers
):
    client = FakeTpuClient([state], exists=existing(PROPS), delete_lingers=lingers)
    client.states = [state, State.ACTIVE]
    result = provider(client).create(dict(PROPS))
    assert result.outs is not None and result.outs["adopted"] is False
    assert len(client.deleted) == 1 and client.deleted[0].force is True
    assert len(client.created) == 2


@pytest.mark.parametrize(
    ("error", "answer"),
    [
        (status_pb2.Status(code=8, message="Quota 'TPUV4' exceeded"), "429 RESOURCE_EXHAUSTED"),
        (
            status_pb2.Status(code=3, message="runtime version not supported"),
            "400 INVALID_ARGUMENT",
        ),
    ],
)
def test_a_refused_request_surfaces_the_operations_error_not_a_404(error, answer):
    client = FakeTpuClient([State.ACTIVE], operation_error=error)
    with pytest.raises(QueuedResourceError) as raised:
        provider(client).create(dict(PROPS))
    message = str(raised.value)
    assert "the request was refused" in message and answer in message
    assert error.message in message
    assert "No queued resource was left behind" in message
    assert "404" not in message and "not found" not in message


def test_a_quota_error_on_the_call_is_not_retried():
    client = FakeTpuClient([State.ACTIVE], create_errors=[quota_error("Quota 'TPUV4' exceeded")])
    clock = Clock()
    with pytest.raises(QueuedResourceError, match="Quota 'TPUV4' exceeded") as raised:
        provider(client, clock).create(dict(PROPS))
    assert clock.sleeps == [] and len(client.created) == 1
    assert "No queued resource was left behind" in str(raised.value)


def test_transient_errors_past_the_retry_budget_delete_what_was_created():
    # Created, then every poll answers 503 until the budget of one call runs out.
    client = FakeTpuClient(
        [State.PROVISIONING], get_errors=[api_exceptions.ServiceUnavailable("503")] * 9
    )
    with pytest.raises(QueuedResourceError) as raised:
        provider(client, retry_seconds=60.0).create(dict(PROPS))
    message = str(raised.value)
    assert "503 UNAVAILABLE" in message
    assert f"Queued resource {NAME} was deleted with its TPU VMs" in message
    assert [d.force for d in client.deleted] == [True]


def test_a_clean_up_that_fails_says_how_to_delete_by_hand():
    client = FakeTpuClient(
        [State.PROVISIONING, State.FAILED],
        error="no capacity",
        delete_errors=[api_exceptions.PermissionDenied("tpu.queuedResources.delete")],
    )
    with pytest.raises(QueuedResourceError) as raised:
        provider(client).create(dict(PROPS))
    message = str(raised.value)
    assert "is FAILED: no capacity" in message
    assert "403 PERMISSION_DENIED" in message and DELETE_COMMAND in message


def test_a_create_operation_still_running_at_its_deadline_is_followed_by_polling():
    client = FakeTpuClient([State.CREATING, State.ACTIVE], create_hangs=True)
    result = provider(client).create(dict(PROPS))
    assert result.outs is not None and result.outs["state"] == "ACTIVE"


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_while_waiting_deletes_the_request_and_stays_an_interrupt(interrupt):
    client = FakeTpuClient([State.WAITING_FOR_RESOURCES])
    clock = Clock()

    def interrupted(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 2:
            raise interrupt()

    p = provider(client, clock)
    p._sleep = interrupted
    with pytest.raises(interrupt) as raised:
        p.create(dict(PROPS))
    assert any("was deleted with its TPU VMs" in note for note in raised.value.__notes__)
    assert [d.force for d in client.deleted] == [True]


@pytest.mark.parametrize(
    ("state", "error", "initiator", "reason"),
    [
        (State.FAILED, "no capacity for v4-8 in us-central2-b", 0, "no capacity for v4-8"),
        (State.SUSPENDED, "", Initiator.SERVICE, "preemption"),
        (State.SUSPENDING, "", Initiator.USER, "a user ended it"),
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
    assert "was deleted with its TPU VMs" in message
    (deleted,) = client.deleted
    assert deleted.name == NAME and deleted.force is True


def test_a_request_not_active_in_time_is_deleted_and_the_wait_is_bounded():
    client = FakeTpuClient([State.WAITING_FOR_RESOURCES])
    clock = Clock()
    with pytest.raises(QueuedResourceError, match="still WAITING_FOR_RESOURCES after 600 s"):
        provider(client, clock).create({**PROPS, "timeoutSeconds": 600})
    assert clock.now == 600
    assert [d.force for d in client.deleted] == [True]


# -- delete -----------------------------------------------------------------------------------


def test_delete_forces_and_waits_until_the_api_has_it_no_more():
    client = FakeTpuClient([State.ACTIVE], exists=existing(PROPS), delete_lingers=3)
    clock = Clock()
    provider(client, clock).delete(NAME, dict(PROPS))
    (deleted,) = client.deleted
    assert deleted.name == NAME and deleted.force is True and deleted.request_id
    assert isinstance(deleted, tpu_v2.DeleteQueuedResourceRequest)
    assert clock.sleeps == [30, 30, 30], "polled while DELETING"


def test_delete_waits_as_long_as_gcloud_and_then_says_what_is_still_deleting():
    client = FakeTpuClient(
        [State.ACTIVE], exists=existing(PROPS), delete_hangs=True, delete_lingers=10_000
    )
    clock = Clock()
    with pytest.raises(QueuedResourceError) as raised:
        provider(client, clock).delete(NAME, dict(PROPS))
    # api-core's operation default would give up after 900 s.
    assert client.operations[0].timeouts == [DELETE_SECONDS] and DELETE_SECONDS == 1800
    message = str(raised.value)
    assert "still DELETING (TPU VMs: maxtext-0, maxtext-1) after 30 minutes" in message
    assert "gcloud compute tpus queued-resources describe maxtext --zone=us-central2-b" in message


def test_delete_of_a_resource_already_gone_succeeds():
    provider(FakeTpuClient([State.ACTIVE])).delete(NAME, dict(PROPS))


def test_delete_of_one_already_deleting_waits_for_it():
    client = FakeTpuClient(
        [State.ACTIVE],
        exists=existing(PROPS),
        delete_errors=[api_exceptions.FailedPrecondition("being deleted")],
    )
    client.deleting = 1
    provider(client).delete(NAME, dict(PROPS))
    assert client.resource is None


def test_other_delete_errors_propagate_and_transient_ones_are_retried():
    denied = FakeTpuClient(
        [State.ACTIVE],
        exists=existing(PROPS),
        delete_errors=[api_exceptions.PermissionDenied("no")],
    )
    with pytest.raises(api_exceptions.PermissionDenied):
        provider(denied).delete(NAME, dict(PROPS))
    flaky = FakeTpuClient(
        [State.ACTIVE],
        exists=existing(PROPS),
        delete_errors=[api_exceptions.ServiceUnavailable("503")],
    )
    provider(flaky).delete(NAME, dict(PROPS))
    assert len(flaky.deleted) == 1 and flaky.resource is None


def test_a_state_written_before_the_api_choice_is_read_and_deleted_through_v2alpha1():
    apis: list[str] = []
    client = FakeTpuClient([State.ACTIVE], exists=existing(PROPS))
    provider(client, apis=apis).delete(NAME, dict(OLD_PROPS))
    assert apis == ["v2alpha1"]
    assert isinstance(client.deleted[0], tpu_v2alpha1.DeleteQueuedResourceRequest)


# -- read, diff, update: back after preemption ------------------------------------------------


def test_read_reports_a_resource_deleted_outside_pulumi_as_gone():
    result = provider(FakeTpuClient([State.ACTIVE])).read(NAME, dict(PROPS))
    assert result.id == "" and result.outs == {}


def test_read_reports_the_live_state():
    client = FakeTpuClient([State.SUSPENDED], exists=existing(PROPS))
    result = provider(client).read(NAME, dict(PROPS))
    assert result.id == NAME
    assert result.outs is not None and result.outs["state"] == "SUSPENDED"


def test_what_cloud_tpu_cannot_update_replaces_and_the_rest_updates_in_place():
    p = provider(FakeTpuClient([State.ACTIVE], exists=existing(PROPS)))
    olds = {**PROPS, "state": "ACTIVE"}
    same = p.diff(NAME, olds, dict(PROPS))
    assert not same.changes and same.replaces == []
    more = p.diff(NAME, olds, {**PROPS, "nodeCount": 3, "labels": {"a": "b"}})
    assert more.changes and more.replaces == ["nodeCount"]
    assert more.delete_before_replace is True
    for key, value in [
        ("labels", {"team": "a"}),
        ("metadata", {"startup-script": "echo new"}),
        ("tags", ["tpu"]),
        ("dataDisks", [{"sourceDisk": "projects/p/zones/z/disks/d", "mode": "READ_ONLY"}]),
        ("timeoutSeconds", 7200),
        ("queueingPolicy", {"validAfterSeconds": 60}),
        ("apiVersion", "v2alpha1"),
    ]:
        waits = p.diff(NAME, olds, {**PROPS, key: value})
        assert waits.changes and waits.replaces == [], key
    updated = p.update(NAME, olds, {**PROPS, "timeoutSeconds": 7200})
    assert updated.outs is not None
    assert (updated.outs["timeoutSeconds"], updated.outs["state"]) == (7200, "ACTIVE")


def test_an_upgrade_replaces_nothing_for_inputs_added_since():
    p = provider(FakeTpuClient([State.ACTIVE], exists=existing(PROPS)))
    news = {**PROPS, "metadata": OLD_PROPS["metadata"], "apiVersion": "v2alpha1"}
    diff = p.diff(NAME, dict(OLD_PROPS), news)
    assert not diff.changes and diff.replaces == []


@pytest.mark.parametrize(
    ("live", "replaced"),
    [
        (State.SUSPENDED, True),
        (State.SUSPENDING, True),
        (State.FAILED, True),
        (None, True),
        (State.ACTIVE, False),
    ],
)
def test_a_preempted_failed_or_vanished_request_is_asked_again_by_the_next_up(live, replaced):
    client = FakeTpuClient([live or State.ACTIVE], exists=existing(PROPS) if live else None)
    diff = provider(client).diff(NAME, {**PROPS, "state": "ACTIVE"}, dict(PROPS))
    assert diff.changes is replaced
    assert diff.replaces == (["state"] if replaced else [])
    assert diff.delete_before_replace is True


def test_diff_falls_back_to_the_recorded_state_when_the_api_cannot_be_asked():
    client = FakeTpuClient(
        [State.ACTIVE], get_errors=[api_exceptions.PermissionDenied("no credentials")]
    )
    diff = provider(client).diff(NAME, {**PROPS, "state": "SUSPENDED"}, dict(PROPS))
    assert diff.replaces == ["state"]
    quiet = FakeTpuClient([State.ACTIVE], get_errors=[api_exceptions.PermissionDenied("no")])
    assert not provider(quiet).diff(NAME, {**PROPS, "state": "ACTIVE"}, dict(PROPS)).changes
