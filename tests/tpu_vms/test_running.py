"""What the queued resource provider does to running TPU VMs: labels, metadata, tags, disks
and the public IP changed in place on every TPU VM, and `pulumi up` waiting for every worker's
startup script."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

from components.api_calls import CALL_SECONDS
from components.startup import DONE, FAILED, RUNNING
from components.startup_wait import StartupFailed
from components.tpu_vms.provider import (
    QueuedResourceError,
    QueuedResourceProvider,
    StartupWaitProvider,
)
from tests.tpu_vms.fakes import Clock, FakeTpuClient, Initiator, State, factory
from tests.tpu_vms.test_provider import NAME, PROPS, existing, provider

# -- in-place updates of running TPU VMs ------------------------------------------------------

ZONE_NODES = "projects/p-123456/locations/us-central2-b/nodes"
DISK = "projects/p-123456/zones/us-central2-b/disks/ref"


def active(**changes: Any) -> tuple[FakeTpuClient, QueuedResourceProvider, dict[str, Any]]:
    """An ACTIVE multislice queued resource created by the provider, and its recorded state."""
    client = FakeTpuClient([State.ACTIVE], **changes)
    p = provider(client)
    outs = p.create(dict(PROPS)).outs
    assert outs is not None
    return client, p, outs


def test_labels_metadata_tags_and_disks_change_on_every_tpu_vm_in_place():
    client, p, olds = active()
    # Someone labelled a VM by hand; Cloud TPU may add keys of its own. Both are kept.
    client.nodes[f"{ZONE_NODES}/maxtext-1"].labels["owner"] = "alice"
    news = {
        **PROPS,
        "labels": {**PROPS["labels"], "team": "research"},
        "metadata": {**PROPS["metadata"], "startup-script": "echo new"},
        "tags": ["tpu-vms"],
        "dataDisks": [{"sourceDisk": DISK, "mode": "READ_ONLY"}],
    }
    created = len(client.created)
    result = p.update(NAME, olds, news)
    assert len(client.created) == created and not client.deleted, "nothing replaced"
    assert [name for name, _ in client.updates] == ["maxtext-0", "maxtext-1"]
    assert client.updates[0][1] == ["labels", "metadata", "tags", "data_disks"]
    for name in ("maxtext-0", "maxtext-1"):
        node = client.nodes[f"{ZONE_NODES}/{name}"]
        assert node.labels["team"] == "research"
        assert node.metadata["startup-script"] == "echo new"
        assert node.metadata["enable-oslogin"] == "TRUE"
        assert list(node.tags) == ["tpu-vms"]
        assert [(d.source_disk, d.mode.name) for d in node.data_disks] == [(DISK, "READ_ONLY")]
    assert client.nodes[f"{ZONE_NODES}/maxtext-1"].labels["owner"] == "alice"
    assert result.outs is not None and result.outs["labels"]["team"] == "research"


def test_a_public_ip_is_turned_on_and_off_in_place_on_every_tpu_vm():
    client, p, olds = active()
    turned_on = {**PROPS, "enableExternalIps": True}
    assert p.diff(NAME, olds, turned_on).replaces == []
    created = len(client.created)
    p.update(NAME, olds, turned_on)
    assert len(client.created) == created and not client.deleted, "nothing replaced"
    assert client.updates == [
        ("maxtext-0", ["network_config.enable_external_ips"]),
        ("maxtext-1", ["network_config.enable_external_ips"]),
    ]
    for name in ("maxtext-0", "maxtext-1"):
        node = client.nodes[f"{ZONE_NODES}/{name}"]
        assert node.network_config.enable_external_ips is True
        # The rest of the network is as created.
        assert node.network_config.subnetwork == PROPS["subnetwork"]
    p.update(NAME, turned_on, dict(PROPS))
    assert client.nodes[f"{ZONE_NODES}/maxtext-0"].network_config.enable_external_ips is False


def test_a_public_ip_on_tpu_vms_with_more_networks_replaces_them():
    """UpdateNode's mask reaches `network_config`, which TPU VMs with `network_configs` lack."""
    extra = [{"network": "n", "subnetwork": "s", "queueCount": 0}]
    p = provider(FakeTpuClient([State.ACTIVE], exists=existing(PROPS)))
    olds = {**PROPS, "additionalNetworks": extra, "state": "ACTIVE"}
    diff = p.diff(NAME, olds, {**PROPS, "additionalNetworks": extra, "enableExternalIps": True})
    assert diff.replaces == ["enableExternalIps"]


def test_data_disks_go_through_v2alpha1_and_the_rest_through_the_entrys_api():
    apis: list[str] = []
    client = FakeTpuClient([State.ACTIVE])
    p = provider(client, apis=apis)
    olds = p.create(dict(PROPS)).outs
    assert olds is not None
    apis.clear()
    p.update(NAME, olds, {**PROPS, "labels": {**PROPS["labels"], "a": "b"}})
    assert set(apis) == {"v2"}
    apis.clear()
    p.update(NAME, olds, {**PROPS, "dataDisks": [{"sourceDisk": DISK, "mode": "READ_ONLY"}]})
    assert set(apis) == {"v2alpha1"}


