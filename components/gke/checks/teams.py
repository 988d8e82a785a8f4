"""Problems of `ai-infra:workloadIdentities` and `ai-infra:teams`: who creates each namespace,
accounts, quota shares against the capacity behind them, buckets and groups, and the warnings
of shares and CPU quota.
"""

from __future__ import annotations

from collections.abc import Iterable

from components.base import Problem, duplicate_names, slug
from components.buckets import unknown_buckets
from components.gke.config import (
    PROVISIONER_NAMESPACE,
    GkeConfig,
)
from components.gke.kueue import CHARTS, provisioned_queue
from components.gke.quota import explicit_units
from components.identity import account_id_problems, duplicate_roles

RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gke-managed-system",
        PROVISIONER_NAMESPACE,
    }
)
SYSTEM_NAMESPACES = RESERVED_NAMESPACES | {c.namespace for c in CHARTS.values()}
"""Namespaces the platform owns; no team or identity may create them."""
GKE_NAMESPACES = frozenset(
    {
        "gmp-system",
        "gmp-public",
        "config-management-system",
        "gatekeeper-system",
        "istio-system",
        "knative-serving",
    }
)
"""Namespaces GKE creates for managed Prometheus, Config Sync, Policy Controller and service
mesh; its own `gke-*` namespaces are covered by prefix (no complete list is published)."""


def namespace_owner(name: str) -> str | None:
    """Who creates namespace `name`, when it is not for a team or identity to create."""
    if name.startswith("kube-") or name == "default":
        return "Kubernetes"  # "kube-" is reserved for Kubernetes system namespaces
    if name in SYSTEM_NAMESPACES:
        return "the platform (JobSet, Kueue, the TPU provisioner)"
    if name.startswith("gke-") or name in GKE_NAMESPACES:
        return "GKE"
    return None


def identity_problems(config: GkeConfig, *, buckets: Iterable[str]) -> list[Problem]:
    """Checks of `ai-infra:workloadIdentities` against the rest of the stack: account ids,
    bucket names, and who creates each namespace."""
    identities = config.workload_identities
    found = duplicate_names([i.name for i in identities], "workloadIdentities")
    team_names, known_buckets = {t.name for t in config.teams}, set(buckets)
    created: dict[str, int] = {}
    for i, identity in enumerate(identities):
        entry: list[Problem] = account_id_problems(config.context.name(identity.name))
        entry += duplicate_roles(identity.roles)
        entry += unknown_buckets(identity.buckets, known_buckets)
        system_owner = namespace_owner(identity.namespace)
        if system_owner is not None and not identity.create_namespace:
            # A KSA there bound to a Google account with roles would hand those roles to
            # whatever Kubernetes or GKE runs in that namespace.
            entry.append(
                Problem(
                    ("namespace",),
                    f"namespace '{identity.namespace}' belongs to {system_owner}; run workloads "
                    "in a namespace of your own",
                )
            )
        if identity.create_namespace:
            owner = "a team" if identity.namespace in team_names else system_owner
            if owner:
                entry.append(
                    Problem(
                        ("createNamespace",),
                        f"namespace '{identity.namespace}' is created by {owner}; set "
                        "createNamespace: false",
                    )
                )
            elif identity.namespace in created:
                entry.append(
                    Problem(
                        ("createNamespace",),
                        f"namespace '{identity.namespace}' is already created by "
                        f"workloadIdentities[{created[identity.namespace]}]; set "
                        "createNamespace: false",
                    )
                )
            else:
                created[identity.namespace] = i
        found += [p.under(i) for p in entry]
    return found


