"""The boot scripts of the Slurm cluster's VMs, rendered from structured data.

Slurm-GCP v6's boot contract, as its setup.py expects it: read `slurm_bucket_path` and
`slurm_instance_role` from the metadata server, download the role's script zip from the bucket
(`slurm-gcp-devel-controller.zip` on the controller, `slurm-gcp-devel.zip` elsewhere), unpack it
into /slurm/scripts for the slurm user, and run setup.py once. A TPU VM instead starts the
slurmd container (SchedMD's image, `slurm_docker_image`) with the worker's Slurm node name from
`slurm_names`, whose systemd runs the image's own boot inside (`OS_ENV=slurm_container`), which
fetches `slurm-gcp-devel.zip` from the same bucket path and runs setup.py (slurm-gcp
scripts/startup.sh, at 13fd92b6). Paths are data, so tests render the same
script into a scratch directory and run it under bash with stub commands.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from components.locations import ZONES

METADATA_URL = "http://metadata.google.internal/computeMetadata/v1/instance"
ZIP_BY_ROLE = {"controller": "slurm-gcp-devel-controller.zip"}
DEFAULT_ZIP = "slurm-gcp-devel.zip"
TPU_NODE_SCRIPT = "ai-infra-tpu-startup.sh"
"""The controller hands the contents of `<scripts>/startup.sh` to every TPU VM it creates as
its startup-script (slurm_files/scripts/tpu.py); the controller's boot installs ours there
from this object in the bucket."""
DEFAULT_REGISTRIES = ("gcr.io", "us-docker.pkg.dev")
"""Registries the TPU VM's docker always authenticates to with gcloud's credential helper:
SchedMD's slurmd images are in us-docker.pkg.dev."""
GOOGLE_REGISTRY = re.compile(
    r"(?P<location>[a-z]+(?:-[a-z]+[0-9]+)?)-docker\.pkg\.dev|(?:(?:us|eu|asia)\.)?gcr\.io"
)
"""Artifact Registry's Docker hosts, `LOCATION-docker.pkg.dev` for a region or the us,
europe and asia multi-regions ("Repository locations"), and Container Registry's gcr.io hosts,
which `gcloud auth configure-docker HOST` sets its credential helper for."""
AR_MULTI_REGIONS = ("us", "europe", "asia")


@dataclass(frozen=True)
class BootScript:
    """One VM's boot: where things go, and how often to ask the bucket again."""

    kind: Literal["vm", "tpu"]
    """`vm`: the controller, a login node or a CPU node; `tpu`: a TPU VM the controller
    creates."""
    scripts_dir: str = "/slurm/scripts"
    flag_file: str = "/slurm/slurm_configured_do_not_remove"
    work_dir: str = "/tmp"
    retry_seconds: int = 5
    gcloud_gce_marker: str = "/root/.config/gcloud/gce"
    """gcloud's cached answer to "am I on GCE?", which can be stuck at no; upstream's boot
    deletes it before each retry (instance_template files/startup_sh_unlinted)."""
    install_tpu_script: bool = False
    """On the controller: install the TPU VMs' boot script as `<scripts_dir>/startup.sh`."""
    registries: tuple[str, ...] = DEFAULT_REGISTRIES
    """On a TPU VM: the registries Docker authenticates to, those of every TPU nodeset's
    slurmd image (one script serves all nodesets)."""
    local_ssd_mount: str | None = None
    """On a node with local SSDs: where to mount them, striped into one array, at every boot
    before Slurm's setup (their data may be gone after a host event)."""
    local_ssd_dir: str = "/dev/disk/by-id"
    local_ssd_array: str = "/dev/md/localssd"
    docker_config_dir: str = "/root/.docker"
    cgroup_dir: str = "/sys/fs/cgroup"
    systemd_dir: str = "/etc/systemd/system"


