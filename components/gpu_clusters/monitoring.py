"""What a GPU cluster reports and where to read it, from one table: the Ops Agent's DCGM
receiver and the cluster's Cloud Monitoring dashboard. NVML metrics need no config (the agent's
hostmetrics add them on GPU VMs); DCGM's profiling metrics (SM, tensor pipes, NVLink, PCIe)
need the `dcgm` receiver and the `nvidia-dcgm` service.

Sources: GoogleCloudPlatform/ops-agent 2.70.0 apps/dcgm.go (receiver_version 2 writes
`workload.googleapis.com/gpu.dcgm.*`), its integration test metadata for the DCGM and NVML
apps (metric kinds), and the Ops Agent "NVIDIA DCGM" page (DCGM 3.1 through 3.3.9).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import yaml

DCGM_VERSION = "1:3.3.6"
"""`datacenter-gpu-manager` from NVIDIA's CUDA repository, within the 3.1 to 3.3.9 range the
Ops Agent supports; the package's epoch-prefixed version as NVIDIA's Ubuntu 24.04 repository
writes it (1:3.3.x)."""
DCGM_RECEIVER = {"type": "dcgm", "receiver_version": 2, "collection_interval": "60s"}
"""Version 2 exports the curated `gpu.dcgm.*` metrics (agent 2.51.0 or later)."""
OPS_AGENT_CONFIG_PATH = "/etc/google-cloud-ops-agent/config.yaml"

Kind = Literal["GAUGE", "CUMULATIVE"]


@dataclass(frozen=True)
class Metric:
    type: str
    kind: Kind
    unit: str


def _dcgm(name: str, kind: Kind, unit: str = "1") -> Metric:
    return Metric(f"workload.googleapis.com/gpu.dcgm.{name}", kind, unit)


DCGM_METRICS = {
    m.type: m
    for m in (
        _dcgm("utilization", "GAUGE"),
        _dcgm("sm.utilization", "GAUGE"),
        _dcgm("sm.occupancy", "GAUGE"),
        _dcgm("pipe.utilization", "GAUGE"),
        _dcgm("memory.bytes_used", "GAUGE", "By"),
        _dcgm("memory.bandwidth_utilization", "GAUGE"),
        _dcgm("pcie.io", "CUMULATIVE", "By"),
        _dcgm("nvlink.io", "CUMULATIVE", "By"),
        _dcgm("energy_consumption", "CUMULATIVE", "J"),
        _dcgm("temperature", "GAUGE", "Cel"),
        _dcgm("clock.frequency", "GAUGE", "Hz"),
        _dcgm("clock.throttle_duration.time", "CUMULATIVE", "s"),
        _dcgm("ecc_errors", "CUMULATIVE"),
    )
}
"""What receiver version 2 exports, with each metric's kind."""
NVML_METRICS = {
    m.type: m
    for m in (
        Metric("agent.googleapis.com/gpu/utilization", "GAUGE", "%"),
        Metric("agent.googleapis.com/gpu/memory/bytes_used", "GAUGE", "By"),
    )
}


@dataclass(frozen=True)
class Chart:
    title: str
    metric: str
    reducer: str = "REDUCE_MEAN"
    """How the GPUs of one VM combine into its line."""


CHARTS = (
    Chart("GPU utilization (NVML, %)", "agent.googleapis.com/gpu/utilization"),
    Chart("GPU memory used (NVML)", "agent.googleapis.com/gpu/memory/bytes_used", "REDUCE_SUM"),
    Chart("SM utilization (DCGM)", "workload.googleapis.com/gpu.dcgm.sm.utilization"),
    Chart("SM occupancy (DCGM)", "workload.googleapis.com/gpu.dcgm.sm.occupancy"),
    Chart("Tensor and FP pipes (DCGM)", "workload.googleapis.com/gpu.dcgm.pipe.utilization"),
    Chart(
        "Memory bandwidth utilization (DCGM)",
        "workload.googleapis.com/gpu.dcgm.memory.bandwidth_utilization",
    ),
    Chart("NVLink traffic (DCGM)", "workload.googleapis.com/gpu.dcgm.nvlink.io", "REDUCE_SUM"),
    Chart("PCIe traffic (DCGM)", "workload.googleapis.com/gpu.dcgm.pcie.io", "REDUCE_SUM"),
    Chart("GPU temperature (DCGM)", "workload.googleapis.com/gpu.dcgm.temperature", "REDUCE_MAX"),
    Chart("ECC errors (DCGM)", "workload.googleapis.com/gpu.dcgm.ecc_errors", "REDUCE_SUM"),
)
"""One line per VM; the metrics the agent writes (`DCGM_METRICS`, `NVML_METRICS`)."""

METRICS = {**DCGM_METRICS, **NVML_METRICS}


def ops_agent_config() -> str:
    """`/etc/google-cloud-ops-agent/config.yaml`: the DCGM receiver in a pipeline of its own.
    The agent merges it with its built-in defaults (logs, host and NVML metrics)."""
    config = {
        "metrics": {
            "receivers": {"dcgm": DCGM_RECEIVER},
            "service": {"pipelines": {"dcgm": {"receivers": ["dcgm"]}}},
        }
    }
    return yaml.safe_dump(config, sort_keys=True)


COLUMNS = 48
TILE_WIDTH = 24
TILE_HEIGHT = 16


def dashboard(title: str, labels: dict[str, str]) -> str:
    """The Monitoring dashboard JSON of one cluster: a chart per `CHARTS` entry, each
    filtered to the VMs carrying all of `labels` (the cluster's and the stack's)."""
    selector = " ".join(
        f'metadata.user_labels."{key}"="{value}"' for key, value in sorted(labels.items())
    )
    tiles = []
    for i, chart in enumerate(CHARTS):
        metric = METRICS[chart.metric]
        aligner = "ALIGN_RATE" if metric.kind == "CUMULATIVE" else "ALIGN_MEAN"
        tiles.append(
            {
                "xPos": (i % (COLUMNS // TILE_WIDTH)) * TILE_WIDTH,
                "yPos": (i // (COLUMNS // TILE_WIDTH)) * TILE_HEIGHT,
                "width": TILE_WIDTH,
                "height": TILE_HEIGHT,
                "widget": {
                    "title": chart.title,
                    "xyChart": {
                        "dataSets": [
                            {
                                "plotType": "LINE",
                                "timeSeriesQuery": {
                                    "timeSeriesFilter": {
                                        "filter": (
                                            f'metric.type="{metric.type}" '
                                            f'resource.type="gce_instance" {selector}'
                                        ),
                                        "aggregation": {
                                            "alignmentPeriod": "60s",
                                            "perSeriesAligner": aligner,
                                            "crossSeriesReducer": chart.reducer,
                                            "groupByFields": ["metadata.system_labels.name"],
                                        },
                                    }
                                },
                            }
                        ]
                    },
                },
            }
        )
    return json.dumps(
        {"displayName": title, "mosaicLayout": {"columns": COLUMNS, "tiles": tiles}},
        sort_keys=True,
    )
