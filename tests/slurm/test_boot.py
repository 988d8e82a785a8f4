"""The Slurm VMs' boot scripts, run under bash against stub commands: metadata from a table,
the bucket from a directory, docker and systemctl recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from components.slurm.boot import DEFAULT_REGISTRIES, BootScript, render

STUBS = {
    "curl": """#!/bin/bash
url="${@: -1}"; key="${url#*/instance/}"; file="$STUB_META/${key//\\//_}"
[[ -f "$file" ]] || exit 22
cat "$file"
""",
    # Each object is unreadable for its first STUB_FAILS copies, and each failure leaves
    # gcloud's "not on GCE" marker behind, as a confused gcloud would.
    "gcloud": """#!/bin/bash
echo "gcloud $*" >> "$STUB_LOG"
[[ "$1 $2" == "storage cp" ]] || exit 2
if [[ -e "$STUB_MARKER" ]]; then echo "stale gce marker seen" >> "$STUB_LOG"; fi
count=$(grep -c -F "gcloud storage cp $3 " "$STUB_LOG")
if (( count <= ${STUB_FAILS:-0} )); then
  mkdir -p "${STUB_MARKER%/*}"; touch "$STUB_MARKER"; exit 1
fi
cp "$STUB_BUCKET/${3#gs://bucket/files/}" "$4"
""",
    "unzip": f"""#!/bin/bash
