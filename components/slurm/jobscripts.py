"""The scripts Slurm runs around jobs: the cluster's prologs and epilogs, and each partition's,
which run for that partition's jobs only. Slurm runs every file `Prolog=<dir>/*` matches
(prep_script_slurmd.c, glob), and setup installs each object `slurm-<kind>-script-<name>`
into that one folder (util.py `install_custom_scripts`); a partition's script is installed
there wrapped in a guard rendered here, which runs it only when `SLURM_JOB_PARTITION` (set in
prolog and epilog environments, Slurm "Prolog and Epilog Guide") is the partition.
"""

from __future__ import annotations

import base64
import shlex
from dataclasses import dataclass
from typing import Literal

from components.slurm.config import SlurmConfig
from components.slurm.fields import JobScript

Kind = Literal["prolog", "epilog"]
KINDS: tuple[Kind, ...] = ("prolog", "epilog")


@dataclass(frozen=True)
class InstalledScript:
    """One script as setup installs it: the object's name after `slurm-<kind>-script-` (what
    config.yaml's `prolog_scripts` lists), the resource's role and its content."""

    kind: Kind
    name: str
    resource: str
    content: str


def object_suffix(file_name: str) -> str:
    """`stem.ext` -> `stem_ext`: setup splits at the last '_' back into a file name."""
    stem, _, extension = file_name.rpartition(".")
    return f"{stem}_{extension}"


def partition_prefix(partition: str) -> str:
    """What a partition's script files start with, sorting after the cluster's own."""
    return f"zz-{partition}-"


def partition_file(partition: str, script: JobScript) -> str:
    """The file a partition's script is installed as."""
    return partition_prefix(partition) + script.name


def guarded(partition: str, script: JobScript) -> str:
    """`script` run only for jobs of `partition`: the content travels base64-encoded, is
    written to a private file and run with the prolog's arguments; its exit status is the
    wrapper's (a failing prolog drains the node, as the script's own would)."""
    encoded = base64.b64encode(script.content.encode()).decode()
    lines = [
        "#!/bin/bash",
        f"# Rendered by ai-infra (components/slurm/jobscripts.py): {script.name} for jobs of",
        f"# partition {partition} only.",
        "set -euo pipefail",
        f'[[ "${{SLURM_JOB_PARTITION:-}}" == {shlex.quote(partition)} ]] || exit 0',
        'script=$(mktemp "${TMPDIR:-/tmp}/ai-infra-script.XXXXXX")',
        "trap 'rm -f \"$script\"' EXIT",
        "base64 -d > \"$script\" <<'AI_INFRA_SCRIPT'",
        *(encoded[i : i + 76] for i in range(0, len(encoded), 76)),
        "AI_INFRA_SCRIPT",
        'chmod 700 "$script"',
        '"$script" "$@"',
    ]
    return "\n".join(lines) + "\n"


def installed(config: SlurmConfig) -> list[InstalledScript]:
    """Every prolog and epilog of the cluster, its own first, then each partition's."""
    found = []
    for kind in KINDS:
        scripts = config.prolog_scripts if kind == "prolog" else config.epilog_scripts
        found += [
            InstalledScript(kind, object_suffix(s.name), f"{kind}-{s.name}", s.content)
            for s in scripts
        ]
        for partition in config.partitions:
            own = partition.prolog_scripts if kind == "prolog" else partition.epilog_scripts
            found += [
                InstalledScript(
                    kind,
                    object_suffix(partition_file(partition.name, s)),
                    f"{kind}-{partition.name}-{s.name}",
                    guarded(partition.name, s),
                )
                for s in own
            ]
    return found
