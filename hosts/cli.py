"""`uv run python -m hosts <stack> <tpuVms|gpuClusters> <name> [options] -- COMMAND...`

Runs COMMAND on every host of one entry of the stack, through Identity-Aware Proxy and OS Login
(gcloud's `tpu-vm ssh --plain` and `compute ssh`), at most `--parallel` sessions at a time,
each bounded by `--timeout`, after one dry run that prepares your SSH key; prints each host's
outcome as it ends and writes each host's output to its own log under `--logs`. Exits 0 when
every host succeeded, 1 when any did not, 2 on bad input or when gcloud is missing or hangs.

  --slice NODE       only this TPU VM (repeatable)       --worker K   only this worker (repeatable)
  --internal-ip      from inside the VPC, without IAP    --list       print the hosts, run nothing
  --hostfile         print a GPU cluster's MPI / torchrun hostfile of its running VMs
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.system import System
from graph.stack import StackError, open_stack
from hosts.run import DEFAULT_PARALLEL, MAX_PARALLEL, Outcome, Popen, run_everywhere
from hosts.targets import (
    GCLOUD_SECONDS,
    LISTERS,
    Ask,
    Found,
    Runner,
    TargetError,
    gcloud,
    os_login_user,
)
from stacks import registry
from stacks.config import StackConfig
from stacks.messages import ConfigError

DEFAULT_TIMEOUT_SECONDS = 600


class UsageError(Exception):
    """Input the command cannot act on; the message says what to give instead."""


def _parallel(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if not 1 <= value <= MAX_PARALLEL:
        raise argparse.ArgumentTypeError(
            f"{value} sessions at once: give 1 to {MAX_PARALLEL} (each is an IAP tunnel and a "
            "gcloud process on this machine)"
        )
    return value


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the timeout must be more than 0 seconds")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m hosts", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("stack", help="stack name (dev, staging, prod) or a stack file path")
    p.add_argument("system", choices=list(_systems()), help="the config key of the entry")
    p.add_argument("name", help="the entry's name")
    p.add_argument("--slice", action="append", default=[], help="a TPU VM of the entry")
    p.add_argument("--worker", action="append", default=[], type=int, help="a worker number")
    p.add_argument("--parallel", type=_parallel, default=DEFAULT_PARALLEL)
    p.add_argument("--timeout", type=_timeout, default=DEFAULT_TIMEOUT_SECONDS)
    p.add_argument("--logs", type=Path, help="where each host's log goes")
    p.add_argument("--internal-ip", action="store_true", help="reach the VMs without IAP")
    p.add_argument("--list", action="store_true", help="print the hosts and run nothing")
    p.add_argument("--hostfile", action="store_true", help="print a GPU cluster's hostfile")
    return p


def _systems() -> dict[str, System]:
    """Config key -> the system whose entries' hosts the command reaches."""
    return {system.keys[0]: system for system in registry.SYSTEMS if system.hosts}


def _entry(config: StackConfig, key: str, name: str) -> Any:
    entries = LISTERS[_systems()[key].name].entries(config)
    for entry in entries:
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in entries) or "none"
    raise UsageError(f"ai-infra:{key} has no entry {name}; its entries: {known}")


def _run_gcloud(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=GCLOUD_SECONDS, check=False)


def resolve(
    args: argparse.Namespace, config: StackConfig, run: Runner, *, user: str | None = None
) -> Found:
    """The hosts the command runs on, and what `--hostfile` prints. TPU sessions log in as
    `user` (the OS Login user, read from the profile once the key is prepared: `prepared`)."""
    entry = _entry(config, args.system, args.name)
    ask = Ask(args.slice, args.worker, not args.internal_ip, args.hostfile, user)
    return LISTERS[_systems()[args.system].name].find(entry, config.context, ask, run)


def prepared(args: argparse.Namespace, config: StackConfig, run: Runner) -> Found:
    """The targets, once gcloud has made the user's key and imported it into their OS Login
    profile, with one dry run before any session starts: parallel sessions on a new machine
    would each make a key and overwrite the others'."""
    found = resolve(args, config, run)
    if not found.prepare:
        return found
    gcloud(found.prepare, run, "preparing your SSH key (a dry run of gcloud's SSH)")
    if found.needs_user:
        return resolve(args, config, run, user=os_login_user(run))
    return found


def main(
    argv: list[str] | None = None, *, run: Runner = _run_gcloud, popen: Popen = subprocess.Popen
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after `--` is the command, options and all.
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser().parse_args(argv[:cut])
    command = argv[cut + 1 :]
    try:
        opened = open_stack(args.stack, build=False)
        stack, config = opened.name, opened.config
        if args.list or args.hostfile or not command:
            found = resolve(args, config, run)
        else:
            found = prepared(args, config, run)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    except (StackError, UsageError, TargetError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    hosts = found.hosts
    if args.hostfile:
        sys.stdout.write(found.hostfile or "")
        return 0
    if args.list:
        for host in hosts:
            print(f"{host.label}  {shlex.join(host.ssh)}")
        return 0
    if not command:
        print("error: give the command after --, e.g. -- nvidia-smi", file=sys.stderr)
        return 2
    if not hosts:
        print(f"error: {args.system} {args.name} has no running hosts", file=sys.stderr)
        return 1
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    logs = args.logs or Path(".ai-infra-hosts") / f"{stack}-{args.name}-{stamp}"
    text = shlex.join(command) if len(command) > 1 else command[0]
    print(
        f"running on {len(hosts)} host(s), {min(args.parallel, len(hosts))} at a time, "
        f"{args.timeout:.0f} s each; logs in {logs}",
        file=sys.stderr,
    )
    outcomes = run_everywhere(
        hosts,
        text,
        logs=logs,
        parallel=args.parallel,
        timeout=args.timeout,
        popen=popen,
        on_done=lambda o: print(o.line(), file=sys.stderr),
    )
    return _summary(outcomes)


def _summary(outcomes: Sequence[Outcome]) -> int:
    failed = [o for o in outcomes if not o.ok]
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} host(s) succeeded")
    for outcome in failed:
        print(f"  {outcome.line()}")
    if any(o.status == "IAP refused" for o in failed):
        print(
            "  IAP refused: you need roles/iap.tunnelResourceAccessor (the entry's `logins` "
            "grants it) and a firewall rule admitting 35.235.240.0/20 to port 22"
        )
    return 1 if failed else 0
