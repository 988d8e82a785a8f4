"""Startup scripts rendered from named steps, for the systems whose VMs run one of ours (GPU
clusters, TPU VMs): one prelude of shell helpers, each step's lines under its name, and a
readiness signal, a guest attribute the script sets when it ends, that `pulumi up` waits for
(`done`, or `failed: <the first failing step>`).

A system adds a step by rendering it to a `Block`; the prelude gives every block `fail`
(which names the running step), retries with back-off, idempotent file writes and apt calls
that wait for apt's locks and never run beside one another. Values reach bash through
`shlex.quote` or quoted here-documents only.

Non-goals: what a step does (each system's `boot.py`), and Slurm's scripts, which Slurm-GCP
runs its own way.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

from components.identity import OS_LOGIN_METADATA
from components.text import first_hidden, one_line

GUEST_NAMESPACE = "ai-infra"
READY_KEY = "startup"
READY_PATH = f"{GUEST_NAMESPACE}/{READY_KEY}"
"""The guest attribute the script sets: `running` when it starts, then `done` or
`failed: <step>` (Compute Engine, "Set and query guest attributes": a VM writes under
`instance/guest-attributes/<namespace>/<key>` on its metadata server, and the API reads it back
with `compute.instances.getGuestAttributes`; Cloud TPU serves a TPU VM's per worker through
`GetGuestAttributes`)."""
GUEST_ATTRIBUTES_METADATA = {"enable-guest-attributes": "TRUE"}
"""Compute Engine accepts guest attributes only from VMs with this metadata key set."""
GUEST_RESERVED_METADATA = frozenset(
    {
        *OS_LOGIN_METADATA,  # OS Login's 2FA and security-key switches only tighten it
        *GUEST_ATTRIBUTES_METADATA,
        "ssh-keys",
        "sshkeys",
        "serial-port-enable",
        "startup-script",
        "startup-script-url",
        "shutdown-script-url",
        # cloud-init's GCE datasource reads these and the ssh keys (cloudinit/sources/
        # DataSourceGCE.py): its users and keys would log in outside OS Login.
        "user-data",
        "user-data-encoding",
    }
)
"""Metadata keys (compared in lower case) no entry's `metadata` may set on any VM: OS Login's
own (the program sets it), the SSH keys it would bypass, the interactive serial console, the
guest attributes the boot signal needs, and what runs as root without the plan showing it (the
startup script is each system's own field; a script or cloud-config fetched from a URL or
base64-encoded is not what the plan prints)."""
RUNNING = "running"
DONE = "done"
FAILED = "failed: "
REPORT_MAX_CHARS = 200
"""The signal names the first failing step and how many more failed; the log has them all. A
step name may carry a bucket name (up to 222 characters), so the value is kept short."""
APT_LOCK_TIMEOUT_SECONDS = 600
"""How long each package install waits, in all and across its retries, for another apt or dpkg
(unattended-upgrades holds dpkg's lock for minutes after boot): dpkg's locks through apt's
`DPkg::Lock::Timeout` (apt 1.9.11 and later; Ubuntu 22.04 ships 2.4), the package lists' and
archives' locks by retrying, since apt takes those without waiting (apt 2.4.13 and 2.7.14
apt-pkg/acquire.cc, pkgAcquire::GetLock)."""
APT_LOCK_CONF = "/etc/apt/apt.conf.d/90ai-infra-lock-timeout"
"""apt's configuration, so that apt-get calls of scripts we run (the Ops Agent's repository
script) wait for dpkg's lock too."""
APT_SERIAL_LOCK = "/run/ai-infra-apt.lock"
"""The script's own lock (flock(1)): its apt calls, foreground and background, run one at a
time instead of failing on each other's lists lock."""
APT_LOCK_POLL_SECONDS = 5
HEREDOC = "AI_INFRA_EOF"
METADATA_URL = "http://metadata.google.internal/computeMetadata/v1"


