"""Storage steps of a VM's startup script (`components.storage.boot`), run under bash against
stubs (`tests.components.startup_vm`) in a GPU cluster's script: local SSD scratch through
first boot, re-run, reboot, a stop that discards local SSD and a disk formatted already, and
each kind of volume mount, a failing one naming its step."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from components import startup
from components.gpu_clusters.boot import Command, render
from components.storage.boot import (
    GCSFUSE_CACHE,
    LOCAL_SSD_DISKS,
    SCRATCH_ARRAY,
    SCRATCH_PATH,
    LocalScratch,
    VolumeMount,
)
from components.storage.mounts import gcsfuse_flags
from tests.components import startup_vm


class Vm(startup_vm.Vm):
    def __init__(self, tmp_path: Path, disks: int = 16):
        super().__init__(tmp_path, render)
        for n in range(disks):
            (self.root / f"{LOCAL_SSD_DISKS.lstrip('/')}{n}").touch()

    def reboot(self) -> None:
        """Mounts and the assembled array go; the disks' contents stay."""
        (self.state / "mounts").unlink(missing_ok=True)
        (self.root / SCRATCH_ARRAY.lstrip("/")).unlink(missing_ok=True)

    def stop_and_start(self) -> None:
        """A stop (or a host event) discards local SSD data: no superblock, no file system."""
        self.reboot()
        (self.state / "md-superblock").unlink(missing_ok=True)
        (self.state / "formatted").unlink(missing_ok=True)


SCRATCH = LocalScratch(16)
CACHE = f"{GCSFUSE_CACHE}/data"
FLAGS = tuple(f for f in gcsfuse_flags("training", cache_dir=CACHE) if f != "--implicit-dirs=true")
DATA = VolumeMount("data", "gcs", "my-datasets", "/data", read_only=True, flags=FLAGS)


def calls_of(calls: list[str], *tools: str) -> list[str]:
    return [c for c in calls if c.split()[0] in tools]


