"""Cluster Toolkit v1.95.0's A3 Mega, A3 Ultra and A4 Slurm blueprints
(examples/machine-learning/{a3-megagpu-8g/a3mega,a3-ultragpu-8g/a3ultra,
a4-highgpu-8g/a4high}-slurm-blueprint.yaml at commit 079cf83): the Slurm facts each sets,
recorded as data (no blueprint text), and the ai-infra stack that translates it. The
upstream check renders each stack through Toolkit's own conf.py (its cases `blueprint-*`),
and test_blueprints.py holds the rendered partitions and nodes to these facts.

Where a blueprint leaves a value to its deployment file (cluster size, reservation name), the
translation picks one: two static nodes from a reservation.
"""

from __future__ import annotations

from typing import Any

CLUSTER = "ml"
STATIC = 2
GPU_TEST = "#!/bin/bash\nexec /slurm/scripts/tools/gpu-test\n"
"""The GPU health check the blueprints link into a partition's epilog folder: the pinned
scripts' own tools/gpu-test (scripts.MANIFEST)."""
RXDM = '#!/bin/bash\nexec /opt/apps/rxdm/run "$@"\n'
"""A stand-in for the receive-data-path-manager the A3 Mega blueprint fetches at boot from
slurm-gcp's unpinned master: ai-infra takes a script's content in the stack file."""
SUDO_OSLOGIN = '#!/bin/bash\nexec /opt/apps/sudo-oslogin "$@"\n'
"""A stand-in for sudo-oslogin, fetched by every blueprint the same way."""
HOSTNAME = "#!/bin/bash\nprintf '%s\\n' \"$(hostname)\" > /etc/hostname\n"

LUSTRE_MOUNTS = {"/home": "lustre", "/gcs": "gcsfuse", "/gcs-checkpoints": "gcsfuse"}
"""A3 Ultra's file systems: homefs, Managed Lustre 36000 GiB at 500 on /home; gcs_bucket
(hierarchical namespace) on /gcs and, with the checkpointing profile, /gcs-checkpoints."""


def _ultra(name: str, machine: str, mounts: dict[str, str]) -> dict[str, Any]:
    """The A3 Ultra and A4 blueprints, alike but for the machine, names and /home."""
    return {
        "nodesets": {
            f"{name}nodeset": {
                "machine_type": machine,
                "static": STATIC,
                "dynamic": 0,
                # threads_per_core: null on 224 vCPUs; node_conf CoresPerSocket 56,
                # SocketsPerBoard 2, ThreadsPerCore 2.
                "node": {
                    "CPUs": "224",
                    "CoresPerSocket": "56",
                    "SocketsPerBoard": "2",
                    "ThreadsPerCore": "2",
                },
                "gpus": 8,
                "disk_type": "hyperdisk-balanced",
                "bandwidth_tier": "gvnic_enabled",
                "gpu_nics": 9,
                "local_ssd": "/mnt/localssd",
            },
        },
        "partitions": {
            name: {
                "nodesets": [f"{name}nodeset"],
                "default": True,
                "oversubscribe": "exclusive",
                "power_down_on_idle": "no",
                "ResumeTimeout": "1200",
                "SuspendTimeout": "1200",
                "epilog": ["gpu-test"],
            },
        },
        "slurm_conf": {"MessageTimeout": "60", "AuthInfo": "cred_expire=120"},
        "prolog": ["sudo-oslogin"],
        "epilog": ["sudo-oslogin"],
        "controller": "n2-standard-80",
        "login": "n2-standard-8",
        "mounts": mounts,
        "image_family": "ml-u24",
        "disk_size_gb": 100,
    }


