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
from dataclasses import dataclass
from pathlib import Path

from components.gpu_clusters import GpuClusterConfig
from components.tpu_vms import TpuVmConfig
from hosts.run import DEFAULT_PARALLEL, MAX_PARALLEL, Outcome, Popen, run_everywhere
from hosts.targets import (
    GCLOUD_SECONDS,
    KEY_FILE,
    Host,
    Runner,
    TargetError,
    gcloud,
    gpu_hosts,
    gpu_members,
    gpu_prepare,
    hostfile,
    os_login_user,
    tpu_hosts,
    tpu_prepare,
    tpu_workers,
)
from plan.cli import PlanError, load_stack
from stacks.config import StackConfig
from stacks.messages import ConfigError

SYSTEMS = ("tpuVms", "gpuClusters")
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
    p.add_argument("system", choices=SYSTEMS, help="the config key of the entry")
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


def _entry(config: StackConfig, system: str, name: str) -> TpuVmConfig | GpuClusterConfig:
    entries: Sequence[TpuVmConfig | GpuClusterConfig] = (
        config.tpu_vms if system == "tpuVms" else config.gpu_clusters
    )
    for entry in entries:
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in entries) or "none"
    raise UsageError(f"ai-infra:{system} has no entry {name}; its entries: {known}")


def _run_gcloud(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=GCLOUD_SECONDS, check=False)


@dataclass(frozen=True)
class Targets:
    """The hosts a command runs on, and the one dry run of gcloud's SSH that prepares the
    user's key for all of them (none when there is no host)."""

    entry: TpuVmConfig | GpuClusterConfig
    hosts: list[Host]
    members: list[str]
    """A GPU cluster's running VMs (its hostfile); empty for TPU VMs."""
    prepare: list[str]


def resolve(
    args: argparse.Namespace, config: StackConfig, run: Runner, *, user: str | None = None
) -> Targets:
    """The hosts of the entry. TPU sessions log in as `user` (the OS Login user, read from
    the profile unless given, and only once the key is prepared: see `main`)."""
    entry = _entry(config, args.system, args.name)
    ctx = config.context
    iap = not args.internal_ip
    if isinstance(entry, TpuVmConfig):
        if args.hostfile:
            raise UsageError(
                "--hostfile is for GPU clusters; JAX on TPU VMs finds its peers itself"
            )
        workers = tpu_workers(entry, slices=args.slice, workers=args.worker)
        key = KEY_FILE.expanduser()
        if any(c.isspace() for c in str(key)):
            raise TargetError(
                f"gcloud splits SSH flags on spaces, and your key is at {key}; run from an "
                "account whose home directory has no space in its path"
            )
        hosts = tpu_hosts(entry, ctx, workers, user=user or "USER", key=key, iap=iap)
        return Targets(entry, hosts, [], tpu_prepare(entry, ctx, workers[0], iap))
    if args.slice or args.worker:
        raise UsageError("--slice and --worker are for tpuVms entries")
    members = gpu_members(entry, ctx, run)
    hosts = gpu_hosts(entry, ctx, members, iap=iap)
    return Targets(entry, hosts, members, gpu_prepare(hosts[0]) if hosts else [])


def prepared(args: argparse.Namespace, config: StackConfig, run: Runner) -> Targets:
    """The targets, once gcloud has made the user's key and imported it into their OS Login
    profile, with one dry run before any session starts: parallel sessions on a new machine
    would each make a key and overwrite the others'."""
    targets = resolve(args, config, run)
    if not targets.prepare:
        return targets
    gcloud(targets.prepare, run, "preparing your SSH key (a dry run of gcloud's SSH)")
    if isinstance(targets.entry, TpuVmConfig):
        return resolve(args, config, run, user=os_login_user(run))
    return targets


def main(
    argv: list[str] | None = None, *, run: Runner = _run_gcloud, popen: Popen = subprocess.Popen
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after `--` is the command, options and all.
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser().parse_args(argv[:cut])
    command = argv[cut + 1 :]
    try:
        stack, config = load_stack(args.stack)
        if args.list or args.hostfile or not command:
            targets = resolve(args, config, run)
        else:
            targets = prepared(args, config, run)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    except (PlanError, UsageError, TargetError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    hosts = targets.hosts
    if args.hostfile:
        assert isinstance(targets.entry, GpuClusterConfig)
        sys.stdout.write(hostfile(targets.entry, targets.members))
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
