"""The startup script of a GPU cluster VM, rendered from typed steps: the Ops Agent with its
DCGM receiver, a data disk, local SSD scratch, GCS and NFS mounts, `ai-infra:storage` volumes
(`components.storage.boot`), the NCCL network stack (GPUDirect or gIB), a
Ray node under systemd and the user's command, each a named step of `components.startup`,
whose prelude and readiness signal every system's script shares.

The script runs on every boot and may be run again in the same boot: mounts are skipped when
mounted, files replaced only when their content changes, services started only when stopped.
Every package install waits for apt's locks, and the Ops Agent's installer, which runs in the
background, takes turns with the mounts' installs instead of racing them.

Non-goals: installing drivers (the Deep Learning VM image does that from the
`install-nvidia-driver` metadata key), preparing a host for GPUDirect (see `gpudirect`), and
anything a container would do.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from components import startup
from components import storage as storage_boot
from components.gpu_clusters import gpudirect, monitoring
from components.gpu_clusters.gpudirect import GpuDirectStack
from components.startup import Block, heredoc, line
from components.storage import GCSFUSE_VERSION, LocalScratch, VolumeMount

OPS_AGENT_REPO_SCRIPT = "https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh"
OPS_AGENT_VERSION = "2.70.0"
"""The repo script's `--version` (it takes latest, MAJOR.*.* or MAJOR.MINOR.PATCH): an exact
release, the newest tag of GoogleCloudPlatform/ops-agent, so every VM runs the same agent."""
RAY_VERSION = "2.60.0"
"""Pinned `ray[default]`; the provisioning tool pinned 1.12.1, long out of support."""
RAY_PORT = 6379
CONDA_BIN = "/opt/conda/bin"
"""Where Deep Learning VM images keep python, pip and what pip installs."""
RAY_UNIT = "ai-infra-ray.service"
RAY_NODE = "/opt/ai-infra/ray-node"
RAY_PROFILE = "/etc/profile.d/ai-infra-ray.sh"
NCCL_PROFILE = "/etc/profile.d/ai-infra-nccl.sh"
RXDM_UNIT = "ai-infra-rxdm.service"
HOSTS_SCRIPT = "/opt/ai-infra/cluster-hosts"
HOSTS_UNIT = "ai-infra-hosts.service"
HOSTS_TIMER = "ai-infra-hosts.timer"
HOSTFILE = "/etc/ai-infra/hostfile"
"""The group's running members as an MPI hostfile (`name slots=<GPUs>`), for torchrun too."""
HOSTS_CACHE = "/var/lib/ai-infra/hosts"
SSHD_DROP_IN = "/etc/ssh/sshd_config.d/ai-infra-hostbased.conf"
SSH_DROP_IN = "/etc/ssh/ssh_config.d/ai-infra-hostbased.conf"
KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
SHOSTS_EQUIV = "/etc/ssh/shosts.equiv"
"""sshd reads host-based trust from these two fixed paths only (OpenSSH 9.2p1 auth2-hostbased.c:
`_PATH_SSH_SYSTEM_HOSTFILE`, and auth-rhosts.c: `_PATH_SSH_HOSTS_EQUIV` is skipped for root)."""
SERVICE_PATH = (
    "/opt/conda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin"
)
"""systemd's default PATH lacks /snap/bin, where Ubuntu images keep gcloud."""


@dataclass(frozen=True)
class DataDisk:
    """The stateful data disk (`device` is its device name in the template): formatted ext4
    only when it holds no file system, mounted at `path`, its root open to every user with
    the sticky bit, as /tmp is."""

    device: str
    path: str


@dataclass(frozen=True)
class GcsMount:
    """A bucket mounted with gcsfuse; `implicit_dirs` shows prefixes written by other tools as
    directories, as the provisioning tool did. Mounted by root with `allow_other`: read-write
    mounts open files and directories to every user (GCS has no per-user permissions; the VMs'
    account writes every object), read-only mounts stay read-only for everyone."""

    bucket: str
    path: str
    read_only: bool = False


