"""`ai-infra:slurm` validation: every bad input is refused at its path with a word of the fix,
before anything is registered; good input takes the documented defaults."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from catalog import tpu as tpu_catalog
from components.slurm import describe
from components.slurm.nodesets import TpuNodesetConfig
from graph.engine import record_program
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import with_config

REGION = {"gcp:region": "us-central2", "gcp:zone": "us-central2-b"}
NODESET = {"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2}
CLUSTER: dict[str, Any] = {
    "clusterName": "tpu",
    "tpuNodesets": [NODESET],
    "partitions": [{"name": "tpu", "nodesets": ["v4"], "default": True}],
}


def stack(**slurm_fields: Any) -> dict[str, Any]:
    return with_config(**REGION, slurm={**copy.deepcopy(CLUSTER), **slurm_fields})


def nodeset(**fields: Any) -> dict[str, Any]:
    return stack(tpuNodesets=[{**NODESET, **fields}])


def partition(**fields: Any) -> dict[str, Any]:
    return stack(partitions=[{"name": "tpu", "nodesets": ["v4"], **fields}])


CPU_NODESET: dict[str, Any] = {"name": "cpu", "machineType": "n2-standard-2"}


def cpu(**fields: Any) -> dict[str, Any]:
    return stack(
        cpuNodesets=[{**CPU_NODESET, **fields}],
        partitions=[
            {"name": "tpu", "nodesets": ["v4"], "default": True},
            {"name": "cpu", "nodesets": ["cpu"]},
        ],
    )


A3M: dict[str, Any] = {"machineType": "a3-megagpu-8g", "diskType": "pd-ssd"}
MULTI_HOST: dict[str, Any] = {"name": "v4x32", "nodeType": "v4-32", "nodeCountDynamicMax": 12}
C0 = "ai-infra:slurm.cpuNodesets[0]"
N0 = "ai-infra:slurm.tpuNodesets[0]"
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("cluster name too long", stack(clusterName="a" * 21), "ai-infra:slurm.clusterName", "19"),
    (
        "cluster name with newline",
        stack(clusterName="tpu\n"),
        "ai-infra:slurm.clusterName",
        "letter",
    ),
    (
        "cluster name ending in '-'",
        stack(clusterName="tpu-"),
        "ai-infra:slurm.clusterName",
        "digit",
    ),
    ("nodeset name with '-'", nodeset(name="v4-a"), f"{N0}.name", "no '-'"),
    ("unknown nodeset key", nodeset(nodetype="v4-8"), f"{N0}.nodetype", "nodeType"),
    ("v5p on Slurm", nodeset(nodeType="v5p-8"), f"{N0}.nodeType", "ai-infra:tpuSlices"),
    ("v6e on Slurm", nodeset(nodeType="v6e-8"), f"{N0}.nodeType", "v2, v3 and v4"),
    ("no such v3 size", nodeset(nodeType="v3-16"), f"{N0}.nodeType", "v3-32"),
    (
        "both type and accelerator config",
        nodeset(acceleratorConfig={"version": "V4", "topology": "2x2x1"}),
        f"{N0}.nodeType",
        "exactly one",
    ),
    (
        "neither type nor accelerator config",
        stack(tpuNodesets=[{"name": "v4", "nodeCountDynamicMax": 1}]),
        f"{N0}.nodeType",
        "exactly one",
    ),
    (
        "V5 accelerator config",
        stack(
            tpuNodesets=[
                {"name": "v4", "acceleratorConfig": {"version": "V5", "topology": "2x2x1"}}
            ]
        ),
        f"{N0}.acceleratorConfig.version",
        "ai-infra:tpuSlices",
    ),
    (
        "two-digit topology dimension",
        stack(
            tpuNodesets=[
                {"name": "v4", "acceleratorConfig": {"version": "V4", "topology": "2x2x16"}}
            ]
        ),
        f"{N0}.acceleratorConfig.topology",
        "one-digit",
    ),
    (
        "V4 with two axes",
        stack(
            tpuNodesets=[{"name": "v4", "acceleratorConfig": {"version": "V4", "topology": "2x2"}}]
        ),
        f"{N0}.acceleratorConfig.topology",
        "3 axes",
    ),
    (
        "multi-host slice without a CPU nodeset",
        nodeset(nodeType="v4-32", nodeCountDynamicMax=4),
        f"{N0}.nodeType",
        "needs at least one CPU nodeset",
    ),
    (
        "multi-host slice by accelerator config without a CPU nodeset",
        stack(
            tpuNodesets=[
                {
                    "name": "v4",
                    "acceleratorConfig": {"version": "V4", "topology": "2x2x2"},
                    "nodeCountDynamicMax": 2,
                }
            ]
        ),
        f"{N0}.acceleratorConfig",
        "debugPartition: true",
    ),
    ("node type with a leading zero", nodeset(nodeType="v4-08"), f"{N0}.nodeType", "v4-8"),
    ("node type in capitals", nodeset(nodeType="V4-8"), f"{N0}.nodeType", "lowercase"),
    ("node type with a space", nodeset(nodeType="v4-8 "), f"{N0}.nodeType", "as the TPU API"),
    (
        "dynamic count not a multiple of the workers",
        nodeset(nodeType="v4-32", nodeCountDynamicMax=6),
        f"{N0}.nodeCountDynamicMax",
        "multiple of the 4 workers",
    ),
    (
        "static count not a multiple of the workers",
        nodeset(nodeType="v4-32", nodeCountStatic=2, nodeCountDynamicMax=4),
        f"{N0}.nodeCountStatic",
        "use 4",
    ),
    (
        "no room for one slice",
        nodeset(nodeCountDynamicMax=0),
        f"{N0}.nodeCountDynamicMax",
        "at least 1",
    ),
    ("huge node count", nodeset(nodeCountDynamicMax=10**9), f"{N0}.nodeCountDynamicMax", "1024"),
    ("TF 2.15 runtime", nodeset(tfVersion="2.15.0"), f"{N0}.tfVersion", "-pjrt"),
    (
        "runtime not named after TF",
        nodeset(runtimeVersion="tpu-ubuntu2204-base"),
        f"{N0}.runtimeVersion",
        "tpu-vm-tf-",
    ),
    (
        "both TF and runtime version",
        nodeset(tfVersion="2.14.0", runtimeVersion="tpu-vm-tf-2.14.0"),
        f"{N0}.runtimeVersion",
        "not both",
    ),
    (
        "no SchedMD image for TF",
        nodeset(tfVersion="2.12.0"),
        f"{N0}.dockerImage",
        "set dockerImage to an image you built",
    ),
    (
        "TF 2.10 without an image",
        nodeset(tfVersion="2.10.0"),
        f"{N0}.dockerImage",
        "published: 2.12.1, 2.13.0",
    ),
    ("TF version as major.minor", nodeset(tfVersion="2.10"), f"{N0}.tfVersion", "2.10.0, 2.10.1"),
    (
        "data disk in another zone",
        nodeset(dataDisks=["projects/p-123456/zones/us-central2-a/disks/data"]),
        f"{N0}.dataDisks[0]",
        "use a disk in us-central2-b",
    ),
    (
        "remote mount that climbs out",
        nodeset(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2",
                    "remoteMount": "/export/../etc",
                    "fsType": "nfs",
                    "localMount": "/data",
                }
            ]
        ),
        f"{N0}.networkStorage[0].remoteMount",
        "'..'",
    ),
    (
        "mount over Slurm's state",
        nodeset(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2",
                    "remoteMount": "/export",
                    "fsType": "nfs",
                    "localMount": "/var/spool/slurm",
                }
            ]
        ),
        f"{N0}.networkStorage[0].localMount",
        "would hide /var",
    ),
    (
        "mount over Slurm's scripts",
        stack(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2",
                    "remoteMount": "/export",
                    "fsType": "nfs",
                    "localMount": "/slurm/scripts",
                }
            ]
        ),
        "ai-infra:slurm.networkStorage[0].localMount",
        "/slurm",
    ),
    (
        "two mounts at one path",
        stack(
            home={"filestore": False},
            networkStorage=[
                {"serverIp": "10.0.0.2", "remoteMount": "/a", "fsType": "nfs", "localMount": "/d"},
                {"serverIp": "10.0.0.3", "remoteMount": "/b", "fsType": "nfs", "localMount": "/d"},
            ],
        ),
        "ai-infra:slurm.networkStorage[1].localMount",
        "already mounted by [0]",
    ),
    (
        "a mount at /home beside the Filestore /home",
        stack(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2",
                    "remoteMount": "/h",
                    "fsType": "nfs",
                    "localMount": "/home",
                }
            ]
        ),
        "ai-infra:slurm.networkStorage[0].localMount",
        "home.filestore: false",
    ),
    (
        "a Basic SSD share below its minimum",
        stack(home={"tier": "BASIC_SSD"}),
        "ai-infra:slurm.home.capacityGb",
        "2,560 to",
    ),
    (
        "Filestore sizing without Filestore",
        stack(home={"filestore": False, "tier": "ZONAL"}),
        "ai-infra:slurm.home",
        "remove them",
    ),
    (
        "nodeset running as the controller",
        nodeset(serviceAccountEmail="ai-test-slurm-ctl@test-project.iam.gserviceaccount.com"),
        f"{N0}.serviceAccountEmail",
        "cluster's controller account",
    ),
    (
        "nodeset running as the login nodes",
        nodeset(serviceAccountEmail="ai-test-slurm-lgn@test-project.iam.gserviceaccount.com"),
        f"{N0}.serviceAccountEmail",
        "cluster's login account",
    ),
    (
        "nodeset running as the GKE nodes",
        nodeset(serviceAccountEmail="ai-test-nodes@test-project.iam.gserviceaccount.com"),
        f"{N0}.serviceAccountEmail",
        "is the account of cluster",
    ),
    (
        "nodeset running as a team",
        {
            **nodeset(serviceAccountEmail="ai-test-research@test-project.iam.gserviceaccount.com"),
            "ai-infra:teams": [{"name": "research"}],
        },
        f"{N0}.serviceAccountEmail",
        "is the account of teams[0]",
    ),
    (
        "CPU nodeset running as a TPU VM entry",
        {
            **stack(
                cpuNodesets=[
                    {
                        "name": "c",
                        "serviceAccountEmail": "ai-test-vm@test-project.iam.gserviceaccount.com",
                    }
                ],
                partitions=[{"name": "tpu", "nodesets": ["v4"]}, {"name": "c", "nodesets": ["c"]}],
            ),
            "ai-infra:tpuVms": [{"name": "vm", "accelerator": "v4-8"}],
        },
        "ai-infra:slurm.cpuNodesets[0].serviceAccountEmail",
        "is the account of tpuVms[0]",
    ),
    (
        "image with a space",
        nodeset(dockerImage="us-docker.pkg.dev/p/r/i:tag; rm -rf /"),
        f"{N0}.dockerImage",
        "REGISTRY/PATH:TAG",
    ),
    (
        "image in a registry the TPU VM cannot log in to",
        nodeset(dockerImage="ghcr.io/p/slurm:tf-2.14.0"),
        f"{N0}.dockerImage",
        "push the image to an Artifact Registry repository",
    ),
    (
        "image in Artifact Registry of a region there is not",
        nodeset(dockerImage="mars-west1-docker.pkg.dev/p/r/slurm:tf-2.14.0"),
        f"{N0}.dockerImage",
        "REGION-docker.pkg.dev",
    ),
    (
        "preemptible and reserved",
        nodeset(preemptible=True, reserved=True),
        f"{N0}.preemptible",
        "drop one",
    ),
    (
        "preemptible by accelerator config",
        stack(
            tpuNodesets=[
                {
                    "name": "v4",
                    "acceleratorConfig": {"version": "V4", "topology": "2x2x1"},
                    "nodeCountDynamicMax": 1,
                    "preemptible": True,
                }
            ]
        ),
        f"{N0}.preemptible",
        "v4-8",
    ),
    (
        "preserve a multi-host slice",
        nodeset(nodeType="v4-32", nodeCountDynamicMax=4, preserveTpu=True),
        f"{N0}.preserveTpu",
        "single-host",
    ),
    ("zone without v4", nodeset(zone="us-central2-a"), f"{N0}.zone", "us-central2-b"),
    ("zone outside the region", nodeset(zone="us-central1-a"), f"{N0}.zone", "gcp:region"),
    (
        "v3 where only v2 is offered",
        with_config(
            **{"gcp:region": "us-central1", "gcp:zone": "us-central1-c"},
            slurm={**CLUSTER, "tpuNodesets": [{**NODESET, "nodeType": "v3-8"}]},
        ),
        f"{N0}.zone",
        "us-central1-a",
    ),
    (
        "v3 pod, listed only in Europe",
        with_config(
            **{"gcp:region": "us-central1", "gcp:zone": "us-central1-a"},
            slurm={
                **CLUSTER,
                "tpuNodesets": [{**NODESET, "nodeType": "v3-32", "nodeCountDynamicMax": 4}],
            },
        ),
        f"{N0}.zone",
        "offers v3-32 in europe-west4-a",
    ),
    (
        "foreign subnet without public IPs",
        nodeset(subnetwork="other-subnet"),
        f"{N0}.subnetwork",
        "Private Google Access",
    ),
    (
        "foreign subnet, which the /home share does not admit",
        nodeset(subnetwork="other-subnet", enablePublicIps=True),
        f"{N0}.subnetwork",
        "the /home share admits the stack's subnet",
    ),
    (
        "mount path with a newline",
        nodeset(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2",
                    "remoteMount": "/export",
                    "localMount": "/home\n/etc",
                    "fsType": "nfs",
                }
            ]
        ),
        f"{N0}.networkStorage[0].localMount",
        "absolute, normalised path",
    ),
    (
        "mount path that climbs out",
        nodeset(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2",
                    "remoteMount": "/export",
                    "localMount": "/home/../etc",
                    "fsType": "nfs",
                }
            ]
        ),
        f"{N0}.networkStorage[0].localMount",
        "no '..'",
    ),
    (
        "mount path with a trailing slash",
        nodeset(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2",
                    "remoteMount": "/export",
                    "localMount": "/home/",
                    "fsType": "nfs",
                }
            ]
        ),
        f"{N0}.networkStorage[0].localMount",
        "no trailing '/'",
    ),
    (
        "mount options with a shell",
        nodeset(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2",
                    "remoteMount": "/export",
                    "localMount": "/home",
                    "fsType": "nfs",
                    "mountOptions": "rw;reboot",
                }
            ]
        ),
        f"{N0}.networkStorage[0].mountOptions",
        "comma-separated",
    ),
    ("data disk not a path", nodeset(dataDisks=["my-disk"]), f"{N0}.dataDisks[0]", "projects/"),
    (
        "scope not a Google scope",
        nodeset(serviceAccountScopes=["https://evil.example.com/auth"]),
        f"{N0}.serviceAccountScopes[0]",
        "cloud-platform",
    ),
    (
        "default compute account as email typo",
        nodeset(serviceAccountEmail="123-compute@developer.gserviceaccount.com"),
        f"{N0}.serviceAccountEmail",
        "default compute service account",
    ),
    (
        "duplicate nodeset",
        stack(tpuNodesets=[NODESET, NODESET]),
        "ai-infra:slurm.tpuNodesets[1].name",
        "unique",
    ),
    (
        "duplicate partition",
        stack(partitions=[{"name": "tpu", "nodesets": ["v4"]}] * 2),
        "ai-infra:slurm.partitions[1].name",
        "unique",
    ),
    (
        "partition names a missing nodeset",
        stack(partitions=[{"name": "tpu", "nodesets": ["v4", "v3"]}]),
        "ai-infra:slurm.partitions[0].nodesets[1]",
        "known: v4",
    ),
    (
        "nodeset in no partition",
        stack(tpuNodesets=[NODESET, {**NODESET, "name": "spare"}]),
        "ai-infra:slurm.tpuNodesets[1].name",
        "add it to",
    ),
    (
        "partition without nodesets",
        partition(nodesets=[]),
        "ai-infra:slurm.partitions[0].nodesets",
        "at least 1",
    ),
    (
        "a partition of multi-host slices shared between jobs",
        stack(
            debugPartition=True,
            tpuNodesets=[MULTI_HOST],
            partitions=[{"name": "tpu", "nodesets": ["v4x32"], "exclusive": False}],
        ),
        "ai-infra:slurm.partitions[0].exclusive",
        "two jobs would share a slice",
    ),
    (
        "a flex-start partition's own ResumeTimeout, which would cancel jobs waiting for capacity",
        stack(
            cpuNodesets=[
                {
                    "name": "flex",
                    "machineType": "a3-megagpu-8g",
                    "diskType": "pd-ssd",
                    "dwsFlex": {},
                }
            ],
            partitions=[
                {"name": "tpu", "nodesets": ["v4"], "default": True},
                {"name": "flex", "nodesets": ["flex"], "partitionConf": {"resumetimeout": "300"}},
            ],
        ),
        "ai-infra:slurm.partitions[1].partitionConf.resumetimeout",
        "65535",
    ),
    (
        "a multi-host partition's ResumeTimeout shorter than its slices take",
        stack(
            debugPartition=True,
            tpuNodesets=[MULTI_HOST],
            partitions=[
                {"name": "tpu", "nodesets": ["v4x32"], "partitionConf": {"ResumeTimeout": "600"}}
            ],
        ),
        "ai-infra:slurm.partitions[0].partitionConf.ResumeTimeout",
        "at least 1200",
    ),
    (
        "a resume rate with multi-host slices, which resume would get in parts",
        stack(
            debugPartition=True,
            tpuNodesets=[MULTI_HOST],
            partitions=[{"name": "tpu", "nodesets": ["v4x32"]}],
            cloudParameters={"resumeRate": 20},
        ),
        "ai-infra:slurm.cloudParameters.resumeRate",
        "remove resumeRate",
    ),
    (
        "a max_switch_wait of the user's with multi-host slices",
        stack(
            debugPartition=True,
            tpuNodesets=[MULTI_HOST],
            partitions=[{"name": "tpu", "nodesets": ["v4x32"]}],
            cloudParameters={"schedulerParameters": ["bf_continue", "max_switch_wait=60"]},
        ),
        "ai-infra:slurm.cloudParameters.schedulerParameters[1]",
        "whole slices",
    ),
    (
        "a placement policy name past 63 characters once Slurm-GCP prefixes it",
        stack(
            clusterName="a" * 20,
            cpuNodesets=[
                {
                    "name": "b" * 15,
                    "machineType": "c2-standard-60",
                    "enablePlacement": True,
                    "nodeCountDynamicMax": 4,
                }
            ],
            partitions=[
                {"name": "tpu", "nodesets": ["v4"], "default": True},
                {"name": "c", "nodesets": ["b" * 15]},
            ],
        ),
        f"{C0}.enablePlacement",
        "shorten the nodeset's name or clusterName by 1",
    ),
    (
        "two threads per core on a machine of one",
        cpu(machineType="t2a-standard-8", threadsPerCore=2),
        f"{C0}.threadsPerCore",
        "one thread per core",
    ),
    (
        "a node option Slurm-GCP writes itself",
        cpu(nodeConf={"NodeAddr": "10.0.0.9"}),
        f"{C0}.nodeConf.NodeAddr",
        "not a node option a nodeset sets",
    ),
    (
        "node threads the template does not run",
        cpu(nodeConf={"threadspercore": "2"}),
        f"{C0}.nodeConf.threadspercore",
        "set threadsPerCore: 2",
    ),
    (
        "an unlimited CPU count",
        cpu(nodeConf={"CPUs": "UNLIMITED"}),
        f"{C0}.nodeConf.CPUs",
        "not a count",
    ),
    (
        "a partitionConf typo, which stops slurmctld",
        partition(partitionConf={"MaxTme": "60"}),
        "ai-infra:slurm.partitions[0].partitionConf.MaxTme",
        "did you mean MaxTime",
    ),
    (
        "a partitionConf key Slurm 25.11 does not have",
        partition(partitionConf={"MaxJobs": "4"}),
        "ai-infra:slurm.partitions[0].partitionConf.MaxJobs",
        "no partition option 'MaxJobs'",
    ),
    (
        "Shared, OverSubscribe's older name",
        partition(partitionConf={"shared": "NO"}),
        "ai-infra:slurm.partitions[0].partitionConf.shared",
        "decided by the program",
    ),
    (
        "a boolean partition option that is not YES or NO",
        partition(partitionConf={"Hidden": "maybe"}),
        "ai-infra:slurm.partitions[0].partitionConf.Hidden",
        "YES or NO",
    ),
    (
        "a whole-number partition option that is not one",
        partition(partitionConf={"MaxNodes": "4x"}),
        "ai-infra:slurm.partitions[0].partitionConf.MaxNodes",
        "whole number",
    ),
    (
        "a partition priority past Slurm's 16 bits",
        partition(partitionConf={"PriorityTier": "70000"}),
        "ai-infra:slurm.partitions[0].partitionConf.PriorityTier",
        "65535",
    ),
    (
        "one partition option twice in two cases",
        partition(partitionConf={"maxTime": "60", "MaxTime": "90"}),
        "ai-infra:slurm.partitions[0].partitionConf.MaxTime",
        "keep one",
    ),
    (
        "two defaults",
        stack(
            tpuNodesets=[NODESET, {**NODESET, "name": "b"}],
            partitions=[
                {"name": "a", "nodesets": ["v4"], "default": True},
                {"name": "b", "nodesets": ["b"], "default": True},
            ],
        ),
        "ai-infra:slurm.partitions[1].default",
        "keep one",
    ),
    (
        "slurm.conf value that adds a line",
        partition(partitionConf={"MaxTime": "60\nNodeName=evil"}),
        "ai-infra:slurm.partitions[0].partitionConf.MaxTime",
        "no spaces or newlines",
    ),
    (
        "slurm.conf key that is not a word",
        partition(partitionConf={"Max Time": "60"}),
        'ai-infra:slurm.partitions[0].partitionConf["Max Time"]',
        "MaxTime",
    ),
    *[
        (
            f"partitionConf overriding {key}",
            partition(partitionConf={key: "YES"}),
            f"ai-infra:slurm.partitions[0].partitionConf.{key}",
            "decided by the program",
        )
        for key in ("Default", "Nodes", "PowerDownOnIdle", "PartitionName", "State", "Topology")
    ],
    (
        "partitionConf overriding Default in capitals",
        partition(partitionConf={"DEFAULT": "YES"}),
        "ai-infra:slurm.partitions[0].partitionConf.DEFAULT",
        "set default: true instead",
    ),
    (
        "partitionConf overriding OverSubscribe spelt as conf.py does",
        partition(partitionConf={"Oversubscribe": "NO"}),
        "ai-infra:slurm.partitions[0].partitionConf.Oversubscribe",
        "OverSubscribe is decided",
    ),
    (
        "partitionConf with one option twice",
        partition(partitionConf={"MaxTime": "60", "MAXTIME": "90"}),
        "ai-infra:slurm.partitions[0].partitionConf.MAXTIME",
        "repeats MaxTime",
    ),
    (
        "a partition named default, which Slurm takes for every partition's defaults",
        partition(name="default"),
        "ai-infra:slurm.partitions[0].name",
        "set default: true",
    ),
    (
        "partition name with capitals",
        partition(name="TPU"),
        "ai-infra:slurm.partitions[0].name",
        "lowercase",
    ),
    (
        "team takes the controller account",
        with_config(**REGION, slurm=CLUSTER, teams=[{"name": "slurm-ctl"}]),
        "ai-infra:teams[0].name",
        "already belongs to slurm",
    ),
    (
        "a bucket takes the Slurm bucket's name",
        with_config(**REGION, slurm=CLUSTER, buckets=[{"name": "slurm-tpu"}]),
        "ai-infra:slurm.clusterName",
        "rename one",
    ),
    (
        "Slurm bucket name too long",
        with_config(
            **REGION,
            **{"gcp:project": "p" * 30},
            slurm={**CLUSTER, "clusterName": "abcdefghij"},
            prefix="a" * 20,
        ),
        "ai-infra:slurm.clusterName",
        "63 characters",
    ),
    (
        "CPU nodeset image by family and name",
        cpu(image={"family": "f", "name": "n"}),
        f"{C0}.image",
        "exactly one of family and name",
    ),
    ("CPU nodeset image by neither", cpu(image={"project": "p-123456"}), f"{C0}.image", "family"),
    (
        "a Lustre address for an NFS server",
        stack(
            networkStorage=[
                {
                    "serverIp": "10.0.0.2@tcp",
                    "remoteMount": "/x",
                    "fsType": "nfs",
                    "localMount": "/x",
                }
            ]
        ),
        "ai-infra:slurm.networkStorage[0].serverIp",
        "plain address",
    ),
    ("CPU nodeset without nodes", cpu(nodeCountDynamicMax=0), f"{C0}.nodeCountDynamicMax", "1"),
    ("CPU nodeset zone outside the region", cpu(zones=["us-east1-b"]), f"{C0}.zones[0]", "region"),
    (
        "CPU nodeset zone twice",
        cpu(zones=["us-central2-b", "us-central2-b"]),
        f"{C0}.zones",
        "twice",
    ),
    (
        "GPU count an a2 does not have",
        cpu(machineType="a2-highgpu-2g", gpu={"type": "nvidia-tesla-a100", "count": 1}),
        f"{C0}.gpu",
        "comes with 2 x nvidia-tesla-a100",
    ),
    (
        "GPU on a machine type that attaches none",
        cpu(machineType="n2-standard-8", gpu={"type": "nvidia-tesla-t4", "count": 1}),
        f"{C0}.gpu",
        "GPU machine type",
    ),
    (
        "A3 High 1g on demand",
        cpu(machineType="a3-highgpu-1g"),
        f"{C0}.machineType",
        "spot: true",
    ),
    (
        "pd-standard on c3",
        cpu(machineType="c3-standard-4", diskType="pd-standard"),
        f"{C0}.diskType",
        "pd-balanced",
    ),
    (
        "Hyperdisk on n1",
        cpu(machineType="n1-standard-4", diskType="hyperdisk-balanced"),
        f"{C0}.diskType",
        "no Hyperdisk",
    ),
    ("PD on c4", cpu(machineType="c4-standard-4"), f"{C0}.diskType", "hyperdisk-balanced"),
    (
        "Secure Boot with GPUs on SchedMD's image",
        cpu(machineType="g2-standard-4", secureBoot=True),
        f"{C0}.secureBoot",
        "unsigned",
    ),
    (
        "Secure Boot with a Lustre mount",
        cpu(
            secureBoot=True,
            networkStorage=[
                {
                    "serverIp": "10.0.0.2@tcp",
                    "remoteMount": "/lustrefs",
                    "fsType": "lustre",
                    "localMount": "/lustre",
                }
            ],
        ),
        f"{C0}.secureBoot",
        "Lustre",
    ),
    (
        "CPU and TPU nodesets of one name",
        stack(
            cpuNodesets=[{**CPU_NODESET, "name": "v4"}],
            partitions=[{"name": "tpu", "nodesets": ["v4"]}],
        ),
        f"{N0}.name",
        "unique across",
    ),
    (
        "partition mixing CPU and TPU nodesets",
        stack(cpuNodesets=[CPU_NODESET], partitions=[{"name": "tpu", "nodesets": ["v4", "cpu"]}]),
        "ai-infra:slurm.partitions[0].nodesets",
        "partitions of their own",
    ),
    ("CPU nodeset in no partition", stack(cpuNodesets=[CPU_NODESET]), f"{C0}.name", "add it to"),
    (
        "debug partition beside a partition named debug",
        stack(debugPartition=True, partitions=[{"name": "debug", "nodesets": ["v4"]}]),
        "ai-infra:slurm.partitions[0].name",
        "remove debugPartition",
    ),
    (
        "login group named like a nodeset",
        stack(loginGroups=[{"name": "v4"}]),
        "ai-infra:slurm.loginGroups[0].name",
        "rename the group",
    ),
    (
        "login group with a dash",
        stack(loginGroups=[{"name": "a-b"}]),
        "ai-infra:slurm.loginGroups[0].name",
        "no '-'",
    ),
    (
        "two login groups of one name",
        stack(loginGroups=[{"name": "login"}, {"name": "login"}]),
        "ai-infra:slurm.loginGroups[1].name",
        "unique",
    ),
    (
        "prolog without an extension",
        stack(prologScripts=[{"name": "check", "content": "#!/bin/sh\n"}]),
        "ai-infra:slurm.prologScripts[0].name",
        "one extension",
    ),
    (
        "a prolog name setup would install in a folder Slurm never runs",
        stack(prologScripts=[{"name": "gpu-script-check.sh", "content": "#!/bin/sh\n"}]),
        "ai-infra:slurm.prologScripts[0].name",
        "Slurm would never run it",
    ),
    (
        "an epilog name starting with script-",
        stack(epilogScripts=[{"name": "script-clean.sh", "content": "#!/bin/sh\n"}]),
        "ai-infra:slurm.epilogScripts[0].name",
        "rename it",
    ),
    (
        "two epilogs of one name",
        stack(epilogScripts=[{"name": "a.sh", "content": "#!/bin/sh\n"}] * 2),
        "ai-infra:slurm.epilogScripts[1].name",
        "unique",
    ),
    (
        "TreeWidth above Slurm's maximum",
        stack(cloudParameters={"treeWidth": 70000}),
        "ai-infra:slurm.cloudParameters.treeWidth",
        "65533",
    ),
    (
        "a SchedulerParameters entry adding another",
        stack(cloudParameters={"schedulerParameters": ["bf_continue,evil"]}),
        "ai-infra:slurm.cloudParameters.schedulerParameters[0]",
        "SchedulerParameters option",
    ),
    (
        "the topology plugin, which the program decides",
        stack(cloudParameters={"topologyPlugin": "topology/flat"}),
        "ai-infra:slurm.cloudParameters.topologyPlugin",
        "unknown field",
    ),
    (
        "a mirror over plain http",
        stack(scriptsMirror="http://mirror.example.com/scripts"),
        "ai-infra:slurm.scriptsMirror",
        "gs://my-bucket",
    ),
    (
        "the old single login key",
        stack(login={"count": 2}),
        "ai-infra:slurm.login",
        "login became loginGroups",
    ),
    (
        "Tier_1 on a machine Compute Engine offers it on only from 30 vCPUs",
        cpu(machineType="n2-standard-16", bandwidthTier="tier_1_enabled"),
        f"{C0}.bandwidthTier",
        "30 vCPUs or more",
    ),
    (
        "Tier_1 on a series without it",
        cpu(machineType="n1-standard-32", bandwidthTier="tier_1_enabled"),
        f"{C0}.bandwidthTier",
        "gvnic_enabled",
    ),
    (
        "VirtIO on a machine that runs gVNIC only",
        cpu(machineType="c3-standard-8", bandwidthTier="virtio_enabled"),
        f"{C0}.bandwidthTier",
        "gVNIC only",
    ),
    (
        "a bandwidth tier Toolkit does not have",
        cpu(bandwidthTier="tier_2"),
        f"{C0}.bandwidthTier",
        "tier_1_enabled",
    ),
    (
        "a reservation over two zones",
        cpu(**A3M, reservation="a3", zones=["us-central2-b", "us-central2-c"]),
        f"{C0}.zones",
        "a reservation lives in one zone",
    ),
    (
        "one reservation in two nodesets' zones",
        stack(
            cpuNodesets=[
                {"name": "a", **A3M, "reservation": "a3", "zones": ["us-central2-b"]},
                {"name": "b", **A3M, "reservation": "a3", "zones": ["us-central2-c"]},
            ],
            partitions=[
                {"name": "tpu", "nodesets": ["v4"]},
                {"name": "gpu", "nodesets": ["a", "b"]},
            ],
        ),
        "ai-infra:slurm.cpuNodesets[1].reservation",
        "takes this reservation in us-central2-b",
    ),
    (
        "a reservation of a series sold without them",
        cpu(machineType="a3-highgpu-1g", reservation="a3"),
        f"{C0}.reservation",
        "not offered reservation",
    ),
    (
        "Spot VMs consuming a reservation",
        cpu(**A3M, spot=True, reservation="a3"),
        f"{C0}.reservation",
        "Spot VMs consume no reservation",
    ),
    (
        "flex-start with static nodes",
        cpu(**A3M, dwsFlex={}, nodeCountStatic=2, nodeCountDynamicMax=0),
        f"{C0}.nodeCountStatic",
        "dynamic nodes only",
    ),
    (
        "flex-start and Spot",
        cpu(**A3M, dwsFlex={}, spot=True),
        f"{C0}.spot",
        "not both",
    ),
    (
        "flex-start and a reservation",
        cpu(**A3M, dwsFlex={}, reservation="a3"),
        f"{C0}.reservation",
        "flex-start VMs consume no reservation",
    ),
    (
        "flex-start of a CPU machine",
        cpu(machineType="n2-standard-8", dwsFlex={}),
        f"{C0}.dwsFlex",
        "GPU machine types only",
    ),
    (
        "flex-start of a series that has none",
        cpu(machineType="n1-standard-8", gpu={"type": "nvidia-tesla-t4", "count": 1}, dwsFlex={}),
        f"{C0}.dwsFlex",
        "not offered flex-start",
    ),
    (
        "a flex-start run longer than a week",
        cpu(**A3M, dwsFlex={"maxRunDuration": 604801}),
        f"{C0}.dwsFlex.maxRunDuration",
        "604800",
    ),
    (
        "placement with more nodes than the policy holds",
        cpu(enablePlacement=True, placementMaxDistance=1, nodeCountDynamicMax=30),
        f"{C0}.enablePlacement",
        "holds 22",
    ),
    (
        "a max distance without placement",
        cpu(placementMaxDistance=2),
        f"{C0}.placementMaxDistance",
        "enablePlacement: true",
    ),
    (
        "placement of a series Slurm-GCP never places",
        cpu(machineType="n1-standard-8", enablePlacement=True),
        f"{C0}.enablePlacement",
        "places no n1 VM",
    ),
    (
        "A3 at max distance 1",
        cpu(**A3M, enablePlacement=True, placementMaxDistance=1, nodeCountDynamicMax=4),
        f"{C0}.placementMaxDistance",
        "max distance of 1",
    ),
    (
        "flex-start placement of a series Toolkit does not place",
        cpu(**A3M, dwsFlex={}, enablePlacement=True, nodeCountDynamicMax=4),
        f"{C0}.enablePlacement",
        "take no placement policy",
    ),
    (
        "local SSDs added to a machine that brings its own",
        cpu(**A3M, localSsd={"count": 2}),
        f"{C0}.localSsd.count",
        "comes with its own",
    ),
    (
        "local SSDs on a series without them",
        cpu(machineType="c4-standard-8", diskType="hyperdisk-balanced", localSsd={"count": 1}),
        f"{C0}.localSsd",
        "takes no Local SSD",
    ),
    (
        "a local SSD count Compute Engine does not attach",
        cpu(localSsd={"count": 3}),
        f"{C0}.localSsd.count",
        "1, 2, 4, 8, 16, 24",
    ),
    (
        "local SSDs without a count where the machine has none of its own",
        cpu(localSsd={}),
        f"{C0}.localSsd.count",
        "not none",
    ),
    (
        "two extra disks of one device name",
        cpu(additionalDisks=[{"deviceName": "d"}, {"deviceName": "d"}]),
        f"{C0}.additionalDisks[1].deviceName",
        "keep one",
    ),
    (
        "an extra Hyperdisk on a machine that attaches none",
        cpu(
            machineType="n1-standard-8",
            additionalDisks=[{"deviceName": "d", "diskType": "hyperdisk-balanced"}],
        ),
        f"{C0}.additionalDisks[0].diskType",
        "no Hyperdisk",
    ),
    (
        "GPU networks on a machine without a GPU NIC layout",
        cpu(machineType="n2-standard-8", gpuNetworks={}),
        f"{C0}.gpuNetworks",
        "no GPU NIC layout",
    ),
    (
        "RDMA NICs over two zones",
        cpu(
            machineType="a3-ultragpu-8g",
            diskType="hyperdisk-balanced",
            spot=True,
            gpuNetworks={},
            zones=["us-central2-b", "us-central2-c"],
        ),
        f"{C0}.zones",
        "RoCE profile",
    ),
    (
        "GPU networks whose names run past 63 characters",
        with_config(
            **REGION,
            prefix="ai-infra-research",
            slurm={
                **CLUSTER,
                "clusterName": "research-cluster-01",
                "cpuNodesets": [
                    {
                        "name": "a3ultrapartone",
                        "machineType": "a3-ultragpu-8g",
                        "diskType": "hyperdisk-balanced",
                        "spot": True,
                        "gpuNetworks": {},
                    }
                ],
                "partitions": [
                    {"name": "tpu", "nodesets": ["v4"]},
                    {"name": "gpu", "nodesets": ["a3ultrapartone"]},
                ],
            },
        ),
        f"{C0}.gpuNetworks",
        "past Compute Engine's 63 characters",
    ),
    (
        "two nodesets' GPU networks in one range",
        stack(
            cpuNodesets=[
                {"name": "a", **A3M, "gpuNetworks": {}},
                {"name": "b", **A3M, "gpuNetworks": {"subnetCidr": "10.200.64.0/20"}},
            ],
            partitions=[
                {"name": "tpu", "nodesets": ["v4"]},
                {"name": "gpu", "nodesets": ["a", "b"]},
            ],
        ),
        "ai-infra:slurm.cpuNodesets[1].gpuNetworks.subnetCidr",
        "overlaps cpuNodesets[0]'s",
    ),
    (
        "GPU networks over the stack's subnet",
        cpu(**A3M, gpuNetworks={"subnetCidr": "10.129.0.0/20"}),
        f"{C0}.gpuNetworks.subnetCidr",
        "overlap network.subnetCidr 10.129.0.0/20",
    ),
    (
        "a controller image by both family and name",
        stack(controller={"image": {"family": "a", "name": "b"}}),
        "ai-infra:slurm.controller.image",
        "exactly one of family and name",
    ),
    (
        "a login image by neither family nor name",
        stack(loginGroups=[{"name": "login", "image": {"project": "my-images"}}]),
        "ai-infra:slurm.loginGroups[0].image",
        "exactly one of family and name",
    ),
    (
        "controller outside the region",
        stack(controller={"zone": "us-east1-b"}),
        "ai-infra:slurm.controller.zone",
        "gcp:region",
    ),
    (
        "state disk too big",
        stack(controller={"stateDisk": {"sizeGb": 100000}}),
        "ai-infra:slurm.controller.stateDisk.sizeGb",
        "1024",
    ),
]


@pytest.mark.parametrize(("case", "raw", "path", "fix"), CASES, ids=[c[0] for c in CASES])
def test_bad_slurm_input_is_refused_at_its_path_before_anything_registers(case, raw, path, fix):
    graph, error = record_program(raw)
    assert isinstance(error, ConfigError), f"{case}: accepted"
    found = dict(error.rendered)
    assert path in found, f"{case}: {found}"
    assert fix in found[path], f"{case}: {found[path]}"
    assert graph.resources == [], [r.urn for r in graph]


@pytest.mark.parametrize(
    ("key", "entry", "account"),
    [
        ("teams", {"name": "slurm-ctl"}, "ai-test-slurm-ctl"),
        (
            "workloadIdentities",
            {"name": "slurm-lgn", "namespace": "jobs", "serviceAccount": "runner"},
            "ai-test-slurm-lgn",
        ),
        ("tpuVms", {"name": "slurm-tpu", "accelerator": "v4-8"}, "ai-test-slurm-tpu"),
    ],
)
def test_an_entry_taking_a_slurm_account_id_gets_one_problem_at_the_entry(key, entry, account):
    # Issue 14: the ownership check claimed the Slurm accounts twice.
    graph, error = record_program({**stack(), f"ai-infra:{key}": [entry]})
    assert isinstance(error, ConfigError), error
    assert error.rendered == [
        (
            f"ai-infra:{key}[0].name",
            f"service account id '{account}' already belongs to slurm; each has exactly one "
            "owner, so pick another",
        )
    ]
    assert graph.resources == [], [r.urn for r in graph]


def test_a_minimal_cluster_takes_the_documented_defaults():
    config = parse(stack(), "test").slurm
    assert config is not None
    nodeset = config.tpu_nodesets[0]
    assert (nodeset.tf, nodeset.enable_public_ips, nodeset.service_account_scopes) == (
        "2.14.0",
        False,
        ["https://www.googleapis.com/auth/cloud-platform"],
    )
    assert nodeset.image == "us-docker.pkg.dev/schedmd-slurm-public/tpu/slurm-gcp-6-9:tf-2.14.0"
    assert (config.controller.machine_type, config.controller.disk_type) == (
        "c2-standard-4",
        "pd-ssd",
    )
    assert (config.controller.state_disk.type, config.controller.state_disk.size_gb) == (
        "pd-ssd",
        50,
    )
    assert config.partition_conf(config.partitions[0]) == {
        "SuspendTime": "300",
        "SuspendTimeout": "240",
        "ResumeTimeout": "600",
        "Default": "YES",
    }


@pytest.mark.parametrize(
    ("fields", "cores", "workers"),
    [
        ({"nodeType": "v2-8"}, 8, 1),
        ({"nodeType": "v3-32"}, 32, 4),
        ({"nodeType": "v4-32"}, 32, 4),
        ({"acceleratorConfig": {"version": "V4", "topology": "2x2x4"}}, 32, 4),
        ({"acceleratorConfig": {"version": "V3", "topology": "4x4"}}, 32, 4),
        ({"acceleratorConfig": {"version": "V2", "topology": "2x2"}}, 8, 1),
    ],
)
def test_workers_per_slice_are_tensorcores_over_eight(fields, cores, workers):
    entry = TpuNodesetConfig.model_validate({"name": "n", **fields})
    assert (entry.cores, entry.workers_per_slice) == (cores, workers)


def test_a_runtime_version_stands_for_its_tf_version():
    config = parse(nodeset(runtimeVersion="tpu-vm-tf-2.13.1"), "test").slurm
    assert config is not None
    assert config.tpu_nodesets[0].tf == "2.13.1"
    assert config.tpu_nodesets[0].image.endswith(":tf-2.13.1")


@pytest.mark.parametrize(
    ("zone", "node_type", "nodes"),
    [
        ("europe-west4-a", "v3-32", 4),
        ("europe-west4-a", "v3-2048", 256),
        ("europe-west4-a", "v2-8", 1),
        ("europe-west4-a", "v2-512", 64),
        ("asia-east1-c", "v2-8", 1),
        ("us-central1-a", "v2-32", 4),
    ],
)
def test_v2_and_v3_sizes_and_zones_are_the_tpu_catalog_s(zone, node_type, nodes):
    """Issue 29: Slurm kept its own v2/v3 table, which refused v3-32 and larger everywhere and
    v2/v3 in europe-west4-a though Cloud TPU lists them there, and tpuVms accepts them."""
    region = zone.rsplit("-", 1)[0]
    entry = {"name": "v", "nodeType": node_type, "nodeCountDynamicMax": nodes}
    raw = with_config(
        **{"gcp:region": region, "gcp:zone": zone},
        slurm={
            **CLUSTER,
            "debugPartition": True,
            "tpuNodesets": [entry],
            "partitions": [{"name": "tpu", "nodesets": ["v"]}],
        },
    )
    config = parse(raw, "test").slurm
    assert config is not None
    [nodeset_config] = config.tpu_nodesets
    assert nodeset_config.shape == tpu_catalog.resolve(node_type)
    assert nodeset_config.workers_per_slice == nodes


def test_an_unlisted_zone_is_taken_when_the_nodeset_says_so():
    raw = with_config(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-c"},
        slurm={**CLUSTER, "tpuNodesets": [{**NODESET, "nodeType": "v3-8"}]},
    )
    _, error = record_program(raw)
    assert isinstance(error, ConfigError)
    assert "allowUnlistedZone" in dict(error.rendered)[f"{N0}.zone"]
    raw["ai-infra:slurm"]["tpuNodesets"][0]["allowUnlistedZone"] = True
    assert parse(raw, "test").slurm is not None


def test_v2_and_v3_single_hosts_are_accepted_where_cloud_tpu_offers_them():
    raw = with_config(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-b"},
        slurm={
            **CLUSTER,
            "tpuNodesets": [
                {**NODESET, "nodeType": "v2-8"},
                {**NODESET, "name": "b", "nodeType": "v3-8"},
            ],
            "partitions": [{"name": "tpu", "nodesets": ["v4", "b"]}],
        },
    )
    config = parse(raw, "test").slurm
    assert config is not None
    assert [n.family for n in config.tpu_nodesets] == ["v2", "v3"]


def test_the_seed_example_is_writable_with_its_own_image():
    """Toolkit's nodeset-tpu README example: v2-8, TF 2.10.0, preemptible; TF 2.10 has a TPU
    runtime, and the slurmd image is the user's (SchedMD publishes none for it)."""
    raw = with_config(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-b"},
        slurm={
            "clusterName": "seed",
            "tpuNodesets": [
                {
                    "name": "v2x8",
                    "nodeType": "v2-8",
                    "tfVersion": "2.10.0",
                    "preemptible": True,
                    "dockerImage": "us-docker.pkg.dev/my-project/slurm/slurmd:tf-2.10.0",
                    "nodeCountDynamicMax": 2,
                }
            ],
            "partitions": [{"name": "tpu", "nodesets": ["v2x8"], "default": True}],
        },
    )
    config = parse(raw, "test").slurm
    assert config is not None
    nodeset = config.tpu_nodesets[0]
    assert (nodeset.tf, nodeset.preemptible) == ("2.10.0", True)


