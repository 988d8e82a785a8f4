"""The objects the Slurm-GCP v6 controller reads from the Slurm bucket, rendered from the
config: each nodeset's and partition's YAML, the login groups, the scripts setup runs, and
`config.yaml` with the conf templates (slurm_files main.tf at the pinned Cluster Toolkit
release).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from components.identity import OS_LOGIN_METADATA
from components.slurm import jobscripts
from components.slurm.config import UNKILLABLE_PER_MESSAGE, LoginGroupConfig, SlurmConfig
from components.slurm.fields import NetworkStorage
from components.slurm.nodesets import CpuNodesetConfig, TpuNodesetConfig
from components.slurm.partitions import PartitionConfig
from components.slurm.scripts import MAX_SWITCH_WAIT
from components.types import reservation_parts

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
AuthInfo=cred_expire=@CRED_EXPIRE@
AuthAltTypes=auth/jwt
CredType=cred/{auth_key}
@TIMEOUTS@
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
"""slurm.conf; `slurm_conf_template` fills the `@...@` fields with the cluster's timeouts,
and conf.py the `{...}` fields, and writes the nodes and partitions to cloud.conf.
`auth/jwt` beside munge is what `scontrol token` and slurmrestd authenticate with; slurmctld
reads the key setup.py writes to `StateSaveLocation/jwt_hs256.key`, the default location
(Slurm "JSON Web Tokens"; Toolkit's etc/slurm.conf.tpl does the same)."""


def slurm_conf_template(config: SlurmConfig) -> str:
    """The slurm.conf template with the cluster's timeouts written in (`timeouts`)."""
    timeouts = config.timeouts
    lines = [f"MessageTimeout={timeouts.message_timeout}"]
    lines += [
        f"{key}={value}"
        for key, value in (
            ("BatchStartTimeout", timeouts.batch_start_timeout),
            ("PrologEpilogTimeout", timeouts.prolog_epilog_timeout),
        )
        if value is not None
    ]
    return SLURM_CONF_TEMPLATE.replace("@CRED_EXPIRE@", str(timeouts.credential_expire)).replace(
        "@TIMEOUTS@", "\n".join(lines)
    )


SLURMDBD_CONF_TEMPLATE = """\
# Rendered on the controller by Slurm-GCP's conf.py from ai-infra's template.
{dbd_host_str}
AuthType=auth/{auth_key}
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={state_save}/jwt_hs256.key
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


def storage_document(
    storage: list[NetworkStorage], mounts: Sequence[dict[str, str]] = ()
) -> list[dict[str, str]]:
    """`network_storage` entries as setup_network_storage.py reads them: the entry's own, then
    the ones generated from its `ai-infra:storage` mounts."""
    return [
        {
            "server_ip": s.server_ip,
            "remote_mount": s.remote_mount,
            "local_mount": s.local_mount,
            "fs_type": s.fs_type,
            "mount_options": s.mount_options,
        }
        for s in storage
    ] + [dict(m) for m in mounts]


def nodeset_document(
    nodeset: TpuNodesetConfig,
    *,
    project: str,
    zone: str,
    subnetwork: str,
    email: str,
    mounts: Sequence[dict[str, str]] = (),
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
        "network_storage": storage_document(nodeset.network_storage, mounts),
        # Not a key of Toolkit's nodeset_tpu: the tpu.py addition (scripts.TPU_NODE_METADATA)
        # adds it to the metadata of every TPU VM create_node makes.
        "metadata": dict(OS_LOGIN_METADATA),
    }
    if nodeset.node_type is not None:
        document["node_type"] = nodeset.node_type
    return document


DWS_FLEX_OFF = {
    "enabled": False,
    "max_run_duration": 604800,
    "use_job_duration": False,
    "use_bulk_insert": False,
}
"""The nodeset module's `dws_flex` default with its optional fields filled."""


def dws_flex_document(nodeset: CpuNodesetConfig) -> dict[str, Any]:
    """The nodeset module's `dws_flex` with every field filled; the resize-request path
    (mig_flex.py), never the legacy bulk insert."""
    flex = nodeset.dws_flex
    if flex is None or not flex.enabled:
        return dict(DWS_FLEX_OFF)
    return {
        "enabled": True,
        "max_run_duration": flex.max_run_duration,
        "use_job_duration": flex.use_job_duration,
        "use_bulk_insert": False,
    }


def reservation_document(nodeset: CpuNodesetConfig, project: str) -> str:
    """`reservation_name` as util.py `nodeset_reservation` reads it,
    `projects/PROJECT/reservations/NAME` (Toolkit's nodeset writes the name so)."""
    if nodeset.reservation is None:
        return ""
    owner, name = reservation_parts(nodeset.reservation, project)
    return f"projects/{owner}/reservations/{name}"


def cpu_nodeset_document(
    nodeset: CpuNodesetConfig,
    *,
    project: str,
    template: str,
    subnetwork: str,
    zones: list[str],
    region_zones: list[str],
    mounts: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    """`nodeset_configs/<name>.yaml`: every key Toolkit's controller writes for a nodeset
    (partition.tf `nodesets`, plus the `instance_properties` slurm_files main.tf decodes),
    with the values the nodeset module gives what this program does not set. `template` and
    `subnetwork` are self links."""
    return {
        "nodeset_name": nodeset.name,
        "node_conf": nodeset.slurm_node_conf,
        "dws_flex": dws_flex_document(nodeset),
        "instance_template": template,
        "node_count_dynamic_max": nodeset.node_count_dynamic_max,
        "node_count_static": nodeset.node_count_static,
        "subnetwork": subnetwork,
        "reservation_name": reservation_document(nodeset, project),
        "future_reservation": "",
        "maintenance_interval": None,
        "instance_properties_json": "null",
        "instance_properties": None,
        "enable_placement": nodeset.enable_placement,
        "placement_max_distance": nodeset.placement_max_distance,
        "network_storage": storage_document(nodeset.network_storage, mounts),
        "zone_target_shape": nodeset.zone_target_shape,
        "zone_policy_allow": sorted(zones),
        "zone_policy_deny": sorted(set(region_zones) - set(zones)),
        "enable_maintenance_reservation": False,
        "enable_opportunistic_maintenance": False,
        "accelerator_topology": None,
    }


def partition_document(config: SlurmConfig, partition: PartitionConfig) -> dict[str, Any]:
    """`partition_configs/<name>.yaml` (the controller's `partitions` variable). A partition
    holds CPU nodesets or TPU nodesets (`SlurmConfig.is_tpu_partition`)."""
    tpu = config.is_tpu_partition(partition)
    return {
        "partition_name": partition.name,
        "partition_conf": config.partition_conf(partition),
        "partition_nodeset": [] if tpu else list(partition.nodesets),
        "partition_nodeset_dyn": [],
        "partition_nodeset_tpu": list(partition.nodesets) if tpu else [],
        "enable_job_exclusive": partition.exclusive,
    }


def login_group_document(
    group: LoginGroupConfig, mounts: Sequence[dict[str, str]] = ()
) -> dict[str, Any]:
    """`login_group_configs/<name>.yaml` (internal/slurm-gcp/login main.tf)."""
    return {
        "group_name": group.name,
        "startup_scripts_timeout": group.startup_scripts_timeout,
        "network_storage": storage_document(group.network_storage, mounts),
    }


def script_object(role: str, filename: str) -> str:
    """The object name under which setup.py finds a script for `role` (`controller`,
    `login-<group>`, `nodeset-<nodeset>`, `prolog`, `epilog`), and installs it as
    `<role folders>/<filename>`: it splits the name at the last '_' back into a file name
    (util.py install_custom_scripts), so a name has one '.'."""
    stem, _, extension = filename.rpartition(".")
    return f"slurm-{role}-script-{stem}_{extension}"


SCHEDULER_PARAMETERS = ("bf_continue", "salloc_wait_nodes", "ignore_prefer_validation")
"""conf.py's SchedulerParameters when `cloud_parameters` sets none."""
UNKILLABLE_STEP_TIMEOUT = 300
"""conf.py's UnkillableStepTimeout when `cloud_parameters` sets none; raised to five times a
longer MessageTimeout (`config.UNKILLABLE_PER_MESSAGE`)."""


def cloud_parameters_document(config: SlurmConfig) -> dict[str, Any]:
    """`cloud_parameters`: the keys the user set, with Toolkit's snake_case names; conf.py
    keeps its default for any other. UnkillableStepTimeout follows a long MessageTimeout, and
    with multi-host TPU nodesets SchedulerParameters also holds `max_switch_wait`, so that a
    job waits for whole slices (scripts.EDITS)."""
    parameters = config.cloud_parameters
    found = {
        key: value
        for key in sorted(parameters.model_fields_set)
        if (value := getattr(parameters, key)) is not None
    }
    unkillable = UNKILLABLE_PER_MESSAGE * config.timeouts.message_timeout
    if "unkillable_step_timeout" not in found and unkillable > UNKILLABLE_STEP_TIMEOUT:
        found["unkillable_step_timeout"] = unkillable
    if config.has_multi_host_tpu:
        given = found.get("scheduler_parameters", list(SCHEDULER_PARAMETERS))
        found["scheduler_parameters"] = [*given, f"max_switch_wait={MAX_SWITCH_WAIT}"]
    return found


def cluster_document(
    config: SlurmConfig, *, project: str, bucket: str, storage: list[dict[str, str]]
) -> dict[str, Any]:
    """`config.yaml`, the controller's readiness signal (slurm_files main.tf `config`), with
    only the keys this cluster sets: util.py reads a missing key as empty. `storage` is the
    cluster's `network_storage`, the /home share first."""
    installed = jobscripts.installed(config)
    document: dict[str, Any] = {
        "slurm_cluster_name": config.cluster_name,
        "project": project,
        "bucket_path": f"gs://{bucket}/{FILES_DIR.format(cluster=config.cluster_name)}",
        "enable_slurm_auth": False,
        "controller_state_disk": {"device_name": state_disk_name(config.cluster_name)},
        "network_storage": storage,
        "cloud_parameters": cloud_parameters_document(config),
        **{
            f"{kind}_scripts": [s.name for s in installed if s.kind == kind]
            for kind in jobscripts.KINDS
        },
        "slurm_conf_tpl": slurm_conf_template(config),
        "slurmdbd_conf_tpl": SLURMDBD_CONF_TEMPLATE,
        "cgroup_conf_tpl": CGROUP_CONF_TEMPLATE,
    }
    return document


def state_disk_name(cluster: str) -> str:
    """setup.py mounts `/dev/disk/by-id/google-<device_name>`; the device is named after
    the disk, as Toolkit's controller.tf does (`<cluster>-controller-save`)."""
    return f"{cluster}-controller-save"