def _printable(value: str) -> str:
    if (char := first_hidden(value)) is not None:
        raise ValueError(
            f"has the character {one_line(char)} at offset {value.index(char)}; only tab and "
            "newline may appear (a terminal escape or an invisible character would hide what "
            "whoever reviews the plan reads, and a carriage return breaks bash): remove it"
        )
    return value


ScriptText = Annotated[str, AfterValidator(_printable)]
"""User text that becomes part of a VM's startup script or metadata: nothing of
`components.text.is_hidden`, so what the plan prints is what runs. The stack loader refuses those
first (`stacks/inputs.py`); this holds for a model built from anything else."""


@dataclass(frozen=True)
class Block:
    """One step of a script as bash lines. `name` is what the log and `pulumi up` report when
    it fails; a `background` block runs beside the rest and never fails the script."""

    name: str
    lines: tuple[str, ...]
    background: bool = False


_PRELUDE = """\
#!/bin/bash
# Rendered by ai-infra ({source}) from the stack config; edit the config.
# No `set -e`: each step reports its own failure and the next one still runs.
set -uo pipefail
# Tests point ROOT at a scratch directory; on a VM it is empty.
ROOT=${{AI_INFRA_ROOT:-}}
STEP=prelude
failed=()
apt_fresh=0
apt_left={lock_timeout}

log() {{ echo "ai-infra-startup: $*" >&2; }}

# fail [DETAIL]: the running step failed; the script goes on and reports it at the end.
fail() {{
  local step
  log "FAILED: $STEP${{1:+ ($1)}}"
  for step in "${{failed[@]}}"; do [[ $step == "$STEP" ]] && return 0; done
  failed+=("$STEP")
}}

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

# report VALUE: the readiness signal `pulumi up` waits for (guest attribute {ready_path}).
report() {{
  retry 5 8 curl -fsS -m 10 -X PUT --data "$1" -H "Metadata-Flavor: Google" \\
    "{metadata}/instance/guest-attributes/{ready_path}" >/dev/null ||
    log "could not set the guest attribute {ready_path} to '$1'"
}}

# write_file PATH MODE < CONTENT: replaces $ROOT/PATH only when the content differs, and says
# so in WROTE, so that a re-run restarts nothing it did not change.
write_file() {{
  local path=$ROOT$1 tmp
  mkdir -p "$(dirname "$path")" || return 1
  tmp=$(mktemp "$path.XXXXXX") || return 1
  if ! cat >"$tmp" || ! chmod "$2" "$tmp"; then
    rm -f "$tmp"
    return 1
  fi
  if cmp -s "$tmp" "$path"; then
    rm -f "$tmp"
    WROTE=0
  else
    mv -f "$tmp" "$path" && WROTE=1
  fi
}}

is_mounted() {{ mountpoint -q "$ROOT$1"; }}

# serially COMMAND...: runs COMMAND holding the script's own apt lock, so that its background
# and foreground apt users take turns.
serially() {{
  mkdir -p "$(dirname "$ROOT{serial_lock}")" && flock "$ROOT{serial_lock}" "$@"
}}

# apt_get ARGS...: waits for apt's locks out of apt_left, the seconds left of the running
# install's {lock_timeout}: dpkg's through DPkg::Lock::Timeout (what the call took is counted);
# the lists' and archives' locks, which apt takes without waiting, by trying again while apt
# says a lock is held. Retries of a failed call draw on the same seconds, so an install waits
# {lock_timeout} s for locks in all, however often it is tried.
apt_get() {{
  local status err started
  err=$(mktemp) || return 1
  while :; do
    started=$SECONDS
    serially apt-get -o DPkg::Lock::Timeout="$apt_left" "$@" 2>"$err"
    status=$?
    apt_left=$((apt_left - (SECONDS - started)))
    cat "$err" >&2
    if ((status == 0)) || ! grep -qE 'Could not get lock|Unable to lock' "$err" ||
      ((apt_left <= 0)); then
      ((apt_left > 0)) || apt_left=0
      rm -f "$err"
      return "$status"
    fi
    log "apt is busy (another apt or dpkg holds a lock): waiting"
    sleep {lock_poll}
    apt_left=$((apt_left - {lock_poll}))
  done
}}
write_file {lock_conf} 0644 <<<'DPkg::Lock::Timeout "{lock_timeout}";' ||
  log "could not write {lock_conf}"

# apt_install PACKAGE...: refreshes the package lists first (once, and again after a source
# list changes), then installs; {lock_timeout} s for apt's locks in all.
apt_install() {{
  apt_left={lock_timeout}
  if ((apt_fresh == 0)); then
    retry 5 32 apt_get update || return 1
    apt_fresh=1
  fi
  retry 5 32 apt_get install -y "$@"
}}

# apt_source NAME LINE: a source list in sources.list.d; a new one makes the lists stale.
apt_source() {{
  write_file "/etc/apt/sources.list.d/$1.list" 0644 <<<"$2" || return 1
  if ((WROTE)); then apt_fresh=0; fi
}}

# start_unit UNIT: starts a unit that is not running; a running one (a re-run of this
# script) is left alone.
start_unit() {{
  systemctl daemon-reload || return 1
  systemctl is-active --quiet "$1" || systemctl enable --now "$1"
}}

report {running}
"""