def test_a_multi_host_slice_is_accepted_beside_a_cpu_nodeset():
    config = parse(
        stack(
            debugPartition=True,
            tpuNodesets=[{"name": "v4x16", "nodeType": "v4-16", "nodeCountDynamicMax": 4}],
            partitions=[{"name": "tpu", "nodesets": ["v4x16"]}],
        ),
        "test",
    ).slurm
    assert config is not None
    assert config.tpu_nodesets[0].workers_per_slice == 2
    # The debug partition is Toolkit's: 4 dynamic n2-standard-2, shared, the default.
    [debug] = config.all_cpu_nodesets
    assert (debug.name, debug.machine_type, debug.node_count_dynamic_max) == (
        "debug",
        "n2-standard-2",
        4,
    )
    assert [(p.name, p.default, p.exclusive) for p in config.all_partitions] == [
        ("tpu", False, True),
        ("debug", True, False),
    ]


def test_a_twenty_character_cluster_name_is_slurm_gcp_s_own_limit():
    config = parse(stack(clusterName="a" * 19 + "1"), "test").slurm
    assert config is not None and len(config.cluster_name) == 20


def test_secure_boot_is_off_only_where_schedmd_s_image_loads_unsigned_modules():
    config = parse(
        stack(
            cpuNodesets=[
                CPU_NODESET,
                {"name": "g2", "machineType": "g2-standard-4"},
                {
                    "name": "t4",
                    "machineType": "n1-standard-4",
                    "gpu": {"type": "nvidia-tesla-t4", "count": 1},
                },
            ],
            partitions=[
                {"name": "tpu", "nodesets": ["v4"]},
                {"name": "cpu", "nodesets": ["cpu", "g2", "t4"]},
            ],
        ),
        "test",
    ).slurm
    assert config is not None
    assert [config.secure_boot(n) for n in config.cpu_nodesets] == [True, False, False]
    gpus = config.cpu_nodesets[1].gpus()
    assert gpus is not None and gpus.model_dump() == {"type": "nvidia-l4", "count": 1}


