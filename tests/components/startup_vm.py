"""A scratch VM for running startup scripts under bash against stubs: every command a script
would run on a VM (gcsfuse, mount, apt-get, systemctl, gcloud, curl, ray, docker, ...) is a stub
on PATH that logs its arguments and keeps what a VM would remember (mounts, running units,
apt's locks, guest attributes) in a state directory, so that re-runs, reboots and lock
contention behave as they would. GPU cluster and TPU VM tests share it."""

from __future__ import annotations

import stat
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from components import startup

# Each stub logs "name arg arg ..." and runs its extra lines; it exits with
# $STUB_<NAME>_EXIT (0 by default) unless the extra lines exit first.
STUB = """#!/bin/bash
name=$(basename "$0")
echo "$name $*" >> "$STUB_LOG"
var="STUB_${name//[^a-zA-Z0-9]/_}_EXIT"
{extra}
exit "${!var:-0}"
"""
# apt-get: fails at once, as apt does, while another apt-get runs (the lists' lock, which apt
# takes without waiting) or while $STUB_STATE/lists-lock exists (another apt user holds it;
# the file holds the seconds it is held for, which `sleep` counts down). The dpkg lock
# ($STUB_STATE/dpkg-lock) is waited for only with DPkg::Lock::Timeout.
APT_GET = r"""
if ! mkdir "$STUB_STATE/apt-running" 2>/dev/null; then
  echo "OVERLAP apt-get $*" >> "$STUB_LOG"
  echo "E: Could not get lock /var/lib/apt/lists/lock" >&2; exit 100
fi
trap 'rmdir "$STUB_STATE/apt-running"' EXIT
if [[ " $* " == *" update "* && -e $STUB_STATE/lists-lock ]]; then
  echo "E: Unable to lock directory /var/lib/apt/lists/" >&2; exit 100
fi
if [[ -e $STUB_STATE/dpkg-lock ]]; then
  if [[ " $* " == *" DPkg::Lock::Timeout="* ]]; then
    echo "dpkg-lock released to a waiting apt-get" >> "$STUB_LOG"
    rm -f "$STUB_STATE/dpkg-lock"
  else
    echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2; exit 100
  fi
fi
for package in "$@"; do
  case $package in
    gcsfuse=*) cp "$STUB_BIN/gcsfuse.installable" "$STUB_BIN/gcsfuse" 2>/dev/null;;
  esac
done
/bin/sleep "${STUB_APT_SECONDS:-0}"
"""
SLEEP = r"""
if [[ -e $STUB_STATE/lists-lock ]]; then
  left=$(( $(<"$STUB_STATE/lists-lock") - $1 ))
  if ((left <= 0)); then rm -f "$STUB_STATE/lists-lock"
  else echo "$left" > "$STUB_STATE/lists-lock"; fi
fi
"""
# curl: a PUT of a guest attribute is kept in $STUB_STATE/guest/<namespace>/<key>; `-o FILE`
# writes $STUB_CURL_BODY there (a downloaded script); a URL containing $STUB_CURL_FAIL fails.
CURL = r"""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --data) data=${args[i+1]};;
    -o) out=${args[i+1]};;
  esac
done
url=${args[-1]}
if [[ -n ${STUB_CURL_FAIL:-} && $url == *"$STUB_CURL_FAIL"* ]]; then exit 22; fi
if [[ $url == */guest-attributes/* && -n ${data+x} ]]; then
  path="$STUB_STATE/guest/${url#*/guest-attributes/}"
  mkdir -p "$(dirname "$path")" && printf '%s' "$data" > "$path"
fi
if [[ -n ${out:-} ]]; then printf '%s' "${STUB_CURL_BODY:-}" > "$out"; fi
"""
STUBS = {
    # gcsfuse [-o OPTS] [--file-mode=M] --dir-mode=M BUCKET PATH: the mount point takes the
    # directory mode (read-only: no write bit), as a FUSE mount with allow_other shows it.
    "gcsfuse": 'path=${@: -1}; mode=755; for a in "$@"; do case $a in --dir-mode=*) '
    "mode=${a#--dir-mode=};; esac; done; "
    'chmod "$mode" "$path" && echo "$path" >> "$STUB_STATE/mounts"',
    "mount": 'echo "${@: -1}" >> "$STUB_STATE/mounts"',
    "mountpoint": 'grep -qxF -- "${@: -1}" "$STUB_STATE/mounts" 2>/dev/null; exit $?',
    "mount.nfs": "",
    "apt-get": APT_GET,
    "apt-mark": "",
    "curl": CURL,
    "gpg": "",
    "sleep": SLEEP,
    "useradd": "",
    "id": "",
    "modprobe": "",
    "docker": "",
    "blkid": "[[ -e $STUB_STATE/formatted ]]; exit $?",
    # mdadm --create|--assemble ARRAY ...: the members keep the array's superblock
    # ($STUB_STATE/md-superblock) across reboots, which assembling needs; the array device
    # exists until the VM reboots.
    "mdadm": "case $1 in --assemble) [[ -e $STUB_STATE/md-superblock ]] || exit 1;; "
    '--create) touch "$STUB_STATE/md-superblock";; esac; '
    'mkdir -p "$(dirname "$2")" && touch "$2"',
    "mkfs.ext4": 'touch "$STUB_STATE/formatted"',
    # systemctl: remembers which units run; `cat` finds the units listed in $STUB_UNITS.
    "systemctl": 'case $1 in is-active) grep -qxF -- "${@: -1}" "$STUB_STATE/active" '
    "2>/dev/null; exit $?;; "
    'enable) echo "${@: -1}" >> "$STUB_STATE/active";; '
    'cat) [[ " ${STUB_UNITS:-} " == *" $2 "* ]]; exit $?;; esac',
    # python3 -m venv DIR: a venv whose pip and ray are stubs too.
    "python3": 'if [[ $1 == -m && $2 == venv ]]; then /bin/mkdir -p "${@: -1}/bin"; '
    'for tool in pip ray; do cp "$0" "${@: -1}/bin/$tool"; done; fi',
    "hostname": 'echo "$STUB_HOSTNAME"',
    # gcloud ... list-instances GROUP: the group's members from $STUB_STATE/group-GROUP.
    "gcloud": '[[ $4 == list-instances ]] && cat "$STUB_STATE/group-$5" 2>/dev/null',
    # timeout 3 bash -c PROBE probe HOST PORT: a Ray head listens on the hosts in
    # $STUB_RAY_HEADS.
    "timeout": '[[ " ${STUB_RAY_HEADS:-} " == *" ${@: -2:1} "* ]]; exit $?',
    "ray": "",
}


