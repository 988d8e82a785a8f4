"""`python -m plan <stack> --base <ref or file>`: what an edit would do, as `pulumi preview` shows
it, and what `pulumi up` would refuse. Each case is built from two real stack files or two real
commits and checks the symbol, the changed paths and the summary counts."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pytest
import yaml

from components.gke.kueue import CHARTS
from graph.engine import REPO_ROOT, load_stack_config, record_program
from plan import base as bases
from plan.cli import Report, main, report, run
from plan.diff import SHOWN_SECRETS, Op, diff
from plan.render import render_diff
from plan.replacements import Effect
from prices import PLAN_COSTING
from stacks.loading import parse
from tests.conftest import BASE_CONFIG
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


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def write(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def edit(tmp_path: Path, before: dict[str, Any], after: dict[str, Any], stack: str = "edit"):
    """The diff of two stack files as JSON (its `diff`) and as text."""
    base = write(tmp_path / "base" / f"Pulumi.{stack}.yaml", before)
    now = write(tmp_path / f"Pulumi.{stack}.yaml", after)
    built = report(str(now), str(base))
    return json.loads(json.dumps(built.json())), built.text()


def resource(document: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [r for r in document["diff"]["resources"] if r["name"] == name]
    return found


def paths(entry: dict[str, Any]) -> dict[str, tuple[Any, Any, bool]]:
    return {c["path"]: (c["old"], c["new"], c["replaces"]) for c in entry["changes"]}


def counts(**ops: int) -> dict[str, int]:
    return {"create": 0, "update": 0, "replace": 0, "delete": 0, **ops}


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository of stack files alone: Pulumi.edit.yaml went from BEFORE (HEAD~1) to
    AFTER (HEAD); it holds no program, so the base is built with this checkout's code."""
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
    lines = text.splitlines()
    assert lines[0] == (
        "Changes to stack 'edit' (Pulumi.edit.yaml) since HEAD~1:Pulumi.edit.yaml (no program "
        "there: built with this checkout's code):"
    )
    assert lines[2:15] == [
        # The buckets every system shares are built before the systems.
        "+ Bucket bucket-logs-bucket  (buckets[1])  name=test-project-ai-edit-logs "
        "location=US-EAST5 publicAccessPrevention=enforced forceDestroy=False",
        "~ NodePool gke-cpu  (cluster)",
        "    nodeConfig.diskSizeGb: 100 → 200",
        '    nodeConfig.machineType: "e2-standard-4" → "e2-standard-8"',
        "+- NodePool tpu-a-pool  (tpuSlices[0])  [deleted before its replacement is created]",
        '    nodeConfig.labels["ai-infra/capacity"]: "on-demand" → "spot"',
        "    nodeConfig.spot: (none) → true  (forces replacement)",
        # Deleted before its replacement exists: the slice is gone while it is recreated.
        "    ! availability: a TPU slice (1 x ct6e-standard-4t, 4 v6e chips) goes: GKE "
        "deletes its nodes with the pool, so the jobs running on it are stopped mid-run "
        "(JobSet restarts them only where capacity is left), and Kueue admits nothing more "
        "to its flavor; drain it first (let the running jobs finish, or stop admitting to "
        "its queue)",
        "- Account wi-old-sa  (workloadIdentities[0])  id=ai-edit-old",
        "- IAMMember wi-old-iam.workloadIdentityUser  (workloadIdentities[0])  "
        "roles/iam.workloadIdentityUser -> serviceAccount:test-project.svc.id.goog[old/runner]",
        "- Namespace wi-old-namespace  (workloadIdentities[0])  old",
        "    ! data-loss: Kubernetes deletes every object in the namespace with it "
        "(workloads, secrets, volume claims); a renamed team's new namespace starts empty",
        "- ServiceAccount wi-old-service-account  (workloadIdentities[0])  old/runner "
        "gsa=ai-edit-old@test-project.iam.gserviceaccount.com",
    ]
    assert lines[-2:] == [
        "1 to create, 1 to change, 1 to replace, 4 to delete",
        "1 of these lose data: see the `! data-loss` lines",
    ]
    assert (
        "  output workloadIdentities.old: ai-edit-old@test-project.iam.gserviceaccount.com → (none)"
        in lines
    )


