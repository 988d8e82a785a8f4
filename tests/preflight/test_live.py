"""How preflight reads: API errors become findings that say what could not be read and why,
transient errors are retried by preflight's own policy (Google's defaults are off, and some
methods have none), and every read goes out once."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1, service_usage_v1

import preflight
from preflight import gke, quota, zones
from preflight.live import Clients, CredentialsError, Live, retry_policy
from preflight.needs import Needs
from tests.preflight.conftest import live
from tests.preflight.fakes import World, service_disabled
from tests.preflight.test_checks import one


def test_permission_denied_on_a_read_names_the_permission(needs: Needs, world: World) -> None:
    world.fail("regions.get", exceptions.PermissionDenied("Required 'compute.regions.get'"))
    found = quota.check(needs, live(world))
    denied = [f for f in found if "cannot read region us-central1" in f.detail]
    assert denied and {f.status for f in denied} == {"warn"}
    assert "permission denied; the identity needs compute.regions.get" in denied[0].detail
    # The failed read is asked once and reported wherever it was needed; never retried.
    assert len(world.called("regions.get")) == 1


def test_disabled_api_says_which_and_where_to_enable_it(needs: Needs, world: World) -> None:
    world.fail("list_quota_infos", service_disabled("cloudquotas.googleapis.com", world.number))
    found = quota.check(needs, live(world))
    disabled = [f for f in found if "cloudquotas.googleapis.com is disabled" in f.detail]
    assert disabled and all(f.status == "warn" for f in disabled)
    assert f"in projects/{world.number}" in disabled[0].detail
    assert "console.developers.google.com/apis/api/cloudquotas.googleapis.com" in disabled[0].detail
    # Compute Engine quotas, read through another API, are still judged.
    one(found, "ok", "nvidia-l4 GPUs in us-central1")


@pytest.mark.parametrize(
    "error",
    [
        exceptions.ServiceUnavailable("backend unavailable"),
        exceptions.TooManyRequests("rate limited"),
        exceptions.InternalServerError("internal"),
        exceptions.DeadlineExceeded("deadline"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_transient_errors_are_retried(needs: Needs, world: World, error: Exception) -> None:
    world.fail("get_server_config", error, error)
    found = gke.check(needs, live(world))
    one(found, "ok", "GKE in us-central1")
    assert len(world.called("get_server_config")) == 3


def test_errors_that_outlast_the_retries_are_reported(needs: Needs, world: World) -> None:
    world.fail("get_server_config", *[exceptions.ServiceUnavailable("down")] * 5000)
    found = one(gke.check(needs, live(world)), "warn", "GKE in us-central1")
    assert "503 down (still failing after retries)" in found.detail


def test_an_absent_answer_is_not_an_error(needs: Needs, world: World) -> None:
    del world.machine_types["us-central1-a"]["c2-standard-4"]
    found = zones.check(needs, live(world))
    one(found, "fail", "machine type c2-standard-4")
    asked = [c for c in world.called("machine_types.get") if c["name"] == "c2-standard-4"]
    assert len(asked) == 1, "NotFound is the answer, not retried"


def test_refused_credentials_stop_the_run(needs: Needs, world: World) -> None:
    world.fail("get_project", exceptions.Unauthenticated("Request had invalid credentials"))
    with pytest.raises(CredentialsError, match="invalid credentials"):
        preflight.run(needs, live(world))


def test_service_states_are_read_in_batches_of_thirty(world: World) -> None:
    names = [f"api{i}.googleapis.com" for i in range(45)]
    world.services["api7.googleapis.com"] = service_usage_v1.State.DISABLED
    states = live(world).service_states(names)
    assert len(states) == 45 and states["api7.googleapis.com"] == service_usage_v1.State.DISABLED
    sizes = [len(call["request"].names) for call in world.called("batch_get_services")]
    assert sizes == [30, 15]
    parents = {call["request"].parent for call in world.called("batch_get_services")}
    assert parents == {f"projects/{world.number}"}, "Service Usage is asked by project number"


def test_a_permission_is_asked_about_once(world: World) -> None:
    """The API check and the permission check ask overlapping sets; testIamPermissions hears
    each permission once, and both get their whole answer."""
    world.granted = {"serviceusage.services.enable", "compute.networks.create"}
    reader = live(world)
    assert reader.granted(["serviceusage.services.enable"]) == {"serviceusage.services.enable"}
    both = ["serviceusage.services.enable", "compute.networks.create", "tpu.nodes.create"]
    assert reader.granted(both) == {"serviceusage.services.enable", "compute.networks.create"}
    asked = [call["permissions"] for call in world.called("test_iam_permissions")]
    assert asked == [
        ["serviceusage.services.enable"],
        ["compute.networks.create", "tpu.nodes.create"],
    ]


def test_official_clients_are_built_without_the_network() -> None:
    clients = Clients.connect(AnonymousCredentials(), "ml-preflight")
    assert isinstance(clients.regions, compute_v1.RegionsClient)
    reader = Live("ml-preflight", clients, retry=retry_policy(0.001, 0.002, 0.01))
    assert reader.project == "ml-preflight"
