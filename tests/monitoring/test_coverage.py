"""Every shipped stack and docs example, with monitoring on: each slice, GPU pool, TPU VM
queued resource, GPU cluster, team queue and Filestore volume it builds is on a dashboard and
guarded by an alert, and promtool finds each of those alerts firing on its situation and
silent on a healthy stack."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.monitoring.alerts import rule_file
from components.monitoring.dashboards import boards
from components.monitoring.watch import watches
from graph.files import list_stacks, stack_file
from stacks.config import StackConfig
from stacks.loading import parse
from tests.monitoring.stack import MONITORING
from tests.monitoring.test_promtool import PROMTOOL, situations
from tests.test_docs import examples

ON = {"enabled": True, "channels": MONITORING["channels"][:1], "stackChannels": ["oncall"]}


def _raw(name: str) -> dict[str, Any]:
    if name.startswith("docs:"):
        return dict(examples()[name[5:]].config)
    return dict(yaml.safe_load(stack_file(name).read_text())["config"])


def _config(name: str) -> StackConfig:
    raw = _raw(name)
    raw["ai-infra:monitoring"] = raw.get("ai-infra:monitoring") or ON
    if not raw["ai-infra:monitoring"].get("enabled"):
        raw["ai-infra:monitoring"] = ON
    return parse(raw, name.removeprefix("docs:"))


def _expected(config: StackConfig) -> set[str]:
    """The config paths of what the stack builds that monitoring must watch."""
    found: set[str] = set()
    if config.cluster.enabled:
        found |= {f"tpuSlices[{i}]" for i, s in enumerate(config.tpu_slices) if s.count}
        found |= {f"gpuPools[{i}]" for i in range(len(config.gpu_pools))}
        found |= {f"teams[{i}]" for i in range(len(config.teams))}
    found |= {f"tpuVms[{i}]" for i in range(len(config.tpu_vms))}
    found |= {f"gpuClusters[{i}]" for i in range(len(config.gpu_clusters))}
    volumes = config.resolved_storage.volumes
    found |= {
        f"storage.volumes[{i}]"
        for i, v in enumerate(config.storage.volumes)
        if volumes[v.name].kind == "filestore"
    }
    return found


STACKS = [*list_stacks(), *(f"docs:{name}" for name in sorted(examples()))]


@pytest.mark.parametrize("name", STACKS)
def test_everything_the_stack_builds_is_on_a_page_and_guarded(name: str, tmp_path: Path):
    config = _config(name)
    found = watches(config)
    guarded = {w.key for w in found if w.conditions}
    assert _expected(config) <= guarded, sorted(_expected(config) - guarded)
    shown = {key for board in boards(config.prefix, found) for key in board.watches}
    assert guarded <= shown, sorted(guarded - shown)
    if PROMTOOL is None:
        pytest.skip("promtool is absent: `apt-get install prometheus` provides it")
    tests = []
    for w in found:
        for c in w.conditions:
            bad, good, extra = situations(c, c.minutes)
            labels = {"owner": w.owner or "platform", "watches": w.id, **extra}

            def case(
                series: list[dict[str, str]],
                alerts: list[dict[str, Any]],
                rule=c.rule,
                at=c.minutes + 2,
            ) -> dict[str, Any]:
                return {
                    "interval": "1m",
                    "input_series": series,
                    "alert_rule_test": [
                        {"eval_time": f"{at}m", "alertname": rule, "exp_alerts": alerts}
                    ],
                }

            tests += [case(bad, [{"exp_labels": labels}]), case(good, [])]
    (tmp_path / "rules.yaml").write_text(rule_file(found))
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests})
    )
    done = subprocess.run(
        [str(PROMTOOL), "test", "rules", str(tmp_path / "tests.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