def test_the_script_parses():
    steps = [
        SCRATCH,
        DATA,
        VolumeMount("shared", "filestore", "10.0.0.2:/share", "/shared"),
        VolumeMount("scratch", "lustre", "10.0.0.3@tcp:/lfs", "/lustre", read_only=True),
    ]
    result = subprocess.run(["bash", "-n"], input=render(steps), text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


def test_first_boot_makes_one_raid0_array_formats_it_and_mounts_it_open_like_tmp(tmp_path):
    vm = Vm(tmp_path)
    result, calls = vm.run([SCRATCH])
    assert result.returncode == 0, result.stderr
    array = f"{vm.root}{SCRATCH_ARRAY}"
    disks = " ".join(f"{vm.root}{LOCAL_SSD_DISKS}{n}" for n in sorted(range(16), key=str))
    assert f"mdadm --assemble {array} {disks}" in calls
    assert (
        f"mdadm --create {array} --name=localssd --homehost=any --level=0 --run "
        f"--raid-devices=16 {disks}"
    ) in calls
    assert calls_of(calls, "mkfs.ext4") == [
        f"mkfs.ext4 -q -m 0 -E lazy_itable_init=0,lazy_journal_init=0,discard {array}"
    ]
    assert f"mount -o discard,defaults,nofail {array} {vm.root}{SCRATCH_PATH}" in calls
    assert stat.S_IMODE((vm.root / SCRATCH_PATH.lstrip("/")).stat().st_mode) == 0o1777
    assert vm.signal() == startup.DONE


def test_a_rerun_in_the_same_boot_touches_nothing(tmp_path):
    vm = Vm(tmp_path)
    vm.run([SCRATCH])
    result, calls = vm.run([SCRATCH])
    assert result.returncode == 0, result.stderr
    assert not calls_of(calls, "mdadm", "mkfs.ext4", "mount")
    assert vm.mounted() == [f"{vm.root}{SCRATCH_PATH}"]


def test_a_reboot_assembles_the_array_again_and_keeps_its_files(tmp_path):
    vm = Vm(tmp_path)
    vm.run([SCRATCH])
    vm.reboot()
    result, calls = vm.run([SCRATCH])
    assert result.returncode == 0, result.stderr
    assert [c.split()[1] for c in calls_of(calls, "mdadm")] == ["--assemble"]
    assert not calls_of(calls, "mkfs.ext4")
    assert vm.mounted() == [f"{vm.root}{SCRATCH_PATH}"]


def test_a_stop_that_discards_local_ssd_gets_a_new_array_and_file_system(tmp_path):
    vm = Vm(tmp_path)
    vm.run([SCRATCH])
    vm.stop_and_start()
    result, calls = vm.run([SCRATCH])
    assert result.returncode == 0, result.stderr
    assert [c.split()[1] for c in calls_of(calls, "mdadm")] == ["--assemble", "--create"]
    assert len(calls_of(calls, "mkfs.ext4")) == 1


def test_one_disk_is_used_as_it_is_and_a_formatted_one_is_not_formatted_again(tmp_path):
    vm = Vm(tmp_path, disks=1)
    (vm.state / "formatted").touch()
    result, calls = vm.run([LocalScratch(1)])
    assert result.returncode == 0, result.stderr
    assert not calls_of(calls, "mdadm", "mkfs.ext4")
    disk = f"{vm.root}{LOCAL_SSD_DISKS}0"
    assert f"mount -o discard,defaults,nofail {disk} {vm.root}{SCRATCH_PATH}" in calls


def test_missing_disks_fail_the_step_by_name_and_the_rest_still_runs(tmp_path):
    vm = Vm(tmp_path, disks=8)  # the machine promised 16
    result, _ = vm.run([SCRATCH, Command("echo after >&2")])
    assert result.returncode == 1
    assert f"FAILED: local SSD {SCRATCH_PATH}" in result.stderr
    assert "expected 16 local SSDs" in result.stderr
    assert "after" in result.stderr
    assert vm.signal() == f"{startup.FAILED}local SSD {SCRATCH_PATH}"


def test_a_bucket_mounts_with_its_profile_and_its_file_cache_on_the_scratch(tmp_path):
    vm = Vm(tmp_path)
    result, calls = vm.run([SCRATCH, DATA])
    assert result.returncode == 0, result.stderr
    gcsfuse = calls_of(calls, "gcsfuse")
    assert gcsfuse == [
        "gcsfuse --implicit-dirs -o allow_other,ro --file-mode=444 --dir-mode=555 "
        f"{' '.join(FLAGS)} my-datasets {vm.root}/data"
    ]
    assert f"--cache-dir={CACHE}" in gcsfuse[0]
    assert "--file-cache-enable-parallel-downloads=true" in gcsfuse[0]
    assert (vm.root / CACHE.lstrip("/")).is_dir()
    # The scratch is mounted before the bucket whose cache it holds.
    assert calls.index(f"gcsfuse {gcsfuse[0].split(' ', 1)[1]}") > next(
        i for i, c in enumerate(calls) if c.startswith("mount -o discard")
    )


def test_filestore_mounts_over_nfs_read_only_where_asked(tmp_path):
    vm = Vm(tmp_path)
    result, calls = vm.run([VolumeMount("shared", "filestore", "10.0.0.2:/share", "/shared", True)])
    assert result.returncode == 0, result.stderr
    assert f"mount -t nfs -o hard,timeo=600,retrans=3,ro 10.0.0.2:/share {vm.root}/shared" in calls


def test_lustre_mounts_with_its_client_and_a_missing_client_fails_by_name(tmp_path):
    lustre = VolumeMount("scratch", "lustre", "10.0.0.3@tcp:/lfs", "/lustre")
    vm = Vm(tmp_path)
    result, calls = vm.run([lustre])
    assert result.returncode == 0, result.stderr
    assert f"mount -t lustre -o defaults,_netdev 10.0.0.3@tcp:/lfs {vm.root}/lustre" in calls
    # An image without the module: the client is installed for the running kernel, and when
    # it still does not load, the step fails naming itself.
    other = Vm(tmp_path / "other")
    result, calls = other.run([lustre], STUB_modprobe_EXIT="1")
    assert result.returncode == 1
    kernel = subprocess.run(["uname", "-r"], text=True, capture_output=True).stdout.strip()
    assert any(
        c.endswith(f"install -y lustre-client-modules-{kernel} lustre-client-utils") for c in calls
    ), calls
    assert other.signal() == f"{startup.FAILED}lustre scratch /lustre"
    assert not calls_of(calls, "mount")
