"""`ai-infra:monitoring`: who is told, and when. The dashboards and alerts themselves are derived
from the rest of the stack (`watch.py`); this config names the notification channels, which of
them hear stack-wide alerts and which a team's, and the thresholds.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, model_validator

from components.base import ConfigModel, matching
from components.types import DnsLabel

MAX_CHANNELS = 16
"""Notification channels of a stack: a bound of this program's."""
MAX_CHANNELS_PER_ROUTE = 8
"""Channels one route (stack-wide or a team's) notifies: a bound of this program's; each is
listed on every alert policy of the route."""
MAX_TEAM_ROUTES = 64
"""Teams with a route of their own: a bound of this program's."""

Email = Annotated[
    str,
    Field(max_length=254),
    matching(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}", "is not an email address"),
]
PubsubTopic = Annotated[
    str,
    Field(max_length=512),
    # The topic the channel publishes to, as the Monitoring API names it (the `topic` label of
    # the `pubsub` channel type, "Create and manage notification channels").
    matching(
        r"projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/topics/[A-Za-z][A-Za-z0-9._~+%-]{2,254}",
        "is not a Pub/Sub topic: write projects/PROJECT/topics/TOPIC",
    ),
]


class ChannelConfig(ConfigModel):
    """One notification channel: an email address or a Pub/Sub topic (exactly one)."""

    name: DnsLabel
    """How `stackChannels` and `teams[].channels` name it; also names the resource."""
    email: Email | None = None
    """An address that receives the alert (a person's or a group's)."""
    pubsub_topic: PubsubTopic | None = None
    """`projects/P/topics/T`: a topic a pager or chat bridge reads. Monitoring's service agent
    needs `roles/pubsub.publisher` on it, which this stack does not grant."""

    @model_validator(mode="after")
    def _one_kind(self) -> ChannelConfig:
        if (self.email is None) == (self.pubsub_topic is None):
            raise ValueError("set exactly one of `email` or `pubsubTopic`")
        return self

    @property
    def kind(self) -> str:
        """The Monitoring API's channel type."""
        return "email" if self.email is not None else "pubsub"

    @property
    def address(self) -> str:
        """The channel type's one label value: `email_address` or `topic`."""
        return self.email if self.email is not None else str(self.pubsub_topic)


class Thresholds(ConfigModel):
    """When an alert fires. Durations are minutes the condition must hold."""

    idle_percent: float = Field(default=5.0, ge=0, le=100)
    """Accelerator duty cycle (percent of time busy) under which billed capacity is idle."""
    idle_minutes: int = Field(default=60, ge=5, le=1440)
    """How long capacity stays under `idlePercent` before the idle alert fires."""
    pending_minutes: int = Field(default=30, ge=5, le=1440)
    """How long a team's workloads wait while the cohort has quota free before it fires."""
    below_size_minutes: int = Field(default=15, ge=5, le=1440)
    """How long a slice, pool, VM group or queued resource runs below its size."""
    storage_percent: float = Field(default=90.0, ge=50, le=99)
    """Used share of a Filestore instance above which it is nearly full."""
    controller_down_minutes: int = Field(default=10, ge=5, le=1440)
    """How long Kueue, JobSet or the TPU provisioner may report no running container."""


class TeamRoute(ConfigModel):
    """Where one team's alerts go."""

    team: DnsLabel
    """An `ai-infra:teams` name."""
    channels: list[DnsLabel] = Field(default_factory=list, max_length=MAX_CHANNELS_PER_ROUTE)
    """Channel names that hear the team's alerts (its queue pending); unset, the stack's."""
    pending_minutes: int | None = Field(default=None, ge=5, le=1440)
    """The team's own bound on pending; unset, `thresholds.pendingMinutes`."""


class MonitoringConfig(ConfigModel):
    """Dashboards and alert policies derived from the stack, and what GKE and Managed Service
    for Prometheus collect for them."""

    enabled: bool = False
    """Build the dashboards, alert policies, channels and metric collection."""
    channels: list[ChannelConfig] = Field(default_factory=list, max_length=MAX_CHANNELS)
    """Notification channels, by name."""
    stack_channels: list[DnsLabel] = Field(default_factory=list, max_length=MAX_CHANNELS_PER_ROUTE)
    """Channels that hear the stack-wide alerts (idle capacity, a slice below size, a queued
    resource down, storage nearly full, a controller down) and the alerts of teams that name
    none of their own. Required when `enabled`: no alert without a channel."""
    thresholds: Thresholds = Field(default_factory=Thresholds)
    """When alerts fire; every field has a default."""
    teams: list[TeamRoute] = Field(default_factory=list, max_length=MAX_TEAM_ROUTES)
    """Teams whose alerts go to their own channels or wait their own bound."""

    def channel_names(self, team: str | None = None) -> list[str]:
        """The channels a team's alerts (or, with None, stack-wide alerts) go to."""
        for route in self.teams:
            if route.team == team and route.channels:
                return list(route.channels)
        return list(self.stack_channels)

    def pending_minutes(self, team: str) -> int:
        for route in self.teams:
            if route.team == team and route.pending_minutes is not None:
                return route.pending_minutes
        return self.thresholds.pending_minutes


RULE_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
"""`alertRule` must be a valid Prometheus label name (monitoring_v3 alert.proto)."""