@dataclass(frozen=True)
class NfsMount:
    """A Filestore share; `server` is the instance's IP."""

    server: str
    share: str
    path: str


@dataclass(frozen=True)
class OpsAgent:
    """Installed in the background with random, capped exponential back-off, so that neither a
    slow package mirror nor a failure holds up the mounts, Ray or the user's command. Then
    its config (the DCGM receiver) is written and DCGM installed where the image lacks it."""

    attempts: int = 10
    max_backoff_seconds: int = 32


@dataclass(frozen=True)
class Gib:
    """The NCCL gIB plugin for RDMA NICs (A3 Ultra, A4), held at `version`."""

    version: str = gpudirect.GIB_VERSION


@dataclass(frozen=True)
class GpuDirect:
    """GPUDirect-TCPX or -TCPXO: the NCCL plugin installed once per boot, RxDM under systemd."""

    stack: GpuDirectStack


@dataclass(frozen=True)
class Ray:
    """A Ray node under systemd. The head is elected among the group's own managed instances
    that are RUNNING with no pending action: a member that already serves a head is joined,
    else the first by name leads. The group's name carries the stack's prefix, so two stacks
    in one project never meet."""

    group: str
    zone: str
    gpus_per_vm: int
    version: str = RAY_VERSION
    port: int = RAY_PORT


@dataclass(frozen=True)
class Command:
    """The user's `startupCommand`, run last, as root, by `bash -c`."""

    command: str


@dataclass(frozen=True)
class HostSsh:
    """Passwordless SSH among the group's running members, by host-based authentication: a
    member's sshd trusts the others' IPs (shosts.equiv) when they prove their host key (read
    from their guest attributes `hostkeys/<type>`, where the guest agent publishes the keys
    it makes for each new instance id, guest-agent 20260724.00 instance_setup.go
    generateSSHKeys, and gcloud's `compute ssh` reads them), and OS Login still decides who
    logs in. Cluster Toolkit's `configure_ssh_host_patterns` (v1.95.0 modules/scripts/
    startup-script/files/configure-ssh.yml, setup-ssh-keys.yml) instead gives each user a key
    on a shared /home and turns StrictHostKeyChecking off; these VMs have no shared /home.
    Refreshed by a timer, with the MPI hostfile. Guest attributes take writes from any local
    process, so a user could publish a forged key: the checks allow this step only where
    every login has sudo (`checks.FORGED_HOST_KEY`)."""

    group: str
    zone: str
    gpus_per_vm: int
    refresh_seconds: int = 60
    list_attempts: int = 8
    list_backoff_seconds: int = 32
    """The first list at boot is tried this often, a random 1 to 2, 4, ... 32 s apart (at
    most 2 + 4 + 8 + 16 + 32 x 3 = 126 s of waiting), inside the startup wait's bound."""


Step = (
    DataDisk
    | LocalScratch
    | VolumeMount
    | GcsMount
    | NfsMount
    | OpsAgent
    | Gib
    | GpuDirect
    | Ray
    | HostSsh
    | Command
)

