"""Which hosts a command runs on, and the gcloud command that reaches each: a TPU VM entry's
workers from the stack config alone (its slices and hosts per slice are the catalog's), a GPU
cluster's running VMs from its group, listed live. Every host is reached through gcloud's
documented SSH commands, which use OS Login (the VMs set `enable-oslogin`) and, with `iap`,
Identity-Aware Proxy's TCP forwarding: the VMs have no external IPs."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.context import StackContext
from components.gpu_clusters import GpuClusterConfig, group_name
from components.tpu_vms import TpuVmConfig

if TYPE_CHECKING:
    from stacks.config import StackConfig

Runner = Callable[[Sequence[str]], subprocess.CompletedProcess[str]]
"""Runs a command and returns its output; tests pass a fake."""


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


def tpu_hosts(
    entry: TpuVmConfig,
    ctx: StackContext,
    *,
    slices: Sequence[str] = (),
    workers: Sequence[int] = (),
    iap: bool = True,
) -> list[Host]:
    """Each worker of each slice (or of the `slices` and `workers` asked for). Only gcloud's
    alpha `tpu-vm ssh` tunnels through IAP; without `iap` the GA command's `--internal-ip`
    reaches the VMs from inside the VPC (googlecloudsdk surface/compute/tpus/tpu_vm/ssh.py,
    gcloud 578.0.0)."""
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
    zone = ctx.zone_of(entry.zone)
    found = []
    for node in slices or nodes:
        for worker in workers or range(hosts):
            track = ["gcloud", "alpha"] if iap else ["gcloud"]
            reach = ["--tunnel-through-iap"] if iap else []
            if not iap and not entry.enable_public_ips:
                reach = ["--internal-ip"]
            found.append(
                Host(
                    f"{node} worker {worker}",
                    (
                        *track,
                        *("compute", "tpus", "tpu-vm", "ssh", node),
                        f"--zone={zone}",
                        f"--project={ctx.project}",
                        f"--worker={worker}",
                        *reach,
                        "--quiet",
                    ),
                )
            )
    return found


def gpu_members(config: GpuClusterConfig, ctx: StackContext, run: Runner) -> list[str]:
    """The group's VMs that are RUNNING with no action pending, by name, as gcloud lists
    them: those a command can reach (the Ray election reads the group the same way)."""
    group = group_name(ctx, config.name)
    zone = ctx.zone_of(config.zone)
    listed = run(
        [
            *("gcloud", "compute", "instance-groups", "managed", "list-instances", group),
            f"--zone={zone}",
            f"--project={ctx.project}",
            "--format=value(name,instanceStatus,currentAction)",
        ]
    )
    if listed.returncode != 0:
        raise TargetError(
            f"could not list the VMs of {group}: {listed.stderr.strip() or 'gcloud failed'}"
        )
    members = []
    for line in listed.stdout.splitlines():
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


def hostfile(config: GpuClusterConfig, members: Sequence[str]) -> str:
    """An MPI hostfile (`host slots=<GPUs>`), which torchrun's `--nnodes` and rendezvous host
    are read from too: the first line's host serves as the rendezvous."""
    return "".join(f"{name} slots={config.gpu_count}\n" for name in members)


@dataclass(frozen=True)
class Ask:
    """What the command line asks of an entry's hosts."""

    slices: Sequence[str] = ()
    workers: Sequence[int] = ()
    iap: bool = True
    hostfile: bool = False


@dataclass(frozen=True)
class Found:
    """The hosts a command runs on, and what `--hostfile` prints (None where it means nothing)."""

    hosts: list[Host]
    hostfile: str | None = None


def _tpu_vms(entry: TpuVmConfig, ctx: StackContext, ask: Ask, run: Runner) -> Found:
    if ask.hostfile:
        raise TargetError("--hostfile is for GPU clusters; JAX on TPU VMs finds its peers itself")
    return Found(tpu_hosts(entry, ctx, slices=ask.slices, workers=ask.workers, iap=ask.iap))


def _gpu_cluster(entry: GpuClusterConfig, ctx: StackContext, ask: Ask, run: Runner) -> Found:
    if ask.slices or ask.workers:
        raise TargetError("--slice and --worker are for tpuVms entries")
    members = gpu_members(entry, ctx, run)
    return Found(gpu_hosts(entry, ctx, members, iap=ask.iap), hostfile(entry, members))


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
