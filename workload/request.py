"""What a team member asks for on the command line, checked flag by flag before the stack is
read: the JobSet's name, image, command, environment, priority, restarts, TTL and per-pod CPU
and memory. Each refusal names its flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import TypeAdapter, ValidationError

from components.types import ImageReference


class FlagError(Exception):
    """A flag whose value the stack refuses; `flag` names it for the message."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(f"{flag}: {message}")
        self.flag = flag
        self.message = message


ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
"""What Kubernetes accepts as an environment variable name (apimachinery validation
IsEnvVarName: a C identifier with '-' and '.' allowed); 1.34's relaxed rule is not assumed."""
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?")
_DURATION = re.compile(r"([0-9]+)(s|m|h|d)?")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_TTL_SECONDS = 30 * 86400
"""A bound of this command's: a finished JobSet kept longer than 30 days is forgotten, not
kept on purpose."""
DEFAULT_TTL_SECONDS = 12 * 3600
MAX_GRACE_SECONDS = 3600
"""A bound of this command's on `--grace-period`: a checkpoint written in longer than an hour
is better written periodically."""
POD_SUFFIX = 6
"""`-abcde`: the random suffix Kubernetes adds to a Job's pod names; JobSet's webhook counts it
(pkg/webhooks/jobset_webhook.go at v0.12.0)."""


@dataclass(frozen=True)
class Request:
    """A JobSet to render, as the flags give it."""

    team: str
    capacity: str
    """`--slice`: a `tpuSlices` name, `tpuProvisioner.<type>`, or a `gpuPools` name."""
    name: str
    image: str
    command: list[str] = field(default_factory=list)
    slices: int | None = None
    """TPU slices; None for GPU pools."""
    nodes: int | None = None
    """GPU nodes; None for TPU capacity."""
    env: dict[str, str] = field(default_factory=dict)
    priority: str | None = None
    max_restarts: int = 0
    ttl_seconds: int = DEFAULT_TTL_SECONDS
    """`ttlSecondsAfterFinished`; 12 hours unless `--ttl` says otherwise, xpk's default
    (parser/workload.py `--ttl-seconds-after-finished` at 367c8382)."""
    grace_seconds: int | None = None
    """`terminationGracePeriodSeconds`: time to write a checkpoint when a pod is stopped."""
    volumes: list[str] = field(default_factory=list)
    """`ai-infra:storage` volumes or team buckets, by the stack's names."""
    cpu: str | None = None
    memory: str | None = None


def check_name(name: str, replicated_job: str, replicas: int, pods: int) -> None:
    """JobSet's own rule: its Jobs and pods are named `<jobset>-<job>-<index>[-<pod>]` plus a
    random suffix, each a DNS-1035 label of at most 63 characters."""
    if not DNS_1035.fullmatch(name):
        raise FlagError(
            "--name",
            f"'{name}' is not a JobSet name: lowercase letters, digits and '-', starting with "
            "a letter and ending with a letter or digit",
        )
    longest = f"{name}-{replicated_job}-{replicas - 1}-{pods - 1}"
    if len(longest) + POD_SUFFIX > 63:
        room = 63 - POD_SUFFIX - (len(longest) - len(name))
        raise FlagError(
            "--name",
            f"'{name}' makes pod names like '{longest}-abcde', longer than Kubernetes' 63 "
            f"characters; use at most {room} characters",
        )


def check_image(image: str) -> None:
    try:
        TypeAdapter(ImageReference).validate_python(image)
    except ValidationError as error:
        raise FlagError("--image", error.errors()[0]["msg"].removeprefix("Value error, ")) from None


def parse_env(pairs: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise FlagError("--env", f"'{pair}' is not KEY=VALUE")
        if not ENV_NAME.fullmatch(key):
            raise FlagError(
                "--env",
                f"'{key}' is not a name Kubernetes accepts for an environment variable: "
                "letters, digits, '_', '-' and '.', not starting with a digit",
            )
        if key in env:
            raise FlagError("--env", f"'{key}' is given twice")
        env[key] = value
    return env


def parse_duration(flag: str, text: str, most: int, beyond: str) -> int:
    """A flag's duration as seconds: `3600`, `90m`, `12h` or `7d`, at most `most`."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise FlagError(flag, f"'{text}' is not a duration such as 3600, 90m, 12h or 7d")
    seconds = int(match[1]) * _SECONDS[match[2] or "s"]
    if seconds > most:
        raise FlagError(flag, f"'{text}' is more than {beyond}")
    return seconds


def parse_ttl(text: str | None) -> int:
    """`--ttl` as seconds; 12 hours when not given."""
    if text is None:
        return DEFAULT_TTL_SECONDS
    return parse_duration("--ttl", text, MAX_TTL_SECONDS, "30 days; delete the JobSet instead")


def parse_grace(text: str | None) -> int | None:
    """`--grace-period` as seconds, at most an hour."""
    if text is None:
        return None
    return parse_duration(
        "--grace-period",
        text,
        MAX_GRACE_SECONDS,
        "an hour; a stopped pod holds its node (and its quota) that long",
    )


def check_quantity(flag: str, text: str | None) -> None:
    if text is not None and not QUANTITY.fullmatch(text):
        raise FlagError(flag, f"'{text}' is not a Kubernetes quantity such as 16, 500m or 64Gi")


_BYTE_UNITS = ("k", "M", "G", "T", "P", "Ki", "Mi", "Gi", "Ti", "Pi")


def check_memory(text: str | None) -> None:
    """A memory quantity with a byte unit: Kubernetes reads a bare `512` as 512 bytes and
    `512m` as half a byte, neither of which anyone means."""
    if text is not None and not text.endswith(_BYTE_UNITS):
        raise FlagError(
            "--memory",
            f"'{text}' has no byte unit, and Kubernetes would read it as "
            f"{'thousandths of a byte' if text.endswith('m') else 'bytes'}; write e.g. "
            f"{text.rstrip('m')}Gi or {text.rstrip('m')}Mi",
        )
