"""Every cross-check of a stack config whose shapes are valid. Each system owns the checks of
its own keys; this module only collects them, adds the stack-wide ones (zone, labels) and the
ones that span systems: who owns each service account, and how many addresses the subnet has.
"""

from __future__ import annotations

from components import buckets, gke, gpu_clusters, locations, network, slurm, storage, tpu_vms
from components.base import PathPart, Problem, relative_path, under
from components.context import label_problems
from components.identity import ownership_problems, service_account_email
from stacks.config import StackConfig
from stacks.environment import system_tags


def problems(config: StackConfig) -> list[Problem]:
    """Every problem of a config whose shapes are valid, at its stack path."""
    ctx = config.context
    found: list[Problem] = []
    if problem := locations.zone_problem(config.zone, config.region):
        found.append(Problem(("zone",), problem))
    found += under("labels", label_problems(config.labels))
    network_problems = under("network", network.problems(config.network))
    network_problems += under(
        "network",
        network.overlap_problems(config.network, _gpu_subnets(config))
        + network.name_problems(config.network, config.prefix)
        + network.allow_problems(config.network, system_tags(config), gke=config.cluster.enabled),
    )
    found += network_problems
    bucket_names = [b.name for b in config.buckets]
    gke_problems = gke.problems(
        config.gke,
        network_config=None if network_problems else config.network,
        buckets=bucket_names,
    )
    found += gke_problems
    found += under(
        "gpuClusters",
        gpu_clusters.problems(
            config.gpu_clusters,
            ctx,
            buckets=config.bucket_names(),
            storage=config.resolved_storage,
            slurm_bucket=(
                config.slurm.bucket_name(ctx.project, ctx.prefix) if config.slurm else None
            ),
        ),
    )
    found += under("buckets", buckets.problems(config.buckets, ctx))
    found += buckets.write_problems(
        config.buckets, bucket_writers(config), [t.name for t in config.teams]
    )
    vm_problems = under(
        "tpuVms",
        tpu_vms.problems(
            config.tpu_vms,
            ctx,
            buckets=bucket_names,
            stack_vpc=config.network.vpc_name(ctx.prefix),
            storage=config.resolved_storage,
        ),
    )
    found += vm_problems
    if config.slurm is not None:
        found += under(
            "slurm",
            slurm.problems(
                config.slurm, ctx, buckets=bucket_names, storage=config.resolved_storage
            ),
        )
        net = config.network
        ranges = {
            "network.subnetCidr": net.subnet_cidr,
            "network.podsCidr": net.pods_cidr,
            "network.servicesCidr": net.services_cidr,
            "network.masterCidr": net.master_cidr,
        }
        found += under("slurm", slurm.stack_range_problems(config.slurm, ranges))
    found += under(
        "storage",
        storage.problems(
            config.resolved_storage,
            teams=[t.name for t in config.teams],
            team_buckets={t.name: list(t.buckets) for t in config.teams},
            gcs_fuse_driver=config.cluster.gcs_fuse_csi_driver,
            ranges=_stack_ranges(config),
        ),
    )
    found += ownership(config)
    found += filestore_names(config)
    found += under(
        "tpuVms",
        tpu_vms.stack_problems(
            config.tpu_vms,
            ctx,
            accounts=account_claims(config),
            # Slurm-GCP names a nodeset's TPU VMs <clusterName>-<nodeset>-<index>.
            slurm_nodesets=(
                [f"{config.slurm.cluster_name}-{n.name}" for n in config.slurm.tpu_nodesets]
                if config.slurm is not None
                else []
            ),
        ),
    )
    found += node_account_problems(config)
    found += tag_problems(config)
    pools_valid = not any(p.path[:1] in (("tpuSlices",), ("gpuPools",)) for p in gke_problems)
    if pools_valid and not vm_problems and not network_problems:
        found += under(
            "network",
            tpu_vms.subnet_problems(
                config.tpu_vms,
                subnet_cidr=config.network.subnet_cidr,
                gke_nodes=gke.max_nodes(gke.countable(config.gke, gke_problems)),
            ),
        )
    return found


def bucket_writers(config: StackConfig) -> list[buckets.Writer]:
    """Every way a team writes a stack bucket: its own `buckets` and the storage volumes on
    the bucket that grant it write, for the bucket's owner rule."""
    found = [
        buckets.Writer(("teams", i, "buckets", key), team.name, key)
        for i, team in enumerate(config.teams)
        for key, access in team.buckets.items()
        if access != "read"
    ]
    for j, volume in enumerate(config.resolved_storage.config.volumes):
        resolved = config.resolved_storage.volumes.get(volume.name)
        if resolved is None or resolved.bucket_key is None:
            continue
        found += [
            buckets.Writer(
                ("storage", "volumes", j, "teams", team),
                team,
                resolved.bucket_key,
                volume_owner=volume.owner,
                shared=volume.shared_write,
            )
            for team, access in volume.teams.items()
            if access == "write"
        ]
    return found


