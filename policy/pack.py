"""The rules as Pulumi policies: each is a stack validation over every resource the preview
registers (reachability and prod protection need them all), mandatory or advisory as
`rules.RULES` says."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policy.rules import RULES, Resource, Rule


def resources_of(args: StackValidationArgs) -> list[Resource]:
    """The preview's resources as the rules read them."""
    return [
        Resource(
            type=r.resource_type,
            urn=r.urn,
            inputs=dict(r.props),
            protect=bool(r.opts.protect),
        )
        for r in args.resources
    ]


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
