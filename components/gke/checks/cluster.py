"""Problems of `ai-infra:cluster` and of what every node pool shares: a disabled cluster's
leftover keys, pool bounds, maintenance exclusions, pool zones and names, reservations, and
the release channel's warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from components import locations
from components.base import PathPart, Problem, relative_path
from components.gke.config import (
    CPU_POOL,
    NO_UPGRADES_MAX,
    SYSTEM_POOL,
    ClusterConfig,
    GkeConfig,
    MaintenanceExclusion,
    when,
)


def disabled_problems(config: GkeConfig) -> list[Problem]:
    """With `cluster.enabled: false` nothing runs on GKE: every key that would need the
    cluster is refused where it is written, rather than ignored."""
    found = [
        Problem(
            ("cluster", ClusterConfig.model_fields[key].alias or key),
            "has no effect with cluster.enabled: false (no GKE cluster is built); remove it "
            "or set enabled: true",
        )
        for key in sorted(config.cluster.model_fields_set - {"enabled"})
    ]
    for key, entries in (
        ("tpuSlices", config.tpu_slices),
        ("gpuPools", config.gpu_pools),
        ("workloadIdentities", config.workload_identities),
        ("teams", config.teams),
    ):
        if entries:
            found.append(
                Problem(
                    (key,),
                    "needs the GKE cluster, and cluster.enabled is false; remove the entries "
                    "or set cluster.enabled: true (TPU VMs outside GKE are ai-infra:tpuVms, "
                    "GPU VMs ai-infra:gpuClusters)",
                )
            )
    if config.tpu_provisioner.enabled:
        found.append(
            Problem(
                ("tpuProvisioner", "enabled"),
                "the TPU provisioner runs on the GKE cluster, and cluster.enabled is false; "
                "set it false or set cluster.enabled: true",
            )
        )
    if config.kueue.model_fields_set:
        found.append(
            Problem(
                ("kueue",),
                "Kueue runs on the GKE cluster, and cluster.enabled is false; remove "
                "ai-infra:kueue or set cluster.enabled: true",
            )
        )
    return found


def cluster_problems(config: GkeConfig) -> list[Problem]:
    found = []
    cpu = config.cluster.cpu_pool
    if cpu.max_nodes < cpu.min_nodes:
        found.append(
            Problem(("cpuPool", "maxNodes"), f"{cpu.max_nodes} is below minNodes {cpu.min_nodes}")
        )
    system = config.cluster.system_pool
    if system.max_nodes < system.min_nodes:
        found.append(
            Problem(
                ("systemPool", "maxNodes"),
                f"{system.max_nodes} is below minNodes {system.min_nodes}",
            )
        )
    found += _exclusion_problems(config.cluster.maintenance_exclusions)
    return found


def _exclusion_problems(exclusions: list[MaintenanceExclusion]) -> list[Problem]:
    found = []  # how many: the model's bound (MAX_EXCLUSIONS) refuses past 20 first
    names: dict[str, int] = {}
    spans: list[tuple[int, datetime, datetime | None]] = []
    for i, exclusion in enumerate(exclusions):
        path = ("maintenanceExclusions", i)
        if exclusion.name in names:
            found.append(
                Problem(
                    (*path, "name"),
                    f"'{exclusion.name}' already names maintenanceExclusions"
                    f"[{names[exclusion.name]}]; GKE keys exclusions by name",
                )
            )
        names.setdefault(exclusion.name, i)
        start = when(exclusion.start)
        end = when(exclusion.end) if exclusion.end else None
        if exclusion.scope == "NO_UPGRADES" and end is None:
            found.append(
                Problem((*path, "end"), "scope NO_UPGRADES needs an end (GKE allows 30 days)")
            )
        if end is not None and end <= start:
            found.append(Problem((*path, "end"), f"{exclusion.end} is not after the start"))
            continue
        if exclusion.scope == "NO_UPGRADES" and end is not None and end - start > NO_UPGRADES_MAX:
            found.append(
                Problem(
                    (*path, "end"),
                    f"a NO_UPGRADES exclusion lasts at most {NO_UPGRADES_MAX.days} days; end it "
                    "sooner, or use scope NO_MINOR_OR_NODE_UPGRADES, which may last until the "
                    "version's end of support",
                )
            )
        for j, other_start, other_end in spans:
            if (other_end is None or start < other_end) and (end is None or other_start < end):
                found.append(
                    Problem(
                        (*path, "start"),
                        f"overlaps maintenanceExclusions[{j}]; merge the two or move one",
                    )
                )
        spans.append((i, start, end))
    return found


def version_at_least(version: str, minimum: str) -> bool:
    """Whether a `cluster.version` floor (`1.34`, `1.34.1`, `1.34.1-gke.5`, `latest`) is at
    or above `minimum`. A partial version stands for its highest patch, as GKE resolves it."""
    if version == "latest":
        return True

    def parts(text: str) -> tuple[float, ...]:
        numbers = re.findall(r"[0-9]+", text)
        values: list[float] = [float(n) for n in numbers]
        return tuple(values + [float("inf")] * (4 - len(values)))

    return parts(version) >= parts(minimum)


def pool_zone_problems(config: GkeConfig, zone: str) -> list[Problem]:
    """A `zone` problem when a node pool's zone does not exist or is outside the cluster's
    reach."""
    region = config.context.region
    if problem := locations.zone_problem(zone, region):
        return [Problem(("zone",), f"{problem}; node pools must be in the cluster's region")]
    if config.location != region and zone != config.location:
        return [
            Problem(
                ("zone",),
                f"the cluster is zonal in {config.location}, so its node pools cannot be in "
                f"{zone}; drop the zone or set cluster.regional: true",
            )
        ]
    return []


def pool_name_problems(pools: Mapping[tuple[PathPart, ...], Sequence[str]]) -> list[Problem]:
    """A `name` problem for every entry whose node pool name another pool already has.

    `pools` maps an entry's path (`("tpuSlices", 2)`) to the pool names it makes: multi-host
    slices make `<name>-0`, `<name>-1`, ...; single-host slices and GPU pools use their name.
    """
    owner: dict[str, tuple[PathPart, ...] | None] = {CPU_POOL: None, SYSTEM_POOL: None}
    found = []
    for path, names in pools.items():
        for name in names:
            if name not in owner:
                owner[name] = path
                continue
            other = owner[name]
            by = f"the {name} pool" if other is None else relative_path(other)
            found.append(
                Problem(
                    (*path, "name"),
                    f"node pool name '{name}' is already used by {by}; rename one",
                )
            )
            break
    return found


def reservation_problems(provisioning: str, reservation: str | None) -> list[Problem]:
    """Problems of a pool's `provisioning` and `reservation` fields, taken together."""
    if provisioning == "reservation" and not reservation:
        return [
            Problem(
                ("reservation",),
                "provisioning 'reservation' needs the reservation's name here",
            )
        ]
    if provisioning != "reservation" and reservation:
        return [
            Problem(
                ("reservation",),
                f"only used with provisioning 'reservation', not '{provisioning}'; remove it "
                "or set provisioning: reservation",
            )
        ]
    return []


NO_CHANNEL_REMOVAL = "2027-06-14"
"""GKE "Use release channels": not enrolling a cluster in a release channel is deprecated,
allowed only for existing customers, and removed on June 14, 2027, when GKE enrolls the
remaining clusters in Stable."""


def channel_warnings(config: GkeConfig) -> list[Problem]:
    if config.cluster.release_channel != "NONE":
        return []
    provisioner = (
        " The TPU provisioner (at 6789e2a) creates its pools with auto-upgrade off, which GKE "
        "refuses on a channel: before then it needs a controller that creates pools with "
        "auto-upgrade on and a node-pool exclusion holding their upgrades, as fixed slices have."
        if config.tpu_provisioner.enabled
        else ""
    )
    return [
        Problem(
            ("cluster", "releaseChannel"),
            f"NONE is deprecated by GKE: only existing customers may set it, and on "
            f"{NO_CHANNEL_REMOVAL} GKE enrolls such clusters in the Stable channel. Switching "
            "to a channel replaces the TPU slice pools created without their upgrade hold."
            + provisioner,
        )
    ]
