"""The offline plan: what a reviewer reads, and a clean failure on bad config."""

from __future__ import annotations

import re

import yaml

from plan.__main__ import main


def test_dev_plan_shows_what_a_reviewer_checks(capsys):
    assert main(["dev"]) == 0
    out = capsys.readouterr().out
    assert (
        "NodePool tpu-v5e-dev-pool  machine=ct5lp-hightpu-4t disk=pd-balanced:100GB nodes=1 spot"
        in out
    )
    assert "cidr=10.129.0.0/20 pods=192.168.64.0/20, services=192.168.80.0/20" in out
    assert "roles/iam.workloadIdentityUser -> serviceAccount:ml-platform-dev.svc.id.goog" in out
    assert "v5e-dev: 1 x v5litepod-4 topology 2x2" in out
    assert "total: 4 TPU chips" in out
    assert re.search(r"research/research: v5litepod-4=2 google.com/tpu", out)
    assert "runs as applied/training -> ai-dev-applied@ml-platform-dev.iam" in out
    assert re.search(r"^\s+2\s+kubernetes:helm.sh/v3:Release$", out, re.M)


def test_prod_plan_counts_chips_and_marks_protection(capsys):
    assert main(["prod"]) == 0
    out = capsys.readouterr().out
    assert "placement=COMPACT topology=4x8x8" in out
    assert "total: 1664 TPU chips" in out
    assert re.search(r"Cluster gke-cluster .*\[protected\]", out)


def test_bad_config_prints_only_the_errors_and_exits_2(tmp_path, capsys):
    stack = tmp_path / "Pulumi.broken.yaml"
    stack.write_text(
        yaml.safe_dump(
            {
                "config": {
                    "gcp:project": "test-project",
                    "gcp:region": "us-east5",
                    "gcp:zone": "us-east5-a",
                    "ai-infra:tpuSlices": [{"name": "a", "accelerator": "v5p-33"}],
                    "ai-infra:teamz": [],
                }
            }
        )
    )
    assert main([str(stack)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "ai-infra:tpuSlices[0].accelerator: 'v5p-33' is not a Cloud TPU accelerator" in (
        captured.err
    )
    assert "ai-infra:teamz: unknown config key" in captured.err
    assert "Traceback" not in captured.err