class Vm:
    """A scratch VM: ROOT for the files the script writes, stubs on PATH, and state that
    survives between runs of the script (a re-run in the same boot). `render` turns what
    `run` is given into the script."""

    def __init__(
        self,
        tmp_path: Path,
        render: Callable[[Any], str],
        root: Path | None = None,
        without: Sequence[str] = (),
    ):
        self.tmp = tmp_path
        self.render = render
        self.bin = tmp_path / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.root = root or tmp_path / "root"
        self.state = tmp_path / "state"
        self.state.mkdir(exist_ok=True)
        self.log = tmp_path / "calls.log"
        self.log.touch()
        for directory in ("usr/share/keyrings", "dev/disk/by-id", "run"):
            (self.root / directory).mkdir(parents=True, exist_ok=True)
        (self.root / "dev/disk/by-id/google-data").touch()  # the data disk, attached
        (self.root / "etc").mkdir(exist_ok=True)
        (self.root / "etc/os-release").write_text("ID=ubuntu\nVERSION_CODENAME=noble\n")
        for name, extra in STUBS.items():
            # A tool the image lacks can still be installed (apt-get copies it into place).
            path = self.bin / (f"{name}.installable" if name in without else name)
            path.write_text(STUB.replace("{extra}", extra))
            path.chmod(path.stat().st_mode | stat.S_IEXEC)

    def env(self, **env: str) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "STUB_LOG": str(self.log),
            "STUB_STATE": str(self.state),
            "STUB_BIN": str(self.bin),
            "STUB_HOSTNAME": "demo-0001",
            "HOME": str(self.tmp),
            "AI_INFRA_ROOT": str(self.root),
            **env,
        }

    def run(self, steps: Any, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        """One run of the script; returns what it printed and the calls of this run."""
        script = self.tmp / "startup.sh"
        # Images put their own directories first on PATH; stubs must win, so mask them.
        text = "\n".join(
            line for line in self.render(steps).splitlines() if not line.startswith("export PATH=")
        )
        script.write_text(text)
        before = len(self.log.read_text().splitlines())
        result = subprocess.run(
            ["bash", str(script)], env=self.env(**env), capture_output=True, text=True, timeout=60
        )
        return result, self.log.read_text().splitlines()[before:]

    def file(self, path: str) -> str:
        return (self.root / path.lstrip("/")).read_text()

    def mounted(self) -> list[str]:
        mounts = self.state / "mounts"
        return mounts.read_text().splitlines() if mounts.exists() else []

    def signal(self) -> str | None:
        """The readiness signal the script left, as the API would return it."""
        path = self.state / "guest" / startup.READY_PATH
        return path.read_text() if path.exists() else None