_EPILOGUE = """\
wait  # background steps, so that their outcome is in this boot's log
if ((${{#failed[@]}} == 0)); then
  log "done"
  report {done}
  exit 0
fi
log "done with ${{#failed[@]}} failed step(s): ${{failed[*]}}"
more=""
if ((${{#failed[@]}} > 1)); then more=" (+$((${{#failed[@]}} - 1)) more)"; fi
report "$(printf '%s' "{failed}${{failed[0]}}$more" | cut -c1-{report_max})"
exit 1
"""


def line(*words: str | int) -> str:
    """A command line of `words`, each quoted for bash."""
    return " ".join(shlex.quote(str(w)) for w in words)


def heredoc(command: str, content: str) -> list[str]:
    """`command` reading `content` verbatim from a quoted here-document; never indented, or
    the delimiter would not end it."""
    if HEREDOC in content.splitlines():
        raise ValueError(f"content contains the here-document delimiter {HEREDOC}")
    return [f"{command} <<'{HEREDOC}'", *content.rstrip("\n").splitlines(), HEREDOC]


def render(blocks: Sequence[Block], *, source: str, library: str = "") -> str:
    """The script: the prelude, a system's own shell functions (`library`), then each block
    in order under its name, background blocks alongside, and the readiness signal last."""
    lines = [
        _PRELUDE.format(
            source=source,
            ready_path=READY_PATH,
            metadata=METADATA_URL,
            serial_lock=APT_SERIAL_LOCK,
            lock_timeout=APT_LOCK_TIMEOUT_SECONDS,
            lock_poll=APT_LOCK_POLL_SECONDS,
            lock_conf=APT_LOCK_CONF,
            running=RUNNING,
        ),
        library,
    ]
    for block in blocks:
        lines.append(f"STEP={shlex.quote(block.name)}")
        if block.background:
            lines += ["(", *block.lines, ") &"]
        else:
            lines += block.lines
    lines.append("STEP=end")
    lines.append(_EPILOGUE.format(done=DONE, failed=FAILED, report_max=REPORT_MAX_CHARS))
    return "\n".join(lines)


def parse_signal(value: str | None) -> tuple[str, str | None]:
    """(state, failing step) of a readiness signal as the API returns it: `missing` before the
    script set any, then `running`, `done` or `failed` with the step it names."""
    if value is None or value == "":
        return "missing", None
    if value.startswith(FAILED):
        return "failed", value.removeprefix(FAILED)
    if value in (RUNNING, DONE):
        return value, None
    return "unknown", value
