"""The GKE environment and the TPU provisioner as the stack sees them: their checks at stack
paths, the accounts, Kubernetes accounts, tags and ranges they claim, the services they need,
their build step, chips, VMs and stack outputs. The face (`__init__.py`) declares both entries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.base import PathPart, Problem, Source
from components.gke import checks, environment
from components.gke.config import PROVISIONER_KSA, PROVISIONER_NAMESPACE, GkeConfig
from components.gke.sections import describe as describe_gke
from components.network import gke_node_tag
from components.services import IMAGE_STREAMING_SERVICE
from components.system import Claim, ClaimKind, Handles, Section, StackView

if TYPE_CHECKING:
    from stacks.config import StackConfig

Claims = list[tuple[tuple[PathPart, ...], str]]


def account_claims(config: GkeConfig) -> Claims:
    """The Google service account ids the GKE keys would create, by config path."""
    ctx = config.context
    claims: Claims = [
        (("cluster",), config.node_account_id),
        (("tpuProvisioner",), config.provisioner_account_id),
    ]
    claims += [(("teams", i), ctx.name(t.name)) for i, t in enumerate(config.teams)]
    owned = {s.team: i for i, s in reversed(list(enumerate(config.tpu_slices))) if s.team}
    claims += [(("tpuSlices", i), config.team_node_account_id(t)) for t, i in owned.items()]
    claims += [
        (("workloadIdentities", i), ctx.name(w.name))
        for i, w in enumerate(config.workload_identities)
    ]
    return claims


def kubernetes_account_claims(config: GkeConfig) -> Claims:
    """The Kubernetes service accounts (`namespace/name`) bound to Google ones."""
    claims: Claims = [(("tpuProvisioner",), f"{PROVISIONER_NAMESPACE}/{PROVISIONER_KSA}")]
    claims += [(("teams", i), f"{t.name}/{t.service_account}") for i, t in enumerate(config.teams)]
    claims += [
        (("workloadIdentities", i), f"{w.namespace}/{w.service_account}")
        for i, w in enumerate(config.workload_identities)
    ]
    return claims


def owned_accounts(view: StackView) -> Claims:
    """Every system's account ids, the program's own (one per key) first."""
    found = [(c.path, c.value) for c in view.claimed(ClaimKind.ACCOUNT)]
    return sorted(found, key=lambda claim: len(claim[0]) > 1)


def problems(view: StackView) -> list[Problem]:
    """The GKE keys' problems; the pods range is sized against the pools once the network's
    own checks passed. The provisioner's nodes must not run as another's account."""
    config = view.config
    found = checks.problems(
        config.gke,
        network_config=config.network if view.valid("network") else None,
        buckets=[b.name for b in config.buckets],
    )
    return found + checks.node_account_problems(config.gke, owned_accounts(view))


def warnings(view: StackView) -> list[Problem]:
    return checks.warnings(view.config.gke)


def claims(config: StackConfig) -> list[Claim]:
    """The accounts, Kubernetes accounts and GPU pool subnets the GKE keys create, and the
    nodes' network tag."""
    gke = config.gke
    found = [Claim(ClaimKind.ACCOUNT, value, path) for path, value in account_claims(gke)]
    found += [
        Claim(ClaimKind.KUBERNETES_ACCOUNT, value, path)
        for path, value in kubernetes_account_claims(gke)
    ]
    found.append(Claim(ClaimKind.TAG, gke_node_tag(config.prefix), ("cluster",), "GKE nodes"))
    for i, pool in enumerate(config.gpu_pools):
        try:
            cidrs = pool.gpu_subnets()
        except ValueError:
            continue  # the pool's own problem
        found += [
            Claim(ClaimKind.RANGE, cidr, ("gpuPools", i), f"gpuPools[{i}] GPU subnet {k}")
            for k, cidr in enumerate(cidrs)
        ]
        # Each GPU NIC's VPC admits its subnet (components/gke/gpu_pools.py; every subnet's
        # index, a superset of the gVNIC VPCs an RDMA layout makes).
        found += [
            Claim(
                ClaimKind.FIREWALL,
                f"{config.prefix}-{pool.name}-gpu{k}-internal",
                ("gpuPools", i, "name"),
                f"GPU pool {pool.name}",
                chosen=True,
            )
            for k in range(len(cidrs))
        ]
    return found


def services(config: StackConfig) -> tuple[str, ...]:
    return (IMAGE_STREAMING_SERVICE,) if config.cluster.image_streaming else ()


def build(view: StackView, handles: Handles, source: Source) -> environment.GkeEnvironment | None:
    stack = handles["stack"]
    return environment.build(
        view.config.gke,
        network_config=view.config.network,
        network=stack.network,
        buckets=stack.buckets,
        services=stack.after_services,
        source=source,
    )


def sections(view: StackView) -> list[Section]:
    """The slices, GPU pools, teams and, when enabled, the TPU provisioner."""
    return describe_gke(view.config.gke)


def outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    """The cluster's name, location, kubeconfig and node account, each identity's and team's
    Google account."""
    env: environment.GkeEnvironment | None = handles["gke"]
    if env is None:
        return {"workloadIdentities": {}, "teams": {}}
    cluster = env.cluster
    return {
        "clusterName": cluster.name,
        "clusterLocation": config.gke.location,
        "kubeconfig": cluster.kubeconfig,
        "nodeServiceAccount": cluster.node_service_account,
        "workloadIdentities": {k: i.email for k, i in env.identities.items()},
        "teams": {
            name: {"namespace": name, "queue": name, "serviceAccount": team.identity.email}
            for name, team in env.teams.items()
        },
    }


def tpu_chips(config: StackConfig) -> int:
    return config.gke.tpu_chips


def vms_in_vpc(config: StackConfig) -> list[str]:
    return [f"GKE node pools {', '.join(config.gke.pool_names)}"]


def provisioner_claims(config: StackConfig) -> list[Claim]:
    """The tags the provisioner's nodes carry beside the GKE nodes' own."""
    if not config.cluster.enabled:
        return []
    own = frozenset({gke_node_tag(config.prefix)})
    return [
        Claim(ClaimKind.TAG, tag, ("tpuProvisioner", "nodeTags", j), chosen=True, own=own)
        for j, tag in enumerate(config.tpu_provisioner.node_tags)
    ]


def provisioner_chips(config: StackConfig) -> int:
    """The most chips the provisioner's quota lets it create at once."""
    return sum(chips for _, chips in config.gke.provisioned().values())


def provisioner_vms(config: StackConfig) -> list[str]:
    if not config.gke.tpu_provisioner.enabled:
        return []
    return ["the node pools the TPU provisioner creates"]
