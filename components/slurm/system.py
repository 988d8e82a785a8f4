"""Slurm as the stack sees it: its build (one Slurm-GCP v6 cluster), checks at stack paths, the
accounts, tags, subnets, Filestore name, VM names, node accounts and bucket it claims, its
mounts, plan section, chips, VMs in the stack's VPC and stack outputs. With no `ai-infra:slurm`
it has none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalog import tpu as tpu_catalog
from components.base import PathPart, Problem, Source, under
from components.context import StackContext
from components.footing import Footing, entry_mounts, footing
from components.network import subnet_name, system_tag
from components.slurm.checks import bucket_grant_problems, gpu_subnets, stack_range_problems
from components.slurm.checks import problems as cluster_problems
from components.slurm.cluster import SlurmCluster, SlurmClusterArgs
from components.slurm.config import SlurmConfig, account_id
from components.slurm.fields import ACCOUNT_ROLES
from components.slurm.running import edit_notices as cluster_edit_notices
from components.slurm.summary import describe
from components.slurm.templates import gpu_network_base
from components.system import Claim, ClaimKind, Handles, Mounted, Section, StackView

if TYPE_CHECKING:
    from stacks.config import StackConfig

NODE_ACCOUNT_USE = (
    "is the account of {owner}; the Slurm controller may act as every node account, so it "
    "would gain that entry's access: name an account of the nodes' own, or leave it unset for "
    "the cluster's node account"
)
"""Why a nodeset may not run as an account the stack makes for another system (the GKE nodes,
a team, a workload identity, a TPU VM entry, a GPU cluster)."""


def build(config: SlurmConfig, footing: Footing, source: Source) -> SlurmCluster:
    f = footing
    return SlurmCluster(
        source("slurm", "slurm"),
        SlurmClusterArgs(
            context=f.context,
            network=f.network,
            storage=f.storage,
            buckets=f.buckets,
            config=config,
        ),
        f.services,
    )


def account_claims(context: StackContext) -> list[tuple[tuple[PathPart, ...], str]]:
    """The cluster's controller, TPU node, login and CPU node account ids."""
    return [(("slurm",), account_id(context, role)) for role in ACCOUNT_ROLES]


def network_tags(config: SlurmConfig) -> dict[str, list[str]]:
    """The tags `network.allow` opens the cluster by: all its VMs, the controller, the login
    VMs (`vms.slurm_tags`)."""
    cluster = config.cluster_name
    return {
        "slurm": [cluster],
        "slurmController": [system_tag(cluster, "controller")],
        "slurmLogin": [system_tag(cluster, "login")],
    }


def node_accounts(config: SlurmConfig) -> list[tuple[tuple[PathPart, ...], str]]:
    """The accounts nodesets name to run as, by the path of their `serviceAccountEmail`; the
    controller may act as each, so none may be another system's."""
    found: list[tuple[tuple[PathPart, ...], str]] = []
    for key, nodesets in (
        ("tpuNodesets", config.tpu_nodesets),
        ("cpuNodesets", config.cpu_nodesets),
    ):
        for i, nodeset in enumerate(nodesets):
            if nodeset.service_account_email is not None:
                found.append(
                    (("slurm", key, i, "serviceAccountEmail"), nodeset.service_account_email)
                )
    return found


def problems(view: StackView) -> list[Problem]:
    """The cluster's own problems, its ranges against the stack VPC's, and the storage
    volumes' grants of its bucket."""
    config = view.config
    if config.slurm is None:
        return []
    found = under(
        "slurm",
        cluster_problems(
            config.slurm,
            config.context,
            buckets=[b.name for b in config.buckets],
            storage=config.resolved_storage,
        ),
    )
    ranges = {
        c.what: c.value
        for c in view.claimed(ClaimKind.RANGE, system="stack")
        if c.path[1:2] != ("additionalNodeNetworks",)
    }
    found += under("slurm", stack_range_problems(config.slurm, ranges))
    # At the storage volumes' paths: the grants name the cluster's bucket.
    return found + bucket_grant_problems(config.slurm, config.resolved_storage)


def warnings(view: StackView) -> list[Problem]:
    """TPU nodesets with public IPs in a subnet the stack does not manage: that network's
    firewall decides who reaches sshd on the TPU VMs (a project's `default` VPC admits SSH
    from every address by its `default-allow-ssh` rule), so nothing here can judge it. CPU
    nodesets are always in the stack's subnet, whose ingress `network.allow` judges."""
    cluster = view.config.slurm
    if cluster is None:
        return []
    stack_subnet = subnet_name(view.config.context.prefix)
    return [
        Problem(
            ("slurm", "tpuNodesets", i, "enablePublicIps"),
            f"gives the TPU VMs external IPs in subnetwork {n.subnetwork}, whose network's "
            "firewall the stack does not manage: if it admits SSH from 0.0.0.0/0, as a "
            "default VPC's default-allow-ssh does, every address reaches sshd; check that "
            "network's ingress rules, or use the stack's subnet without public IPs",
        )
        for i, n in enumerate(cluster.tpu_nodesets)
        if n.enable_public_ips and n.subnetwork not in (None, stack_subnet)
    ]


