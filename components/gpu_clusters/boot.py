"""The startup script of a GPU cluster VM, rendered from typed steps: GCS and NFS mounts, the
Ops Agent, a Ray cluster and the user's command. Every value reaches bash through
`shlex.quote`; nothing is templated. Non-goals: installing drivers (the Deep Learning VM image
does that from the `install-nvidia-driver` metadata key) and anything a container would do.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

OPS_AGENT_REPO_SCRIPT = "https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh"
OPS_AGENT_VERSION = "2.70.0"
"""The repo script's `--version` (it takes latest, MAJOR.*.* or MAJOR.MINOR.PATCH): an exact
release, the newest tag of GoogleCloudPlatform/ops-agent, so every VM runs the same agent."""
GCSFUSE_VERSION = "3.11.2"
"""Cloud Storage FUSE from Google's apt repository, installed where the image lacks it (latest
release tag v3.11.2 in GoogleCloudPlatform/gcsfuse)."""
GOOGLE_APT_KEY = "https://packages.cloud.google.com/apt/doc/apt-key.gpg"
RAY_VERSION = "2.60.0"
"""Pinned `ray[default]`; the provisioning tool pinned 1.12.1, long out of support."""
RAY_PORT = 6379
CONDA_BIN = "/opt/conda/bin"
"""Where Deep Learning VM images keep python, pip and what pip installs."""


@dataclass(frozen=True)
class GcsMount:
    """A bucket mounted with gcsfuse; `implicit_dirs` shows prefixes written by other tools as
    directories, as the provisioning tool did."""

    bucket: str
    path: str
    read_only: bool = False


@dataclass(frozen=True)
class NfsMount:
    """A Filestore share; `server` is the instance's IP."""

    server: str
    share: str
    path: str


@dataclass(frozen=True)
class OpsAgent:
    """Installed in the background with random, capped exponential back-off, so that neither a
    slow package mirror nor a failure holds up the mounts, Ray or the user's command."""

    attempts: int = 10
    max_backoff_seconds: int = 32


@dataclass(frozen=True)
class Ray:
    """A Ray cluster over the group's VMs: the VM whose name sorts first among those labelled
    `aiinfra-cluster=<cluster>` is the head (VM 0); the others join it."""

    cluster: str
    zone: str
    gpus_per_vm: int
    version: str = RAY_VERSION
    port: int = RAY_PORT


@dataclass(frozen=True)
class Command:
    """The user's `startupCommand`, run last, as root, by `bash -c`."""

    command: str


Step = GcsMount | NfsMount | OpsAgent | Ray | Command