def test_diff_as_json_for_ci(history: Path):
    document = json.loads(run(str(history), "HEAD~1", as_json=True))
    assert document["schemaVersion"] == 4
    changes = document["diff"]
    assert changes["base"] == "HEAD~1"
    assert changes["summary"] == counts(create=1, update=1, replace=1, delete=4)
    pool = resource(document, "tpu-a-pool")
    assert pool["op"] == "replace" and pool["configKey"] == "ai-infra:tpuSlices[0]"
    assert pool["deleteBeforeReplace"] is True
    assert paths(pool)["nodeConfig.spot"] == (None, True, True)
    assert resource(document, "gke-cpu")["changes"] == [
        {
            "path": "nodeConfig.diskSizeGb",
            "label": "nodeConfig.diskSizeGb",
            "old": 100,
            "new": 200,
            "replaces": False,
            "effect": "update",
            "note": None,
        },
        {
            "path": "nodeConfig.machineType",
            "label": "nodeConfig.machineType",
            "old": "e2-standard-4",
            "new": "e2-standard-8",
            "replaces": False,
            "effect": "update",
            "note": None,
        },
    ]
    assert resource(document, "wi-old-sa")["op"] == "delete"
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


def test_urns_are_shaped_as_pulumi_state_holds_them_for_pulumi_up_target():
    document = json.loads(run("dev", None, as_json=True))
    by_urn = {r["urn"]: r for r in document["resources"]}
    # deployment.go generateURN: the parent's whole type chain, nothing for the root stack.
    team = "urn:pulumi:dev::ai-infra::ai-infra:gke:Team::team-research"
    assert by_urn[team]["parent"] == "urn:pulumi:dev::ai-infra::pulumi:pulumi:Stack::ai-infra-dev"
    grant = (
        "urn:pulumi:dev::ai-infra::ai-infra:gke:Team$ai-infra:gke:WorkloadIdentity$"
        "gcp:serviceaccount/account:Account::team-research-identity-sa"
    )
    assert by_urn[grant]["type"] == "gcp:serviceaccount/account:Account"
    for r in document["resources"]:
        qualified = r["urn"].split("::")[2]
        parent = by_urn.get(r["parent"])
        expected = r["type"] if parent is None else f"{parent['urn'].split('::')[2]}${r['type']}"
        assert qualified == expected, r["urn"]
    deep = [u for u in by_urn if u.split("::")[2].count("$") >= 2]
    assert deep, "no resource three levels deep"


def test_an_unchanged_stack_prints_no_resources(tmp_path: Path, capsys):
    base = write(tmp_path / "Pulumi.same.yaml", BEFORE)
    assert main([str(base), "--base", str(base)], costing=PLAN_COSTING) == 0
    out, cost = capsys.readouterr().out.split("\n\nCost change")
    assert "  No change." in cost.splitlines()
    assert out.splitlines()[1:] == [
        "",
        "No changes.",
        "",
        "0 to create, 0 to change, 0 to replace, 0 to delete",
    ]


def test_two_files_of_one_name_are_told_apart(tmp_path: Path):
    _, text = edit(tmp_path, BEFORE, AFTER)
    heading = text.splitlines()[0]
    new, base = tmp_path / "Pulumi.edit.yaml", tmp_path / "base" / "Pulumi.edit.yaml"
    assert heading.startswith("Changes to stack 'edit' (")
    assert f"{Path(new).name} (new)" in heading and "(base)" in heading
    assert str(base.relative_to(tmp_path)) in heading or str(base) in heading


