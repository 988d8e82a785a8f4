"""`python -m plan <stack> --base <ref>`: what a config edit would do, as `pulumi preview` shows
it, from a real git history; and the table of inputs that replace a resource."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pytest
import yaml

from plan.cli import main, run
from plan.diff import Op, diff
from plan.engine import list_stacks, load_stack_config, record_program
from plan.replacements import REPLACE_ON_CHANGES, replaces
from tests.conftest import BASE_CONFIG, build_graph
from tests.test_docs import examples

BEFORE: dict[str, Any] = {
    **BASE_CONFIG,
    "ai-infra:cluster": {"cpuPool": {"machineType": "e2-standard-4"}},
    "ai-infra:tpuSlices": [{"name": "a", "accelerator": "v6e-4"}],
    "ai-infra:buckets": [{"name": "data"}],
    "ai-infra:workloadIdentities": [
        {"name": "old", "namespace": "old", "serviceAccount": "runner"}
    ],
}
AFTER: dict[str, Any] = {
    **BASE_CONFIG,
    "ai-infra:cluster": {"cpuPool": {"machineType": "e2-standard-8", "diskSizeGb": 200}},
    "ai-infra:tpuSlices": [{"name": "a", "accelerator": "v6e-4", "provisioning": "spot"}],
    "ai-infra:buckets": [{"name": "data"}, {"name": "logs"}],
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def write(path: Path, config: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump({"config": config}))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository whose Pulumi.edit.yaml went from BEFORE (HEAD~1) to AFTER (HEAD)."""
    repo = tmp_path_factory.mktemp("repo")
    stack = repo / "Pulumi.edit.yaml"
    git(repo, "init", "-q")
    write(stack, BEFORE)
    git(repo, "add", stack.name)
    git(repo, "commit", "-qm", "before")
    write(stack, AFTER)
    git(repo, "commit", "-qam", "after")
    return stack


def test_diff_against_a_git_ref_prints_what_preview_would(history: Path):
    # In the order the program constructs them; deletions last, in the old program's order.
    # The resources; the cost change after them is tests/prices' to check.
    text = run(str(history), "HEAD~1", as_json=False).split("\n\nCost change")[0]
    assert text.splitlines() == [
        "Changes to stack 'edit' (Pulumi.edit.yaml) since HEAD~1:Pulumi.edit.yaml:",
        "",
        # The buckets every system shares are built before the systems.
        "+ Bucket bucket-logs-bucket  (buckets[1])  name=test-project-ai-edit-logs "
        "location=US-EAST5 publicAccessPrevention=enforced forceDestroy=False",
        "~ NodePool gke-cpu  (cluster)",
        "    nodeConfig.diskSizeGb: 100 → 200",
        '    nodeConfig.machineType: "e2-standard-4" → "e2-standard-8"',
        "+- NodePool tpu-a-pool  (tpuSlices[0])",
        '    nodeConfig.labels["ai-infra/capacity"]: "on-demand" → "spot"',
        "    nodeConfig.spot: (none) → true  (forces replacement)",
        "- Account wi-old-sa  (workloadIdentities[0])  id=ai-edit-old",
        "- IAMMember wi-old-iam.workloadIdentityUser  (workloadIdentities[0])  "
        "roles/iam.workloadIdentityUser -> serviceAccount:test-project.svc.id.goog[old/runner]",
        "- Namespace wi-old-namespace  (workloadIdentities[0])  old",
        "- ServiceAccount wi-old-service-account  (workloadIdentities[0])  old/runner "
        "gsa=ai-edit-old@test-project.iam.gserviceaccount.com",
        "",
        "1 to create, 1 to change, 1 to replace, 4 to delete",
    ]


