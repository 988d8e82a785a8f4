"""The recorded program's backstop: a URN registered twice is an error of the run, naming both
registrations, since `pulumi up` refuses the whole update for it and Pulumi's mock engine
keeps the last one silently. No reader of a recorded run (the plan, preflight, `hosts`) can
then show a graph `pulumi up` would fail on."""

from __future__ import annotations

import pulumi
import pytest

from graph.engine import DuplicateUrnError, record_program, run_program
from graph.files import StackError
from tests.conftest import BASE_CONFIG


class _Part(pulumi.ComponentResource):
    def __init__(self, name: str, child: str) -> None:
        super().__init__("test:index:Part", name, None)
        pulumi.CustomResource("test:index:Thing", child, {}, pulumi.ResourceOptions(parent=self))
        self.register_outputs({})


def test_a_urn_registered_twice_fails_the_run_naming_both_registrations():
    def program() -> None:
        # Two parts of one type whose children share a name: one URN, two parents.
        _Part("left", "same")
        _Part("right", "same")

    graph, error = record_program(BASE_CONFIG, program=program)
    assert isinstance(error, DuplicateUrnError) and isinstance(error, StackError)
    urn = "urn:pulumi:test::ai-infra::test:index:Part$test:index:Thing::same"
    assert graph.urns.count(urn) == 2
    message = str(error)
    assert urn in message and "Duplicate resource URN" in message
    assert "under left and right" in message, message
    with pytest.raises(DuplicateUrnError):
        run_program(BASE_CONFIG, program=program)


def test_distinct_urns_are_no_error():
    def program() -> None:
        _Part("left", "one")
        _Part("right", "two")

    graph, error = record_program(BASE_CONFIG, program=program)
    assert error is None
    assert len(set(graph.urns)) == len(graph.urns) == 4


def test_the_programs_own_error_is_kept_over_the_backstop():
    def program() -> None:
        _Part("left", "same")
        _Part("right", "same")
        raise ValueError("the program's own")

    _, error = record_program(BASE_CONFIG, program=program)
    assert isinstance(error, ValueError)