@pytest.mark.parametrize(
    ("counts", "mode"),
    [({"nodeCountDynamicMax": 1}, "read-write"), ({"nodeCountDynamicMax": 2}, "read-only")],
)
def test_data_disks_are_read_only_where_the_nodeset_may_hold_more_than_one_tpu_vm(counts, mode):
    disk = "projects/test-project/zones/us-central2-b/disks/data"
    config = parse(nodeset(dataDisks=[disk], **counts), "test")
    assert config.slurm is not None
    [nodeset_config] = config.slurm.tpu_nodesets
    assert nodeset_config.data_disks_read_only is (mode == "read-only")
    [(_, lines)] = describe(config.slurm, config.context)
    [line] = [x for x in lines if x.startswith("  nodeset v4:")]
    assert line.endswith(f", 1 data disk(s) {mode}"), line


def test_partition_options_are_any_slurm_option_in_any_case_written_as_slurm_spells_them():
    config = parse(
        partition(
            partitionConf={
                "maxtime": "24:00:00",
                "SUSPENDTIME": "600",
                "MaxNodes": "UNLIMITED",
                "GraceTime": "2k",
                "Hidden": "no",
                "PriorityTier": "0x10",
            }
        ),
        "test",
    ).slurm
    assert config is not None
    [tpu] = config.all_partitions
    assert config.partition_conf(tpu) == {
        "SuspendTime": "600",
        "SuspendTimeout": "240",
        "ResumeTimeout": "600",
        "MaxTime": "24:00:00",
        "MaxNodes": "UNLIMITED",
        "GraceTime": "2k",
        "Hidden": "no",
        "PriorityTier": "0x10",
    }


