"""The plan's sections for the GKE keys: the slices with their chips and NICs, the GPU pools,
the teams with their quota, identity and bounds, and the TPU provisioner."""

from __future__ import annotations

from catalog import gpu as gpu_catalog
from components.gke import gpu_direct
from components.gke.admission import SERVICES_PRIORITY_CLASS
from components.gke.config import (
    PROVISIONER_MAX_PODS_PER_NODE,
    GkeConfig,
    TeamConfig,
    TpuSliceConfig,
)
from components.gke.gpu_direct import INSTALLERS_COMMIT, INSTALLERS_REPOSITORY
from components.gke.kueue import BATCH_USER_ROLE, PODS_READY_TIMEOUT_MINUTES, provisioned_queue
from components.gke.quota import DEDICATED_KEY, tpu_flavor_name
from components.gke.teams import MEMBER_ROLE
from components.gke.tpu_provisioner import custom_role_id


def _slice_network(config: GkeConfig, entry: TpuSliceConfig) -> str:
    """A slice's NICs with their VPCs and MTUs, its DCN bandwidth and host maintenance: what
    a reviewer reads to see that multislice runs on the fast path."""
    network = config.network
    mtu = network.managed_mtu
    nics = [
        f"eth0 {network.vpc_name(config.context.prefix)} "
        + (f"mtu {mtu}" if mtu is not None else "(existingVpc: its own MTU)")
    ]
    nics += [
        f"eth{k} {n.vpc} mtu {network.node_network_mtu}"
        for k, n in enumerate(config.slice_node_networks(entry), start=1)
    ]
    family = entry.shape.family
    dcn = f"DCN {family.dcn_gbps_per_chip} Gb/s per chip; " if family.dcn_gbps_per_chip else ""
    if len(nics) > 1:
        # No Google document says libtpu sends DCN traffic over the extra NICs (issue 38's
        # search; docs/workloads.md): the figure is the family's, claimed for eth0's path only.
        dcn += "libtpu's use of eth1.. undocumented, no bandwidth claimed for them; "
    return f"nics: {', '.join(nics)}; {dcn}host maintenance {entry.host_maintenance_interval}"


def describe(config: GkeConfig) -> list[tuple[str, list[str]]]:
    """The plan's sections for the GKE keys: the slices with their chips, and the teams with
    their quota and identity."""
    if not config.cluster.enabled:
        return [("GKE", ["  not built (cluster.enabled: false)"])]
    slices = []
    for s in config.tpu_slices:
        shape = s.shape
        slices.append(
            f"  {s.name}: {s.count} x {shape.accelerator} topology {shape.topology}, "
            f"{shape.hosts} x {shape.machine_type} ({shape.chips_per_host} chips each) = "
            f"{shape.chips} chips per slice, {s.chips} chips, {s.provisioning}"
        )
        slices.append(f"    {_slice_network(config, s)}")
        slices += [f"    {line}" for line in _slice_tenancy(config, s)]
    if not slices:
        slices.append("  none")
    slices.append(f"  total: {config.tpu_chips} TPU chips")
    if config.tpu_slices:
        slices.append(f"  upgrades: {_upgrade_policy(config)}")
    resources = {f.name: f.resource for f in config.flavors}
    provisioned = {f.name for f in config.provisioned_flavors}
    owned = {f.name: f.team for f in config.flavors if f.team is not None}
    teams = [f"  {_enforcement(config)}"] if config.teams else []
    for team in sorted(config.teams, key=lambda t: t.name):
        quotas = [
            f"{flavor}={quota} {resources[flavor]}"
            for flavor, quota in config.allocation.teams[team.name].items()
            if flavor not in provisioned and owned.get(flavor, team.name) == team.name
        ]
        email = f"{config.context.name(team.name)}@{config.context.project}.iam.gserviceaccount.com"
        teams.append(f"  {team.name}/{team.name}: {', '.join(quotas) or 'no accelerator quota'}")
        teams.append(f"    {_cpu_line(config, team)}")
        if provisioned:
            teams.append(f"    {_provisioned_line(config, team)}")
        teams.append(f"    runs as {team.name}/{team.service_account} -> {email}")
        exceptions = [
            *(
                ["hostNetwork for Kueue-managed TPU pods on its own slices"]
                if team.tpu_host_network
                else []
            ),
            *(
                ["GPUDirect host paths for Kueue-managed fast-path GPU pods"]
                if team.gpu_direct_pods
                else []
            ),
        ]
        security = (
            f"baseline by admission policy, {' and '.join(exceptions)}"
            if exceptions
            else f"{team.pod_security} (Pod Security Admission) and the admission policies"
        )
        teams.append(f"    pods: {security}; members: {MEMBER_ROLE} + {BATCH_USER_ROLE}")
        teams += [f"    {line}" for line in _team_bounds(config, team)]
    if config.teams:
        repositories = ", ".join(config.image_repositories()) or "none"
        teams.append(
            f"  private images: nodes read {repositories}, no other repository of the project; "
            "a team's pod may name no other team's"
        )
    held = [
        f"{flavor}={quota} {resources[flavor]}"
        for flavor, quota in config.allocation.cohort.items()
        if quota
    ]
    if held:
        # Quota no team was given (whole slices that do not divide): any team borrows it.
        teams.append(f"  cohort {config.kueue.cohort} holds: {', '.join(held)}")
    sections = [("TPU slices", slices)]
    if config.gpu_pools:
        sections.append(("GPU pools", _gpu_pool_lines(config)))
    sections.append(
        ("Teams (namespace/queue, nominal quota, Google service account)", teams or ["  none"])
    )
    if config.tpu_provisioner.enabled:
        sections.append(("TPU provisioner", _provisioner_lines(config)))
    return sections