FACTS: dict[str, dict[str, Any]] = {
    "a3mega": {
        "nodesets": {
            # Toolkit names a nodeset after its module id, letters and digits only
            # (schedmd-slurm-gcp-v6-nodeset main.tf `local.name`).
            "a3meganodeset": {
                "machine_type": "a3-megagpu-8g",
                "static": STATIC,
                "dynamic": 0,
                # advanced_machine_features.threads_per_core: null, the platform's 2, on the
                # machine's 208 vCPUs and 8 H100 Mega; node_conf CoresPerSocket 52,
                # ThreadsPerCore 2.
                "node": {"CPUs": "208", "CoresPerSocket": "52", "ThreadsPerCore": "2"},
                "gpus": 8,
                "disk_type": "pd-ssd",
                "bandwidth_tier": "gvnic_enabled",
                "gpu_nics": 8,
                "local_ssd": "/mnt/localssd",
            },
            "debugnodeset": {"machine_type": "n2-standard-2", "static": 0, "dynamic": 4},
        },
        "partitions": {
            # exclusive: false with partition_conf OverSubscribe: EXCLUSIVE, so jobs have
            # nodes of their own and conf.py writes no PowerDownOnIdle.
            "a3mega": {
                "nodesets": ["a3meganodeset"],
                "default": True,
                "oversubscribe": "exclusive",
                "power_down_on_idle": "no",
                "ResumeTimeout": "900",
                "SuspendTimeout": "600",
                "prolog": ["rxdm"],
                "epilog": ["rxdm", "gpu-test"],
            },
            "debug": {
                "nodesets": ["debugnodeset"],
                "default": False,
                "oversubscribe": "no",
                "power_down_on_idle": "no",
                "ResumeTimeout": "300",
                "SuspendTimeout": "120",
            },
        },
        # slurm_conf_tpl: the controller module's etc/long-prolog-slurm.conf.tpl.
        "slurm_conf": {
            "MessageTimeout": "600",
            "BatchStartTimeout": "600",
            "PrologEpilogTimeout": "600",
            "AuthInfo": "cred_expire=600",
        },
        "prolog_flags": "Contain",
        "prolog": ["sudo-oslogin", "set_hostname_for_enroot"],
        "epilog": ["sudo-oslogin"],
        "controller": "c2-standard-8",
        "login": "c2-standard-4",
        # homefs: Managed Lustre 36000 GiB at 500 MBps per TiB on /home; data-bucket on /gcs.
        "mounts": {"/home": "lustre", "/gcs": "gcsfuse"},
        "image_family": "slurm-a3mega",
    },
    "a3ultra": _ultra("a3ultra", "a3-ultragpu-8g", mounts=LUSTRE_MOUNTS),
    # homefs: Filestore HIGH_SCALE_SSD (the tier Filestore now calls ZONAL), 10240 GB.
    "a4high": _ultra("a4high", "a4-highgpu-8g", mounts={**LUSTRE_MOUNTS, "/home": "nfs"}),
}

REGION = {"gcp:region": "us-central1", "gcp:zone": "us-central1-a"}
PROJECT = "test-project"
SUDO = {"name": "sudo-oslogin.sh", "content": SUDO_OSLOGIN}
LUSTRE_HOME = {"name": "homefs", "lustre": {"capacityGib": 36000, "throughput": 500}}


def _image(blueprint: str) -> dict[str, str]:
    """`instance_image`: the family the blueprint's image build writes, in the project."""
    return {"project": PROJECT, "family": FACTS[blueprint]["image_family"]}


def _gpu_nodeset(
    blueprint: str, machine: str, disk: str, node_conf: dict[str, str]
) -> dict[str, Any]:
    name = f"{blueprint}nodeset"
    return {
        "name": name,
        "machineType": machine,
        "diskType": disk,
        "diskSizeGb": FACTS[blueprint].get("disk_size_gb", 50),
        "image": _image(blueprint),
        "nodeCountStatic": STATIC,
        "nodeCountDynamicMax": 0,
        "reservation": f"{name}-block",
        "bandwidthTier": "gvnic_enabled",
        "threadsPerCore": 2,
        "nodeConf": node_conf,
        "gpuNetworks": {"subnetCidr": "10.200.0.0/20"},
        "localSsd": {"mountPath": "/mnt/localssd"},
        "allowAutomaticUpdates": False,
    }


def _epilog_gpu_test() -> list[dict[str, str]]:
    return [{"name": "gpu-test.sh", "content": GPU_TEST}]