def claims(config: StackConfig) -> list[Claim]:
    """The cluster's accounts, its VMs' tags, its nodesets' GPU subnets, its /home's Filestore
    name, the names its controller gives TPU VMs, the accounts its nodesets run as and its
    bucket."""
    cluster = config.slurm
    if cluster is None:
        return []
    ctx = config.context
    found = [Claim(ClaimKind.ACCOUNT, value, path) for path, value in account_claims(ctx)]
    found += [
        Claim(ClaimKind.TAG, tag, ("slurm",), opening, opens=True)
        for opening, tags in network_tags(cluster).items()
        for tag in tags
    ]
    compute = system_tag(cluster.cluster_name, "compute")
    found.append(Claim(ClaimKind.TAG, compute, ("slurm",), "slurm"))
    found += [
        Claim(ClaimKind.RANGE, cidr, ("slurm",), where)
        for where, cidr in gpu_subnets(cluster).items()
    ]
    if cluster.home.filestore:
        home = ctx.name("slurm", cluster.cluster_name, "home")
        found.append(Claim(ClaimKind.FILESTORE, home, ("slurm",)))
    # Slurm-GCP names a nodeset's TPU VMs <clusterName>-<nodeset>-<index>.
    for i, nodeset in enumerate(cluster.tpu_nodesets):
        prefix = f"{cluster.cluster_name}-{nodeset.name}"
        what = (
            f"Slurm nodeset {prefix} ({prefix}-<n>), whose controller deletes its nodes by name "
            "when it suspends them"
        )
        found.append(
            Claim(ClaimKind.VM_NAME, prefix, ("slurm", "tpuNodesets", i), what, pattern=True)
        )
    found += [
        Claim(ClaimKind.ACCOUNT_USE, email, path, NODE_ACCOUNT_USE, chosen=True)
        for path, email in node_accounts(cluster)
    ]
    # components/slurm/cluster.py's rules, and components/nfs.py's pair for /home's share.
    rules = [
        "internal",
        "iap-ssh",
        *(["home-deny", "home-clients"] if cluster.home.filestore else []),
    ]
    found += [
        Claim(
            ClaimKind.FIREWALL,
            ctx.name("slurm", cluster.cluster_name, rule),
            ("slurm", "clusterName"),
            f"Slurm cluster {cluster.cluster_name}",
            chosen=True,
        )
        for rule in rules
    ]
    # A GPU nodeset's own NICs' VPCs admit their subnets (components/slurm/templates.py).
    for i, nodeset in enumerate(cluster.cpu_nodesets):
        try:
            nics = range(1, len(nodeset.gpu_network_cidrs()) + 1)
        except ValueError:
            continue  # the nodeset's own problem
        base = gpu_network_base(ctx, cluster, nodeset)
        found += [
            Claim(
                ClaimKind.FIREWALL,
                f"{base}-net{k}",
                ("slurm", "cpuNodesets", i, "name"),
                f"Slurm nodeset {nodeset.name}",
                chosen=True,
            )
            for k in nics
        ]
    bucket = cluster.bucket_name(ctx.project, ctx.prefix)
    return [*found, Claim(ClaimKind.BUCKET, bucket, ("slurm",))]


def mounts(config: StackConfig) -> list[Mounted]:
    """What every VM, each login group and each nodeset mounts."""
    cluster = config.slurm
    if cluster is None:
        return []
    tags = network_tags(cluster)["slurm"]
    groups = [(f"Slurm {cluster.cluster_name} (every VM)", cluster.storage)]
    groups += [(f"Slurm login group {g.name}", g.storage) for g in cluster.login_groups]
    nodesets = [*cluster.cpu_nodesets, *cluster.tpu_nodesets]
    groups += [(f"Slurm nodeset {n.name}", n.storage) for n in nodesets]
    return entry_mounts(groups, lambda g: g[0], lambda g: g[1], lambda _: tags)


def build_step(view: StackView, handles: Handles, source: Source) -> SlurmCluster | None:
    config = view.config
    if config.slurm is None:
        return None
    return build(config.slurm, footing(view, handles), source)


def sections(view: StackView) -> list[Section]:
    config = view.config
    if config.slurm is None:
        return []
    return describe(config.slurm, config.context, config.resolved_storage.lustre_names)


def edit_notices(before: StackConfig | None, after: StackConfig) -> list[str]:
    """What the running cluster does with an edit of `ai-infra:slurm` (`running.py`)."""
    return cluster_edit_notices(before.slurm if before is not None else None, after.slurm)


def outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    cluster: SlurmCluster | None = handles["slurm"]
    return {} if cluster is None else {"slurm": cluster.exports}


def tpu_chips(config: StackConfig) -> int:
    """The TPU nodesets' chips at their most: one Slurm node per TPU VM."""
    nodesets = config.slurm.tpu_nodesets if config.slurm is not None else []
    return sum(
        (n.node_count_static + n.node_count_dynamic_max)
        * tpu_catalog.resolve(n.node_type or f"{n.family}-{n.cores}").chips_per_host
        for n in nodesets
    )


def vms_in_vpc(config: StackConfig) -> list[str]:
    if config.slurm is None:
        return []
    return [
        f"Slurm cluster {config.slurm.cluster_name}'s controller, login VMs and the TPU VMs it "
        "creates"
    ]
