"""Monitoring derived from the stack (`ai-infra:monitoring`): Cloud Monitoring dashboards and
alert policies for every slice, pool, queued resource, GPU cluster, team queue, Filestore
volume and controller the stack builds, and Managed Service for Prometheus scrapes of Kueue
and JobSet. This face declares the registry entry (`SYSTEM`); the code is in `system.py` and
the modules named for what they build.
"""

from components.monitoring import system
from components.monitoring.config import ChannelConfig, MonitoringConfig
from components.monitoring.watch import watches
from components.system import Stage, Step, System

SYSTEM = System(
    name="monitoring",
    title="Monitoring",
    keys=("monitoring",),
    problems=system.problems,
    services=system.services,
    builds=(Step(Stage.MACHINES, "monitoring", system.build_step),),
    describe=system.sections,
    outputs=system.outputs,
)

__all__ = ["SYSTEM", "ChannelConfig", "MonitoringConfig", "watches"]