def _storage(blueprint: str) -> dict[str, Any]:
    """`ai-infra:buckets`, `ai-infra:storage` and the cluster's mounts for the blueprint's
    file-system modules."""
    volumes: list[dict[str, Any]] = [{"name": "data", "bucket": "data"}]
    mounts = [{"volume": "data", "mountPath": "/gcs"}]
    if blueprint != "a3mega":
        volumes.append({"name": "ckpt", "bucket": "data", "profile": "checkpoint"})
        mounts.append({"volume": "ckpt", "mountPath": "/gcs-checkpoints"})
    home: dict[str, Any] = {"tier": "ZONAL", "capacityGb": 10240}
    if blueprint != "a4high":
        volumes.append(LUSTRE_HOME)
        mounts.append({"volume": "homefs", "mountPath": "/home"})
        home = {"filestore": False}
    storage: dict[str, Any] = {"volumes": volumes}
    if blueprint != "a4high":
        storage["privateServiceRange"] = "10.210.0.0/20"
    return {
        "ai-infra:buckets": [{"name": "data", "hierarchicalNamespace": blueprint != "a3mega"}],
        "ai-infra:storage": storage,
        "slurm": {"home": home, "storage": mounts},
    }


def translation(blueprint: str) -> dict[str, Any]:
    """The ai-infra stack file (as `gcp:`/`ai-infra:` keys) that translates a blueprint."""
    image = _image(blueprint)
    slurm: dict[str, Any]
    if blueprint == "a3mega":
        slurm = {
            "controller": {"machineType": "c2-standard-8", "image": image},
            "loginGroups": [{"name": "login", "machineType": "c2-standard-4", "image": image}],
            "cpuNodesets": [
                _gpu_nodeset(
                    "a3mega",
                    "a3-megagpu-8g",
                    "pd-ssd",
                    {"CoresPerSocket": "52", "ThreadsPerCore": "2"},
                ),
                {"name": "debugnodeset", "machineType": "n2-standard-2", "nodeCountDynamicMax": 4},
            ],
            "partitions": [
                {
                    "name": "a3mega",
                    "nodesets": ["a3meganodeset"],
                    "default": True,
                    "partitionConf": {"ResumeTimeout": "900", "SuspendTimeout": "600"},
                    "prologScripts": [{"name": "rxdm.sh", "content": RXDM}],
                    "epilogScripts": [{"name": "rxdm.sh", "content": RXDM}, *_epilog_gpu_test()],
                },
                {"name": "debug", "nodesets": ["debugnodeset"], "exclusive": False},
            ],
            "timeouts": {
                "messageTimeout": 600,
                "batchStartTimeout": 600,
                "prologEpilogTimeout": 600,
                "credentialExpire": 600,
            },
            "cloudParameters": {"prologFlags": ["Contain"]},
            "prologScripts": [SUDO, {"name": "set_hostname_for_enroot.sh", "content": HOSTNAME}],
            "epilogScripts": [SUDO],
        }
    else:
        machine = "a3-ultragpu-8g" if blueprint == "a3ultra" else "a4-highgpu-8g"
        node_conf = {"CoresPerSocket": "56", "SocketsPerBoard": "2", "ThreadsPerCore": "2"}
        slurm = {
            "controller": {"machineType": "n2-standard-80", "diskSizeGb": 300, "image": image},
            "loginGroups": [
                {"name": "login", "machineType": "n2-standard-8", "diskSizeGb": 300, "image": image}
            ],
            "cpuNodesets": [_gpu_nodeset(blueprint, machine, "hyperdisk-balanced", node_conf)],
            "partitions": [
                {
                    "name": blueprint,
                    "nodesets": [f"{blueprint}nodeset"],
                    "default": True,
                    "partitionConf": {"ResumeTimeout": "1200", "SuspendTimeout": "1200"},
                    "epilogScripts": _epilog_gpu_test(),
                }
            ],
            "prologScripts": [SUDO],
            "epilogScripts": [SUDO],
        }
    storage = _storage(blueprint)
    return {
        **REGION,
        "ai-infra:buckets": storage["ai-infra:buckets"],
        "ai-infra:storage": storage["ai-infra:storage"],
        "ai-infra:slurm": {"clusterName": CLUSTER, **slurm, **storage["slurm"]},
    }