def registry_problem(registry: str) -> str | None:
    """Why a TPU VM's Docker cannot pull from `registry` with gcloud's credentials, or None."""
    match = GOOGLE_REGISTRY.fullmatch(registry)
    location = match["location"] if match else None
    if match and (location is None or location in AR_MULTI_REGIONS or location in ZONES):
        return None
    return (
        f"TPU VMs pull with Docker authenticated to Google's registries only (Artifact "
        f"Registry's REGION-docker.pkg.dev, us-, europe- or asia-docker.pkg.dev, or gcr.io), "
        f"not {registry}; push the image to an Artifact Registry repository"
    )


def _q(value: str | int) -> str:
    return shlex.quote(str(value))


def render(boot: BootScript) -> str:
    lines = [
        "#!/bin/bash",
        "# Rendered by ai-infra (components/slurm/boot.py); Slurm-GCP v6 boot contract.",
        "set -euo pipefail",
        f"readonly SCRIPTS={_q(boot.scripts_dir)}",
        f"readonly FLAG={_q(boot.flag_file)}",
        f"readonly META={_q(METADATA_URL)}",
        *_local_ssd_lines(boot),
        "metadata() { curl -sS --fail -H 'Metadata-Flavor: Google' \"$META/$1\"; }",
        "BUCKET=$(metadata attributes/slurm_bucket_path)",
        "ROLE=$(metadata attributes/slurm_instance_role)",
        'if [[ -z "$BUCKET" || -z "$ROLE" ]]; then',
        '  echo "slurm_bucket_path and slurm_instance_role must be set" >&2; exit 1',
        "fi",
        'case "$ROLE" in',
        *(f"  {_q(role)}) ZIP={_q(name)} ;;" for role, name in sorted(ZIP_BY_ROLE.items())),
        f"  *) ZIP={_q(DEFAULT_ZIP)} ;;",
        "esac",
        f"readonly ARCHIVE={_q(boot.work_dir)}/slurm-gcp-scripts.zip",
        'mkdir -p "$SCRIPTS"',
        # Until the object is there and readable, however long that takes (a slow first
        # `pulumi up`, grants still propagating): upstream's boot never gives up either, and
        # a VM that stopped trying would stay down until someone reboots it.
        "fetch() {",
        '  until gcloud storage cp "$1" "$2"; do',
        f'    echo "could not download $1; retrying in {int(boot.retry_seconds)} s" >&2',
        f"    rm -f {_q(boot.gcloud_gce_marker)}",
        f"    sleep {int(boot.retry_seconds)}",
        "  done",
        "}",
        'fetch "$BUCKET/$ZIP" "$ARCHIVE"',
        'unzip -o -q "$ARCHIVE" -d "$SCRIPTS"',
        'rm -f "$ARCHIVE"',
    ]
    if boot.install_tpu_script:
        lines += [
            f'fetch "$BUCKET/{TPU_NODE_SCRIPT}" "$SCRIPTS/startup.sh"',
        ]
    lines += [
        # The TPU VM host has no slurm user; its slurmd runs in the container.
        'chown -R slurm:slurm "$SCRIPTS" || true',
        'chmod -R 700 "$SCRIPTS"',
    ]
    lines += [
        # Set up once; on a reboot slurmd (or its container) comes back by itself.
        'if [[ -e "$FLAG" ]]; then echo "Slurm is already set up"; exit 0; fi',
        'touch "$FLAG"',
    ]
    if boot.kind == "tpu":
        lines += _tpu_lines(boot)
    lines.append('exec "$SCRIPTS/setup.py"')
    return "\n".join(lines) + "\n"