def test_every_job_script_s_object_names_the_folder_slurm_runs():
    from tests.conftest import build_graph

    scripts = [{"name": n, "content": "#!/bin/sh\n"} for n in ("pre-script.sh", "a_b-c.sh")]
    graph = build_graph(stack(prologScripts=scripts, epilogScripts=scripts))
    names = [
        r.inputs["name"].rsplit("/", 1)[1]
        for r in graph.of_type("gcp:storage/bucketObject:BucketObject")
        if "-script-" in r.inputs["name"]
    ]
    assert len(names) == 4
    # util.py install_custom_scripts: the folder is the object name up to its last '-script-'.
    for name in names:
        match = re.match(r"^slurm-(?P<path>\S+)-script-(?P<name>\S+)", name)
        assert match is not None and match["path"] in ("prolog", "epilog"), name


def test_a_gpu_range_names_the_first_nodeset_whose_range_it_overlaps():
    nodesets = [
        {"name": "a", **A3M, "gpuNetworks": {"subnetCidr": "10.200.0.0/20"}},
        {"name": "b", **A3M, "gpuNetworks": {"subnetCidr": "10.210.0.0/20"}},
        {"name": "c", **A3M, "gpuNetworks": {"subnetCidr": "10.210.0.0/20"}},
    ]
    raw = stack(
        cpuNodesets=nodesets,
        partitions=[
            {"name": "tpu", "nodesets": ["v4"]},
            {"name": "gpu", "nodesets": ["a", "b", "c"]},
        ],
    )
    with pytest.raises(ConfigError) as error:
        parse(raw, "test")
    rendered = dict(error.value.rendered)
    overlaps = {k: v for k, v in rendered.items() if "give each nodeset ranges" in v}
    assert list(overlaps) == ["ai-infra:slurm.cpuNodesets[2].gpuNetworks.subnetCidr"], rendered
    assert (
        "overlaps cpuNodesets[1]'s"
        in overlaps["ai-infra:slurm.cpuNodesets[2].gpuNetworks.subnetCidr"]
    )