@pytest.mark.parametrize("ref", ["no-such-ref", "--output=/tmp/x"])
def test_a_bad_base_exits_2_before_building(history: Path, ref: str, capsys):
    assert main([str(history), f"--base={ref}"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "--base" in captured.err
    assert "Traceback" not in captured.err


def test_an_invalid_base_config_is_reported_as_the_base(tmp_path: Path, capsys):
    stack, base = tmp_path / "Pulumi.x.yaml", tmp_path / "old.yaml"
    write(stack, BEFORE)
    write(base, {**BEFORE, "ai-infra:tpuSlices": [{"name": "a", "accelerator": "v5p-33"}]})
    assert main([str(stack), "--base", str(base)]) == 1
    err = capsys.readouterr().err
    assert f"the stack file at {base} is invalid" in err
    assert "ai-infra:tpuSlices[0].accelerator" in err


def test_a_stack_missing_at_the_ref_is_a_new_stack_with_everything_created(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README").write_text("stacks\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "empty")
    stack = write(repo / "Pulumi.fresh.yaml", AFTER)
    built = report(str(stack), "HEAD")
    document = json.loads(json.dumps(built.json()))
    plan_resources = [r for r in document["resources"] if not r["component"]]
    assert document["diff"]["summary"] == counts(create=len(plan_resources))
    assert {r["op"] for r in document["diff"]["resources"]} == {"create"}
    assert "a new stack" in built.text().splitlines()[0]


# --- the cases of issue 15, each from two real stack files -----------------------------------


def test_a_tpu_vm_node_count_replaces_through_its_providers_own_diff(tmp_path: Path):
    before = examples()["tpu-vms"].config
    after = copy.deepcopy(before)
    after["ai-infra:tpuVms"][0]["nodeCount"] = 3
    document, text = edit(tmp_path, before, after)
    entry = resource(document, "tpuvm-maxtext-qr")
    assert entry["type"] == "pulumi-python:dynamic/tpu:QueuedResource"
    assert (entry["op"], entry["deleteBeforeReplace"]) == ("replace", True)
    assert paths(entry) == {"nodeCount": (2, 3, True)}
    # ... and `pulumi up` waits for the startup scripts of the new slice too.
    wait = resource(document, "tpuvm-maxtext-startup")
    assert wait["op"] == "update" and paths(wait)["nodes[2]"] == (None, "maxtext-2", False)
    assert document["diff"]["summary"] == counts(replace=1, update=1)
    assert "+- QueuedResource tpuvm-maxtext-qr  (tpuVms[0])" in text
    assert "  TPU chips v4: 8 → 12" in text
    assert "its TPU VMs are deleted with it" in text


def test_a_gpu_cluster_machine_type_replaces_its_immutable_instance_template(tmp_path: Path):
    before = examples()["gpu-cluster"].config
    after = copy.deepcopy(before)
    after["ai-infra:gpuClusters"][0].update(machineType="a2-highgpu-4g", gpuCount=4)
    document, text = edit(tmp_path, before, after)
    entry = resource(document, "gpucluster-demo-template")
    assert entry["op"] == "replace"
    assert paths(entry)["machineType"] == ("a2-highgpu-2g", "a2-highgpu-4g", True)
    assert paths(entry)["guestAccelerators[0].count"] == (2, 4, True)
    # Named by prefix: the new template is made before the group moves off the old one.
    assert entry["deleteBeforeReplace"] is False
    assert document["diff"]["summary"]["replace"] == 1
    assert "+- InstanceTemplate gpucluster-demo-template  (gpuClusters[0])" in text
    assert "  GPUs nvidia-tesla-a100: 2 → 4" in text


def test_max_pods_per_node_replaces_a_running_slice_pool(tmp_path: Path):
    before = examples()["minimal"].config
    after = copy.deepcopy(before)
    after["ai-infra:tpuSlices"][0]["maxPodsPerNode"] = 32
    document, text = edit(tmp_path, before, after)
    entry = resource(document, "tpu-train-0")
    assert (entry["op"], paths(entry)) == ("replace", {"maxPodsPerNode": (16, 32, True)})
    assert document["diff"]["summary"] == counts(replace=1)
    assert "    maxPodsPerNode: 16 → 32  (forces replacement)" in text


def test_dropping_the_release_channel_keeps_the_hold_and_updates_the_slice_pool(tmp_path: Path):
    """Dropping the release channel turns node auto-upgrade off (an update); the slices'
    upgrade hold does nothing without it, so the pool keeps it (ignore_changes) instead of
    being replaced to lift it."""
    before = examples()["minimal"].config
    after = copy.deepcopy(before)
    after["ai-infra:cluster"]["releaseChannel"] = "NONE"
    document, _ = edit(tmp_path, before, after)
    entry = resource(document, "tpu-train-0")
    assert entry["op"] == "update"
    notes = {c["path"]: (c["effect"], c["note"]) for c in entry["changes"]}
    assert notes == {"management.autoUpgrade": ("update", None)}
    assert document["diff"]["summary"] == counts(update=2)


def test_adding_the_upgrade_hold_replaces_the_slice_pool(tmp_path: Path):
    """Back on a channel the hold must be on the pool, which nodePoolUpdate cannot change: the
    program replaces the pool for it (replace_on_changes), and the diff says so and why."""
    after = examples()["minimal"].config
    before = copy.deepcopy(after)
    before["ai-infra:cluster"]["releaseChannel"] = "NONE"
    document, text = edit(tmp_path, before, after)
    entry = resource(document, "tpu-train-0")
    assert entry["op"] == "replace"
    notes = {c["path"]: (c["effect"], c["note"]) for c in entry["changes"]}
    assert notes == {
        "maintenancePolicies": ("replace", "the resource's replace_on_changes option"),
        "management.autoUpgrade": ("update", None),
    }
    assert "[deleted before its replacement is created]" in text
    assert document["diff"]["summary"] == counts(update=1, replace=1)


def test_an_update_the_provider_never_applies_says_so():
    """A pool's maintenance policy is read only when the pool is created (nodePoolUpdate has
    no code for it): without replace_on_changes, `pulumi up` would report an update and change
    nothing."""

    def program(side: int) -> None:
        exclusion = gcp.container.NodePoolMaintenancePolicyArgs(
            exclusion_until_end_of_supports=[
                gcp.container.NodePoolMaintenancePolicyExclusionUntilEndOfSupportArgs(enabled=True)
            ]
        )
        gcp.container.NodePool(
            "pool",
            gcp.container.NodePoolArgs(
                cluster="c", node_count=1, maintenance_policies=(None, [exclusion])[side]
            ),
        )

    graphs = [
        record_program(BASE_CONFIG, program=lambda side=side: program(side))[0] for side in (0, 1)
    ]
    changes = diff(graphs[0], graphs[1])
    (change,) = changes
    assert change.op is Op.UPDATE
    assert [(c.rendered_path, c.effect) for c in change.changes] == [
        ("maintenancePolicies", Effect.NO_OP)
    ]
    assert "    ! not applied: no update path" in render_diff(changes, {}, "Changes:")


def test_a_protected_replace_is_refused_and_shows_its_blast_radius(tmp_path: Path):
    base = tmp_path / "base" / "Pulumi.prod.yaml"
    base.parent.mkdir()
    base.write_text((REPO_ROOT / "Pulumi.prod.yaml").read_text())
    now = tmp_path / "Pulumi.prod.yaml"
    now.write_text(
        (REPO_ROOT / "Pulumi.prod.yaml")
        .read_text()
        .replace("masterCidr: 172.16.0.16/28", "masterCidr: 172.16.0.32/28")
    )
    assert json.loads(load_stack_config("prod")["ai-infra:network"])["masterCidr"] == (
        "172.16.0.16/28"
    )
    built = report(str(now), str(base))
    document, text = json.loads(json.dumps(built.json())), built.text()
    cluster = resource(document, "gke-cluster")
    assert cluster["op"] == "replace"
    assert paths(cluster) == {
        "privateClusterConfig.masterIpv4CidrBlock": ("172.16.0.16/28", "172.16.0.32/28", True)
    }
    assert cluster["refusal"].startswith(
        '`pulumi up` will refuse: unable to replace resource "urn:pulumi:prod::ai-infra::'
        'ai-infra:gke:GkeCluster$gcp:container/cluster:Cluster::gke-cluster" as it is '
        "currently marked for protection."
    )
    assert "set ai-infra:protect to false" in cluster["refusal"]
    # The provider's own guard fails the delete at apply: said as cannot complete (exit 3).
    assert (
        "cannot complete: the provider refuses to delete a cluster whose deletionProtection"
        in (cluster["blocked"])
    )
    # Every node pool, the Kubernetes provider and every Kubernetes object go with it.
    radius = {r["urn"]: r for r in document["diff"]["resources"] if r["cause"]}
    assert set(cluster["blastRadius"]) == set(radius)
    kinds = {r["type"] for r in radius.values()}
    assert {"gcp:container/nodePool:NodePool", "pulumi:providers:kubernetes"} <= kinds
    assert "kubernetes:helm.sh/v3:Release" in kinds
    pools = [r for r in radius.values() if r["type"] == "gcp:container/nodePool:NodePool"]
    assert len(pools) == 10 and all(r["cause"] == cluster["urn"] for r in pools)
    assert document["diff"]["summary"] == counts(update=1, replace=1 + len(radius))
    assert f"    blast radius: {len(radius)} more replaced with it (10 NodePool" in text
    assert "`pulumi up` will refuse 1 of these (protected resources)" in text


def test_a_protected_delete_is_refused_with_what_to_do(tmp_path: Path):
    before = {
        **BEFORE,
        "ai-infra:protect": True,
        "ai-infra:buckets": [{"name": "data"}, {"name": "logs"}],
    }
    after = {**before, "ai-infra:buckets": [{"name": "data"}]}
    document, text = edit(tmp_path, before, after)
    entry = resource(document, "bucket-logs-bucket")
    assert entry["op"] == "delete"
    assert "cannot be deleted because it is protected" in entry["refusal"]
    assert f"pulumi state unprotect '{entry['urn']}'" in entry["refusal"]
    assert "--ignore-protect" in entry["refusal"]
    assert document["diff"]["summary"] == counts(delete=1)
    assert "    ✗ `pulumi up` will refuse: resource" in text


def test_slurm_files_change_in_place_as_text(tmp_path: Path):
    before = examples()["slurm"].config
    after = copy.deepcopy(before)
    after["ai-infra:slurm"]["tpuNodesets"][0]["nodeCountDynamicMax"] = 8
    document, text = edit(tmp_path, before, after)
    entry = resource(document, "slurm-nodeset-v4")
    assert entry["op"] == "update" and [c["path"] for c in entry["changes"]] == ["content"]
    assert document["diff"]["summary"] == counts(update=1)
    assert "~ BucketObject slurm-nodeset-v4  (slurm)" in text
    assert "      -node_count_dynamic_max: 4" in text
    assert "      +node_count_dynamic_max: 8" in text
    assert "[secret]" not in text
    assert "  TPU chips v4: 16 → 32" in text


def test_team_quotas_are_shown_by_flavor_before_and_after(tmp_path: Path):
    prod = (REPO_ROOT / "Pulumi.prod.yaml").read_text()
    assert "        v6e-tune: 25%" in prod
    base = tmp_path / "base" / "Pulumi.prod.yaml"
    base.parent.mkdir()
    base.write_text(prod)
    now = tmp_path / "Pulumi.prod.yaml"
    now.write_text(prod.replace("        v6e-tune: 25%", "        v6e-tune: 0"))
    text = run(str(now), str(base), as_json=False)
    # The v6e-256 slice pretrain gives up goes, whole, to the one team that names no share
    # of v6e-tune (research); finetune keeps its explicit 75%.
    assert "  quota pretrain: v6e-256 google.com/tpu 256 → 0" in text
    assert "  quota research: v6e-256 google.com/tpu 0 → 256" in text
    assert "quota finetune" not in text and "quota cohort" not in text
    # And on the queue itself, by flavor, not by list index; the CPU and memory of the
    # slice's hosts go with it.
    pretrain = text.split("~ ClusterQueue team-pretrain-cluster-queue  (teams[0])\n")[1]
    assert pretrain.startswith(
        '    quota cpu cpu: "38035" → "26548"\n'
        '    quota cpu memory: "100038Gi" → "55319Gi"\n'
        "    quota v6e-256 google.com/tpu: 256 → 0\n"
    )


def test_a_configmap_data_change_replaces_the_configmap(tmp_path: Path):
    before = examples()["provisioner"].config
    after = copy.deepcopy(before)
    after["ai-infra:tpuProvisioner"]["concurrency"] = 5
    document, _ = edit(tmp_path, before, after)
    entry = resource(document, "tpu-provisioner-config")
    assert entry["op"] == "replace"
    assert paths(entry)["data.CONCURRENCY"] == ("3", "5", True)


def _two_programs(make: Any) -> tuple[Any, ...]:
    graphs = []
    for side in (0, 1):
        graph, error = record_program(BASE_CONFIG, program=lambda side=side: make(side))
        assert error is None and len(graph) >= 1
        graphs.append(graph)
    return tuple(diff(*graphs))


def test_a_network_mtu_changes_in_place():
    """`network.mtu` updates the VPC in place (not ForceNew); the notice about running VMs is
    added beside it (test_an_mtu_the_code_moves_is_said_as_one_the_config_moves)."""

    def program(side: int) -> None:
        gcp.compute.Network("net", gcp.compute.NetworkArgs(name="net", mtu=(1460, 8896)[side]))

    (change,) = _two_programs(program)
    assert change.op is Op.UPDATE
    assert [(c.rendered_path, c.old, c.new) for c in change.changes] == [("mtu", 1460, 8896)]


def test_a_secondary_boot_disk_change_replaces_the_pool():
    def program(side: int) -> None:
        gcp.container.NodePool(
            "pool",
            gcp.container.NodePoolArgs(
                cluster="c",
                node_config=gcp.container.NodePoolNodeConfigArgs(
                    secondary_boot_disks=[
                        gcp.container.NodePoolNodeConfigSecondaryBootDiskArgs(
                            disk_image=("global/images/a", "global/images/b")[side]
                        )
                    ]
                ),
            ),
        )

    (change,) = _two_programs(program)
    assert change.op is Op.REPLACE
    assert [c.rendered_path for c in change.changes] == [
        "nodeConfig.secondaryBootDisks[0].diskImage"
    ]


@pytest.mark.parametrize(("option", "op"), [([], Op.UPDATE), (["routingMode"], Op.REPLACE)])
def test_a_resources_replace_on_changes_option_is_honoured(option: list[str], op: Op):
    def program(side: int) -> None:
        gcp.compute.Network(
            "net",
            gcp.compute.NetworkArgs(name="net", routing_mode=("REGIONAL", "GLOBAL")[side]),
            pulumi.ResourceOptions(replace_on_changes=option),
        )

    (change,) = _two_programs(program)
    assert change.op == op
    assert [(c.rendered_path, c.old, c.new) for c in change.changes] == [
        ("routingMode", "REGIONAL", "GLOBAL")
    ]


def test_ignore_changes_hides_what_the_engine_ignores():
    def program(side: int) -> None:
        gcp.container.NodePool(
            "pool",
            gcp.container.NodePoolArgs(
                cluster="c",
                node_count=(1, 2)[side],
                node_config=gcp.container.NodePoolNodeConfigArgs(
                    machine_type=("e2-standard-4", "e2-standard-8")[side],
                    spot=(False, True)[side],
                ),
            ),
            pulumi.ResourceOptions(ignore_changes=["nodeCount", "nodeConfig.spot"]),
        )

    (change,) = _two_programs(program)
    assert change.op is Op.UPDATE
    assert [c.rendered_path for c in change.changes] == ["nodeConfig.machineType"]


# --- the base built from a ref's code ---------------------------------------------------------

PROGRAM = ("__main__.py", "Pulumi.yaml", "pyproject.toml", "uv.lock")
PACKAGES = ("catalog/", "components/", "graph/", "stacks/", "plan/", "prices/")


@pytest.fixture(scope="module")
def code_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this program in git: HEAD~1 pins an older Kueue chart, HEAD is this code.
    Both commits hold the same Pulumi.dev.yaml."""
    repo = tmp_path_factory.mktemp("program")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = [f for f in listed if f in PROGRAM or f.startswith(PACKAGES) or f == "Pulumi.dev.yaml"]
    for name in files:
        source = REPO_ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_bytes(source.read_bytes())
    kueue = repo / "components" / "gke" / "kueue.py"
    pinned = f'version="{CHARTS["kueue"].version}"'
    assert kueue.read_text().count(pinned) == 1
    current = kueue.read_text()
    kueue.write_text(current.replace(pinned, 'version="0.1.0-older"'))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "older chart")
    kueue.write_text(current)
    git(repo, "commit", "-qam", "bump kueue")
    return repo


def test_a_chart_bump_in_the_code_shows_as_a_change(code_history: Path):
    stack = code_history / "Pulumi.dev.yaml"
    built = report(str(stack), "HEAD~1")
    document, text = json.loads(json.dumps(built.json())), built.text()
    entry = resource(document, "batch-kueue")
    assert entry["op"] == "update"
    assert paths(entry)["version"] == ("0.1.0-older", CHARTS["kueue"].version, False)
    assert document["diff"]["summary"] == counts(update=1)
    assert text.splitlines()[0].endswith("(its code at HEAD~1):")
    # Nothing is left behind in the repository.
    assert git(code_history, "worktree", "list").count("\n") == 1
    assert git(code_history, "status", "--porcelain") == ""


def test_the_base_runs_with_its_own_environment_when_its_lock_differs(tmp_path: Path):
    same = bases.command(tmp_path, same_lock=True)
    own = bases.command(tmp_path, same_lock=False)
    assert same[0] != "uv" and same[-1].endswith("record_graph.py")
    assert own[1:3] == ["run", "--quiet"] and own[own.index("--project") + 1] == str(tmp_path)


def test_text_the_sdk_marks_secret_is_shown_and_real_secrets_stay_hidden():
    """pulumi-gcp wraps BucketObject `content` in Output.secret whatever it holds (the schema
    says Sensitive); the program's kubeconfig is secret because the program says so."""
    import inspect

    source = inspect.getsource(gcp.storage.BucketObject._internal_init)
    assert "pulumi.Output.secret(content)" in source
    assert SHOWN_SECRETS == {"gcp:storage/bucketObject:BucketObject": ("content",)}


def test_the_plan_json_shows_rendered_files_and_hides_the_kubeconfig(tmp_path: Path):
    stack = write(tmp_path / "Pulumi.slurm.yaml", examples()["slurm"].config)
    document = json.loads(run(str(stack), None, as_json=True))
    by_name = {r["name"]: r for r in document["resources"]}
    assert "node_count_dynamic_max: 4" in by_name["slurm-nodeset-v4"]["inputs"]["content"]
    assert by_name["gke-kubernetes"]["inputs"]["kubeconfig"] == "[secret]"


def test_an_mtu_the_code_moves_is_said_as_one_the_config_moves(tmp_path: Path):
    """A base built by older code can differ in a default, not in the stack file: the MTU
    notice then comes from the two graphs, said once even when both configs also say it."""
    before_raw = {**examples()["minimal"].config, "ai-infra:network": {"mtu": 1460}}
    after_raw = examples()["minimal"].config
    path = write(tmp_path / "Pulumi.edit.yaml", after_raw)
    config, graph = parse(after_raw, "edit"), record_program(after_raw, stack="edit")[0]
    old_graph = record_program(before_raw, stack="edit")[0]
    # The old stack file does not parse with this code: only the graphs can say it.
    refused = Report("edit", path, config, graph, "old", bases.Base(old_graph, "old"), PLAN_COSTING)
    (notice,) = refused.json()["diff"]["notices"]
    assert notice.startswith("MTU 1460 -> 8896 updates ai-edit-vpc in place")
    assert "GKE node pools cpu, system, train-0" in notice
    assert refused.json()["diff"]["cost"] is None
    assert "Cost change: not shown" in refused.text()
    # Both configs say it too: one notice.
    both = bases.Base(old_graph, "old", config=parse(before_raw, "edit"))
    assert Report("edit", path, config, graph, "old", both).json()["diff"]["notices"] == [notice]
