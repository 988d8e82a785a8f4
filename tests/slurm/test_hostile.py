"""Slurm configs an insider could write to open a hole, or that exhaust what reads them
(issue 41's themes for Slurm): local SSDs mounted world-writable over what the system or
Slurm needs, the cluster's own bucket writable by its VMs or a team, Slurm times the parsers
refuse, and lists past their bound. Each is refused at its path before anything registers."""

from __future__ import annotations

from typing import Any

import pytest

from components.slurm.config import SlurmConfig
from graph.engine import record_program
from stacks.messages import ConfigError
from tests.slurm.test_config import stack
from tests.storage.stack import config as storage_stack

GPU = {"name": "g", "machineType": "a3-megagpu-8g", "diskType": "pd-ssd", "spot": True}


def nodeset(**fields: Any) -> dict[str, Any]:
    return stack(
        cpuNodesets=[{**GPU, **fields}],
        partitions=[
            {"name": "tpu", "nodesets": ["v4"], "default": True},
            {"name": "g", "nodesets": ["g"]},
        ],
    )


SLURM_BUCKET = "test-project-ai-test-slurm-hpc"
"""`SlurmConfig.bucket_name` of cluster `hpc` in the storage tests' stack."""


def with_slurm_bucket(team_access: str, **slurm: Any) -> dict[str, Any]:
    raw = storage_stack(
        slurm={
            "clusterName": "hpc",
            "cpuNodesets": [{"name": "cpu", "machineType": "n2-standard-2"}],
            "partitions": [{"name": "cpu", "nodesets": ["cpu"]}],
            **slurm,
        }
    )
    raw["ai-infra:storage"]["volumes"].append(
        {"name": "slurmfiles", "bucket": SLURM_BUCKET, "teams": {"research": team_access}}
    )
    return raw


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    *[
        (
            f"local SSDs world-writable at {path}",
            nodeset(localSsd={"mountPath": path}),
            "ai-infra:slurm.cpuNodesets[0].localSsd.mountPath",
            "mount under another directory",
        )
        for path in ("/etc/ssh", "/slurm/scripts", "/slurm", "/var/spool/slurm", "/usr/local")
    ],
    *[
        (
            f"local SSDs over the cluster's {path}",
            nodeset(localSsd={"mountPath": path}),
            "ai-infra:slurm.cpuNodesets[0].localSsd.mountPath",
            "hold one another",
        )
        for path in ("/home", "/home/alice", "/opt/apps", "/opt")
    ],
    (
        "local SSDs over the nodeset's own file system",
        nodeset(
            localSsd={"mountPath": "/data/ssd"},
            networkStorage=[
                {
                    "serverIp": "10.0.0.9",
                    "remoteMount": "/d",
                    "localMount": "/data",
                    "fsType": "nfs",
                }
            ],
        ),
        "ai-infra:slurm.cpuNodesets[0].localSsd.mountPath",
        "networkStorage[0]",
    ),
    (
        "a team granted write on the cluster's own bucket",
        with_slurm_bucket("write"),
        "ai-infra:storage.volumes[6].teams.research",
        "owns the cluster",
    ),
    (
        "the cluster's nodes mounting its own bucket read-write",
        with_slurm_bucket(
            "read",
            cpuNodesets=[
                {
                    "name": "cpu",
                    "machineType": "n2-standard-2",
                    "storage": [{"volume": "slurmfiles", "mountPath": "/files"}],
                }
            ],
        ),
        "ai-infra:slurm.cpuNodesets[0].storage[0].readOnly",
        "set readOnly: true",
    ),
    (
        "a MaxTime of forever",
        stack(
            partitions=[
                {"name": "tpu", "nodesets": ["v4"], "partitionConf": {"MaxTime": "forever"}}
            ]
        ),
        "ai-infra:slurm.partitions[0].partitionConf.MaxTime",
        "not a Slurm time",
    ),
    (
        "a DefaultTime of 1 week",
        stack(
            partitions=[
                {"name": "tpu", "nodesets": ["v4"], "partitionConf": {"DefaultTime": "1week"}}
            ]
        ),
        "ai-infra:slurm.partitions[0].partitionConf.DefaultTime",
        "not a Slurm time",
    ),
    (
        "a hundred thousand prolog flags",
        stack(cloudParameters={"prologFlags": ["Contain"] * 100_000}),
        "ai-infra:slurm.cloudParameters.prologFlags",
        "at most",
    ),
    (
        "a hundred thousand private data entries",
        stack(cloudParameters={"privateData": ["jobs"] * 100_000}),
        "ai-infra:slurm.cloudParameters.privateData",
        "at most",
    ),
    (
        "a hundred thousand partitionConf options",
        stack(
            partitions=[
                {
                    "name": "tpu",
                    "nodesets": ["v4"],
                    "partitionConf": {f"Opt{i:06d}": "1" for i in range(100_000)},
                }
            ]
        ),
        "ai-infra:slurm.partitions[0].partitionConf",
        "at most",
    ),
    (
        "a hundred thousand partition prologs",
        stack(
            partitions=[
                {
                    "name": "tpu",
                    "nodesets": ["v4"],
                    "prologScripts": [{"name": "a.sh", "content": "#!"}] * 100_000,
                }
            ]
        ),
        "ai-infra:slurm.partitions[0].prologScripts",
        "at most",
    ),
    (
        "a hundred thousand zones",
        nodeset(zones=["us-central2-b"] * 100_000),
        "ai-infra:slurm.cpuNodesets[0].zones",
        "at most",
    ),
]


@pytest.mark.parametrize(("case", "raw", "path", "fix"), CASES, ids=[c[0] for c in CASES])
def test_hostile_slurm_input_is_refused_at_its_path(case, raw, path, fix):
    graph, error = record_program(raw)
    assert isinstance(error, ConfigError), f"{case}: accepted"
    found = dict(error.rendered)
    assert path in found, f"{case}: {sorted(found)}"
    assert fix in found[path], f"{case}: {found[path]}"
    assert graph.resources == []


def test_the_cluster_s_bucket_read_by_a_team_and_mounted_read_only_is_taken():
    raw = with_slurm_bucket(
        "read",
        cpuNodesets=[
            {
                "name": "cpu",
                "machineType": "n2-standard-2",
                "storage": [{"volume": "slurmfiles", "mountPath": "/files", "readOnly": True}],
            }
        ],
    )
    _, error = record_program(raw)
    assert error is None, error


def test_every_list_and_map_of_the_slurm_config_is_bounded():
    """Each list or map field of every model `ai-infra:slurm` holds has a max_length."""
    seen: set[type] = set()
    unbounded = []

    def walk(model: type) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            text = str(field.annotation)
            if ("list[" in text or "dict[" in text) and not any(
                getattr(m, "max_length", None) for m in field.metadata
            ):
                unbounded.append(f"{model.__name__}.{name}")
            for arg in _models(field.annotation):
                walk(arg)

    walk(SlurmConfig)
    assert unbounded == []


def _models(annotation: Any) -> list[type]:
    from typing import get_args

    from pydantic import BaseModel

    found = []
    stack_ = [annotation]
    while stack_:
        item = stack_.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            found.append(item)
        stack_ += list(get_args(item))
    return found