def _enforcement(config: GkeConfig) -> str:
    """Who enforces what keeps the teams apart: a stack with teams has Dataplane V2 (checks
    refuse one without), and a host-network pod is outside every NetworkPolicy."""
    hosted = [t.name for t in config.teams if t.tpu_host_network]
    where = (
        f"; host-network pods ({', '.join(hosted)}) are outside them, on their team's own "
        "slices only"
        if hosted
        else ""
    )
    return f"network policies: enforced by Dataplane V2{where}"


def _slice_tenancy(config: GkeConfig, entry: TpuSliceConfig) -> list[str]:
    """Whose a slice is, the account its nodes run as, and whom its hosts reach over the
    additional node networks."""
    lines = []
    if entry.team is not None:
        lines.append(
            f"team {entry.team}'s own: nodes run as {config.slice_node_account(entry)}, "
            f"tainted {DEDICATED_KEY}={entry.team}, flavor {tpu_flavor_name(entry)} in its "
            "queue only (lends nothing)"
        )
    tags = config.slice_dcn_tags(entry)
    if tags:
        (group,) = [g for g in config.dcn_groups() if g.tag == tags[0]]
        lines.append(
            f"dcn: group {group.id} ({', '.join(group.members)}) reaches only its own hosts on "
            f"{', '.join(group.networks)}"
        )
    return lines


def _team_bounds(config: GkeConfig, team: TeamConfig) -> list[str]:
    """What the team may take and name outside Kueue, as its quotas and policies say."""
    limits = team.limits
    storage = ", ".join(f"{c} {size}" for c, size in limits.storage.items()) or "none"
    images = ", ".join(team.image_repositories) or "none of its own"
    return [
        f"outside Kueue: {limits.pods} pods, {limits.cpu} CPU, {limits.memory} requested "
        f"(PriorityClass {SERVICES_PRIORITY_CLASS}); claims {storage}, {limits.claims} per "
        f"class; {limits.objects} each of ConfigMaps, Secrets, Deployments, StatefulSets, "
        "CronJobs; Services ClusterIP only",
        f"priorities: {', '.join(config.priority_classes(team)) or 'none'}; images: {images}",
    ]


def _gpu_pool_lines(config: GkeConfig) -> list[str]:
    """Each GPU pool's GPUs and NICs: the fast path its machine was built with, or one NIC."""
    lines = []
    prefix = config.context.prefix
    for pool in config.gpu_pools:
        lines.append(
            f"  {pool.name}: up to {pool.max_nodes} x {pool.machine_type} "
            f"({pool.accelerator_count} x {pool.accelerator_type}) = {pool.gpus} GPUs, "
            f"{pool.provisioning}"
        )
        layout = pool.fast_path
        if layout is None and gpu_catalog.nic_layout(pool.machine_type) is not None:
            lines.append("    nics: eth0 only: NCCL runs over the node's one NIC (see Warnings)")
            continue
        if layout is None:
            lines.append("    nics: eth0")
            continue
        stack = gpu_direct.TRANSPORTS[layout.transport]
        nets = gpu_direct.network_names(pool.name, layout)
        subnets = pool.gpu_subnets()
        lines.append(
            f"    nics: eth0 + {len(nets)} for {layout.transport.upper()} "
            f"({', '.join(f'{n} {c}' for n, c in zip(nets, subnets, strict=True))}) in "
            f"{prefix}-{pool.name}-* VPCs at MTU {layout.gpu_mtu}; NCCL plugin: "
            f"{', '.join(stack.manifests)} at {INSTALLERS_REPOSITORY}@{INSTALLERS_COMMIT[:7]}"
        )
    return lines


