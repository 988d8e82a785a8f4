"""How the stack checks, builds and describes monitoring (the registry entry's functions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.base import Problem, Source
from components.monitoring import checks
from components.monitoring.dashboards import boards
from components.monitoring.resources import Monitoring, MonitoringArgs
from components.monitoring.scrape import SCRAPE_INTERVAL, TARGETS
from components.monitoring.watch import Watch, watches
from components.system import Handles, Section, StackView

if TYPE_CHECKING:
    from stacks.config import StackConfig

SERVICES = ("monitoring.googleapis.com",)
"""Cloud Monitoring: channels, dashboards, alert policies and the PromQL they run."""
SECONDS_PER_MONTH = 730 * 3600
"""The month the cost section reckons with (730 h)."""
CONTROLLER_SERIES = 400
"""Assumed series one controller-runtime manager exports of its own (Go runtime, process,
workqueue, reconcile, REST client): an estimate, not a count."""
KUEUE_SERIES_PER_QUEUE = 150
"""Assumed Kueue series per ClusterQueue (gauges plus its histograms' buckets)."""
KUEUE_SERIES_PER_QUOTA = 6
"""Kueue's per ClusterQueue x flavor x resource gauges with enableClusterQueueResources:
reservation, usage, nominal quota, borrowing and lending limits, and (per resource) pending."""
GMP_USD_PER_MILLION = 0.15
"""Prometheus samples ingested, first 50 billion a month: cloud.google.com/stackdriver/pricing
as archived 2023-06-05 (the current tier table could not be read offline)."""


def problems(view: StackView) -> list[Problem]:
    found = checks.problems(view.config)
    if not found:
        found += checks.rule_problems(view.config)
    return found


def services(config: StackConfig) -> tuple[str, ...]:
    return SERVICES if config.monitoring.enabled else ()


def build_step(view: StackView, handles: Handles, source: Source) -> Monitoring | None:
    config = view.config
    if not config.monitoring.enabled:
        return None
    found = watches(config)
    gke = handles.get("gke")
    return Monitoring(
        source("monitoring", "monitoring"),
        MonitoringArgs(
            context=config.context,
            config=config.monitoring,
            watches=found,
            boards=boards(config.prefix, found),
            kubernetes=gke.kubernetes if gke is not None else None,
            charts=[gke.batch.kueue, gke.batch.jobset] if gke is not None else [],
        ),
        handles["stack"].after_services,
    )


def samples_per_month(config: StackConfig) -> int:
    """What the controllers' scrapes ingest a month, estimated; GKE system metrics and the
    Cloud services' metrics the alerts read are not charged."""
    if not (config.monitoring.enabled and config.cluster.enabled):
        return 0
    # Each team's ClusterQueue and its provisioned one; three resources (chips, cpu, memory)
    # per flavor in each.
    queues = 2 * len(config.teams)
    quotas = len(config.gke.flavors) * 3 * queues
    series = len(TARGETS) * CONTROLLER_SERIES
    series += queues * KUEUE_SERIES_PER_QUEUE + quotas * KUEUE_SERIES_PER_QUOTA
    return series * SECONDS_PER_MONTH // int(SCRAPE_INTERVAL.rstrip("s"))


def _channels(config: StackConfig, watch: Watch) -> str:
    return ", ".join(config.monitoring.channel_names(watch.owner or None))


def sections(view: StackView) -> list[Section]:
    """Dashboards with what each shows, alert policies with what each watches and who hears
    them, what the scrapes bill, and what the project must allow."""
    config = view.config
    if not config.monitoring.enabled:
        return []
    found = watches(config)
    lines = ["  dashboards:"]
    for board in boards(config.prefix, found):
        shows = ", ".join(dict.fromkeys(board.watches))
        lines.append(f"    {board.title}: {len(board.panels)} panels for {shows}")
    lines.append("  alert policies:")
    for w in found:
        lines.append(f"    {w.what} ({w.key}), {w.severity}, to {_channels(config, w)}:")
        lines += [f"      {c.title} for {c.minutes} min" for c in w.conditions]
    samples = samples_per_month(config)
    scraped = ", ".join(f"{t.namespace}/{t.release}" for t in TARGETS) if samples else "nothing"
    lines += [
        f"  scraped by Managed Service for Prometheus every {SCRAPE_INTERVAL}: {scraped}",
        f"  cost: ~{samples / 1e6:,.0f} M samples/month, "
        f"~${samples / 1e6 * GMP_USD_PER_MILLION:,.2f}/month at ${GMP_USD_PER_MILLION} per "
        "million (estimate; GKE system metrics are free)",
        f"  needs: services {', '.join(SERVICES)}; the deployer may create channels, dashboards "
        "and alert policies (roles/monitoring.editor)",
    ]
    return [("Monitoring", lines)]


def outputs(config: StackConfig, handles: Handles) -> dict[str, Any]:
    built: Monitoring | None = handles.get("monitoring")
    if built is None:
        return {}
    return {"dashboards": {role: d.id for role, d in built.dashboards.items()}}
