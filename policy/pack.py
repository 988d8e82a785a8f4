"""The rules as Pulumi policies: each is a stack validation over every resource the preview
registers (reachability and prod protection need them all), mandatory or advisory as
`rules.RULES` says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from policy.rules import RULES, Resource, Rule

UNKNOWN = "(known after pulumi up)"
"""What a rule reads where the preview has no value yet (a new resource's output that another
input names): no rule takes it for a range, a role or a default account."""


def known(value: Any) -> Any:
    """A resource's properties as plain values, each one the engine cannot know yet replaced
    by UNKNOWN. The engine hands them through a proxy that raises on reading an unknown, and
    copying them reads every one: each policy would then be skipped as "can't run during
    preview" whenever any resource of the stack had a single unknown input."""
    if isinstance(value, Mapping):
        return {key: _entry(value, key) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_entry(value, i) for i in range(len(value))]
    return value


def _entry(container: Any, key: Any) -> Any:
    try:
        return known(container[key])
    except UnknownValueError:
        return UNKNOWN


def resources_of(args: StackValidationArgs) -> list[Resource]:
    """The preview's resources as the rules read them: a resource's properties are its inputs
    and, once it exists, its outputs (a Filestore share's range), so both views get them."""
    found = []
    for r in args.resources:
        props = known(r.props)
        found.append(
            Resource(
                type=r.resource_type,
                urn=r.urn,
                inputs=props,
                outputs=props,
                protect=bool(r.opts.protect),
            )
        )
    return found


def _policy(rule: Rule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: Any) -> None:
        for violation in rule.check(resources_of(args)):
            report_violation(violation.message, violation.urn)

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=(
            EnforcementLevel.MANDATORY if rule.mandatory else EnforcementLevel.ADVISORY
        ),
    )


POLICIES: list[Policy] = [_policy(rule) for rule in RULES]