_LIBRARY = """\
export PATH="{conda}:$PATH"

# mount_data_disk DEVICE_NAME PATH: formats only a disk without a file system, so a recreated
# VM finds its data.
mount_data_disk() {{
  local device="$ROOT/dev/disk/by-id/google-$1"
  if is_mounted "$2"; then
    log "$2 is mounted already"
    return 0
  fi
  retry 10 8 test -e "$device" || return 1
  if ! blkid "$device" >/dev/null; then
    log "formatting the new data disk $1"
    mkfs.ext4 -q -m 0 -E lazy_itable_init=0,lazy_journal_init=0,discard "$device" || return 1
    mkdir -p "$ROOT$2" && mount -o discard,defaults "$device" "$ROOT$2" &&
      chmod 1777 "$ROOT$2"
    return
  fi
  mkdir -p "$ROOT$2" && mount -o discard,defaults "$device" "$ROOT$2"
}}

# install_ops_agent SCRIPT_URL VERSION: the repository script calls apt-get itself, so it
# runs holding the script's apt lock, never beside the mounts' installs.
install_ops_agent() {{
  local script
  script=$(mktemp) || return 1
  curl -fsSL -o "$script" "$1" && serially bash "$script" --also-install --version="$2"
}}

# configure_ops_agent DCGM_VERSION < CONFIG: the DCGM receiver, and DCGM where it is missing.
configure_ops_agent() {{
  write_file {ops_config} 0644 || return 1
  if ! systemctl cat nvidia-dcgm.service >/dev/null 2>&1; then
    apt_install "datacenter-gpu-manager=$1" ||
      log "DCGM not installed: GPU metrics come from NVML only"
  fi
  systemctl is-active --quiet nvidia-dcgm || systemctl enable --now nvidia-dcgm ||
    log "nvidia-dcgm did not start: GPU metrics come from NVML only"
  if ((WROTE)); then systemctl restart google-cloud-ops-agent; fi
}}

install_gib() {{
  google_apt_key || return 1
  artifact_registry_key || return 1
  apt_source artifact-registry \\
    "deb [signed-by=/usr/share/keyrings/cloud.google.gpg] {ar_transport}" || return 1
  apt_install apt-transport-artifact-registry || return 1
  apt_source gpudirect-gib \\
    "deb [signed-by=/usr/share/keyrings/artifact-registry.gpg] {gib_repo}" || return 1
  apt_install "nccl-gib=$1" && serially apt-mark hold nccl-gib
}}

# install_gpudirect HOST_FILE PLUGIN_IMAGE PLUGIN_ARGS... -- MODULES...
install_gpudirect() {{
  local host_file=$1 image=$2 args=() module
  shift 2
  while (($#)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
  shift
  if ! command -v docker >/dev/null; then
    log "GPUDirect needs docker and the NVIDIA container toolkit in the image"
    return 1
  fi
  if [[ ! -e $ROOT$host_file ]]; then
    log "GPUDirect needs $host_file, which an image prepared for it provides"
    return 1
  fi
  for module in "$@"; do modprobe "$module" || return 1; done
  retry 5 32 docker run --rm --network=host -v /var/lib:/var/lib "$image" "${{args[@]}}"
}}

# ray_venv VERSION: a venv of its own, since Ubuntu 24.04 refuses pip into the system Python
# (PEP 668); system site packages keep the image's PyTorch importable from Ray tasks.
ray_venv() {{
  local venv="$ROOT/opt/ai-infra/ray-$1"
  id ray >/dev/null 2>&1 || useradd --system --create-home ray || return 1
  if [[ ! -x $venv/bin/ray ]]; then
    python3 -m venv --system-site-packages "$venv" &&
      retry 5 32 "$venv/bin/pip" install --quiet "ray[default]==$1"
  fi
}}
"""


def _unit(sections: dict[str, dict[str, str | Sequence[str]]]) -> str:
    lines = []
    for section, keys in sections.items():
        lines.append(f"[{section}]")
        for key, value in keys.items():
            values = [value] if isinstance(value, str) else list(value)
            lines += [f"{key}={v}" for v in values]
        lines.append("")
    return "\n".join(lines)


