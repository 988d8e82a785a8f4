"""Running one command on many hosts: a gcloud SSH session per host, at most `parallel` at a
time, each bounded by `timeout` and killed with its process group past it, its output in a
log file of its own, its outcome classified (ok, the command's exit status, timed out, IAP
refused the tunnel, SSH refused the login)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hosts.targets import Host

MAX_PARALLEL = 64
"""The most sessions at once. Each is a gcloud process holding an IAP tunnel on the user's
machine; Google documents no per-user count of concurrent IAP TCP tunnels that this could be
held to, so this is the tool's own bound, set so a slice of 64 hosts runs in one wave."""
DEFAULT_PARALLEL = 16
KILL_GRACE_SECONDS = 5.0
IAP_ERROR = re.compile(r"Error while connecting \[(?P<why>[^\]]*)\]")
"""How gcloud reports a tunnel IAP would not open (googlecloudsdk api_lib/compute/
iap_tunnel_websocket.py, gcloud 578.0.0): `4033: 'not authorized'` without
roles/iap.tunnelResourceAccessor, `4003: 'failed to connect to backend'` when no firewall rule
admits 35.235.240.0/20 to port 22, `Handshake status 40x` for missing permissions."""
SSH_REFUSED = 255
"""ssh's own exit status for a connection or login it could not make (ssh(1)): OS Login
refused the user, or the host could not be reached."""

Popen = Callable[..., subprocess.Popen[bytes]]


@dataclass(frozen=True)
class Outcome:
    host: Host
    status: str
    """`ok`, `failed`, `timed out`, `IAP refused`, `SSH refused` or `not started`."""
    code: int | None
    log: Path
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def line(self) -> str:
        what = {
            "ok": "ok",
            "failed": f"exit {self.code}",
        }.get(self.status, self.status)
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.host.label}  {what}{detail}  (log {self.log})"


def _classify(code: int, log: Path) -> tuple[str, str]:
    if code == 0:
        return "ok", ""
    text = log.read_text(errors="replace") if log.exists() else ""
    if match := IAP_ERROR.search(text):
        return "IAP refused", match["why"]
    if code == SSH_REFUSED:
        last = [line for line in text.splitlines() if line.strip()]
        return "SSH refused", last[-1] if last else "ssh could not connect or log in"
    return "failed", ""


def run_on(
    host: Host, command: str, log: Path, timeout: float, popen: Popen = subprocess.Popen
) -> Outcome:
    """One session: the command's output and gcloud's own go to `log`."""
    argv = [*host.ssh, f"--command={command}"]
    with log.open("wb") as out:
        out.write(f"$ {' '.join(argv)}\n".encode())
        out.flush()
        try:
            process = popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                # Its own process group: a timeout kills gcloud, ssh and the tunnel together.
                start_new_session=True,
            )
        except OSError as error:
            return Outcome(host, "not started", None, log, str(error))
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            return Outcome(host, "timed out", None, log, f"after {timeout:.0f} s, killed")
    status, detail = _classify(code, log)
    return Outcome(host, status, code, log, detail)


def _kill(process: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_everywhere(
    hosts: Sequence[Host],
    command: str,
    *,
    logs: Path,
    parallel: int = DEFAULT_PARALLEL,
    timeout: float,
    popen: Popen = subprocess.Popen,
    on_done: Callable[[Outcome], None] = lambda _: None,
) -> list[Outcome]:
    """Every host's outcome, in the hosts' order; `on_done` hears each as it ends."""
    if not 1 <= parallel <= MAX_PARALLEL:
        raise ValueError(f"parallel must be 1 to {MAX_PARALLEL}, not {parallel}")
    logs.mkdir(parents=True, exist_ok=True)

    def one(host: Host) -> Outcome:
        outcome = run_on(host, command, logs / f"{host.slug}.log", timeout, popen)
        on_done(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(one, hosts))