def _local_ssd_lines(boot: BootScript) -> list[str]:
    """Stripe the NVMe local SSDs into one RAID 0 array, format it ext4 when it has no file
    system, and mount it world-writable with the sticky bit, as Toolkit's startup-script
    `local_ssd_filesystem` (setup-raid.yml) does; a mount already there is left alone."""
    if boot.local_ssd_mount is None:
        return []
    mount, array = _q(boot.local_ssd_mount), _q(boot.local_ssd_array)
    return [
        "shopt -s nullglob",
        f"SSDS=({_q(boot.local_ssd_dir)}/google-local-nvme-ssd-*)",
        "shopt -u nullglob",
        'if (( ${#SSDS[@]} == 0 )); then echo "no local SSD on this VM" >&2; exit 1; fi',
        f"if ! mountpoint -q {mount}; then",
        "  command -v mdadm >/dev/null || dnf install -y mdadm",
        f"  if [[ ! -e {array} ]]; then",
        f"    mdadm --create {array} --name=localssd --homehost=any --level=0 "
        '--raid-devices="${#SSDS[@]}" --force --run "${SSDS[@]}"',
        "  fi",
        f"  if ! blkid {array} >/dev/null 2>&1; then mkfs -t ext4 -m 0 {array}; fi",
        f"  mkdir -p {mount}",
        f"  mount -t ext4 -o discard,defaults,nofail {array} {mount}",
        f"  chmod 1777 {mount}",
        "fi",
    ]


def _tpu_lines(boot: BootScript) -> list[str]:
    helpers = ", ".join(f'"{r}": "gcloud"' for r in sorted(set(boot.registries)))
    docker_config = "{" + f'"credHelpers": {{{helpers}}}' + "}"
    return [
        # Inside the slurmd container systemd runs the image's own boot with this set.
        'if [[ "${OS_ENV:-}" != "slurm_container" ]]; then',
        "  IMAGE=$(metadata attributes/slurm_docker_image)",
        "  NAMES=$(metadata attributes/slurm_names)",
        "  WORKER=$(metadata attributes/tpu-env | awk -F\"'\" '/^WORKER_ID:/ {print $2}')",
        # slurm_names is `WORKER_0:<node>;WORKER_1:<node>;...` (tpu.py create_node).
        '  NODE=""',
        "  IFS=';' read -r -a PAIRS <<< \"$NAMES\"",
        '  for pair in "${PAIRS[@]}"; do',
        '    if [[ "${pair%%:*}" == "WORKER_${WORKER}" ]]; then NODE="${pair#*:}"; fi',
        "  done",
        '  if [[ ! "$NODE" =~ ^[a-z][-a-z0-9]*$ ]]; then',
        '    echo "no Slurm node name for worker ${WORKER} in slurm_names" >&2; exit 1',
        "  fi",
        f"  mkdir -p {_q(boot.docker_config_dir)}",
        f"  printf '%s\\n' {_q(docker_config)} > {_q(boot.docker_config_dir)}/config.json",
        f"  if [[ -f {_q(boot.cgroup_dir)}/cgroup.controllers ]]; then",
        # cgroup v2: systemd in the container needs its own cgroup namespace under a slice.
        "    CGROUP=(--cgroup-parent=docker.slice --cgroupns=private --tmpfs /run "
        "--tmpfs /run/lock --tmpfs /tmp)",
        f"    if [[ ! -f {_q(boot.systemd_dir)}/docker.slice ]]; then",
        "      printf '[Unit]\\nDescription=docker slice\\nBefore=slices.target\\n[Slice]\\n"
        f"CPUAccounting=true\\nMemoryAccounting=true\\n' > {_q(boot.systemd_dir)}/docker.slice",
        "      systemctl start docker.slice",
        "    fi",
        "  else",
        f"    CGROUP=(-v {_q(boot.cgroup_dir)}:/sys/fs/cgroup:rw)",
        "  fi",
        # --privileged: the container reaches the TPU devices and runs systemd.
        '  docker run -d "${CGROUP[@]}" --privileged --net=host --name=slurmd '
        '--hostname="$NODE" --entrypoint=/usr/bin/systemd --restart unless-stopped "$IMAGE"',
        "  exit 0",
        "fi",
    ]