def ray_node_script(ray: Ray) -> str:
    """What the Ray unit runs on every start: elect, then `ray start --block` in the
    foreground, so that systemd restarts a node whose head went away and it elects again."""
    return f"""\
#!/bin/bash
# Ray node of the GPU cluster {ray.group}, rendered by ai-infra (components/gpu_clusters/boot.py).
set -uo pipefail
ROOT=${{AI_INFRA_ROOT:-}}
group={shlex.quote(ray.group)}
zone={shlex.quote(ray.zone)}
port={ray.port}
gpus={ray.gpus_per_vm}
ray="$ROOT/opt/ai-infra/ray-{ray.version}/bin/ray"
log() {{ echo "ai-infra-ray: $*" >&2; }}
if [[ -r $ROOT{NCCL_PROFILE} ]]; then . "$ROOT{NCCL_PROFILE}"; fi

# The group's members that can lead: RUNNING, with no action pending (not stopping, being
# preempted, repaired or recreated). A VM of another group, or another stack, never shows.
members() {{
  gcloud compute instance-groups managed list-instances "$group" --zone="$zone" \\
    --format="value(name,instanceStatus,currentAction)" |
    awk '$2 == "RUNNING" && $3 == "NONE" {{print $1}}' | LC_ALL=C sort
}}
head_up() {{ timeout 3 bash -c ': >"/dev/tcp/$1/$2"' probe "$1" "$port"; }}

me=$(hostname)
list=$(members) || {{ log "cannot list the group $group"; exit 1; }}
if [[ -z $list ]]; then
  log "no member of $group is running yet"
  exit 1
fi
# A head that runs already keeps its cluster: a VM added later joins it even if its name
# sorts first.
head=""
for member in $list; do
  if [[ $member != "$me" ]] && head_up "$member"; then
    head=$member
    break
  fi
done
if [[ -z $head ]]; then
  first=${{list%%$'\\n'*}}
  if [[ $first == "$me" ]]; then
    log "no Ray head in $group: $me leads"
    exec "$ray" start --head --port="$port" --num-gpus="$gpus" --disable-usage-stats --block
  fi
  for _ in $(seq 30); do
    if head_up "$first"; then
      head=$first
      break
    fi
    sleep 10
  done
  if [[ -z $head ]]; then
    log "the elected head $first did not come up"
    exit 1
  fi
fi
log "joining the Ray head $head:$port"
exec "$ray" start --address="$head:$port" --num-gpus="$gpus" --disable-usage-stats --block
"""


def ray_unit(ray: Ray) -> str:
    """The Ray node as a service: restarted whenever it exits, so a node whose head went away
    (preempted, host maintenance) elects again and rejoins. `UMask=0000` leaves the session
    directory under /tmp/ray open, so that other users' Python (`ray.init("auto")`) can
    connect to the local raylet and write its logs."""
    return _unit(
        {
            "Unit": {
                "Description": f"Ray node of the GPU cluster {ray.group} (ai-infra)",
                "Wants": "network-online.target",
                "After": "network-online.target",
            },
            "Service": {
                "Type": "simple",
                "User": "ray",
                "UMask": "0000",
                "Environment": f"PATH={SERVICE_PATH}",
                "ExecStart": RAY_NODE,
                "ExecStop": f"/opt/ai-infra/ray-{ray.version}/bin/ray stop",
                "Restart": "always",
                "RestartSec": "15",
            },
            "Install": {"WantedBy": "multi-user.target"},
        }
    )


