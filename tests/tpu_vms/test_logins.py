"""Who may log in to an entry's TPU VMs: the grants each `logins` member gets, their reach (TPU
VM hosts only, on the project), and logins refused at their path."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml

from plan import cli as plan_main
from tests.tpu_vms.test_vms import CUSTOM_ROLE, SEED, built, rejected, stack, vm


def test_logins_reach_the_vms_through_the_narrowest_grants_cloud_tpu_allows():
    graph = built(
        vm(logins=[{"member": "user:alice@example.com", "sudo": True}, {"member": "group:ml@x.io"}])
    )
    grants = {
        (r.inputs["role"], r.inputs["member"]): r
        for r in graph
        if r.name.startswith("tpuvm-exp-login-") and "member" in r.inputs
    }
    alice = {role: r for (role, member), r in grants.items() if member.startswith("user:")}
    keys = "projects/test-project/roles/ai_test_exp_tpu_keys"
    assert set(alice) == {
        "roles/compute.osAdminLogin",
        "roles/iap.tunnelResourceAccessor",
        "projects/test-project/roles/ai_test_exp_tpu_login",
        keys,
        "roles/iam.serviceAccountUser",
    }
    team = {role for role, member in grants if member == "group:ml@x.io"}
    assert "roles/compute.osLogin" in team and keys not in team
    # OS Login on TPU VM hosts, and no other Compute Engine VM of the project.
    for role in ("roles/compute.osAdminLogin",):
        expression = alice[role].inputs["condition"]["expression"]
        assert expression == (
            'resource.type != "compute.googleapis.com/Instance" || resource.name.startsWith('
            '"projects/test-project/zones/us-central2-b/instances/t1v-n-")'
        ), alice[role].urn
    tunnel = alice["roles/iap.tunnelResourceAccessor"]
    assert tunnel.inputs["condition"]["expression"] == "destination.port == 22", tunnel.urn
    account = alice["roles/iam.serviceAccountUser"]
    assert account.inputs["serviceAccountId"].endswith(
        "/serviceAccounts/ai-test-exp@test-project.iam.gserviceaccount.com"
    ), account.urn
    roles = {r.inputs["roleId"]: r for r in graph.of_type(CUSTOM_ROLE)}
    assert sorted(roles["ai_test_exp_tpu_login"].inputs["permissions"]) == [
        "compute.projects.get",
        "tpu.nodes.get",
        "tpu.queuedResources.get",
    ]
    assert sorted(roles["ai_test_exp_tpu_keys"].inputs["permissions"]) == [
        "tpu.nodes.update",
        "tpu.operations.get",
    ]
    without_sudo = built(vm(logins=[{"member": "group:ml@x.io"}]))
    assert not [r.urn for r in without_sudo.of_type(CUSTOM_ROLE) if "keys" in r.inputs["roleId"]]


def test_logins_on_an_existing_account_grant_account_use_on_that_account():
    account = "trainer@other-proj.iam.gserviceaccount.com"
    graph = built(vm(serviceAccount=account, logins=[{"member": "user:a@example.com"}]))
    (grant,) = graph.of_type("gcp:serviceaccount/iAMMember:IAMMember")
    assert grant.inputs["serviceAccountId"] == f"projects/other-proj/serviceAccounts/{account}"


@pytest.mark.parametrize(
    ("logins", "path", "fix"),
    [
        ([{"member": "domain:x.io"}], "logins[0].member", "user:, group: or serviceAccount:"),
        ([{"member": "user:nobody"}], "logins[0].member", "not an IAM member"),
        ([{"member": "user:a@x.io", "sudo": "yes"}], "logins[0].sudo", "without quotes"),
        ([{"member": "user:a@x.io"}, {"member": "user:a@x.io"}], "logins[1].member", "logins[0]"),
    ],
)
def test_bad_logins_are_refused_at_their_path(logins, path, fix):
    found = rejected(stack(tpuVms=[vm(logins=logins)]))
    key = f"ai-infra:tpuVms[0].{path}"
    assert key in found, found
    assert fix in found[key], found[key]


def test_the_plan_says_tpu_logins_hold_on_the_project(tmp_path):
    path = tmp_path / "Pulumi.vms.yaml"
    entry = {**SEED, "logins": [{"member": "user:alice@example.com", "sudo": True}]}
    path.write_text(yaml.safe_dump({"config": stack(tpuVms=[entry])}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert plan_main.main([str(path)]) == 0
    text = out.getvalue()
    assert (
        "logins: user:alice@example.com (sudo); OS Login on the TPU VM hosts of us-central2-b "
        "(t1v-n-*) and no Compute Engine VM (a condition unverified until tried live)" in text
    )
    assert "Cloud TPU has no per-slice IAM" in text
    assert "sudo logins also write TPU nodes' metadata on the whole project" in text
    assert "roles/iap.tunnelResourceAccessor -> user:alice@example.com only: IAP" in text


def test_logins_of_an_entry_whose_role_id_would_be_too_long_are_refused():
    entry = vm(
        name="e" * 50,
        serviceAccount="trainer@other-proj.iam.gserviceaccount.com",
        logins=[{"member": "user:a@x.io"}],
    )
    found = rejected(stack(tpuVms=[entry]))
    assert "64" in found.get("ai-infra:tpuVms[0].logins", ""), found


def test_logins_whose_os_login_would_hold_on_slurms_vms_are_refused():
    slurm = {
        "clusterName": "t1v-n-hpc",
        "cpuNodesets": [{"name": "c", "machineType": "n2-standard-4", "nodeCountDynamicMax": 1}],
        "partitions": [{"name": "p", "nodesets": ["c"], "default": True}],
    }
    found = rejected(stack(tpuVms=[vm(logins=[{"member": "user:a@x.io"}])], slurm=slurm))
    message = found.get("ai-infra:tpuVms[0].logins", "")
    assert "t1v-n-hpc" in message and "rename the Slurm cluster" in message, found
    # Without logins nothing is granted there.
    assert built(vm(), slurm=slurm)