echo "unzip $*" >> "$STUB_LOG"
"{sys.executable}" -m zipfile -e "$3" "$5"
""",
    "chown": '#!/bin/bash\necho "chown $*" >> "$STUB_LOG"\n',
    "sleep": '#!/bin/bash\necho "sleep $*" >> "$STUB_LOG"\n',
    "docker": '#!/bin/bash\necho "docker $*" >> "$STUB_LOG"\n',
    "systemctl": '#!/bin/bash\necho "systemctl $*" >> "$STUB_LOG"\n',
}


class Vm:
    """A scratch VM: stub commands, metadata, a bucket and a root for the script's paths."""

    def __init__(self, root: Path, metadata: dict[str, str]) -> None:
        self.root = root
        self.log = root / "log"
        self.log.touch()
        stubs = root / "bin"
        stubs.mkdir()
        for name, text in STUBS.items():
            (stubs / name).write_text(text)
            (stubs / name).chmod(0o755)
        self.meta = root / "meta"
        self.meta.mkdir()
        for key, value in metadata.items():
            (self.meta / key.replace("/", "_")).write_text(value)
        self.bucket = root / "bucket"
        self.bucket.mkdir()
        self.marker = root / "gcloud/gce"
        setup = '#!/bin/bash\necho "setup.py as $(basename "$0")" >> "$STUB_LOG"\n'
        for name in ("slurm-gcp-devel-controller.zip", "slurm-gcp-devel.zip"):
            with zipfile.ZipFile(self.bucket / name, "w") as archive:
                archive.writestr("setup.py", setup)
                archive.writestr("util.py", f"# from {name}\n")
        (self.bucket / "ai-infra-tpu-startup.sh").write_text("# tpu boot\n")
        self.env = {
            "PATH": f"{stubs}:/usr/bin:/bin",
            "STUB_LOG": str(self.log),
            "STUB_META": str(self.meta),
            "STUB_BUCKET": str(self.bucket),
            "STUB_MARKER": str(self.marker),
        }

    def boot(self, boot: BootScript, **env: str) -> subprocess.CompletedProcess[str]:
        boot = replace(
            boot,
            scripts_dir=str(self.root / "slurm/scripts"),
            flag_file=str(self.root / "slurm/configured"),
            work_dir=str(self.root),
            docker_config_dir=str(self.root / "docker"),
            cgroup_dir=str(self.root / "cgroup"),
            systemd_dir=str(self.root / "systemd"),
            gcloud_gce_marker=str(self.marker),
        )
        script = self.root / "boot.sh"
        script.write_text(render(boot))
        return subprocess.run(
            ["bash", str(script)],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    @property
    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


def vm_metadata(role: str) -> dict[str, str]:
    return {
        "attributes/slurm_bucket_path": "gs://bucket/files",
        "attributes/slurm_instance_role": role,
    }


@pytest.fixture
def controller(tmp_path: Path) -> Vm:
    return Vm(tmp_path, vm_metadata("controller"))


def test_the_controller_unpacks_its_zip_installs_the_tpu_boot_and_runs_setup(controller: Vm):
    result = controller.boot(BootScript(kind="vm", install_tpu_script=True))
    assert result.returncode == 0, result.stderr
    scripts = controller.root / "slurm/scripts"
    assert (scripts / "util.py").read_text() == "# from slurm-gcp-devel-controller.zip\n"
    assert (scripts / "startup.sh").read_text() == "# tpu boot\n"
    assert oct((scripts / "setup.py").stat().st_mode & 0o777) == "0o700"
    assert controller.calls[-1] == "setup.py as setup.py"
    assert f"chown -R slurm:slurm {scripts}" in controller.calls
    assert not (controller.root / "slurm-gcp-scripts.zip").exists()


def test_a_login_node_takes_the_compute_zip(tmp_path: Path):
    vm = Vm(tmp_path, vm_metadata("login"))
    result = vm.boot(BootScript(kind="vm"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "slurm/scripts/util.py").read_text() == "# from slurm-gcp-devel.zip\n"
    assert not (tmp_path / "slurm/scripts/startup.sh").exists()


def test_the_download_is_retried_until_the_bucket_is_ready(controller: Vm):
    result = controller.boot(BootScript(kind="vm"), STUB_FAILS="3")
    assert result.returncode == 0, result.stderr
    assert controller.calls.count("sleep 5") == 3
    assert controller.calls[-1] == "setup.py as setup.py"


def test_a_slow_bucket_is_waited_for_however_long_it_takes(controller: Vm):
    # Upstream retries forever; the old boot gave up after 120 tries (ten minutes).
    result = controller.boot(BootScript(kind="vm"), STUB_FAILS="130")
    assert result.returncode == 0, result.stderr
    assert controller.calls.count("sleep 5") == 130
    assert "could not download gs://bucket/files/slurm-gcp-devel-controller.zip" in result.stderr
    assert controller.calls[-1] == "setup.py as setup.py"


def test_the_controller_waits_for_the_tpu_boot_script_too(controller: Vm):
    result = controller.boot(BootScript(kind="vm", install_tpu_script=True), STUB_FAILS="2")
    assert result.returncode == 0, result.stderr
    assert controller.calls.count("sleep 5") == 4  # two objects, two failures each
    assert (controller.root / "slurm/scripts/startup.sh").read_text() == "# tpu boot\n"
    assert controller.calls[-1] == "setup.py as setup.py"


def test_each_retry_clears_gcloud_s_cached_not_on_gce_answer(controller: Vm):
    result = controller.boot(BootScript(kind="vm"), STUB_FAILS="5")
    assert result.returncode == 0, result.stderr
    # Every failure left the marker; every retry found it gone.
    assert "stale gce marker seen" not in controller.calls
    assert not controller.marker.exists()


def test_a_reboot_fetches_the_scripts_again_but_does_not_set_up_twice(controller: Vm):
    assert controller.boot(BootScript(kind="vm")).returncode == 0
    (controller.root / "slurm/scripts/util.py").write_text("# stale\n")
    again = controller.boot(BootScript(kind="vm"), STUB_FAILS="2")
    assert again.returncode == 0, again.stderr
    assert (controller.root / "slurm/scripts/util.py").read_text() == (
        "# from slurm-gcp-devel-controller.zip\n"
    )
    assert [c for c in controller.calls if c.startswith("setup.py")] == ["setup.py as setup.py"]


def test_missing_metadata_fails_the_boot(tmp_path: Path):
    vm = Vm(tmp_path, {"attributes/slurm_instance_role": "controller"})
    assert vm.boot(BootScript(kind="vm")).returncode != 0
    assert vm.calls == []


def test_setup_runs_once(controller: Vm):
    assert controller.boot(BootScript(kind="vm")).returncode == 0
    again = controller.boot(BootScript(kind="vm"))
    assert again.returncode == 0 and "already set up" in again.stdout
    assert [c for c in controller.calls if c.startswith("setup.py")] == ["setup.py as setup.py"]


def tpu_vm(root: Path, worker: str) -> Vm:
    return Vm(
        root,
        vm_metadata("compute")
        | {
            "attributes/slurm_docker_image": "us-docker.pkg.dev/p/tpu/slurm:tf-2.14.0",
            "attributes/slurm_names": "WORKER_0:tpu-v4-0;WORKER_1:tpu-v4-1",
            "attributes/tpu-env": f"ACCELERATOR_TYPE: 'v4-8'\nWORKER_ID: '{worker}'\n",
        },
    )


def test_a_tpu_vm_starts_the_slurmd_container_as_its_worker_s_node(tmp_path: Path):
    vm = tpu_vm(tmp_path, "1")
    (tmp_path / "cgroup").mkdir()
    (tmp_path / "cgroup/cgroup.controllers").touch()
    (tmp_path / "systemd").mkdir()
    result = vm.boot(BootScript(kind="tpu"))
    assert result.returncode == 0, result.stderr
    [docker] = [c for c in vm.calls if c.startswith("docker ")]
    assert docker == (
        "docker run -d --cgroup-parent=docker.slice --cgroupns=private --tmpfs /run --tmpfs "
        "/run/lock --tmpfs /tmp --privileged --net=host --name=slurmd --hostname=tpu-v4-1 "
        "--entrypoint=/usr/bin/systemd --restart unless-stopped "
        "us-docker.pkg.dev/p/tpu/slurm:tf-2.14.0"
    )
    assert "systemctl start docker.slice" in vm.calls
    assert json.loads((tmp_path / "docker/config.json").read_text()) == {
        "credHelpers": {"gcr.io": "gcloud", "us-docker.pkg.dev": "gcloud"}
    }
    assert not any(c.startswith("setup.py") for c in vm.calls)


def test_a_tpu_vm_on_cgroup_v1_mounts_the_hierarchy(tmp_path: Path):
    vm = tpu_vm(tmp_path, "0")
    result = vm.boot(BootScript(kind="tpu"))
    assert result.returncode == 0, result.stderr
    [docker] = [c for c in vm.calls if c.startswith("docker ")]
    assert f"-v {tmp_path}/cgroup:/sys/fs/cgroup:rw" in docker and "--hostname=tpu-v4-0" in docker


def test_a_tpu_vm_without_its_node_name_refuses_to_start(tmp_path: Path):
    vm = tpu_vm(tmp_path, "7")
    result = vm.boot(BootScript(kind="tpu"))
    assert result.returncode == 1 and "no Slurm node name for worker 7" in result.stderr
    assert not any(c.startswith("docker ") for c in vm.calls)


def test_inside_the_container_setup_runs_instead(tmp_path: Path):
    vm = tpu_vm(tmp_path, "0")
    result = vm.boot(BootScript(kind="tpu"), OS_ENV="slurm_container")
    assert result.returncode == 0, result.stderr
    assert vm.calls[-1] == "setup.py as setup.py"


def test_rendered_values_are_quoted():
    text = render(BootScript(kind="vm", scripts_dir="/opt/my scripts; rm -rf /"))
    assert "readonly SCRIPTS='/opt/my scripts; rm -rf /'" in text


@pytest.mark.skipif(os.name != "posix", reason="bash")
def test_every_rendered_script_parses():
    for boot in (BootScript(kind="vm", install_tpu_script=True), BootScript(kind="tpu")):
        subprocess.run(["bash", "-n"], input=render(boot), text=True, check=True)


def test_a_tpu_vm_authenticates_to_each_registry_the_cluster_s_images_are_in(tmp_path: Path):
    vm = tpu_vm(tmp_path, "0")
    registries = (*DEFAULT_REGISTRIES, "europe-west4-docker.pkg.dev", "us-docker.pkg.dev")
    result = vm.boot(BootScript(kind="tpu", registries=registries))
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "docker/config.json").read_text())["credHelpers"] == {
        "europe-west4-docker.pkg.dev": "gcloud",
        "gcr.io": "gcloud",
        "us-docker.pkg.dev": "gcloud",
    }