def hosts_script(ssh: HostSsh) -> str:
    """What the timer runs: the group's RUNNING members, each with its IP (the VPC's internal
    DNS) and host keys (its guest attributes, read once per instance id), written as the
    known hosts and shosts.equiv sshd trusts and as the MPI hostfile. A member that has not
    published its keys yet is left out until a later run."""
    return f"""\
#!/bin/bash
# Hosts of the GPU cluster {ssh.group}, rendered by ai-infra (components/gpu_clusters/boot.py).
set -uo pipefail
ROOT=${{AI_INFRA_ROOT:-}}
group={shlex.quote(ssh.group)}
zone={shlex.quote(ssh.zone)}
slots={ssh.gpus_per_vm}
cache="$ROOT{HOSTS_CACHE}"
log() {{ echo "ai-infra-hosts: $*" >&2; }}

# put PATH MODE < CONTENT: replaced whole, and only when it changed.
put() {{
  local path=$ROOT$1 tmp
  mkdir -p "$(dirname "$path")" && tmp=$(mktemp "$path.XXXXXX") || return 1
  if ! cat >"$tmp" || ! chmod "$2" "$tmp"; then
    rm -f "$tmp"
    return 1
  fi
  if cmp -s "$tmp" "$path"; then rm -f "$tmp"; else mv -f "$tmp" "$path"; fi
}}

list=$(gcloud compute instance-groups managed list-instances "$group" --zone="$zone" \\
  --format="value(name,instanceStatus,id)" | awk '$2 == "RUNNING" {{print $1, $3}}' |
  LC_ALL=C sort) || {{ log "cannot list the group $group"; exit 1; }}
mkdir -p "$cache" || exit 1
declare -A keep=()
known="" equiv="" hostfile=""
while read -r name id; do
  [[ -n $name ]] || continue
  # A recreated member keeps its name, not its id nor its host keys.
  entry="$cache/$name.$id"
  keep["$name.$id"]=1
  if [[ ! -s $entry ]]; then
    keys=$(gcloud compute instances get-guest-attributes "$name" --zone="$zone" \\
      --query-path=hostkeys/ --format="value(key,value)") || keys=""
    # Only well-formed keys, so that no value is read as a known_hosts marker or option.
    keys=$(grep -E '^(ssh-[a-z0-9-]+|ecdsa-sha2-nistp[0-9]+)[[:space:]]+[A-Za-z0-9+/]+=*$' \\
      <<<"$keys")
    if [[ -z $keys ]]; then
      log "$name has published no host key yet"
      continue
    fi
    printf '%s\\n' "$keys" >"$entry.tmp" && mv -f "$entry.tmp" "$entry" || exit 1
  fi
  ip=$(getent ahostsv4 "$name" | awk 'NR == 1 {{print $1}}')
  if [[ -z $ip ]]; then
    log "$name does not resolve yet"
    continue
  fi
  while read -r type key; do known+="$name,$ip $type $key"$'\\n'; done <"$entry"
  equiv+="$ip"$'\\n'
  hostfile+="$name slots=$slots"$'\\n'
done <<<"$list"
for entry in "$cache"/*; do
  [[ -e $entry && -z ${{keep[${{entry##*/}}]:-}} ]] && rm -f "$entry"
done
printf '%s' "$known" | put {KNOWN_HOSTS} 0644 &&
  printf '%s' "$equiv" | put {SHOSTS_EQUIV} 0644 &&
  printf '%s' "$hostfile" | put {HOSTFILE} 0644
"""


def sshd_config(ssh: HostSsh) -> str:
    """sshd takes each keyword's first value, and Debian and Ubuntu include sshd_config.d
    first. With `UseDNS no` sshd matches a client by its IP in shosts.equiv and in the known
    hosts (OpenSSH 9.2p1 auth.c auth_get_canonical_hostname, auth2-hostbased.c), so neither a
    forged reverse name nor the name the client sends counts."""
    return (
        f"# ai-infra: host-based SSH among the VMs of GPU cluster {ssh.group}; OS Login still\n"
        f"# decides who logs in. Trusted hosts: {SHOSTS_EQUIV} (ai-infra-hosts refreshes it).\n"
        "HostbasedAuthentication yes\n"
        "HostbasedUsesNameFromPacketOnly no\n"
        "UseDNS no\n"
    )


def ssh_config(ssh: HostSsh) -> str:
    """ssh-keysign reads the system file for host "" (OpenSSH 9.2p1 ssh-keysign.c), so
    `EnableSSHKeysign` stays outside the `Host` block."""
    return (
        f"# ai-infra: sign host-based logins to the VMs of GPU cluster {ssh.group}.\n"
        "EnableSSHKeysign yes\n"
        f"Host {ssh.group}-*\n"
        "  HostbasedAuthentication yes\n"
    )


def hosts_units(ssh: HostSsh) -> tuple[str, str]:
    """The refresh as a oneshot service and the timer that runs it."""
    service = _unit(
        {
            "Unit": {
                "Description": f"Hosts of the GPU cluster {ssh.group} (ai-infra)",
                "Wants": "network-online.target",
                "After": "network-online.target",
            },
            "Service": {
                "Type": "oneshot",
                "Environment": f"PATH={SERVICE_PATH}",
                "ExecStart": HOSTS_SCRIPT,
            },
        }
    )
    timer = _unit(
        {
            "Unit": {"Description": f"Refresh the hosts of the GPU cluster {ssh.group}"},
            "Timer": {
                "OnActiveSec": f"{ssh.refresh_seconds}s",
                "OnUnitActiveSec": f"{ssh.refresh_seconds}s",
            },
            "Install": {"WantedBy": "timers.target"},
        }
    )
    return service, timer