def team_problems(config: GkeConfig, *, buckets: Iterable[str]) -> list[Problem]:
    """Checks of `ai-infra:teams` against the rest of the stack: namespaces, accounts, quota
    shares against the capacity behind them, buckets and groups."""
    teams = config.teams
    sources = config.quota_sources()
    found = duplicate_names([t.name for t in teams], "teams")
    known_buckets = set(buckets)
    claimed: dict[str, int] = {}
    fractions: dict[str, float] = {}
    groups: dict[str, tuple[int, str]] = {}  # slug -> (team index, group) first listing it
    queues = {provisioned_queue(t.name): t.name for t in teams} if config.provisioned() else {}
    for i, team in enumerate(teams):
        entry: list[Problem] = []
        if team.name in queues:
            entry.append(
                Problem(
                    ("name",),
                    f"'{team.name}' names team {queues[team.name]}'s queue for "
                    "provisioner-created slices (its ClusterQueue and LocalQueue); choose "
                    "another team name",
                )
            )
        if owner := namespace_owner(team.name):
            entry.append(
                Problem(
                    ("name",),
                    f"namespace '{team.name}' belongs to {owner}; choose another team name",
                )
            )
        entry += account_id_problems(config.context.name(team.name))
        entry += duplicate_roles(team.roles)
        if team.tpu_host_network and team.pod_security == "restricted":
            entry.append(
                Problem(
                    ("tpuHostNetwork",),
                    "the restricted level refuses the host network outright; use podSecurity: "
                    "baseline with tpuHostNetwork, or drop tpuHostNetwork",
                )
            )
        if team.gpu_direct_pods and team.pod_security == "restricted":
            entry.append(
                Problem(
                    ("gpuDirectPods",),
                    "the restricted level refuses host paths and NET_ADMIN outright; use "
                    "podSecurity: baseline with gpuDirectPods, or drop gpuDirectPods",
                )
            )
        if team.gpu_direct_pods and not any(p.fast_path for p in config.gpu_pools):
            entry.append(
                Problem(
                    ("gpuDirectPods",),
                    "no gpuPools entry is built on its fast path (A3, A3 Mega, A3 Ultra or A4 "
                    "with GPU NICs), so there is nothing it would allow; drop gpuDirectPods",
                )
            )
        for key, share in team.quota.items():
            if key not in sources:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"no TPU slice or GPU pool named '{key}'; known: "
                        f"{', '.join(sources) or 'none'}",
                    )
                )
                continue
            claimed[key] = claimed.get(key, 0) + explicit_units(share, sources[key])
            if isinstance(share, float):
                fractions[key] = fractions.get(key, 0) + share
            # Fractions are checked before rounding: 60% + 50% of 8 chips rounds to 4 + 4.
            if fractions.get(key, 0) > 1 + 1e-9:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"teams' fractions of '{key}' add up to {fractions[key]:.0%}; lower "
                        "them to 100% or less",
                    )
                )
            elif claimed[key] > sources[key]:
                entry.append(
                    Problem(
                        ("quota", key),
                        f"teams' shares of '{key}' add up to {claimed[key]}, but it provides "
                        f"{sources[key]}; lower the shares or add capacity",
                    )
                )
        entry += unknown_buckets(team.buckets, known_buckets)
        entry += _group_problems(team.groups, i, groups)
        if team.groups and not config.cluster.rbac_security_group:
            entry.append(
                Problem(
                    ("groups",),
                    "Google groups in RBAC need ai-infra:cluster.rbacSecurityGroup "
                    "(gke-security-groups@<your domain>) with these groups as members",
                )
            )
        found += [p.under(i) for p in entry]
    return found


def cpu_warnings(config: GkeConfig) -> list[Problem]:
    """A team whose `cpu` or `memory` is below the nodes behind its accelerator quota must
    borrow to run a job on all of it, and is then reclaimed by any other team's job that asks
    for its own nominal CPU; one whose GPU pools the catalog cannot size gets none of theirs."""
    found = []
    for i, team in enumerate(config.teams):
        derived = config.host_quota(team.name)
        for key, own, needed in (
            ("cpu", team.cpu, derived.cpu),
            ("memory", team.memory, derived.memory),
        ):
            if own is not None and quantity(own) < quantity(needed):
                found.append(
                    Problem(
                        ("teams", i, key),
                        f"{own} is below the {needed} the nodes behind the team's accelerator "
                        "quota offer pods: a job on all of that quota borrows the rest and is "
                        "preempted when another team reclaims it; raise it or leave it unset",
                    )
                )
        if derived.unsized and (team.cpu is None or team.memory is None):
            found.append(
                Problem(
                    ("teams", i, "cpu"),
                    f"the catalog has no vCPU and memory figures for the nodes of "
                    f"{', '.join(derived.unsized)}, so they add nothing to the team's derived "
                    "CPU and memory quota; set cpu and memory",
                )
            )
    return found


_UNITS = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_UNITS |= {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def quantity(text: str) -> float:
    """A Kubernetes quantity as written in config (`200`, `500m`, `800Gi`) as a number."""
    number = text.rstrip("kmMGTPi")
    return float(number) * _UNITS[text[len(number) :]]


def share_warnings(config: GkeConfig) -> list[Problem]:
    """A team's explicit share of TPU capacity that is not a whole number of slices: a job
    runs on whole slices, so the part of the share beyond them only ever lends to the
    cohort."""
    slice_units = {s.name: s.slice_units for f in config.flavors for s in f.sources}
    capacity = config.quota_sources()
    found = []
    for i, team in enumerate(config.teams):
        for key, share in team.quota.items():
            unit = slice_units.get(key, 1)
            chips = explicit_units(share, capacity[key])
            if unit <= 1 or chips % unit == 0:
                continue
            whole = chips - chips % unit
            runs = f"{whole // unit} slice(s)" if whole else "no job"
            fits = f"{whole} or {whole + unit}" if whole else f"{unit}"
            found.append(
                Problem(
                    ("teams", i, "quota", key),
                    f"{chips} chips is not a whole number of '{key}' slices ({unit} chips "
                    f"each): the team runs {runs} on its own quota and {chips % unit} chips "
                    f"only lend to others; give {fits} chips, or the fraction that makes them",
                )
            )
    return found


def _group_problems(
    team_groups: list[str], i: int, groups: dict[str, tuple[int, str]]
) -> list[Problem]:
    """`groups[j]` problems for a group that repeats one listed before, up to case or
    punctuation (both would get one IAM grant); `groups` records the first listing."""
    found = []
    for j, group in enumerate(team_groups):
        first = groups.setdefault(slug(group), (i, group))
        if first == (i, group) and group not in team_groups[:j]:
            continue
        if first[1] == group and first[0] != i:
            continue  # teams may share a group; it is granted once
        found.append(
            Problem(
                ("groups", j),
                f"'{group}' repeats '{first[1]}' (teams[{first[0]}]) up to case or "
                "punctuation, and both would get one IAM grant; list each group once, "
                "written the same way",
            )
        )
    return found
