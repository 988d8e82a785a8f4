"""TPU VMs as the stack sees them: their build (one queued resource per entry), checks at stack
paths, the accounts, tags and VM names they claim, their mounts, plan section, chips, VMs in the
stack's VPC and stack outputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components import gke
from components.base import PathPart, Problem, Source, under
from components.context import StackContext
from components.footing import Footing, entry_mounts, footing
from components.logins import describe_logins
from components.system import Claim, ClaimKind, Handles, Mounted, Section, StackView
from components.tpu_vms.checks import problems as entry_problems
from components.tpu_vms.checks import stack_problems, subnet_problems
from components.tpu_vms.config import TpuVmConfig
from components.tpu_vms.vms import TpuVms, TpuVmsArgs, network_tag

if TYPE_CHECKING:
    from stacks.config import StackConfig


def build(entries: list[TpuVmConfig], footing: Footing, source: Source) -> dict[str, TpuVms]:
    """One queued resource per entry. TPU VMs boot into the stack's subnet and egress through
    its NAT, so each waits for the network; nothing here needs the GKE cluster."""
    return {
        entry.name: TpuVms(
            source(f"tpuvm-{entry.name}", "tpuVms", i),
            TpuVmsArgs(
                context=footing.context,
                network=footing.network,
                buckets=footing.buckets,
                storage=footing.storage,
                config=entry,
            ),
            footing.services,
        )
        for i, entry in enumerate(entries)
    }


def network_tags(entries: list[TpuVmConfig], context: StackContext) -> list[str]:
    """The network tags of the entries whose TPU VMs join the stack's network."""
    return [network_tag(context, e) for e in entries if e.network is None]


def account_claims(
    entries: list[TpuVmConfig], context: StackContext
) -> list[tuple[tuple[PathPart, ...], str]]:
    """The service account ids the entries would create (those without their own account)."""
    return [
        (("tpuVms", i), context.name(entry.name))
        for i, entry in enumerate(entries)
        if entry.service_account is None
    ]


def describe(entries: list[TpuVmConfig], context: StackContext) -> list[tuple[str, list[str]]]:
    """The plan's section: each queued resource with its slices and chips, how it is asked
    for, how it is reached, and what `pulumi up` does once it is preempted."""
    lines = []
    for e in entries:
        lines.append(
            f"  {e.name}: {e.node_count} x {e.shape.accelerator} = {e.chips} chips in "
            f"{context.zone_of(e.zone)}, {e.provisioning}, TPU VMs {', '.join(e.node_names)}"
        )
        lines.append(
            f"    request: TPU API {e.api_version}; `pulumi up` waits {e.timeout_minutes} min "
            f"for ACTIVE, else deletes it; queue window: {_window(e)}"
        )
        networks = [e.network.network if e.network else "the stack's VPC"]
        networks += [n.network for n in e.additional_networks]
        access = "public IPs" if e.enable_public_ips else "no public IPs (IAP or --internal-ip)"
        lines.append(
            f"    SSH: OS Login only, project SSH keys blocked; {access}; networks: "
            f"{', '.join(networks)}"
            + (f"; boot disk {_boot_disk(e)}" if e.boot_disk_config else "")
        )
        lines.append(
            "    a SUSPENDED (preempted) or FAILED request, or one deleted outside the stack, "
            "is replaced by the next `pulumi up`; labels, metadata, startupScript, tags, "
            "dataDisks"
            + ("" if e.additional_networks else " and enablePublicIps")
            + " change on the running TPU VMs in place"
        )
        workers = e.shape.hosts * e.node_count
        if e.storage:
            mounts = ", ".join(
                f"storage {m.volume} -> {m.mount_path}" + (" (read-only)" if m.read_only else "")
                for m in e.storage
            )
            lines.append(f"    mounts: {mounts}")
        lines.append(
            f"    startup: `pulumi up` waits up to {e.startup_timeout_minutes} min after ACTIVE "
            f"for the startup script of all {workers} worker(s), failing on a failed step"
            if e.startup_timeout_minutes
            else "    startup: not waited for (startupTimeoutMinutes: 0)"
        )
        lines.append(
            "    if `pulumi up` is interrupted (Ctrl-C, killed) while it waits: nothing cleans "
            f"up; the request can still start until {_window(e).split(' to ')[1]} (its queue "
            f"window's end) and would then bill {e.chips} {e.provisioning} chips, at the "
            "queued resource's rate in the cost below, until the next `pulumi up` adopts it or "
            f"`gcloud compute tpus queued-resources delete {e.name} --zone="
            f"{context.zone_of(e.zone)} --force`"
        )
        lines += describe_logins(
            e.logins,
            f"on the TPU VM hosts of {context.zone_of(e.zone)} (t1v-n-*) and no Compute Engine "
            "VM (a condition unverified until tried live), and reading TPU nodes, on the whole "
            "project (Cloud TPU has no per-slice IAM)",
        )
        if any(login.sudo for login in e.logins):
            lines.append(
                "    sudo logins also write TPU nodes' metadata on the whole project (gcloud's "
                "tpu-vm ssh puts their key there): root on every TPU VM of the project; the "
                "others log in with `python -m hosts` (gcloud's --plain SSH)"
            )
    return [("TPU VMs (queued resources)", lines)] if lines else []