def test_diff_as_json_for_ci(history: Path):
    document = json.loads(run(str(history), "HEAD~1", as_json=True))
    changes = document["diff"]
    assert changes["base"] == "HEAD~1"
    assert changes["summary"] == {"create": 1, "update": 1, "replace": 1, "delete": 4}
    by_name = {r["name"]: r for r in changes["resources"]}
    assert {r["op"] for r in changes["resources"]} == {"create", "update", "replace", "delete"}
    pool = by_name["tpu-a-pool"]
    assert pool["op"] == "replace" and pool["configKey"] == "ai-infra:tpuSlices[0]"
    assert {"path": "nodeConfig.spot", "old": None, "new": True, "replaces": True} in pool[
        "changes"
    ]
    assert by_name["gke-cpu"]["changes"] == [
        {"path": "nodeConfig.diskSizeGb", "old": 100, "new": 200, "replaces": False},
        {
            "path": "nodeConfig.machineType",
            "old": "e2-standard-4",
            "new": "e2-standard-8",
            "replaces": False,
        },
    ]
    assert by_name["wi-old-sa"]["op"] == "delete"
    # The plan of the current file comes with it, counted as the text plan counts.
    plan = document["resources"]
    applied = [r for r in plan if not r["component"]]
    assert document["counts"]["resources"] == len(applied)
    assert document["counts"]["components"] == len(plan) - len(applied)
    assert sum(document["counts"]["byType"].values()) == len(applied)
    slice_ = next(r for r in plan if r["name"] == "tpu-a")
    assert slice_["component"] and slice_["configKey"] == "ai-infra:tpuSlices[0]"
    provider = next(r for r in plan if r["type"] == "pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"


def test_an_unchanged_stack_prints_no_resources(tmp_path: Path, capsys):
    base = tmp_path / "Pulumi.same.yaml"
    write(base, BEFORE)
    assert main([str(base), "--base", str(base)]) == 0
    out, cost = capsys.readouterr().out.split("\n\nCost change")
    assert "  No change." in cost.splitlines()
    assert out.splitlines()[1:] == [
        "",
        "No changes.",
        "",
        "0 to create, 0 to change, 0 to replace, 0 to delete",
    ]


@pytest.mark.parametrize("ref", ["no-such-ref", "--output=/tmp/x"])
def test_a_bad_base_exits_2_before_building(history: Path, ref: str, capsys):
    assert main([str(history), f"--base={ref}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--base" in captured.err
    assert "Traceback" not in captured.err


def test_an_invalid_base_config_is_reported_as_the_base(tmp_path: Path, capsys):
    stack, base = tmp_path / "Pulumi.x.yaml", tmp_path / "old.yaml"
    write(stack, BEFORE)
    write(base, {**BEFORE, "ai-infra:tpuSlices": [{"name": "a", "accelerator": "v5p-33"}]})
    assert main([str(stack), "--base", str(base)]) == 2
    err = capsys.readouterr().err
    assert f"the stack file at {base} is invalid" in err
    assert "ai-infra:tpuSlices[0].accelerator" in err


@pytest.mark.parametrize(("option", "op"), [([], Op.UPDATE), (["routingMode"], Op.REPLACE)])
def test_a_resources_replace_on_changes_option_is_honoured(option: list[str], op: Op):
    def program(mode: str) -> None:
        gcp.compute.Network(
            "net",
            gcp.compute.NetworkArgs(name="net", routing_mode=mode),
            pulumi.ResourceOptions(replace_on_changes=option),
        )

    graphs = []
    for mode in ("REGIONAL", "GLOBAL"):
        graph, error = record_program(BASE_CONFIG, program=lambda mode=mode: program(mode))
        assert error is None and len(graph) == 1
        graphs.append(graph)
    (change,) = diff(*graphs)
    assert change.op == op
    assert [(c.rendered_path, c.old, c.new) for c in change.changes] == [
        ("routingMode", "REGIONAL", "GLOBAL")
    ]


@pytest.mark.parametrize(
    ("type_", "path", "expected"),
    [
        ("gcp:container/nodePool:NodePool", ("nodeConfig", "spot"), True),
        ("gcp:container/nodePool:NodePool", ("nodeConfig", "machineType"), False),
        ("gcp:container/nodePool:NodePool", ("nodeConfig", "diskSizeGb"), False),
        ("gcp:container/nodePool:NodePool", ("nodeConfig", "metadata", "any-key"), True),
        ("gcp:container/nodePool:NodePool", ("nodeConfig", "oauthScopes", 1), True),
        ("gcp:container/nodePool:NodePool", ("nodeConfig", "guestAccelerators", 0, "count"), True),
        ("gcp:container/nodePool:NodePool", ("nodeConfig", "labels", "ai-infra/pool"), False),
        ("gcp:container/nodePool:NodePool", ("placementPolicy",), True),
        ("gcp:container/nodePool:NodePool", ("placementPolicy", "policyName"), True),
        # Not ForceNew upstream (v7.45.0), so preview shows an in-place update.
        ("gcp:container/nodePool:NodePool", ("placementPolicy", "tpuTopology"), False),
        ("gcp:container/nodePool:NodePool", ("nodeCount",), False),
        ("gcp:container/cluster:Cluster", ("privateClusterConfig", "masterIpv4CidrBlock"), True),
        ("gcp:container/cluster:Cluster", ("releaseChannel", "channel"), False),
        ("gcp:storage/bucket:Bucket", ("location",), True),
        ("gcp:storage/bucket:Bucket", ("forceDestroy",), False),
        ("gcp:projects/iAMMember:IAMMember", ("role",), True),
        ("kubernetes:core/v1:Namespace", ("metadata", "name"), True),
        ("kubernetes:core/v1:Namespace", ("metadata", "labels", "team"), False),
        ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", ("metadata", "name"), True),
        ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", ("spec", "cohortName"), False),
        ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", ("roleRef", "name"), True),
        ("kubernetes:helm.sh/v3:Release", ("namespace",), True),
        ("kubernetes:helm.sh/v3:Release", ("version",), False),
        ("kubernetes:yaml/v2:ConfigGroup", ("objs", 0, "metadata", "name"), False),
        ("gcp:compute/instanceTemplate:InstanceTemplate", ("metadata", "startup-script"), True),
        ("gcp:compute/instanceTemplate:InstanceTemplate", ("labels", "team"), False),
        ("gcp:compute/instanceGroupManager:InstanceGroupManager", ("targetSize",), False),
        ("gcp:compute/resizeRequest:ResizeRequest", ("resizeBy",), True),
        ("gcp:monitoring/dashboard:Dashboard", ("dashboardJson",), False),
        ("gcp:some/unknown:Type", ("name",), False),
    ],
)
def test_which_changes_replace(type_: str, path: tuple[str | int, ...], expected: bool):
    assert replaces(type_, path) is expected


def test_every_replace_path_is_an_input_the_program_sets():
    """Guards the table against a misspelt camelCase name, which would never match."""
    set_paths: dict[str, set[tuple[str, ...]]] = {}

    def walk(type_: str, value: Any, path: tuple[str, ...]) -> None:
        set_paths.setdefault(type_, set()).add(path)
        if isinstance(value, dict):
            for key, item in value.items():
                walk(type_, item, (*path, key))
        elif isinstance(value, list):
            for item in value:
                walk(type_, item, path)

    configs = [(stack, load_stack_config(stack)) for stack in list_stacks()]
    # The docs' examples hold the systems no shipped stack uses (Slurm's VMs and templates).
    configs += [(name, example.config) for name, example in examples().items()]
    for stack, config in configs:
        for r in build_graph(config, stack=stack):
            walk(r.type, r.inputs, ())
    # The docs' examples use systems no shipped stack does (GPU clusters).
    for name, example in examples().items():
        for r in build_graph(example.config, stack=name):
            walk(r.type, r.inputs, ())
    for type_, entries in REPLACE_ON_CHANGES.items():
        for entry in entries:
            parts = tuple(entry.removesuffix(".*").split("."))
            assert parts in set_paths.get(type_, set()), f"{type_}: {entry}"