SSD_STUBS = {
    "mountpoint": '#!/bin/bash\necho "mountpoint $*" >> "$STUB_LOG"\nexit "${STUB_MOUNTED:-1}"\n',
    "mdadm": '#!/bin/bash\necho "mdadm $*" >> "$STUB_LOG"\ntouch "$2"\n',
    "blkid": '#!/bin/bash\necho "blkid $*" >> "$STUB_LOG"\nexit "${STUB_FS:-2}"\n',
    "mkfs": '#!/bin/bash\necho "mkfs $*" >> "$STUB_LOG"\n',
    "mount": '#!/bin/bash\necho "mount $*" >> "$STUB_LOG"\n',
    "dnf": '#!/bin/bash\necho "dnf $*" >> "$STUB_LOG"\n',
}


def ssd_vm(root: Path, disks: int, *, mdadm: bool = True) -> tuple[Vm, BootScript]:
    vm = Vm(root, vm_metadata("compute"))
    for name, text in SSD_STUBS.items():
        if name == "mdadm" and not mdadm:
            continue
        (root / "bin" / name).write_text(text)
        (root / "bin" / name).chmod(0o755)
    by_id = root / "by-id"
    by_id.mkdir()
    for i in range(disks):
        (by_id / f"google-local-nvme-ssd-{i}").touch()
    (by_id / "google-persistent-disk-0").touch()
    boot = BootScript(
        kind="vm",
        local_ssd_mount=str(root / "mnt/localssd"),
        local_ssd_dir=str(by_id),
        local_ssd_array=str(root / "md/localssd"),
    )
    (root / "md").mkdir()
    return vm, boot


