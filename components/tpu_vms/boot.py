"""The startup script of every TPU VM of a `tpuVms` entry, rendered from named steps of
`components.startup`: the entry's `startupScript` as a step of its own, then the readiness
signal that `pulumi up` waits for (`provider.StartupWait`); bucket mounts of `ai-infra:storage`
(`components.storage.boot`) run before it.

Non-goal: what the user's script does; it runs as written, as root, on every boot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components import startup
from components import storage as storage_boot
from components.startup import Block, heredoc
from components.storage import VolumeMount

USER_SCRIPT = "/opt/ai-infra/startup-script"
"""Where the entry's `startupScript` is written and run from: as a file it keeps its own
interpreter line (`#!/usr/bin/env python3`); without one the kernel refuses it and bash runs
it as a shell script, as the guest agent runs a `startup-script`."""


@dataclass(frozen=True)
class UserScript:
    """The entry's `startupScript`, run as root on every boot of every worker."""

    text: str


Step = UserScript | VolumeMount


def _block(step: Step) -> Block:
    match step:
        case VolumeMount():
            return storage_boot.block(step)
        case UserScript(text):
            return Block(
                "startupScript",
                (
                    *heredoc(f"write_file {USER_SCRIPT} 0755", text),
                    'log "running startupScript"',
                    f'"$ROOT{USER_SCRIPT}" || fail',
                ),
            )


def render(steps: Sequence[Step]) -> str:
    return startup.render(
        [_block(s) for s in steps],
        source="components/tpu_vms/boot.py",
        library=storage_boot.LIBRARY,
    )


def steps(startup_script: str | None, mounts: Sequence[VolumeMount] = ()) -> list[Step]:
    """The mounts, then the user's script, which may read them."""
    found: list[Step] = list(mounts)
    return found + ([UserScript(startup_script)] if startup_script is not None else [])
