"""The GPU cluster providers against a fake Compute Engine on google-cloud-compute's types: a
flex-start group kept at its size across runs that end, counts that change and requests that
wait, and `pulumi up` waiting for every VM's startup script, failing with the step's name."""

from __future__ import annotations

from typing import Any
from unittest.mock import create_autospec

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import compute_v1

from components.api_calls import CALL_SECONDS
from components.gpu_clusters.provider import (
    CapacityError,
    FlexCapacityProvider,
    GoogleCompute,
    StartupWaitProvider,
    next_request_name,
)
from components.startup import DONE, FAILED, RUNNING
from components.startup_wait import StartupFailed
from tests.gpu_clusters.fakes import Clock, FakeCompute

FLEX: dict[str, Any] = {
    "project": "p-123456",
    "zone": "us-central1-b",
    "group": "ai-dev-train",
    "size": 4,
    "runSeconds": 86400,
    "requestPrefix": "ai-dev-train-request",
    "description": "flex-start VMs of GPU cluster train",
}


def outs(result: Any) -> dict[str, Any]:
    assert result.outs is not None
    return result.outs


def flex(compute: FakeCompute, clock: Clock | None = None) -> FlexCapacityProvider:
    clock = clock or Clock()
    return FlexCapacityProvider(lambda: compute, sleep=clock.sleep, clock=clock)


def test_a_new_group_asks_for_its_whole_size_in_one_request():
    compute = FakeCompute()
    result = flex(compute).create(dict(FLEX))
    assert compute.open_requests() == [("ai-dev-train-request-1", 4, 86400)]
    assert outs(result)["requested"] == "ai-dev-train-request-1"
    assert outs(result)["requestedVms"] == 4
    assert all(timeout == CALL_SECONDS for _, timeout in compute.calls)


def test_when_the_run_ends_the_next_pulumi_up_asks_again():
    compute = FakeCompute()
    provider = flex(compute)
    provider.create(dict(FLEX))
    compute.serve()
    assert compute.target == 4
    # Nothing changed in the config and the VMs run: preview shows nothing to do.
    assert provider.diff("ai-dev-train-capacity", dict(FLEX), dict(FLEX)).changes is False
    compute.end_run()
    # The VMs are gone: preview shows an update, and `pulumi up` asks with a new request.
    answer = provider.diff("ai-dev-train-capacity", dict(FLEX), dict(FLEX))
    assert answer.changes is True and not answer.replaces
    result = provider.update("ai-dev-train-capacity", dict(FLEX), dict(FLEX))
    assert compute.open_requests() == [("ai-dev-train-request-2", 4, 86400)]
    assert outs(result)["requestedVms"] == 4


def test_a_larger_count_asks_only_for_the_vms_the_group_lacks():
    compute = FakeCompute()
    provider = flex(compute)
    provider.create({**FLEX, "size": 2})
    compute.serve()
    provider.update("x", {**FLEX, "size": 2}, {**FLEX, "size": 5})
    assert compute.open_requests() == [("ai-dev-train-request-2", 3, 86400)]
    compute.serve()
    assert compute.target == 5, "the count is the group's size, not an addition"


def test_a_smaller_count_cancels_a_waiting_request_and_asks_for_the_rest():
    compute = FakeCompute()
    provider = flex(compute)
    provider.create(dict(FLEX))
    result = provider.update("x", dict(FLEX), {**FLEX, "size": 3})
    assert outs(result)["cancelled"] == ["ai-dev-train-request-1"]
    assert compute.open_requests() == [("ai-dev-train-request-2", 3, 86400)]
    assert "resize" not in compute.methods()


def test_a_count_below_the_running_vms_shrinks_the_group():
    compute = FakeCompute()
    provider = flex(compute)
    provider.create(dict(FLEX))
    compute.serve()
    provider.update("x", dict(FLEX), {**FLEX, "size": 1})
    assert compute.target == 1
    assert compute.open_requests() == []