_PRELUDE = """\
#!/bin/bash
# Rendered by ai-infra (components/gpu_clusters/boot.py) from the stack config; edit the config.
# No `set -e`: each step reports its own failure and the next one still runs.
set -uo pipefail
export PATH="{conda}:$PATH"
# Tests point ROOT at a scratch directory; on a VM it is empty.
ROOT=${{AI_INFRA_ROOT:-}}
failures=0

log() {{ echo "ai-infra-startup: $*" >&2; }}
fail() {{ log "FAILED: $*"; failures=$((failures + 1)); }}

# retry ATTEMPTS MAX_BACKOFF COMMAND...: sleeps a random 1..cap seconds between attempts, the
# cap doubling up to MAX_BACKOFF, so that a whole cluster booting at once spreads its retries.
retry() {{
  local attempts=$1 max=$2 n=1 cap=1
  shift 2
  until "$@"; do
    if ((n >= attempts)); then
      log "giving up after $n attempts: $*"
      return 1
    fi
    cap=$((cap * 2 > max ? max : cap * 2))
    sleep "$((RANDOM % cap + 1))"
    n=$((n + 1))
  done
}}

install_gcsfuse() {{
  local key="$ROOT/usr/share/keyrings/cloud.google.gpg" codename
  codename=$(. "$ROOT/etc/os-release" && echo "$VERSION_CODENAME") || return 1
  if [[ ! -s $key ]]; then
    curl -fsSL "{apt_key}" | gpg --dearmor -o "$key" || return 1
  fi
  echo "deb [signed-by=/usr/share/keyrings/cloud.google.gpg] \
https://packages.cloud.google.com/apt gcsfuse-$codename main" \
    >"$ROOT/etc/apt/sources.list.d/gcsfuse.list" &&
    apt-get update && apt-get install -y "gcsfuse=$1"
}}

mount_gcs() {{
  if ! command -v gcsfuse >/dev/null; then
    retry 5 32 install_gcsfuse "$4" || return 1
  fi
  local options=allow_other
  if [[ $3 == ro ]]; then options+=,ro; fi
  mkdir -p "$2" && gcsfuse --implicit-dirs -o "$options" "$1" "$2"
}}

mount_nfs() {{
  if ! command -v mount.nfs >/dev/null; then
    retry 5 16 apt-get install -y nfs-common || return 1
  fi
  mkdir -p "$3" && retry 10 32 mount -t nfs -o hard,timeo=600,retrans=3 "$1:/$2" "$3"
}}

install_ops_agent() {{
  local script
  script=$(mktemp) || return 1
  curl -fsSL -o "$script" "$1" && bash "$script" --also-install --version="$2"
}}

start_ray() {{
  local version=$1 port=$2 gpus=$3 cluster=$4 zone=$5 head
  # A venv of its own: Ubuntu 24.04 refuses pip into the system Python (PEP 668), and system
  # site packages keep the image's PyTorch importable from Ray tasks.
  local venv="$ROOT/opt/ai-infra/ray-$version"
  id ray >/dev/null 2>&1 || useradd --system --create-home ray || return 1
  if [[ ! -x $venv/bin/ray ]]; then
    python3 -m venv --system-site-packages "$venv" &&
      retry 5 32 "$venv/bin/pip" install --quiet "ray[default]==$version" || return 1
  fi
  head=$(retry 10 32 gcloud compute instances list --zones="$zone" \\
    --filter="labels.aiinfra-cluster=$cluster" --sort-by=name --limit=1 \\
    --format="value(name)") || return 1
  if [[ -z "$head" ]]; then
    log "no VM labelled aiinfra-cluster=$cluster in $zone"
    return 1
  fi
  if [[ "$(hostname)" == "$head" ]]; then
    log "starting the Ray head on $head:$port"
    runuser -u ray -- "$venv/bin/ray" start --head --port="$port" --num-gpus="$gpus"
  else
    log "joining the Ray head $head:$port"
    retry 30 30 runuser -u ray -- "$venv/bin/ray" start --address="$head:$port" \\
      --num-gpus="$gpus"
  fi
}}
"""


def _line(*words: str | int) -> str:
    return " ".join(shlex.quote(str(w)) for w in words)


def _step(step: Step) -> list[str]:
    match step:
        case GcsMount(bucket, path, read_only):
            mode = "ro" if read_only else "rw"
            mount = _line(bucket, path, mode, GCSFUSE_VERSION)
            return [f"mount_gcs {mount} || fail {_line(f'gcsfuse {bucket}')}"]
        case NfsMount(server, share, path):
            return [f"mount_nfs {_line(server, share, path)} || fail {_line(f'nfs {path}')}"]
        case OpsAgent(attempts, max_backoff):
            install = _line(
                "retry", attempts, max_backoff, "install_ops_agent", OPS_AGENT_REPO_SCRIPT
            )
            return [
                "if systemctl is-active --quiet google-cloud-ops-agent; then",
                '  log "Ops Agent already running"',
                "else",
                f"  ({install} {shlex.quote(OPS_AGENT_VERSION)} || log 'Ops Agent not installed;"
                " logs and GPU metrics stay local') &",
                "fi",
            ]
        case Ray(cluster, zone, gpus, version, port):
            return [f"start_ray {_line(version, port, gpus, cluster, zone)} || fail ray"]
        case Command(command):
            return [
                'log "running startupCommand"',
                f"bash -c {shlex.quote(command)} || fail startupCommand",
            ]


def render(steps: Sequence[Step]) -> str:
    """The script; the steps run in the order given, the Ops Agent alongside them."""
    lines = [_PRELUDE.format(conda=CONDA_BIN, apt_key=GOOGLE_APT_KEY)]
    for step in steps:
        lines += _step(step)
    lines += [
        "wait  # the Ops Agent install, so its outcome is in this boot's log",
        'log "done with $failures failed step(s)"',
        'exit "$((failures > 0))"',
        "",
    ]
    return "\n".join(lines)