def tag_problems(config: StackConfig) -> list[Problem]:
    """A network tag a user lists (`tpuVms[].tags`, `tpuProvisioner.nodeTags`) that names
    another system's VMs would let those VMs in wherever that system's rules admit it: a TPU
    VM tagged like the Slurm cluster would reach its controller's NFS exports."""
    reserved = {t: system for system, tags in system_tags(config).items() for t in tags}
    reserved[network.gke_node_tag(config.prefix)] = "GKE nodes"
    if config.slurm is not None:
        cluster = config.slurm.cluster_name
        reserved[network.system_tag(cluster, "compute")] = "slurm"
    claims: list[tuple[tuple[PathPart, ...], str, set[str]]] = [
        (("tpuVms", i, "tags", j), tag, set(tpu_vms.network_tags([entry], config.context)))
        for i, entry in enumerate(config.tpu_vms)
        for j, tag in enumerate(entry.tags)
    ]
    if config.cluster.enabled:
        claims += [
            (("tpuProvisioner", "nodeTags", j), tag, {network.gke_node_tag(config.prefix)})
            for j, tag in enumerate(config.gke.tpu_provisioner.node_tags)
        ]
    return [
        Problem(
            path,
            f"'{tag}' is the network tag of {reserved[tag]} VMs, which the stack's firewall "
            "rules admit by it; pick a tag of your own",
        )
        for path, tag, own in claims
        if tag in reserved and tag not in own
    ]


def _gpu_subnets(config: StackConfig) -> dict[str, str]:
    """The subnets GPU clusters, GKE GPU pools and Slurm's GPU nodesets create for their GPU
    NICs, by where they come from; ranges that run past the address space are each system's
    own problem."""
    found = {}
    for i, pool in enumerate(config.gpu_pools):
        try:
            cidrs = pool.gpu_subnets()
        except ValueError:
            continue
        found |= {f"gpuPools[{i}] GPU subnet {k}": cidr for k, cidr in enumerate(cidrs)}
    for i, cluster in enumerate(config.gpu_clusters):
        if cluster.network == "default":
            continue
        try:
            cidrs = cluster.nic_cidrs()
        except ValueError:
            continue
        found |= {f"gpuClusters[{i}] subnet {k}": cidr for k, cidr in enumerate(cidrs)}
    if config.slurm is not None:
        found |= slurm.gpu_subnets(config.slurm)
    return found


def filestore_names(config: StackConfig) -> list[Problem]:
    """Each Filestore instance name has one owner: Slurm's /home, a GPU cluster's share, or a
    volume of `ai-infra:storage` (checked last, so that a clash is reported at the volume)."""
    ctx = config.context
    claims: list[tuple[tuple[PathPart, ...], str]] = []
    if config.slurm is not None and config.slurm.home.filestore:
        claims.append((("slurm",), ctx.name("slurm", config.slurm.cluster_name, "home")))
    claims += [
        (("gpuClusters", i, "nfsShares", k), f"{ctx.name(c.name)}-nfs{k}")
        for i, c in enumerate(config.gpu_clusters)
        for k in range(len(c.nfs_shares))
    ]
    claims += [
        (("storage", "volumes", i), ctx.name(v.name))
        for i, v in enumerate(config.storage.volumes)
        if v.filestore is not None
    ]
    return ownership_problems(claims, "Filestore instance", "name", within_a_key=False)


def _stack_ranges(config: StackConfig) -> dict[str, str]:
    """Every range of the stack's VPC and of the networks its systems create, by where it is
    written."""
    net = config.network
    found = {
        "network.subnetCidr": net.subnet_cidr,
        "network.podsCidr": net.pods_cidr,
        "network.servicesCidr": net.services_cidr,
        "network.masterCidr": net.master_cidr,
    }
    found |= {
        f"network.additionalNodeNetworks[{i}]": n.subnet_cidr
        for i, n in enumerate(net.additional_node_networks)
    }
    return found | _gpu_subnets(config)


def account_claims(config: StackConfig) -> list[tuple[tuple[PathPart, ...], str]]:
    """Every Google service account id the program creates, with the config path that claims
    it."""
    ctx = config.context
    accounts = gke.account_claims(config.gke)
    if config.slurm is not None:
        accounts += slurm.account_claims(ctx)
    accounts += tpu_vms.account_claims(config.tpu_vms, ctx)
    accounts += gpu_clusters.account_claims(config.gpu_clusters, ctx)
    return accounts


def ownership(config: StackConfig) -> list[Problem]:
    """Each Google service account id and each Kubernetes service account has one owner: the
    node pools, the TPU provisioner, a team, a workload identity, a TPU VM entry, a GPU
    cluster or the Slurm cluster."""
    accounts = account_claims(config)
    # The program's own accounts (one per key) claim first, so that a clash is reported at
    # the list entry that can be renamed. Two entries of one list with one account id have
    # one name, which duplicate_names already reports.
    accounts.sort(key=lambda claim: len(claim[0]) > 1)
    return (
        ownership_problems(accounts, "service account id", "name", within_a_key=False)
        + ownership_problems(
            gke.kubernetes_account_claims(config.gke),
            "Kubernetes service account",
            "serviceAccount",
        )
        + gke.node_account_problems(config.gke, accounts)
    )


def node_account_problems(config: StackConfig) -> list[Problem]:
    """A Slurm nodeset may run as an account of its own, which the controller is then allowed
    to act as; never as an account the stack makes for another system (the GKE nodes, a team,
    a workload identity, a TPU VM entry, a GPU cluster), or the controller could act as it."""
    if config.slurm is None:
        return []
    ctx = config.context
    others = gke.account_claims(config.gke)
    others += tpu_vms.account_claims(config.tpu_vms, ctx)
    others += gpu_clusters.account_claims(config.gpu_clusters, ctx)
    owners = {service_account_email(account, ctx.project): path for path, account in others}
    return [
        Problem(
            path,
            f"is the account of {relative_path(owners[email])}; the Slurm controller may act "
            "as every node account, so it would gain that entry's access: name an account of "
            "the nodes' own, or leave it unset for the cluster's node account",
        )
        for path, email in slurm.node_accounts(config.slurm)
        if email in owners
    ]