def test_new_run_hours_re_ask_a_waiting_request_and_leave_running_vms_alone():
    compute = FakeCompute()
    provider = flex(compute)
    provider.create({**FLEX, "size": 2})
    compute.serve()
    provider.update("x", {**FLEX, "size": 2}, {**FLEX, "size": 3})
    longer = {**FLEX, "size": 3, "runSeconds": 7 * 86400}
    result = provider.update("x", {**FLEX, "size": 3}, longer)
    assert outs(result)["cancelled"] == ["ai-dev-train-request-2"]
    assert compute.open_requests() == [("ai-dev-train-request-3", 1, 7 * 86400)]
    assert compute.target == 2


def test_a_preview_without_credentials_shows_no_change():
    compute = FakeCompute(errors={"list_instances": [api_exceptions.Unauthenticated("no ADC")]})
    assert flex(compute).diff("x", dict(FLEX), dict(FLEX)).changes is False


def test_a_new_count_is_an_update_and_a_new_group_a_replacement():
    provider = flex(FakeCompute())
    assert provider.diff("x", dict(FLEX), {**FLEX, "size": 6}).replaces == []
    assert provider.diff("x", dict(FLEX), {**FLEX, "group": "other"}).replaces == ["group"]


def test_transient_errors_are_retried_and_a_refusal_says_why():
    clock = Clock()
    compute = FakeCompute(
        errors={"list_requests": [api_exceptions.ServiceUnavailable("try again")]},
        operation_errors={
            "insert_request": api_exceptions.Forbidden("Quota 'NVIDIA_H200_GPUS' exceeded")
        },
    )
    with pytest.raises(CapacityError, match="NVIDIA_H200_GPUS") as error:
        flex(compute, clock).create(dict(FLEX))
    assert "asking for 4 flex-start VMs (ai-dev-train-request-1)" in str(error.value)
    assert clock.sleeps == [1.0]


def test_delete_cancels_waiting_requests_and_minds_no_group():
    compute = FakeCompute()
    provider = flex(compute)
    provider.create(dict(FLEX))
    provider.delete("x", dict(FLEX))
    assert compute.open_requests() == []
    provider.delete("x", dict(FLEX))  # nothing open: nothing to do
    flex(FakeCompute(group_exists=False)).delete("x", dict(FLEX))


def test_request_names_count_up_and_ignore_other_prefixes():
    names = ["ai-dev-train-request-1", "ai-dev-train-request-7", "ai-dev-train-x-request-9"]
    assert next_request_name("ai-dev-train-request", names) == "ai-dev-train-request-8"
    assert next_request_name("ai-dev-train-request", []) == "ai-dev-train-request-1"


# -- pulumi up waits for the startup scripts -----------------------------------------------

WAIT: dict[str, Any] = {
    "project": "p-123456",
    "zone": "us-central1-b",
    "group": "ai-dev-train",
    "size": 2,
    "template": "projects/p-123456/global/instanceTemplates/ai-dev-train-1",
    "timeoutSeconds": 1800,
}


def waiter(compute: FakeCompute, clock: Clock) -> StartupWaitProvider:
    return StartupWaitProvider(lambda: compute, sleep=clock.sleep, clock=clock, poll_seconds=30)


def test_up_returns_once_every_vm_reports_done():
    clock = Clock()
    compute = FakeCompute(
        vms=["ai-dev-train-a1b2", "ai-dev-train-c3d4"],
        signals={"ai-dev-train-a1b2": [RUNNING, DONE], "ai-dev-train-c3d4": [DONE]},
    )
    result = waiter(compute, clock).create(dict(WAIT))
    assert outs(result)["vms"] == ["ai-dev-train-a1b2", "ai-dev-train-c3d4"]
    assert clock.sleeps == [30]
    assert all(timeout == CALL_SECONDS for _, timeout in compute.calls)


