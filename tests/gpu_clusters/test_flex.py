"""A flex-start group against the states Compute Engine documents for resize requests, the
provisioning phase inside an open request among them (`tests.gpu_clusters.fakes`): the group
ends at its configured size on every interleaving of `pulumi up` runs, config edits and the
API's own steps the fake can produce, never cancels a request that is not waiting, never asks
for more than the config wants, and words every refusal."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

from components.gpu_clusters.provider import CapacityError, FlexCapacityProvider
from tests.gpu_clusters.fakes import Clock, FakeCompute
from tests.gpu_clusters.test_provider import FLEX

Action = tuple[str, ...]


def flex(compute: FakeCompute) -> FlexCapacityProvider:
    clock = Clock()
    return FlexCapacityProvider(lambda: compute, sleep=clock.sleep, clock=clock)


def up(
    provider: FlexCapacityProvider, state: dict[str, Any] | None, config: dict[str, Any]
) -> dict[str, Any]:
    """One `pulumi up` of the resource: create, or diff and update when the diff says so."""
    if state is None:
        outs = provider.create(dict(config)).outs
    elif provider.diff("id", state, dict(config)).changes:
        outs = provider.update("id", state, dict(config)).outs
    else:
        return state
    assert outs is not None
    return outs


def truth(compute: FakeCompute) -> int:
    """VMs the group holds, or will once its waiting requests are served, counted once."""
    waiting = [
        r.resize_by
        for r in compute.requests
        if r.state in ("CREATING", "ACCEPTED") and r.name not in compute.serving
    ]
    return len(compute.vms) + sum(waiting)


# -- single situations -------------------------------------------------------------------------


def test_a_request_whose_vms_are_being_created_is_counted_once_and_never_cancelled():
    compute = FakeCompute()
    provider = flex(compute)
    state = up(provider, None, FLEX)
    compute.provision("ai-dev-train-request-1")
    assert compute.target == 4 and compute.open_requests(), "served, yet still ACCEPTED"
    # Unchanged config: four VMs are coming, nothing is missing, nothing is done.
    assert provider.diff("id", state, dict(FLEX)).changes is False
    # A smaller size cannot cancel what is being created: it waits for it, then shrinks.
    smaller = {**FLEX, "size": 2}
    state = up(provider, state, smaller)
    assert compute.refused == [] and state["cancelled"] == []
    assert "being created" in state["deferred"]
    compute.settle("ai-dev-train-request-1")
    state = up(provider, state, smaller)
    assert len(compute.vms) == 2 and not state["deferred"]


def test_only_an_accepted_request_is_cancelled():
    compute = FakeCompute(accept_at_once=False)
    provider = flex(compute)
    state = up(provider, None, FLEX)
    state = up(provider, state, {**FLEX, "size": 2})
    assert compute.refused == [] and "cannot be cancelled" in state["deferred"]
    compute.accept("ai-dev-train-request-1")
    state = up(provider, state, {**FLEX, "size": 2})
    assert state["cancelled"] == ["ai-dev-train-request-1"]
    assert compute.open_requests() == [("ai-dev-train-request-2", 2, 86400)]


def test_vms_beyond_the_size_on_an_unchanged_config_are_left_alone():
    compute = FakeCompute()
    provider = flex(compute)
    state = up(provider, None, FLEX)
    compute.serve()
    compute.resize(project="p", zone="z", group="g", size=6, timeout=1)  # by hand
    compute.instances |= {"vm-x": "NONE", "vm-y": "NONE"}
    assert provider.diff("id", state, dict(FLEX)).changes is False


@pytest.mark.parametrize(
    ("method", "error", "doing"),
    [
        ("list_instances", api_exceptions.Forbidden("no instanceGroupManagers.get"), "reading"),
        ("insert_request", api_exceptions.BadRequest("no flex-start here"), "asking for 4"),
        ("insert_request", api_exceptions.Conflict("request 1 exists"), "asking for 4"),
    ],
)
def test_a_refusal_is_worded_and_carries_no_api_stack(method, error, doing):
    compute = FakeCompute(errors={method: [error]})
    with pytest.raises(CapacityError) as raised:
        flex(compute).create(dict(FLEX))
    message = str(raised.value)
    assert doing in message and "the Compute Engine API answered" in message, message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


# -- every interleaving --------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    first: dict[str, Any]
    then: dict[str, Any] | None
    accept_at_once: bool = True


SCENARIOS = [
    Scenario("steady", {**FLEX, "size": 3}, None, accept_at_once=False),
    Scenario("shrink", {**FLEX, "size": 3}, {**FLEX, "size": 1}),
    Scenario("grow", {**FLEX, "size": 1}, {**FLEX, "size": 3}),
    Scenario("longer runs", {**FLEX, "size": 2}, {**FLEX, "size": 2, "runSeconds": 7 * 86400}),
]
DEPTH = 6


def enabled(compute: FakeCompute, edited: bool, scenario: Scenario) -> list[Action]:
    """What can happen next: a `pulumi up`, the config edit (once), or the API's own steps."""
    found: list[Action] = [("up",)]
    if scenario.then is not None and not edited:
        found.append(("edit",))
    for r in compute.requests:
        if r.state == "CREATING":
            found += [("accept", r.name), ("fail", r.name)]
        elif r.state == "ACCEPTED" and r.name in compute.serving:
            found.append(("settle", r.name))
        elif r.state == "ACCEPTED":
            found += [("provision", r.name), ("fail", r.name)]
        elif r.state == "SUCCEEDED" and r.name in compute.owner.values():
            found.append(("end", r.name))
    return found