def _window(entry: TpuVmConfig) -> str:
    """When the request may start, as `<from> to <until>` (`+` counts from the request)."""
    q = entry.queueing
    after = q and (q.valid_after_time or (q.valid_after_duration and f"+{q.valid_after_duration}"))
    until = q and (q.valid_until_time or (q.valid_until_duration and f"+{q.valid_until_duration}"))
    return f"{after or 'now'} to {until or f'+{entry.timeout_minutes}m'}"


def _boot_disk(entry: TpuVmConfig) -> str:
    config = entry.boot_disk_config
    parts = [f"CMEK {config['kmsKeyName']}"] if "kmsKeyName" in config else []
    if config.get("confidentialCompute"):
        parts.append("Confidential mode")
    return ", ".join(parts)


def warnings(view: StackView) -> list[Problem]:
    """Public IPs on a network the stack does not manage: its firewall decides who reaches
    sshd, and a project's `default` VPC admits SSH from every address (its
    `default-allow-ssh` rule), so nothing here can judge it."""
    return [
        Problem(
            ("tpuVms", i, "enablePublicIps"),
            f"gives the VMs external IPs on {entry.network.network}, whose firewall the stack "
            "does not manage: if it admits SSH from 0.0.0.0/0, as a default VPC's "
            "default-allow-ssh does, every address reaches sshd; check that network's ingress "
            "rules, or turn enablePublicIps off",
        )
        for i, entry in enumerate(view.config.tpu_vms)
        if entry.enable_public_ips and entry.network is not None
    ]


def problems(view: StackView) -> list[Problem]:
    """The entries' own problems, an account the program makes for another, and the stack
    subnet's addresses once the pools, the entries and the network are valid."""
    config = view.config
    ctx = config.context
    own = under(
        "tpuVms",
        entry_problems(
            config.tpu_vms,
            ctx,
            buckets=[b.name for b in config.buckets],
            stack_vpc=config.network.vpc_name(ctx.prefix),
            storage=config.resolved_storage,
        ),
    )
    accounts = [(c.path, c.value) for c in view.claimed(ClaimKind.ACCOUNT)]
    slurm_cluster = config.slurm.cluster_name if config.slurm else None
    found = own + under(
        "tpuVms",
        stack_problems(config.tpu_vms, ctx, accounts=accounts, slurm_cluster=slurm_cluster),
    )
    if own or not view.valid("tpuSlices", "gpuPools", "network"):
        return found
    gke_nodes = gke.max_nodes(gke.countable(config.gke, view.found))
    return found + under(
        "network",
        subnet_problems(
            config.tpu_vms, subnet_cidr=config.network.subnet_cidr, gke_nodes=gke_nodes
        ),
    )


def claims(config: StackConfig) -> list[Claim]:
    """Each entry's dedicated account, the tag of its VMs on the stack's network, the tags it
    lists, and its TPU VMs' names."""
    ctx = config.context
    found = [
        Claim(ClaimKind.ACCOUNT, value, path) for path, value in account_claims(config.tpu_vms, ctx)
    ]
    for i, entry in enumerate(config.tpu_vms):
        own = frozenset(network_tags([entry], ctx))
        found += [
            Claim(ClaimKind.TAG, tag, ("tpuVms", i), "tpuVms", opens=True) for tag in sorted(own)
        ]
        found += [
            Claim(ClaimKind.TAG, tag, ("tpuVms", i, "tags", j), chosen=True, own=own)
            for j, tag in enumerate(entry.tags)
        ]
        where = ("tpuVms", i, "nodePrefix" if entry.node_prefix else "name")
        found += [Claim(ClaimKind.VM_NAME, name, where, "TPU VM") for name in entry.node_names]
        # Its VMs' rule on the stack's network (components/tpu_vms/vms.py).
        found += [
            Claim(
                ClaimKind.FIREWALL,
                f"{tag}-internal",
                ("tpuVms", i, "name"),
                f"tpuVms {entry.name}",
                chosen=True,
            )
            for tag in sorted(own)
        ]
    return found


def mounts(config: StackConfig) -> list[Mounted]:
    return entry_mounts(
        config.tpu_vms,
        lambda entry: f"TPU VMs {entry.name}",
        lambda entry: entry.storage,
        lambda entry: network_tags([entry], config.context),
    )


def build_step(view: StackView, handles: Handles, source: Source) -> dict[str, TpuVms]:
    return build(view.config.tpu_vms, footing(view, handles), source)


def sections(view: StackView) -> list[Section]:
    return describe(view.config.tpu_vms, view.config.context)


def outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    """Each entry's TPU VMs and the commands that reach them."""
    built: dict[str, TpuVms] = handles["tpu_vms"]
    return {
        "tpuVms": {
            name: {
                "nodeNames": vms.node_names,
                "sshCommands": vms.ssh_commands,
                "iapSshCommands": vms.iap_ssh_commands,
            }
            for name, vms in built.items()
        }
    }


def tpu_chips(config: StackConfig) -> int:
    return sum(vm.chips for vm in config.tpu_vms)


def vms_in_vpc(config: StackConfig) -> list[str]:
    return [
        f"TPU VMs {', '.join(vm.node_names)} (tpuVms[{i}])"
        for i, vm in enumerate(config.tpu_vms)
        if vm.network is None
    ]