def test_a_failed_step_fails_up_with_the_vm_and_the_step():
    compute = FakeCompute(
        vms=["ai-dev-train-a1b2", "ai-dev-train-c3d4"],
        signals={
            "ai-dev-train-a1b2": [DONE],
            "ai-dev-train-c3d4": [RUNNING, f"{FAILED}gcsfuse data /gcs/data"],
        },
    )
    with pytest.raises(StartupFailed) as error:
        waiter(compute, Clock()).create(dict(WAIT))
    message = str(error.value)
    assert "VM ai-dev-train-c3d4" in message and "'gcsfuse data /gcs/data' failed" in message
    assert "get-serial-port-output ai-dev-train-c3d4" in message
    assert "rolling-action replace ai-dev-train" in message


def test_a_hung_script_fails_up_at_the_timeout_naming_the_vm():
    clock = Clock()
    compute = FakeCompute(
        vms=["ai-dev-train-a1b2", "ai-dev-train-c3d4"],
        signals={"ai-dev-train-a1b2": [DONE], "ai-dev-train-c3d4": [RUNNING]},
    )
    with pytest.raises(StartupFailed, match=r"ai-dev-train-c3d4 \(running\)") as error:
        waiter(compute, clock).create(dict(WAIT))
    assert "within 30 minutes" in str(error.value)
    assert clock.now == WAIT["timeoutSeconds"]


def test_a_vm_without_a_signal_yet_is_waited_for_then_named():
    clock = Clock()
    compute = FakeCompute(vms=["ai-dev-train-a1b2"], signals={})
    with pytest.raises(StartupFailed, match=r"a1b2 \(no signal yet\), 1 VM\(s\) not there yet"):
        waiter(compute, clock).create(dict(WAIT))


def test_a_transient_error_while_waiting_is_retried():
    clock = Clock()
    compute = FakeCompute(
        vms=["ai-dev-train-a1b2", "ai-dev-train-c3d4"],
        signals={"ai-dev-train-a1b2": [DONE], "ai-dev-train-c3d4": [DONE]},
        errors={"guest_attribute": [api_exceptions.InternalServerError("blip")]},
    )
    assert outs(waiter(compute, clock).create(dict(WAIT)))["vms"]
    assert clock.sleeps == [1.0]


def test_a_new_template_or_size_waits_again_and_a_label_does_not():
    provider = waiter(FakeCompute(), Clock())
    assert provider.diff("x", dict(WAIT), {**WAIT, "template": "t-2"}).changes is True
    assert provider.diff("x", dict(WAIT), {**WAIT, "size": 3}).changes is True
    assert provider.diff("x", dict(WAIT), dict(WAIT)).changes is False
    assert provider.diff("x", dict(WAIT), {**WAIT, "size": 3}).replaces is None


def test_the_adapter_calls_the_real_clients_methods_as_they_are_declared():
    """The clients are specced from google-cloud-compute itself, so a keyword the method does
    not take (the flattened get_guest_attributes has no variable_key) fails here."""
    groups = create_autospec(compute_v1.InstanceGroupManagersClient, instance=True)
    requests = create_autospec(compute_v1.InstanceGroupManagerResizeRequestsClient, instance=True)
    instances = create_autospec(compute_v1.InstancesClient, instance=True)
    adapter = GoogleCompute(groups, requests, instances)
    where = {"project": "p-123456", "zone": "us-central1-b", "group": "g"}
    adapter.get_group(**where, timeout=5)
    adapter.list_instances(**where, timeout=5)
    adapter.resize(**where, size=2, timeout=5)
    adapter.list_requests(**where, timeout=5)
    adapter.insert_request(
        **where, request=compute_v1.InstanceGroupManagerResizeRequest(name="r-1"), timeout=5
    )
    adapter.cancel_request(**where, name="r-1", timeout=5)
    adapter.guest_attribute(
        project="p-123456", zone="us-central1-b", instance="vm", key="ai-infra/startup", timeout=5
    )
    (call,) = instances.get_guest_attributes.call_args_list
    assert call.kwargs["request"].variable_key == "ai-infra/startup"
    assert call.kwargs["timeout"] == 5
    assert requests.cancel.call_args.kwargs["resize_request"] == "r-1"
