"""Which hosts a command runs on, and the gcloud command that reaches each: a TPU VM entry's
workers from the stack config alone (its slices and hosts per slice are the catalog's), a GPU
cluster's running VMs from its group, listed live. Every host is reached through gcloud's SSH
commands, which use OS Login (the VMs set `enable-oslogin`) and, with `iap`, Identity-Aware
Proxy's TCP forwarding: the VMs have no external IPs.

Before the sessions fan out, one gcloud command prepares the user's SSH key (`prepare`): it
creates `~/.ssh/google_compute_engine` when missing and imports it into the user's OS Login
profile, so that parallel sessions never race to make it."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.context import StackContext
from components.gpu_clusters import GpuClusterConfig, group_name
from components.tpu_vms import TpuVmConfig

if TYPE_CHECKING:
    from stacks.config import StackConfig

Runner = Callable[[Sequence[str]], subprocess.CompletedProcess[str]]
"""Runs a command and returns its output, raising FileNotFoundError when the program is
missing and subprocess.TimeoutExpired past its bound; tests pass a fake."""
GCLOUD_SECONDS = 120.0
"""How long one of the few gcloud calls made before the sessions (listing a group, preparing
the key, reading the OS Login profile) may take."""
INSTALL_GCLOUD = (
    "install the Google Cloud CLI (https://cloud.google.com/sdk/docs/install), put `gcloud` on "
    "PATH and run `gcloud auth login`"
)
KEY_FILE = Path("~/.ssh/google_compute_engine")
"""gcloud's SSH key (`--ssh-key-file` default), which its SSH commands make on first use."""
PLAIN_SSH_OPTIONS = (
    "IdentitiesOnly=yes",
    "StrictHostKeyChecking=no",
    "UserKnownHostsFile=/dev/null",
)
"""TPU sessions are gcloud's `--plain` SSH, with the user's key: gcloud's own TPU SSH accepts
a worker's host key on first use too (it sets StrictHostKeyChecking=no for a host key alias it
has not seen), and through IAP the tunnel reaches only the named worker."""


class TargetError(Exception):
    """A target that does not exist or cannot be listed; the message says which and why."""


@dataclass(frozen=True)
class Host:
    """One host and the gcloud command, up to its `--command`, that opens a shell on it."""

    label: str
    """How the summary and the log file name it: `maxtext-1 worker 0`, `ai-dev-train-a1b2`."""
    ssh: tuple[str, ...]

    @property
    def slug(self) -> str:
        return self.label.replace(" worker ", "-w").replace(" ", "-")


def gcloud(argv: Sequence[str], run: Runner, what: str) -> str:
    """`argv`'s output; a missing, failing or hanging gcloud is a TargetError saying what to
    install, what failed, or what hung."""
    try:
        result = run(argv)
    except FileNotFoundError:
        raise TargetError(f"gcloud is not installed here: {INSTALL_GCLOUD}") from None
    except subprocess.TimeoutExpired as hung:
        raise TargetError(
            f"{what}: `{shlex.join(argv)}` did not finish within {hung.timeout:.0f} s (gcloud "
            "hung, waiting for the network or a prompt); check `gcloud auth list` and your "
            "connection, then run it by hand to see where it stops"
        ) from None
    if result.returncode != 0:
        said = [line for line in result.stderr.splitlines() if line.strip()]
        raise TargetError(f"{what}: {said[-1] if said else 'gcloud failed'}")
    return result.stdout


@dataclass(frozen=True)
class Worker:
    node: str
    worker: int

    @property
    def label(self) -> str:
        return f"{self.node} worker {self.worker}"


def tpu_workers(
    entry: TpuVmConfig, *, slices: Sequence[str] = (), workers: Sequence[int] = ()
) -> list[Worker]:
    """Each worker of each slice (or of the `slices` and `workers` asked for)."""
    nodes = entry.node_names
    unknown = [s for s in slices if s not in nodes]
    if unknown:
        raise TargetError(
            f"tpuVms {entry.name} has no slice {', '.join(unknown)}; its slices are "
            f"{', '.join(nodes)}"
        )
    hosts = entry.shape.hosts
    outside = [w for w in workers if not 0 <= w < hosts]
    if outside:
        raise TargetError(
            f"a {entry.shape.accelerator} slice has workers 0 to {hosts - 1}, not "
            f"{', '.join(map(str, outside))}"
        )
    return [Worker(node, k) for node in slices or nodes for k in workers or range(hosts)]