RAY_PROFILE_TEXT = """\
# ai-infra: ray.init() and `ray` commands join this VM's Ray cluster, whichever VM leads it
# (`auto` reads /tmp/ray/ray_current_cluster, which every node's `ray start` writes).
export RAY_ADDRESS=auto
"""


def _exports(env: dict[str, str]) -> list[str]:
    # Values may expand LD_LIBRARY_PATH, so they are double-quoted, never single.
    for value in env.values():
        if '"' in value or "`" in value or "$(" in value:
            raise ValueError(f"environment value {value!r} cannot be double-quoted safely")
    return [f'export {key}="{value}"' for key, value in env.items()]


def gib_profile() -> str:
    libraries = f"{gpudirect.GIB_LIBRARIES}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
    return "\n".join(
        [
            "# ai-infra: NCCL over RDMA with the gIB plugin (Cluster Toolkit's nccl-gib.sh).",
            f"if [ -f {gpudirect.GIB_PROFILE} ]; then . {gpudirect.GIB_PROFILE}; fi",
            *_exports({"LD_LIBRARY_PATH": libraries}),
            "",
        ]
    )


def gpudirect_profile(stack: GpuDirectStack) -> str:
    lines = [f"# ai-infra: NCCL over GPUDirect-{stack.transport.upper()}."]
    if stack.profile:
        # As a prefix assignment, NCCL_LIB_DIR holds while the profile is read (bash) or
        # stays set (dash, for which `.` is a special built-in); either way it is set first.
        lib_dir = f"NCCL_LIB_DIR={stack.profile_lib_dir} " if stack.profile_lib_dir else ""
        lines.append(f"if [ -f {stack.profile} ]; then {lib_dir}. {stack.profile}; fi")
    return "\n".join([*lines, *_exports(stack.env), ""])


def rxdm_unit(stack: GpuDirectStack) -> str:
    run = line(
        "/usr/bin/docker",
        "run",
        "--rm",
        "--name",
        "ai-infra-rxdm",
        *stack.rxdm_docker_args,
        stack.rxdm_image,
        *stack.rxdm_args,
    )
    return _unit(
        {
            "Unit": {
                "Description": f"GPUDirect-{stack.transport.upper()} receive datapath manager",
                "Requires": "docker.service",
                "After": "docker.service",
                "Before": RAY_UNIT,
            },
            "Service": {
                "ExecStartPre": "-/usr/bin/docker rm -f ai-infra-rxdm",
                "ExecStart": run,
                "ExecStop": "/usr/bin/docker stop ai-infra-rxdm",
                "Restart": "always",
                "RestartSec": "10",
            },
            "Install": {"WantedBy": "multi-user.target"},
        }
    )


