"""Roles that let whoever runs as an account take more roles are refused wherever a stack
grants a role, and the narrow roles beside them stay accepted."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from catalog import iam
from components.types import IamRole

ROLE = TypeAdapter(IamRole)


@pytest.mark.parametrize("role", sorted(iam.ESCALATING_ROLES))
def test_every_role_holding_an_escalating_permission_is_refused(role):
    with pytest.raises(ValidationError, match=r"narrow roles|basic role"):
        ROLE.validate_python(role)


def test_each_role_is_listed_for_a_permission_of_the_class():
    assert set(iam.ESCALATING_ROLES.values()) <= set(iam.ESCALATING_PERMISSIONS)
    assert all(role.startswith("roles/") for role in iam.ESCALATING_ROLES)


@pytest.mark.parametrize(
    "role",
    [
        "roles/pubsub.serviceAgent",
        "roles/aiplatform.customCodeServiceAgent",
        "roles/composer.ServiceAgentV2Ext",
    ],
)
def test_service_agent_roles_are_refused(role):
    with pytest.raises(ValidationError, match="service agent role"):
        ROLE.validate_python(role)


@pytest.mark.parametrize(
    "role",
    [
        "roles/tpu.viewer",
        "roles/storage.objectUser",
        "roles/logging.logWriter",
        "roles/iam.serviceAccountViewer",  # reads accounts, acts as none
        "roles/aiplatform.user",
        "projects/my-project/roles/trainer",  # custom: its project decides what it holds
    ],
)
def test_narrow_roles_stay_accepted(role):
    assert ROLE.validate_python(role) == role