def test_local_ssds_are_striped_formatted_and_mounted_before_setup(tmp_path: Path):
    vm, boot = ssd_vm(tmp_path, 2)
    result = vm.boot(boot)
    assert result.returncode == 0, result.stderr
    array, mount = tmp_path / "md/localssd", tmp_path / "mnt/localssd"
    ssds = [f"{tmp_path}/by-id/google-local-nvme-ssd-{i}" for i in range(2)]
    calls = [c for c in vm.calls if c.split()[0] in ("mdadm", "mkfs", "mount", "dnf")]
    assert calls == [
        f"mdadm --create {array} --name=localssd --homehost=any --level=0 --raid-devices=2 "
        f"--force --run {' '.join(ssds)}",
        f"mkfs -t ext4 -m 0 {array}",
        f"mount -t ext4 -o discard,defaults,nofail {array} {mount}",
    ]
    assert oct(mount.stat().st_mode & 0o7777) == "0o1777"
    assert vm.calls.index(calls[-1]) < vm.calls.index("setup.py as setup.py")


def test_a_reboot_mounts_the_array_again_without_formatting_it(tmp_path: Path):
    vm, boot = ssd_vm(tmp_path, 1)
    (tmp_path / "md/localssd").touch()  # assembled by mdadm at boot, with its file system
    result = vm.boot(boot, STUB_FS="0")
    assert result.returncode == 0, result.stderr
    assert not [c for c in vm.calls if c.startswith(("mdadm", "mkfs"))]
    assert [c for c in vm.calls if c.startswith("mount ")]
    # Already mounted (a re-run of the boot): nothing is touched.
    vm.log.write_text("")
    result = vm.boot(boot, STUB_MOUNTED="0")
    assert result.returncode == 0, result.stderr
    assert not [c for c in vm.calls if c.startswith(("mdadm", "mkfs", "mount "))]


def test_a_node_without_the_local_ssds_it_was_promised_fails_its_boot(tmp_path: Path):
    vm, boot = ssd_vm(tmp_path, 0)
    result = vm.boot(boot)
    assert result.returncode == 1 and "no local SSD" in result.stderr
    assert not [c for c in vm.calls if c.startswith("setup.py")]


@pytest.mark.skipif(
    shutil.which("mdadm", path="/usr/bin:/bin") is not None,
    reason="this machine's own mdadm is on the boot's PATH",
)
def test_mdadm_is_installed_when_the_image_lacks_it(tmp_path: Path):
    vm, boot = ssd_vm(tmp_path, 2, mdadm=False)
    result = vm.boot(boot)
    # The stub dnf installs nothing, so the boot stops at mdadm: it did try to install it.
    assert result.returncode != 0
    assert "dnf install -y mdadm" in vm.calls