def test_removing_a_label_or_key_the_entry_set_removes_it_and_only_it():
    client, p, olds = active()
    olds = {**olds, "labels": {**PROPS["labels"], "team": "a"}}
    node = client.nodes[f"{ZONE_NODES}/maxtext-0"]
    node.labels["team"] = "a"
    node.labels["goog-managed"] = "x"
    p.update(NAME, olds, dict(PROPS))
    assert "team" not in client.nodes[f"{ZONE_NODES}/maxtext-0"].labels
    assert client.nodes[f"{ZONE_NODES}/maxtext-0"].labels["goog-managed"] == "x"


def test_an_update_that_fails_half_way_names_the_vms_and_finishes_on_the_next_up():
    client, p, olds = active(
        update_errors={"maxtext-0": api_exceptions.FailedPrecondition("node is busy")}
    )
    news = {**PROPS, "labels": {**PROPS["labels"], "team": "research"}}
    with pytest.raises(QueuedResourceError) as error:
        p.update(NAME, olds, news)
    message = str(error.value)
    assert "TPU VMs maxtext-1 took it" in message and "maxtext-0 (" in message
    assert "node is busy" in message and "run `pulumi up` again" in message
    assert not client.deleted, "a failed update replaces nothing"
    assert "team" not in client.nodes[f"{ZONE_NODES}/maxtext-0"].labels
    # Pulumi kept the old inputs: the next `pulumi up` runs the same update, which completes.
    p.update(NAME, olds, news)
    assert all(n.labels["team"] == "research" for n in client.nodes.values())


def test_an_update_of_a_suspended_request_changes_nothing_and_the_next_up_replaces_it():
    client, p, olds = active(initiator=Initiator.SERVICE)
    client.states = [State.SUSPENDED]
    client.nodes.clear()  # preempted: its TPU VMs are gone
    news = {**PROPS, "labels": {**PROPS["labels"], "team": "research"}}
    with pytest.raises(QueuedResourceError, match=r"is SUSPENDED: .*preemption.*replaces"):
        p.update(NAME, olds, news)
    assert client.updates == []
    # The next preview reads the state and replaces it, asking again with the new labels.
    assert "state" in (p.diff(NAME, olds, news).replaces or [])


# -- pulumi up waits for every worker's startup script ---------------------------------------

WAIT: dict[str, Any] = {
    "project": "p-123456",
    "zone": "us-central2-b",
    "queuedResourceId": "maxtext",
    "nodes": ["maxtext-0", "maxtext-1"],
    "workers": 2,
    "apiVersion": "v2",
    "requestedAt": "2026-03-01T12:00:00+00:00",
    "timeoutSeconds": 1800,
}


def waiter(client: FakeTpuClient, clock: Clock) -> StartupWaitProvider:
    return StartupWaitProvider(factory(client), sleep=clock.sleep, clock=clock, poll_seconds=30)


def test_up_returns_once_every_worker_of_every_slice_is_done():
    clock = Clock()
    client = FakeTpuClient(
        [State.ACTIVE],
        signals={
            "maxtext-0": [[RUNNING, None], [DONE, DONE]],
            "maxtext-1": [[DONE, DONE]],
        },
    )
    result = waiter(client, clock).create(dict(WAIT))
    assert result.id == "maxtext-startup"
    assert result.outs is not None and len(result.outs["vms"]) == 4
    assert clock.sleeps == [30]
    assert all(timeout == CALL_SECONDS for _, timeout in client.calls)


def test_a_failed_step_on_one_worker_fails_up_naming_it():
    client = FakeTpuClient(
        [State.ACTIVE],
        signals={"maxtext-0": [[DONE, DONE]], "maxtext-1": [[DONE, f"{FAILED}startupScript"]]},
    )
    with pytest.raises(StartupFailed) as error:
        waiter(client, Clock()).create(dict(WAIT))
    message = str(error.value)
    assert "TPU VM maxtext-1 worker 1" in message and "'startupScript' failed" in message
    assert "tpu-vm ssh maxtext-1" in message and "--worker=1" in message
    assert not client.deleted, "a failed script leaves the slices recorded, never deleted"


def test_a_hung_worker_fails_up_at_the_bound_and_a_slice_not_yet_there_is_named():
    clock = Clock()
    client = FakeTpuClient([State.ACTIVE], signals={"maxtext-0": [[DONE, RUNNING]]})
    with pytest.raises(StartupFailed) as error:
        waiter(client, clock).create(dict(WAIT))
    message = str(error.value)
    assert "TPU VM maxtext-0 worker 1 (running)" in message
    assert "2 VM(s) not there yet" in message
    assert "within 30 minutes" in message and clock.now == WAIT["timeoutSeconds"]


def test_a_new_request_waits_again():
    p = waiter(FakeTpuClient([State.ACTIVE]), Clock())
    assert p.diff("x", dict(WAIT), dict(WAIT)).changes is False
    later = {**WAIT, "requestedAt": "2026-03-02T08:00:00+00:00"}
    assert p.diff("x", dict(WAIT), later).changes is True