def _cpu_line(config: GkeConfig, team: TeamConfig) -> str:
    """The team's `cpu` flavor quota and where it comes from."""
    quota = config.cpu_quota(team)
    derived = config.host_quota(team.name)
    if team.cpu and team.memory:
        source = "as set"
    elif derived.cpu_millis:
        source = "the allocatable CPU and memory of the nodes behind its accelerator quota"
        source += f" (not of {', '.join(derived.unsized)})" if derived.unsized else ""
    else:
        source = "no nodes behind its quota: it borrows CPU with the slices it borrows"
    return f"cpu {quota['cpu']}, memory {quota['memory']}: {source}"


def _provisioned_line(config: GkeConfig, team: TeamConfig) -> str:
    """The team's queue for provisioner-created slices."""
    own = config.allocation.teams[team.name]
    quotas = [f"{f.name}={own[f.name]} {f.resource}" for f in config.provisioned_flavors]
    cpu = config.host_quota(team.name, provisioned=True)
    return (
        f"{provisioned_queue(team.name)} (outside the cohort, preempts nothing): "
        f"{', '.join(quotas)}, cpu {cpu.cpu}, memory {cpu.memory}"
    )


def _provisioner_lines(config: GkeConfig) -> list[str]:
    """What the provisioner may create, where, as whom, and whose workload policies."""
    provisioner = config.tpu_provisioner
    lines = [
        f"  IAM: custom role {custom_role_id(config.context.prefix)} on cluster "
        f"{config.cluster_name} in {config.location} only (an IAM condition on the resource "
        "name in each form GKE may give it, which this plan cannot test)",
        f"  zone {config.provisioner_zone}, nodes run as "
        f"{config.provisioner_node_service_account}, {PROVISIONER_MAX_PODS_PER_NODE} pods per "
        f"node, forceOnDemand {str(provisioner.force_on_demand).lower()}",
    ]
    for accelerator, shape in provisioner.shapes().items():
        count = provisioner.quota[accelerator]
        lines.append(
            f"  up to {count} x {accelerator} ({shape.hosts} x {shape.machine_type}, "
            f"{shape.chips} chips) = {count * shape.chips} chips"
        )
    lines.append(f"  billing bound: {_billing_bound(config)}")
    if any(s.family.workload_policy_for_multi_host for s in provisioner.shapes().values()):
        owner = (
            "created by this stack"
            if provisioner.create_workload_policies
            else "another stack's in this project and region (createWorkloadPolicies: false)"
        )
        lines.append(f"  workload policies tpu-provisioner-<topology>: {owner}")
    return lines


def _billing_bound(config: GkeConfig) -> str:
    """How many provisioner-created slices can bill at once, and what can add to them."""
    running = []
    for flavor in config.provisioned_flavors:
        (source,) = flavor.sources
        slices = sum(q[flavor.name] for q in config.allocation.teams.values())
        running.append(
            f"{slices // source.slice_units} x {flavor.name.removesuffix('-provisioned')}"
        )
    return (
        f"{', '.join(running) or 'nothing'} running (the teams' provisioner queues, which never "
        "borrow, lend or preempt), plus one idle slice per JobSet that Kueue evicted for pods "
        f"not ready in {PODS_READY_TIMEOUT_MINUTES} minutes and has not yet readmitted, and per "
        "JobSet deactivated or suspended by hand, until it is deleted (the controller keeps a "
        "pool until its JobSet is gone, completed or failed)"
    )


def _upgrade_policy(config: GkeConfig) -> str:
    """How TPU pools are upgraded, and what a channel switch does to them (node_pools.py)."""
    if config.auto_upgrade:
        return (
            f"on channel {config.cluster.release_channel}, TPU pools hold upgrades until end "
            "of support; the hold is set when a pool is created, so a switch from releaseChannel "
            "NONE replaces every TPU pool created without it, and a switch to NONE keeps it"
        )
    return (
        "releaseChannel NONE: TPU pools never auto-upgrade (CPU and GPU pools do); a switch "
        "to a channel replaces every TPU pool created without its upgrade hold"
    )
