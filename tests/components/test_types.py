"""One validated type per GCP value (components/types.py): wherever a stack file writes a zone, a
service account, a mount path or a label set, the value is accepted or refused the same way,
with the same message. Issue 14 found four zone checks that had drifted until one refused a
real zone."""

from __future__ import annotations

from typing import Annotated, Any, get_origin

import pytest
from pydantic import TypeAdapter, ValidationError

from components.base import ConfigModel
from stacks.config import StackConfig
from stacks.messages import config_model_in


def _fields(model: type[ConfigModel], path: str = "") -> dict[str, Any]:
    """Every field reachable from `model`, keyed as a stack file writes it (`tpuVms[].zone`),
    with its type and the validators it carries."""
    found: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        key = f"{path}{info.alias or name}"
        annotation = (
            Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
        )
        found[key] = annotation
        nested = config_model_in(info.annotation)
        if nested is not None:
            found |= _fields(
                nested, f"{key}[]." if get_origin(info.annotation) is list else f"{key}."
            )
    return found


FIELDS = _fields(StackConfig)


def refusal(key: str, value: Any) -> str | None:
    """Why the field `key` refuses `value`, or None when it takes it."""
    try:
        TypeAdapter(FIELDS[key]).validate_python(value)
    except ValidationError as error:
        return "; ".join(e["msg"].removeprefix("Value error, ") for e in error.errors())
    return None


ZONES = sorted(key for key in FIELDS if key.rsplit(".", 1)[-1] == "zone")
SERVICE_ACCOUNTS = [
    "tpuProvisioner.nodeServiceAccount",
    "tpuVms[].serviceAccount",
    "slurm.tpuNodesets[].serviceAccountEmail",
]
MOUNT_PATHS = [
    "gpuClusters[].gcsMounts[].mountPath",
    "gpuClusters[].nfsShares[].mountPath",
    "slurm.tpuNodesets[].networkStorage[].localMount",
]
LABELS = ["labels", "gpuClusters[].labels", "tpuVms[].labels"]


def test_every_zone_a_stack_file_writes_is_found():
    assert set(ZONES) >= {
        "zone",
        "tpuSlices[].zone",
        "gpuPools[].zone",
        "gpuClusters[].zone",
        "tpuProvisioner.zone",
        "tpuVms[].zone",
        "slurm.controller.zone",
        "slurm.tpuNodesets[].zone",
    }


@pytest.mark.parametrize("key", ZONES)
def test_every_zone_takes_an_ai_zone_and_refuses_a_region(key):
    assert refusal(key, "us-central1-ai1a") is None
    assert refusal(key, "us-east5-a") is None
    assert refusal(key, "us-east5") == (
        "'us-east5' is not a GCP zone such as us-east5-a or us-central1-ai1a"
    )
    assert refusal(key, "us-east5-a\n") == (
        "'us-east5-a\n' is not a GCP zone such as us-east5-a or us-central1-ai1a"
    )


@pytest.mark.parametrize("key", SERVICE_ACCOUNTS)
def test_every_service_account_is_user_managed(key):
    assert refusal(key, "trainer@my-project.iam.gserviceaccount.com") is None
    assert refusal(key, "123456789-compute@developer.gserviceaccount.com") == (
        "'123456789-compute@developer.gserviceaccount.com' is the default compute service "
        "account, which is granted the project Editor role by default; leave it unset for a "
        "dedicated least-privilege account"
    )
    # A domain-scoped project's account names the project, then the domain.
    assert refusal(key, "status@skia-buildbots.google.com.iam.gserviceaccount.com") is None
    assert refusal(key, "status@google.com.skia-buildbots.iam.gserviceaccount.com") is not None
    # App Engine's default account, which also holds Editor.
    assert refusal(key, "my-project@appspot.gserviceaccount.com") == (
        "'my-project@appspot.gserviceaccount.com' is not a user-managed service account email "
        "(NAME@PROJECT.iam.gserviceaccount.com)"
    )


@pytest.mark.parametrize("key", MOUNT_PATHS)
@pytest.mark.parametrize(
    "path", ["/gcs/../etc", "/gcs/data/", "gcs/data", "/gcs//data", "//etc", "//gcs/data"]
)
def test_every_mount_path_is_absolute_and_normalised(key, path):
    assert refusal(key, "/gcs/data") is None
    assert refusal(key, path) == (
        f"'{path}' is not an absolute, normalised path of letters, digits, '.', '_', '-' and "
        "'/' (one leading '/', no '..', no trailing '/'); write e.g. /gcs/data"
    )


@pytest.mark.parametrize("key", LABELS)
def test_every_label_set_is_checked_alike(key):
    assert refusal(key, {"team": "vision", "cost-center": "ml_42"}) is None
    assert refusal(key, {"Team": "x", "ok": "Y"}) == (
        "labels Team, ok are not GCP labels: keys and values use lowercase letters, digits, '-' "
        "and '_' (keys start with a letter), at most 63 characters"
    )