def _block(step: Step) -> Block:
    match step:
        case LocalScratch() | VolumeMount():
            return storage_boot.block(step)
        case DataDisk(device, path):
            return Block(f"data disk {path}", (f"mount_data_disk {line(device, path)} || fail",))
        case GcsMount(bucket, path, read_only):
            mode = "ro" if read_only else "rw"
            mount = line(bucket, path, mode, GCSFUSE_VERSION)
            return Block(f"gcsfuse {bucket} {path}", (f"mount_gcs {mount} || fail",))
        case NfsMount(server, share, path):
            return Block(f"nfs {path}", (f"mount_nfs {line(server, share, path)} || fail",))
        case OpsAgent(attempts, max_backoff):
            install = line(
                "retry", attempts, max_backoff, "install_ops_agent", OPS_AGENT_REPO_SCRIPT
            )
            return Block(
                "Ops Agent",
                (
                    "  if systemctl is-active --quiet google-cloud-ops-agent; then",
                    '    log "Ops Agent already running"',
                    f"  elif ! {install} {shlex.quote(OPS_AGENT_VERSION)}; then",
                    "    log 'Ops Agent not installed; logs and GPU metrics stay local'",
                    "    exit 0",
                    "  fi",
                    *heredoc(
                        f"configure_ops_agent {shlex.quote(monitoring.DCGM_VERSION)}",
                        monitoring.ops_agent_config(),
                    ),
                ),
                background=True,
            )
        case Gib(version):
            return Block(
                "NCCL gIB plugin",
                (
                    f"install_gib {shlex.quote(version)} || fail",
                    *heredoc(f"write_file {NCCL_PROFILE} 0644", gib_profile()),
                ),
            )
        case GpuDirect(stack):
            install = line(
                "install_gpudirect",
                stack.host_file,
                stack.plugin_image,
                *stack.plugin_args,
                "--",
                *stack.modules,
            )
            return Block(
                f"GPUDirect-{stack.transport.upper()}",
                (
                    f"if {install}; then",
                    *heredoc(f"write_file {NCCL_PROFILE} 0644", gpudirect_profile(stack)),
                    *heredoc(f"write_file /etc/systemd/system/{RXDM_UNIT} 0644", rxdm_unit(stack)),
                    f"  start_unit {RXDM_UNIT} || fail 'receive datapath manager'",
                    "else",
                    "  fail",
                    "fi",
                ),
            )
        case Ray():
            return Block(
                "ray",
                (
                    f"if ray_venv {shlex.quote(step.version)}; then",
                    *heredoc(f"write_file {RAY_NODE} 0755", ray_node_script(step)),
                    *heredoc(f"write_file /etc/systemd/system/{RAY_UNIT} 0644", ray_unit(step)),
                    *heredoc(f"write_file {RAY_PROFILE} 0644", RAY_PROFILE_TEXT),
                    f"  start_unit {RAY_UNIT} || fail 'the unit did not start'",
                    "else",
                    "  fail 'install'",
                    "fi",
                ),
            )
        case HostSsh():
            service, timer = hosts_units(step)
            return Block(
                "ssh among VMs",
                (
                    *heredoc(f"write_file {SSHD_DROP_IN} 0644", sshd_config(step)),
                    "if ((WROTE)); then",
                    "  systemctl try-reload-or-restart ssh.service || fail sshd",
                    "fi",
                    *heredoc(f"write_file {SSH_DROP_IN} 0644", ssh_config(step)),
                    *heredoc(f"write_file {HOSTS_SCRIPT} 0755", hosts_script(step)),
                    *heredoc(f"write_file /etc/systemd/system/{HOSTS_UNIT} 0644", service),
                    *heredoc(f"write_file /etc/systemd/system/{HOSTS_TIMER} 0644", timer),
                    # IAM grants reach a new VM's account a minute or two after it boots
                    # (IAM "Access change propagation"): a refused list is tried again.
                    line("retry", step.list_attempts, step.list_backoff_seconds)
                    + f' "$ROOT{HOSTS_SCRIPT}" || fail "the host list"',
                    f"start_unit {HOSTS_TIMER} || fail 'the refresh timer'",
                ),
            )
        case Command(command):
            return Block(
                "startupCommand",
                ('log "running startupCommand"', f"bash -c {shlex.quote(command)} || fail"),
            )


def render(steps: Sequence[Step]) -> str:
    """The script; the steps run in the order given, the Ops Agent alongside them, and the
    readiness signal names the first that failed."""
    library = storage_boot.LIBRARY + _LIBRARY.format(
        conda=CONDA_BIN,
        ops_config=monitoring.OPS_AGENT_CONFIG_PATH,
        ar_transport=gpudirect.AR_TRANSPORT_REPO,
        gib_repo=gpudirect.GIB_REPO,
    )
    return startup.render(
        [_block(step) for step in steps],
        source="components/gpu_clusters/boot.py",
        library=library,
    )
