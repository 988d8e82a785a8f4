"""The monitoring system's resources: notification channels, dashboards, alert policies and
the controllers' PodMonitorings, all under one component."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
from pydantic import Field, InstanceOf, SkipValidation

from components.base import Component, WiringModel
from components.context import StackContext
from components.monitoring.alerts import condition_args, documentation
from components.monitoring.config import MonitoringConfig
from components.monitoring.dashboards import Board, dashboard_json
from components.monitoring.scrape import TARGETS, scrape
from components.monitoring.watch import Watch


class MonitoringArgs(WiringModel):
    context: InstanceOf[StackContext]
    config: InstanceOf[MonitoringConfig]
    watches: list[InstanceOf[Watch]]
    boards: list[InstanceOf[Board]]
    kubernetes: SkipValidation[k8s.Provider | None] = None
    """The cluster's provider; None without GKE (nothing to scrape)."""
    charts: list[SkipValidation[pulumi.Resource]] = Field(default_factory=list)
    """The Kueue and JobSet releases, whose namespaces and roles the scrapes use."""


class Monitoring(Component):
    """What `ai-infra:monitoring` builds."""

    def __init__(
        self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ai-infra:monitoring:Monitoring", name, opts)
        project = args.context.project
        self.channels = {
            c.name: gcp.monitoring.NotificationChannel(
                f"{name}-channel-{c.name}",
                project=project,
                display_name=f"{args.context.prefix} {c.name}",
                type=c.kind,
                labels={"email_address" if c.kind == "email" else "topic": c.address},
                opts=self.child_opts(),
            )
            for c in args.config.channels
        }
        self.dashboards = {
            b.role: gcp.monitoring.Dashboard(
                f"{name}-dashboard-{b.role}",
                project=project,
                dashboard_json=dashboard_json(b),
                opts=self.child_opts(),
            )
            for b in args.boards
        }
        self.policies = {w.id: self._policy(name, args, w) for w in args.watches if w.conditions}
        self.scrapes = {}
        if args.kubernetes is not None:
            self.scrapes = {
                t.release: scrape(self, f"{name}-{t.release}", t, args.kubernetes, args.charts)
                for t in TARGETS
            }
        self.register_outputs({"dashboards": list(self.dashboards)})

    def _policy(self, name: str, args: MonitoringArgs, watch: Watch) -> gcp.monitoring.AlertPolicy:
        channels = [self.channels[c].name for c in args.config.channel_names(watch.owner or None)]
        return gcp.monitoring.AlertPolicy(
            f"{name}-alert-{watch.id}",
            project=args.context.project,
            display_name=f"{args.context.prefix}: {watch.what}",
            combiner="OR",
            conditions=[condition_args(watch, c) for c in watch.conditions],
            notification_channels=channels,
            severity=watch.severity,
            user_labels={"owner": watch.owner or "platform", "stack": args.context.prefix},
            documentation=gcp.monitoring.AlertPolicyDocumentationArgs(
                content=documentation(watch), mime_type="text/markdown"
            ),
            opts=self.child_opts(),
        )
