"""Problems of what a team owns beside its quota: slices of its own (`tpuSlices[].team`), the
host network they make room for, its image repositories and its priority classes, each at
its stack path.
"""

from __future__ import annotations

from components.base import Problem
from components.gke.config import GkeConfig
from components.gke.quota import explicit_units
from components.identity import account_id_problems


def tenancy_problems(config: GkeConfig) -> list[Problem]:
    """Every problem of slices a team owns, host networking, image repositories and
    priority classes."""
    return (
        enforcement_problems(config)
        + dedication_problems(config)
        + host_network_problems(config)
        + image_repository_problems(config)
        + priority_class_problems(config)
    )


def enforcement_problems(config: GkeConfig) -> list[Problem]:
    """Teams are kept apart on the network by NetworkPolicies, which this cluster enforces only
    with Dataplane V2 (GKE "About network policies": without it and without Calico's network
    policy enforcement, which the program does not turn on, policies are stored and ignored).
    A stack that would show teams isolated while nothing isolates them is refused."""
    if not config.teams or config.cluster.dataplane_v2:
        return []
    return [
        Problem(
            ("cluster", "dataplaneV2"),
            "teams are kept apart by NetworkPolicies, which nothing enforces without Dataplane "
            "V2: every pod would reach every team's pods on any port; set dataplaneV2: true "
            "(this replaces the cluster) or run no teams on it",
        )
    ]


def dedication_problems(config: GkeConfig) -> list[Problem]:
    """A slice's `team` names a team whose node account id is valid, and no other team
    claims a share of a team's own slices (its owner takes all of them)."""
    teams = {t.name: i for i, t in enumerate(config.teams)}
    owners: dict[str, str] = {}
    found = []
    for i, entry in enumerate(config.tpu_slices):
        if entry.team is None:
            continue
        if entry.team not in teams:
            found.append(
                Problem(
                    ("tpuSlices", i, "team"),
                    f"no team named '{entry.team}' in ai-infra:teams (known: "
                    f"{', '.join(teams) or 'none'}); name one, or onboard the team first",
                )
            )
            continue
        owners[entry.name] = entry.team
        for problem in account_id_problems(config.team_node_account_id(entry.team), "team"):
            found.append(problem.under("tpuSlices", i))
    chips_of: dict[str, int] = {}
    for entry in config.tpu_slices:
        chips_of.setdefault(entry.name, entry.chips)
    for j, team in enumerate(config.teams):
        for key, share in team.quota.items():
            owner = owners.get(key)
            if owner is None:
                continue
            if owner != team.name:
                found.append(
                    Problem(
                        ("teams", j, "quota", key),
                        f"'{key}' is team {owner}'s own (tpuSlices[].team): no other team's "
                        "queue lists its flavor; remove the share",
                    )
                )
                continue
            chips = chips_of[key]
            if explicit_units(share, chips) != chips:
                found.append(
                    Problem(
                        ("teams", j, "quota", key),
                        f"'{key}' is this team's own, all {chips} chips of it; remove the share "
                        "or give all of it",
                    )
                )
    return found


def host_network_problems(config: GkeConfig) -> list[Problem]:
    """A team on the host network has slices of its own to run it on: a host-network pod is
    outside every NetworkPolicy and acts as its node's account, so it may share no node, and
    no node account, with another team."""
    owned = {s.team for s in config.tpu_slices if s.team is not None}
    return [
        Problem(
            ("teams", i, "tpuHostNetwork"),
            "host-network pods run only on the team's own slices, whose nodes and node account "
            "no other team shares; set team: "
            f"{team.name} on the tpuSlices entries it runs multislice jobs on, or drop "
            "tpuHostNetwork",
        )
        for i, team in enumerate(config.teams)
        if team.tpu_host_network and team.name not in owned
    ]


def image_repository_problems(config: GkeConfig) -> list[Problem]:
    """Each repository listed once: by one team, whose images no other team may run, or in
    `cluster.imageRepositories`, which every team may."""
    found = []
    shared: set[str] = set()
    for k, repo in enumerate(config.cluster.image_repositories):
        if repo in shared:
            found.append(Problem(("cluster", "imageRepositories", k), f"'{repo}' is listed twice"))
        shared.add(repo)
    owner: dict[str, str] = {}
    for i, team in enumerate(config.teams):
        for k, repo in enumerate(team.image_repositories):
            path = ("teams", i, "imageRepositories", k)
            if repo in shared:
                found.append(
                    Problem(
                        path,
                        f"'{repo}' is in cluster.imageRepositories, which every team may run "
                        "from; list it in one place",
                    )
                )
            elif repo in owner:
                first = owner[repo]
                why = "is listed twice" if first == team.name else f"is also team {first}'s"
                found.append(
                    Problem(
                        path,
                        f"'{repo}' {why}: a team's repository is its own, no other team may "
                        "run its images; move a shared one to cluster.imageRepositories",
                    )
                )
            else:
                owner[repo] = team.name
    return found


def priority_class_problems(config: GkeConfig) -> list[Problem]:
    """A team's priority classes are the stack's `kueue.priorityClasses`, each once."""
    known = list(config.kueue.priority_classes)
    classes = set(known)
    found = []
    for i, team in enumerate(config.teams):
        listed = team.priority_classes or []
        earlier: set[str] = set()
        for k, name in enumerate(listed):
            path = ("teams", i, "priorityClasses", k)
            if name not in classes:
                found.append(
                    Problem(
                        path,
                        f"'{name}' is not one of kueue.priorityClasses ({', '.join(known)}); "
                        "add it there or fix the name",
                    )
                )
            elif name in earlier:
                found.append(Problem(path, f"'{name}' is listed twice"))
            earlier.add(name)
    return found
