"""What a CI gates on: the diff's exit codes, what `pulumi up` cannot complete, data-loss and
availability warnings, when a group's template reaches its VMs, the markdown summary for a pull
request, and the JSON checked against its published schema."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from graph.engine import REPO_ROOT, list_stacks
from plan.cli import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, EXIT_REFUSED, main, report
from plan.diff import Op, diff
from prices import PLAN_COSTING
from tests.conftest import BASE_CONFIG, build_graph
from tests.plan.test_diff import write

SCHEMA = json.loads((REPO_ROOT / "schema" / "plan-output.schema.json").read_text())

SHARED: dict[str, Any] = {
    **BASE_CONFIG,
    "gcp:project": "gate-project",
    "gcp:region": "us-central1",
    "gcp:zone": "us-central1-a",
    "ai-infra:cluster": {"maxPodsPerNode": 32},
    "ai-infra:tpuSlices": [{"name": "t", "accelerator": "v5p-8"}],
    "ai-infra:gpuClusters": [{"name": "demo", "instanceCount": 2}],
    "ai-infra:slurm": {
        "clusterName": "tpu",
        "tpuNodesets": [
            {"name": "v2", "nodeType": "v2-8", "nodeCountDynamicMax": 2, "zone": "us-central1-b"}
        ],
        "partitions": [{"name": "tpu", "nodesets": ["v2"]}],
    },
    "ai-infra:teams": [{"name": "research", "quota": {"t": 4}}],
}
"""GKE, a GPU cluster and Slurm in one subnet, with one team."""


def _edited(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(SHARED)
    for key, value in changes.items():
        config[f"ai-infra:{key}"] = value
    return config


@pytest.fixture(scope="module")
def before():
    return build_graph(SHARED, stack="gate")


def _diff(before, **changes: Any):
    return diff(before, build_graph(_edited(**changes), stack="gate"))


def _one(changes, name: str):
    (found,) = [c for c in changes if c.resource.name == name]
    return found


def test_a_subnet_shrink_cannot_complete_while_unreplaced_vms_use_it(before) -> None:
    changes = _diff(before, network={"subnetCidr": "10.129.0.0/21"})
    subnet = _one(changes, "network-subnet")
    assert subnet.op is Op.REPLACE and subnet.delete_before_replace
    # The group's VMs (through its template), Slurm's VMs and its controller's nodes hold it.
    for holder in ("gpucluster-demo-mig", "slurm-controller", "slurm-login-login-0"):
        assert holder in subnet.blocked, subnet.blocked
    assert "Slurm's controller runs (v2)" in subnet.blocked
    # --replace would not help (the engine deletes the subnet before it reaches them).
    assert "pulumi destroy --target 'urn:pulumi:gate::" in subnet.blocked
    assert "--replace" not in subnet.blocked
    # What reads the subnet and is not replaced is updated, with its input unknown.
    controller = _one(changes, "slurm-controller")
    assert controller.op is Op.UPDATE and controller.reads == subnet.urn
    (unknown,) = [c for c in controller.changes if c.new == "(known after the replacement)"]
    assert unknown.path == ("networkInterfaces", 0, "subnetwork")
    # The cluster is replaced with it and nothing holds it back.
    cluster = _one(changes, "gke-cluster")
    assert cluster.op is Op.REPLACE and cluster.cause == subnet.urn and not cluster.blocked


def test_a_gpu_template_change_reaches_running_vms_only_when_they_are_recreated(before) -> None:
    clusters = [{"name": "demo", "instanceCount": 2, "machineType": "a2-highgpu-4g", "gpuCount": 4}]
    changes = _diff(before, gpuClusters=clusters)
    template = _one(changes, "gpucluster-demo-template")
    assert template.op is Op.REPLACE and not template.delete_before_replace
    group = _one(changes, "gpucluster-demo-mig")
    assert group.op is Op.UPDATE and not group.blocked
    (note,) = [n for n in group.notes if "update policy" in n]
    assert "OPPORTUNISTIC" in note and "keep the old template" in note
    assert "rolling-action replace ai-gate-demo --zone=us-central1-a" in note


def test_renaming_a_team_loses_its_namespace_and_queue(before) -> None:
    changes = _diff(before, teams=[{"name": "applied", "quota": {"t": 4}}])
    namespace = _one(changes, "team-research-namespace")
    assert namespace.op is Op.DELETE and namespace.destructive
    assert [h.kind for h in namespace.hazards] == ["data-loss"]
    assert "every object in the namespace" in namespace.hazards[0].message
    queue = _one(changes, "team-research-local-queue")
    assert queue.hazards and "pending workloads" in queue.hazards[0].message


def test_replacing_filestore_home_and_the_only_cpu_pool_are_said(before) -> None:
    slurm = {**SHARED["ai-infra:slurm"], "home": {"tier": "BASIC_SSD", "capacityGb": 2560}}
    cluster = {"maxPodsPerNode": 32, "cpuPool": {"spot": True}}
    changes = _diff(before, slurm=slurm, cluster=cluster)
    home = next(c for c in changes if c.resource.type == "gcp:filestore/instance:Instance")
    assert home.op is Op.REPLACE and home.destructive
    assert "every file on the share is lost" in home.hazards[0].message
    pool = _one(changes, "gke-cpu")
    assert pool.op is Op.REPLACE
    assert [h.kind for h in pool.hazards] == ["availability"]


def _stack(tmp_path: Path, before: dict[str, Any], after: dict[str, Any]) -> tuple[str, str]:
    base = write(tmp_path / "base" / "Pulumi.gate.yaml", before)
    now = write(tmp_path / "Pulumi.gate.yaml", after)
    return str(now), str(base)


def test_exit_codes(tmp_path: Path, capsys) -> None:
    minimal = {**BASE_CONFIG, "ai-infra:tpuSlices": [{"name": "a", "accelerator": "v6e-4"}]}
    more = {**minimal, "ai-infra:buckets": [{"name": "data"}]}
    now, base = _stack(tmp_path, minimal, minimal)
    assert main([now, "--base", base]) == EXIT_OK
    now, base = _stack(tmp_path, minimal, more)
    assert main([now, "--base", base]) == EXIT_CHANGES
    # Deleting a bucket is a change `pulumi up` can make; the flag refuses it.
    now, base = _stack(tmp_path, more, minimal)
    assert main([now, "--base", base]) == EXIT_CHANGES
    assert main([now, "--base", base, "--fail-on-destructive"]) == EXIT_REFUSED
    # A protected bucket is refused whatever the flag.
    protected = {**more, "ai-infra:protect": True}
    now, base = _stack(tmp_path, protected, {**minimal, "ai-infra:protect": True})
    assert main([now, "--base", base]) == EXIT_REFUSED
    capsys.readouterr()
    bad = write(tmp_path / "Pulumi.bad.yaml", {**minimal, "ai-infra:tpuSlices": [{"name": "a"}]})
    assert main([str(bad), "--json"]) == EXIT_ERROR
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    (problem,) = document["error"]["problems"]
    assert problem["path"] == "ai-infra:tpuSlices[0].accelerator"


def test_the_markdown_summary_leads_with_what_cannot_go_through(tmp_path: Path, capsys) -> None:
    now, base = _stack(tmp_path, SHARED, _edited(network={"subnetCidr": "10.129.0.0/21"}))
    assert main([now, "--base", base, "--markdown"], costing=PLAN_COSTING) == EXIT_REFUSED
    text = capsys.readouterr().out
    marker, heading, _, since, _, look, first = text.splitlines()[:7]
    assert marker == "<!-- ai-infra-plan:stack=gate -->"
    assert heading.startswith("### ai-infra `gate`: ") and "to replace" in heading
    assert since.endswith("exit 3 (refused, incomplete or destructive).")
    assert look == "**Look first:**" and first.startswith("- `+-` Subnetwork network-subnet")
    assert (
        "| `+-` | Subnetwork network-subnet | `network` | `ipCidrRange` | ✗ cannot complete" in text
    )
    assert "**Cost change** (USD at list prices):\n- idle: $" in text
    # The full text diff, folded, fenced so that nothing in it closes the block.
    folded = text.split("<details><summary>Full diff</summary>\n\n```\n", 1)[1]
    assert folded.startswith("Changes to stack 'gate'") and folded.rstrip().endswith("</details>")


def test_the_markdown_comment_tables_the_cost_of_each_changed_line(tmp_path: Path, capsys):
    now, base = _stack(
        tmp_path, SHARED, _edited(tpuSlices=[{"name": "t", "accelerator": "v5p-16"}])
    )
    assert main([now, "--base", base, "--markdown"], costing=PLAN_COSTING) == EXIT_CHANGES
    text = capsys.readouterr().out
    table = text.split("**Cost by line** (full scale):\n\n", 1)[1].split("\n\n", 1)[0]
    header, _, *rows = table.splitlines()
    assert header == "| | Line | Config key | Before | After | Change | Idle change |"
    slices = [r for r in rows if "`tpuSlices[0]`" in r]
    assert slices, table

    def usd(cell: str) -> float:
        return float(cell.strip().replace("$", "").replace("/h", "").replace(",", ""))

    changes = []
    for row in slices:
        cells = [c.strip() for c in row.strip("|").split("|")]
        before, after, change = (usd(c) for c in cells[3:6])
        assert change == pytest.approx(after - before, abs=0.01), row
        changes.append(change)
    assert sum(changes) > 0


def _camel(schema: Any) -> set[str]:
    """Every property name the schema defines."""
    found: set[str] = set()
    if isinstance(schema, dict):
        found |= set((schema.get("properties") or {}).keys())
        for value in schema.values():
            found |= _camel(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _camel(value)
    return found


def test_the_schema_names_its_keys_in_camel_case() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    wrong = {k for k in _camel(SCHEMA) if not re.fullmatch(r"[a-z][a-zA-Z0-9]*", k)}
    assert not wrong


@pytest.mark.parametrize("stack", list_stacks())
def test_every_stack_s_plan_json_follows_the_schema(stack: str) -> None:
    document = report(stack, None, PLAN_COSTING).json()
    jsonschema.validate(document, SCHEMA)
    assert document["exitCode"] == EXIT_OK


def test_a_diff_json_follows_the_schema(tmp_path: Path) -> None:
    now, base = _stack(tmp_path, SHARED, _edited(network={"subnetCidr": "10.129.0.0/21"}))
    document = report(now, base, PLAN_COSTING).json()
    jsonschema.validate(document, SCHEMA)
    assert document["exitCode"] == EXIT_REFUSED and document["diff"]["blocked"] == 1


def test_the_markdown_summary_carries_the_reachability_change(tmp_path: Path, capsys) -> None:
    config = {
        **BASE_CONFIG,
        "gcp:region": "us-central2",
        "gcp:zone": "us-central2-b",
        "ai-infra:tpuVms": [{"name": "exp", "accelerator": "v4-8"}],
    }
    opening = {"name": "jax", "to": "tpuVms", "sources": ["pods"], "ports": ["tcp:8476"]}
    now, base = _stack(tmp_path, config, {**config, "ai-infra:network": {"allow": [opening]}})
    assert main([now, "--base", base, "--markdown"]) == EXIT_CHANGES
    text = capsys.readouterr().out
    section = text.split("**Reachability:**\n", 1)[1]
    assert section.startswith("- opens a path: ") and "TPU VMs exp: tcp:8476" in section


@pytest.mark.parametrize(("force", "said"), [(False, "the delete fails"), (True, "every object")])
def test_deleting_a_bucket_says_what_its_force_destroy_does(force: bool, said: str) -> None:
    with_bucket = build_graph(
        {**SHARED, "ai-infra:buckets": [{"name": "data", "forceDestroy": force}]}, stack="gate"
    )
    (bucket,) = [
        c
        for c in diff(with_bucket, build_graph(SHARED, stack="gate"))
        if c.resource.type == "gcp:storage/bucket:Bucket"
    ]
    assert bucket.op is Op.DELETE and bucket.destructive
    (hazard,) = bucket.hazards
    assert hazard.kind == "data-loss" and said in hazard.message, hazard.message


def test_a_delete_the_provider_refuses_at_apply_cannot_complete(tmp_path: Path) -> None:
    """A cluster with deletionProtection (without ai-infra:protect) replaced: the provider
    fails the delete at apply, so the diff exits 3, not 2."""
    cluster = {"maxPodsPerNode": 32, "deletionProtection": True}
    now, base = _stack(
        tmp_path,
        _edited(cluster=cluster),
        _edited(cluster={**cluster, "maxPodsPerNode": 64}),
    )
    built = report(now, base, None)
    (change,) = [c for c in built.changes[0] if c.resource.name == "gke-cluster"]
    assert change.op is Op.REPLACE and not change.refusal
    assert "deletionProtection" in change.blocked
    assert built.exit_code() == EXIT_REFUSED