def _tpu_route(entry: TpuVmConfig, iap: bool) -> tuple[str, ...]:
    """Only gcloud's alpha `tpu-vm ssh` tunnels through IAP; without `iap`, `--internal-ip`
    reaches the VMs from inside the VPC (googlecloudsdk surface/compute/tpus/tpu_vm/ssh.py,
    gcloud 528.0.0)."""
    if iap:
        return ("--tunnel-through-iap",)
    return () if entry.enable_public_ips else ("--internal-ip",)


def tpu_command(entry: TpuVmConfig, ctx: StackContext, at: Worker, iap: bool) -> list[str]:
    """gcloud's TPU SSH to one worker, before its user and flags."""
    return [
        *(("gcloud", "alpha") if iap else ("gcloud",)),
        *("compute", "tpus", "tpu-vm", "ssh"),
        at.node,
        f"--zone={ctx.zone_of(entry.zone)}",
        f"--project={ctx.project}",
        f"--worker={at.worker}",
        *_tpu_route(entry, iap),
        "--quiet",
    ]


def tpu_hosts(
    entry: TpuVmConfig,
    ctx: StackContext,
    targets: Sequence[Worker],
    *,
    user: str,
    key: Path,
    iap: bool = True,
) -> list[Host]:
    """gcloud's `--plain` TPU SSH as `user` with `key`: without `--plain`, gcloud's `tpu-vm
    ssh` (and `queued-resources ssh`) writes the user's key into the node's metadata first
    (AddSSHKeyIfNeeded, gcloud 528.0.0), which needs `tpu.nodes.update`, granted only to sudo
    members, and which parallel sessions would race over. `user` is the OS Login user the key
    was imported for."""
    found = []
    for at in targets:
        argv = tpu_command(entry, ctx, at, iap)
        argv[argv.index(at.node)] = f"{user}@{at.node}"
        flags = [f"--ssh-flag=-oIdentityFile={key}"]
        flags += [f"--ssh-flag=-o{option}" for option in PLAIN_SSH_OPTIONS]
        found.append(Host(at.label, (*argv, "--plain", *flags)))
    return found


def tpu_prepare(entry: TpuVmConfig, ctx: StackContext, at: Worker, iap: bool) -> list[str]:
    """A dry run of gcloud's TPU SSH: it makes the key, imports it into the OS Login profile
    and prints the command, writing no node metadata (gcloud 528.0.0 PrepareNodeForSSH skips
    AddSSHKeyIfNeeded on `--dry-run`)."""
    return [*tpu_command(entry, ctx, at, iap), "--dry-run"]


def os_login_user(run: Runner) -> str:
    """The POSIX user OS Login gives the caller (the primary account, as gcloud picks it)."""
    argv = ["gcloud", "compute", "os-login", "describe-profile", "--format=json"]
    text = gcloud(argv, run, "reading your OS Login profile")
    accounts = json.loads(text or "{}").get("posixAccounts") or []
    primary = [a for a in accounts if a.get("primary")] or accounts
    if not primary or not primary[0].get("username"):
        raise TargetError(
            "your OS Login profile has no POSIX account yet; `gcloud compute ssh` to any VM "
            "of the stack once creates it"
        )
    return primary[0]["username"]


def gpu_members(config: GpuClusterConfig, ctx: StackContext, run: Runner) -> list[str]:
    """The group's VMs that are RUNNING with no action pending, by name, as gcloud lists
    them: those a command can reach (the Ray election reads the group the same way)."""
    group = group_name(ctx, config.name)
    zone = ctx.zone_of(config.zone)
    argv = [
        *("gcloud", "compute", "instance-groups", "managed", "list-instances", group),
        f"--zone={zone}",
        f"--project={ctx.project}",
        "--format=value(name,instanceStatus,currentAction)",
    ]
    listed = gcloud(argv, run, f"listing the VMs of {group}")
    members = []
    for line in listed.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1] == "RUNNING" and fields[2:] in ([], ["NONE"]):
            members.append(fields[0])
    return sorted(members)