@dataclass
class Run:
    compute: FakeCompute
    provider: FlexCapacityProvider
    state: dict[str, Any]
    config: dict[str, Any]
    edited: bool
    most: int
    """The largest size any config of the run asked for."""


def replay(scenario: Scenario, actions: tuple[Action, ...]) -> Run:
    compute = FakeCompute(accept_at_once=scenario.accept_at_once)
    provider = flex(compute)
    state = up(provider, None, scenario.first)
    run = Run(compute, provider, state, scenario.first, False, scenario.first["size"])
    for action in actions:
        match action:
            case ("up",):
                run.state = up(run.provider, run.state, run.config)
            case ("edit",):
                assert scenario.then is not None
                run.config, run.edited = scenario.then, True
                run.most = max(run.most, run.config["size"])
                run.state = up(run.provider, run.state, run.config)
            case ("accept", name):
                compute.accept(name)
            case ("provision", name):
                compute.provision(name)
            case ("settle", name):
                compute.settle(name)
            case ("fail", name):
                compute.fail(name)
            case ("end", name):
                compute.end_run(name)
        # Never more VMs asked for than some config wanted, counted once.
        assert truth(compute) <= run.most, (actions, compute.open_requests(), compute.vms)
    return run


def interleavings(scenario: Scenario) -> Iterator[tuple[Action, ...]]:
    stack: list[tuple[Action, ...]] = [()]
    while stack:
        actions = stack.pop()
        yield actions
        if len(actions) < DEPTH:
            run = replay(scenario, actions)
            stack += [(*actions, a) for a in enabled(run.compute, run.edited, scenario)]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_group_ends_at_its_size_on_every_interleaving(scenario):
    count = 0
    for actions in interleavings(scenario):
        run = replay(scenario, actions)
        if scenario.then is not None and not run.edited:
            run.config = scenario.then
            run.most = max(run.most, run.config["size"])
        # Capacity is found for whatever waits; `pulumi up` runs until it has nothing to do.
        for _ in range(4):
            run.compute.serve()
            run.state = up(run.provider, run.state, run.config)
        run.compute.serve()
        where = (scenario.name, actions)
        assert len(run.compute.vms) == run.config["size"], where
        assert run.compute.open_requests() == [], where
        assert not run.state["deferred"], where
        # Only waiting (ACCEPTED, not served) requests were ever cancelled, or tried.
        cancelled = [r for r in run.compute.requests if r.state == "CANCELLED"]
        assert all(r.name not in run.compute.serving for r in cancelled), where
        assert all(run.compute.request(n).state == "ACCEPTED" for n in run.compute.refused)
        count += 1
    assert count > 200, f"only {count} interleavings: the enumeration stopped early"
