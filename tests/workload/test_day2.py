"""`list`, `logs` and `delete` on a team's JobSets, through the official client against the
in-memory API server."""

from __future__ import annotations

from datetime import UTC, datetime

from kubernetes import client

from tests.workload.conftest import Run
from tests.workload.fake_api import FakeApi

HELD = "; holds its provisioner-created pool while it exists"
LEADER = {"jobset.sigs.k8s.io/job-index": "0", "batch.kubernetes.io/job-completion-index": "0"}


def a_pod(name: str, jobset: str, annotations: dict[str, str], created: int) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace="pretrain",
            labels={"jobset.sigs.k8s.io/jobset-name": jobset},
            annotations=annotations,
            creation_timestamp=datetime(2026, 1, created, tzinfo=UTC),
        )
    )


def test_logs_come_from_the_newest_leader_pod(run: Run, api: FakeApi):
    api.pods["pretrain"] = [
        a_pod("llm-slice-0-0-old", "llm", LEADER, 1),
        a_pod("llm-slice-0-0-new", "llm", LEADER, 2),
        a_pod(
            "llm-slice-0-1-abc",
            "llm",
            {**LEADER, "batch.kubernetes.io/job-completion-index": "1"},
            2,
        ),
        a_pod("other-slice-0-0-x", "other", LEADER, 3),
    ]
    api.logs[("pretrain", "llm-slice-0-0-new")] = "step 1\nstep 2\nstep 3\n"
    code, out, err = run("prod", "logs", "--team", "pretrain", "llm", "--tail", "2")
    assert code == 0, err
    assert out == "step 2\nstep 3\n"
    assert api.calls[-1] == ("GET", "/api/v1/namespaces/pretrain/pods/llm-slice-0-0-new/log")


def test_logs_of_a_jobset_without_pods_say_so(run: Run, api: FakeApi):
    code, _, err = run("prod", "logs", "--team", "pretrain", "queued")
    assert code == 1
    assert "JobSet pretrain/queued has no leader pod (yet)" in err


def jobset(name: str, queue: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": "research",
            "labels": {"kueue.x-k8s.io/queue-name": queue},
        },
        "spec": spec,
    }


def test_list_tells_queued_evicted_deactivated_and_finished_jobsets_apart(run: Run, api: FakeApi):
    api.jobsets = {
        ("research", "a"): jobset("a", "research", suspend=True),
        ("research", "b"): {
            **jobset("b", "research"),
            "status": {"conditions": [{"type": "Completed", "status": "True"}]},
        },
        ("research", "c"): jobset("c", "research-provisioned", suspend=True),
        ("research", "d"): jobset("d", "research-provisioned", suspend=True),
        ("research", "e"): jobset("e", "research"),
    }

    def workload(owner: str, **body: object) -> dict[str, object]:
        return {
            "metadata": {
                "name": f"jobset-{owner}",
                "ownerReferences": [{"kind": "JobSet", "name": owner}],
            },
            **body,
        }

    api.workloads = {
        ("research", "c"): workload(
            "c",
            status={
                "conditions": [{"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout"}]
            },
        ),
        ("research", "d"): workload("d", spec={"active": False}),
    }
    code, out, _ = run("prod", "list", "--team", "research")
    assert code == 0
    assert out.splitlines() == [
        "a  queue research  queued",
        "b  queue research  completed",
        "c  queue research-provisioned  evicted (PodsReadyTimeout), waiting to be requeued" + HELD,
        "d  queue research-provisioned  deactivated (requeue limit reached); delete it to "
        "release its quota and pools" + HELD,
        "e  queue research  running",
    ]


def test_delete_removes_the_jobset_and_a_second_delete_says_it_is_gone(run: Run, api: FakeApi):
    api.writable.add("research")
    api.jobsets[("research", "a")] = jobset("a", "research")
    code, out, _ = run("prod", "delete", "--team", "research", "a")
    assert code == 0
    assert out == "deleted JobSet research/a with its Jobs and pods\n"
    assert api.jobsets == {}
    code, _, err = run("prod", "delete", "--team", "research", "a")
    assert code == 2
    assert err == "error: name: no JobSet named a in research\n"


def test_delete_where_the_user_may_not_is_a_403(run: Run, api: FakeApi):
    api.jobsets[("research", "a")] = jobset("a", "research")
    code, _, err = run("prod", "delete", "--team", "research", "a")
    assert code == 1
    assert err == "error: deleting JobSet research/a: 403 Forbidden\n"
    assert ("research", "a") in api.jobsets


def test_an_unknown_team_is_refused_before_the_cluster_is_asked(run: Run, api: FakeApi):
    code, _, err = run("prod", "list", "--team", "nobody")
    assert code == 2
    assert err.startswith("error: --team: stack 'prod' has no team 'nobody'")
    assert api.calls == []