def gpu_hosts(
    config: GpuClusterConfig, ctx: StackContext, members: Sequence[str], *, iap: bool = True
) -> list[Host]:
    """`gcloud compute ssh` to each VM: through IAP, or `--internal-ip` from inside the VPC."""
    zone = ctx.zone_of(config.zone)
    reach = "--tunnel-through-iap" if iap else "--internal-ip"
    return [
        Host(
            name,
            (
                *("gcloud", "compute", "ssh", name),
                f"--zone={zone}",
                f"--project={ctx.project}",
                reach,
                "--quiet",
            ),
        )
        for name in members
    ]


def gpu_prepare(host: Host) -> list[str]:
    """A dry run of `gcloud compute ssh`: it makes the key and imports it into the OS Login
    profile before printing the command (surface/compute/ssh.py, gcloud 528.0.0)."""
    return [*host.ssh, "--dry-run"]


def hostfile(config: GpuClusterConfig, members: Sequence[str]) -> str:
    """An MPI hostfile (`host slots=<GPUs>`), which torchrun's `--nnodes` and rendezvous host
    are read from too: the first line's host serves as the rendezvous."""
    return "".join(f"{name} slots={config.gpu_count}\n" for name in members)


@dataclass(frozen=True)
class Ask:
    """What the command line asks of an entry's hosts; `user` is the OS Login user TPU
    sessions log in as, once the key is prepared (`Found.needs_user`)."""

    slices: Sequence[str] = ()
    workers: Sequence[int] = ()
    iap: bool = True
    hostfile: bool = False
    user: str | None = None


@dataclass(frozen=True)
class Found:
    """The hosts a command runs on, what `--hostfile` prints (None where it means nothing),
    the one dry run of gcloud's SSH that prepares the user's key for all of them (empty when
    there is no host), and whether the hosts must be found again with the user's OS Login
    name once it is prepared."""

    hosts: list[Host]
    hostfile: str | None = None
    prepare: tuple[str, ...] = ()
    needs_user: bool = False


def _tpu_vms(entry: TpuVmConfig, ctx: StackContext, ask: Ask, run: Runner) -> Found:
    if ask.hostfile:
        raise TargetError("--hostfile is for GPU clusters; JAX on TPU VMs finds its peers itself")
    workers = tpu_workers(entry, slices=ask.slices, workers=ask.workers)
    key = KEY_FILE.expanduser()
    if any(c.isspace() for c in str(key)):
        raise TargetError(
            f"gcloud splits SSH flags on spaces, and your key is at {key}; run from an "
            "account whose home directory has no space in its path"
        )
    hosts = tpu_hosts(entry, ctx, workers, user=ask.user or "USER", key=key, iap=ask.iap)
    prepare = tuple(tpu_prepare(entry, ctx, workers[0], ask.iap))
    return Found(hosts, prepare=prepare, needs_user=ask.user is None)


def _gpu_cluster(entry: GpuClusterConfig, ctx: StackContext, ask: Ask, run: Runner) -> Found:
    if ask.slices or ask.workers:
        raise TargetError("--slice and --worker are for tpuVms entries")
    members = gpu_members(entry, ctx, run)
    hosts = gpu_hosts(entry, ctx, members, iap=ask.iap)
    prepare = tuple(gpu_prepare(hosts[0])) if hosts else ()
    return Found(hosts, hostfile(entry, members), prepare=prepare)


def _tpu_vm_entries(config: StackConfig) -> Sequence[TpuVmConfig]:
    return config.tpu_vms


def _gpu_cluster_entries(config: StackConfig) -> Sequence[GpuClusterConfig]:
    return config.gpu_clusters


@dataclass(frozen=True)
class Lister:
    """How the command finds one system's entries in a stack config and their hosts."""

    entries: Callable[[StackConfig], Sequence[Any]]
    find: Callable[[Any, StackContext, Ask, Runner], Found]


LISTERS: dict[str, Lister] = {
    "tpu-vms": Lister(_tpu_vm_entries, _tpu_vms),
    "gpu-clusters": Lister(_gpu_cluster_entries, _gpu_cluster),
}
"""Registry name -> its lister; a test holds these keys to the registry's entries that
declare `hosts`."""
