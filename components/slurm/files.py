"""The objects the Slurm-GCP v6 controller reads from the Slurm bucket, rendered from the
config: each nodeset's and partition's YAML, the login group, and `config.yaml` with the conf
templates (slurm_files main.tf at the pinned Cluster Toolkit release).
"""

from __future__ import annotations

from typing import Any

import yaml

from components.slurm.config import PartitionConfig, SlurmConfig, TpuNodesetConfig

FILES_DIR = "{cluster}-files"
"""The controller reads everything under `<bucket>/<cluster>-files/` (slurm_files main.tf
`bucket_dir`)."""
NODE_CONF: dict[str, dict[str, int]] = {
    "v2": {
        "CPUs": 96,
        "Boards": 1,
        "Sockets": 2,
        "CoresPerSocket": 24,
        "ThreadsPerCore": 2,
        "RealMemory": 307200,
    },
    "v4": {
        "CPUs": 240,
        "Boards": 1,
        "Sockets": 2,
        "CoresPerSocket": 60,
        "ThreadsPerCore": 2,
        "RealMemory": 400000,
    },
}
"""The host each TPU VM is, as slurm.conf node options (internal/slurm-gcp/nodeset_tpu
`node_conf_mappings`: v2 and v3 hosts are alike)."""
NODE_CONF["v3"] = NODE_CONF["v2"]
LOGIN_GROUP = "login"
UNIVERSE_DOMAIN = "googleapis.com"
"""util.py builds API endpoints from the `universe_domain` metadata key."""
SLURM_CONF_TEMPLATE = """\
# Rendered on the controller by Slurm-GCP's conf.py from ai-infra's template.
ClusterName={name}
{slurmctld_hosts}
SlurmctldPort={control_host_port}
SlurmdPort=6818
SlurmUser=slurm
AuthType=auth/{auth_key}
CredType=cred/{auth_key}
StateSaveLocation={state_save}
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/var/run/slurm/slurmctld.pid
SlurmdPidFile=/var/run/slurm/slurmd.pid
SlurmctldLogFile={slurmlog}/slurmctld.log
SlurmdLogFile={slurmlog}/slurmd-%n.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
MpiDefault={mpi_default}
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/cgroup
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={accounting_storage_host}
{accounting_storage_backup_host}
include cloud.conf
"""
"""slurm.conf; conf.py fills the `{...}` fields and writes the nodes and partitions to
cloud.conf."""
SLURMDBD_CONF_TEMPLATE = """\
# Rendered on the controller by Slurm-GCP's conf.py from ai-infra's template.
{dbd_host_str}
AuthType=auth/{auth_key}
SlurmUser=slurm
LogFile={slurmlog}/slurmdbd.log
PidFile=/var/run/slurm/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost={db_host}
StoragePort={db_port}
StorageLoc={db_name}
StorageUser={db_user}
StoragePass={db_pass}
"""
CGROUP_CONF_TEMPLATE = """\
# Written as is on the controller by Slurm-GCP's conf.py.
ConstrainCores=yes
ConstrainRamSpace=yes
ConstrainSwapSpace=no
ConstrainDevices=yes
"""


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (the conf templates) as literal blocks, readable in GCS."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(document: dict[str, Any]) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=True, default_flow_style=False)


def nodeset_document(
    nodeset: TpuNodesetConfig, *, project: str, zone: str, subnetwork: str, email: str
) -> dict[str, Any]:
    """`nodeset_tpu_configs/<name>.yaml`: the keys Slurm-GCP's tpu.py and conf.py read
    (the shape of internal/slurm-gcp/nodeset_tpu `nodeset_tpu`), none of them null."""
    family = nodeset.family
    assert family is not None
    accelerator = nodeset.accelerator_config
    document: dict[str, Any] = {
        "nodeset_name": nodeset.name,
        "node_conf": dict(NODE_CONF[family]),
        # tpu.py reads both fields of accelerator_config and falls back to node_type only
        # when they are empty strings, so the key is never left out.
        "accelerator_config": (
            {"topology": accelerator.topology, "version": accelerator.version}
            if accelerator
            else {"topology": "", "version": ""}
        ),
        "tf_version": nodeset.tf,
        "preemptible": nodeset.preemptible,
        "preserve_tpu": nodeset.preserve_tpu,
        "reserved": nodeset.reserved,
        "node_count_static": nodeset.node_count_static,
        "node_count_dynamic_max": nodeset.node_count_dynamic_max,
        "enable_public_ip": nodeset.enable_public_ips,
        "zone": zone,
        "project_id": project,
        "service_account": {"email": email, "scopes": list(nodeset.service_account_scopes)},
        "data_disks": list(nodeset.data_disks),
        "docker_image": nodeset.image,
        # The TPU API takes the subnetwork's name (Toolkit writes the subnetwork's `name`).
        "subnetwork": subnetwork,
        "network_storage": [
            {
                "server_ip": s.server_ip,
                "remote_mount": s.remote_mount,
                "local_mount": s.local_mount,
                "fs_type": s.fs_type,
                "mount_options": s.mount_options,
            }
            for s in nodeset.network_storage
        ],
    }
    if nodeset.node_type is not None:
        document["node_type"] = nodeset.node_type
    return document


def partition_document(partition: PartitionConfig) -> dict[str, Any]:
    """`partition_configs/<name>.yaml` (the controller's `partitions` variable)."""
    return {
        "partition_name": partition.name,
        "partition_conf": partition.conf,
        "partition_nodeset": [],
        "partition_nodeset_dyn": [],
        "partition_nodeset_tpu": list(partition.nodesets),
        "enable_job_exclusive": partition.exclusive,
    }


def cluster_document(config: SlurmConfig, *, project: str, bucket: str) -> dict[str, Any]:
    """`config.yaml`, the controller's readiness signal (slurm_files main.tf `config`), with
    only the keys this cluster sets: util.py reads a missing key as empty."""
    return {
        "slurm_cluster_name": config.cluster_name,
        "project": project,
        "bucket_path": f"gs://{bucket}/{FILES_DIR.format(cluster=config.cluster_name)}",
        "enable_slurm_auth": False,
        "controller_state_disk": {"device_name": state_disk_name(config.cluster_name)},
        "slurm_conf_tpl": SLURM_CONF_TEMPLATE,
        "slurmdbd_conf_tpl": SLURMDBD_CONF_TEMPLATE,
        "cgroup_conf_tpl": CGROUP_CONF_TEMPLATE,
    }


def state_disk_name(cluster: str) -> str:
    """setup.py mounts `/dev/disk/by-id/google-<device_name>`; the device is named after
    the disk, as Toolkit's controller.tf does (`<cluster>-controller-save`)."""
    return f"{cluster}-controller-save"
