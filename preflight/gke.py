"""GKE offers the cluster's release channel and version floor in its location, the version the
cluster would get holds every TPU family's minimum (and flex-start's), and the node image types
the pools use are offered (`get_server_config`). The offline checks compare a written
`cluster.version` with the minimums; this compares what GKE would actually give.
"""

from __future__ import annotations

import re

from google.cloud import container_v1

from catalog import tpu as tpu_catalog
from components.gke import version_at_least
from preflight.live import CannotCheck, Live
from preflight.needs import Cluster, Needs
from preflight.report import Finding, fail, ok, warn

NAME = "gke"
MEANING = (
    "GKE offers the cluster's channel and version in its location, that version holds the TPU "
    "families' minimums, and the pools' node image types are offered"
)
Channel = container_v1.ReleaseChannel.Channel


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"[0-9]+", version))


def _matches(version: str, floor: str) -> bool:
    """Whether a full version is one a `min_master_version` floor resolves among: `1.34`
    stands for every 1.34.x, `1.34.1` for its builds, a full version for itself."""
    return version == floor or version.startswith(floor + ".") or version.startswith(floor + "-")


def resolved_version(cluster: Cluster, config: container_v1.ServerConfig) -> tuple[str, str]:
    """(the version GKE would create the cluster at, where it comes from); raises ValueError
    with why when the channel or the floor is not offered."""
    channel = Channel[cluster.channel] if cluster.channel in Channel.__members__ else None
    if channel in (None, Channel.UNSPECIFIED):
        offered, default, where = (
            list(config.valid_master_versions),
            config.default_cluster_version,
            "without a release channel",
        )
    else:
        found = [c for c in config.channels if c.channel == channel]
        if not found:
            raise ValueError(f"GKE offers no {cluster.channel} channel in {cluster.location}")
        offered, default = list(found[0].valid_versions), found[0].default_version
        where = f"on {cluster.channel}"
    if cluster.floor is None:
        return default, f"GKE's default {where}"
    if cluster.floor == "latest":
        candidates = offered
    else:
        candidates = [v for v in offered if _matches(v, cluster.floor)]
    if not candidates:
        shown = ", ".join(sorted(offered, key=_key, reverse=True)[:6])
        raise ValueError(
            f"GKE offers no {cluster.floor} {where} in {cluster.location}; it offers {shown}"
        )
    return max(candidates, key=_key), f"the newest {cluster.floor} {where}"


def minimums(needs: Needs) -> list[tuple[str, str]]:
    """(minimum GKE version, what needs it) for the plan's TPU pools."""
    found = [
        (f.min_gke_version, f"{prefix} node pools")
        for prefix, f in sorted(needs.gke_families.items())
        if f.min_gke_version
    ]
    if needs.flex_start_tpus:
        found.append((tpu_catalog.FLEX_START_MIN_GKE_VERSION, "flex-start TPU pools"))
    return found


def judge(needs: Needs, cluster: Cluster, config: container_v1.ServerConfig) -> list[Finding]:
    subject = f"GKE in {cluster.location}"
    try:
        version, why = resolved_version(cluster, config)
    except ValueError as error:
        return [fail(NAME, subject, str(error), "pick an offered channel or cluster.version")]
    findings = []
    short = [(m, what) for m, what in minimums(needs) if not version_at_least(version, m)]
    for minimum, what in short:
        findings.append(
            fail(
                NAME,
                subject,
                f"{what} need {minimum}, and the cluster would get {version} ({why})",
                f'set cluster.version: "{minimum.split("-")[0]}" or a faster release channel',
            )
        )
    if not short:
        findings.append(ok(NAME, subject, f"the cluster would get {version} ({why})"))
    offered = set(config.valid_image_types)
    for image_type in needs.image_types:
        if offered and image_type not in offered:
            findings.append(
                fail(
                    NAME,
                    f"node image type {image_type}",
                    f"not offered in {cluster.location}",
                    f"use one of {', '.join(sorted(offered))}",
                )
            )
    return findings


def check(needs: Needs, live: Live) -> list[Finding]:
    findings = []
    for cluster in needs.clusters:
        try:
            config = live.server_config(cluster.location)
        except CannotCheck as error:
            findings.append(warn(NAME, f"GKE in {cluster.location}", str(error)))
            continue
        findings += judge(needs, cluster, config)
    return findings
