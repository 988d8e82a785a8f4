"""The GPU cluster startup script, run under bash against stubs (`tests.components.startup_vm`):
re-runs, reboots, lock contention and a step that fails behave as they would on a VM."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from components import startup
from components.gpu_clusters import boot, gpudirect, monitoring
from components.gpu_clusters.boot import (
    OPS_AGENT_REPO_SCRIPT,
    RAY_VERSION,
    Command,
    DataDisk,
    GcsMount,
    Gib,
    GpuDirect,
    NfsMount,
    OpsAgent,
    Ray,
    render,
)
from components.startup import APT_LOCK_CONF, APT_LOCK_TIMEOUT_SECONDS
from components.storage.boot import GCSFUSE_VERSION, GOOGLE_APT_KEY
from tests.components import startup_vm


class Vm(startup_vm.Vm):
    def __init__(self, tmp_path: Path, root: Path | None = None, without: tuple[str, ...] = ()):
        super().__init__(tmp_path, render, root=root, without=without)


ALL_STEPS = [
    OpsAgent(),
    DataDisk("data", "/data"),
    GcsMount("my-data", "/gcs/data"),
    GcsMount("ref-bucket", "/gcs/ref", read_only=True),
    NfsMount("10.0.0.2", "share", "/nfs/home"),
    Ray("ai-test-demo", "us-east5-a", 2),
    Command("echo train --epochs 'it''s' >&2"),
]


def test_the_script_parses():
    result = subprocess.run(["bash", "-n"], input=render(ALL_STEPS), text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


def test_mounts_ray_and_command_run_in_order(tmp_path):
    vm = Vm(tmp_path)
    result, calls = vm.run(ALL_STEPS, STUB_UNITS="nvidia-dcgm.service")
    assert result.returncode == 0, result.stderr
    root = vm.root
    rw = f"gcsfuse --implicit-dirs -o allow_other --file-mode=666 --dir-mode=777 my-data {root}"
    assert f"{rw}/gcs/data" in calls
    ro = "gcsfuse --implicit-dirs -o allow_other,ro --file-mode=444 --dir-mode=555 ref-bucket"
    assert f"{ro} {root}/gcs/ref" in calls
    assert not any(c.startswith("apt-get") for c in calls), "gcsfuse was there already"
    assert f"mount -t nfs -o hard,timeo=600,retrans=3 10.0.0.2:/share {root}/nfs/home" in calls
    venv = root / f"opt/ai-infra/ray-{RAY_VERSION}"
    assert f"python3 -m venv --system-site-packages {venv}" in calls
    assert f"pip install --quiet ray[default]=={RAY_VERSION}" in calls
    # Ray runs under systemd, never from the script itself.
    assert f"systemctl enable --now {boot.RAY_UNIT}" in calls
    assert not any(c.startswith("ray ") for c in calls)
    order = [c.split()[0] for c in calls if c.split()[0] in ("mkfs.ext4", "gcsfuse", "mount")]
    assert order == ["mkfs.ext4", "mount", "gcsfuse", "gcsfuse", "mount"]
    # startupCommand ran, with its own quoting intact, after everything above.
    assert "train --epochs its" in result.stderr
    assert vm.file(boot.RAY_PROFILE).strip().endswith("export RAY_ADDRESS=auto")


def test_startup_command_runs_last_and_sees_its_arguments(tmp_path):
    marker = tmp_path / "ran"
    steps = [NfsMount("10.0.0.2", "share", "/nfs/a"), Command(f"touch {shlex.quote(str(marker))}")]
    vm = Vm(tmp_path)
    result, calls = vm.run(steps)
    assert result.returncode == 0, result.stderr
    assert marker.exists()
    # The readiness signal follows the command; nothing of the program's runs after it.
    assert calls[-2].startswith("mount -t nfs") and "guest-attributes" in calls[-1]
    assert vm.signal() == startup.DONE


def test_a_rerun_in_the_same_boot_mounts_nothing_twice_and_starts_no_second_ray(tmp_path):
    vm = Vm(tmp_path)
    first, _ = vm.run(ALL_STEPS, STUB_UNITS="nvidia-dcgm.service")
    assert first.returncode == 0, first.stderr
    mounted = vm.mounted()
    assert len(mounted) == 4 == len(set(mounted))
    again, calls = vm.run(ALL_STEPS, STUB_UNITS="nvidia-dcgm.service")
    assert again.returncode == 0, again.stderr
    assert vm.mounted() == mounted
    for tool in ("gcsfuse", "mount ", "mkfs.ext4", "systemctl enable", "systemctl restart"):
        assert not any(c.startswith(tool) for c in calls), (tool, calls)
    assert f"systemctl is-active --quiet {boot.RAY_UNIT}" in calls
    # The user's command is the user's: it runs on every run.
    assert "train --epochs its" in again.stderr


def test_the_data_disk_is_formatted_once_and_kept_by_a_recreated_vm(tmp_path):
    vm = Vm(tmp_path)
    result, calls = vm.run([DataDisk("data", "/data")])
    assert result.returncode == 0, result.stderr
    device = f"{vm.root}/dev/disk/by-id/google-data"
    assert [c for c in calls if c.startswith("mkfs.ext4")] == [
        f"mkfs.ext4 -q -m 0 -E lazy_itable_init=0,lazy_journal_init=0,discard {device}"
    ]
    assert stat.S_IMODE((vm.root / "data").stat().st_mode) == 0o1777
    # The VM is recreated from a new image: a fresh boot, the same disk.
    (vm.state / "mounts").unlink()
    result, calls = vm.run([DataDisk("data", "/data")])
    assert result.returncode == 0, result.stderr
    assert not any(c.startswith("mkfs") for c in calls)
    assert f"mount -o discard,defaults {device} {vm.root}/data" in calls


LOCK_WAIT = re.compile(r"-o DPkg::Lock::Timeout=(?P<seconds>[0-9]+) ")


def apt_calls(calls: list[str]) -> list[tuple[int, str]]:
    """Each apt-get call as (the seconds it may wait for dpkg's lock, the call without that
    option): an install's calls draw on one budget, what the calls before took (a second,
    on a busy machine) is gone from the next."""
    found = []
    for call in calls:
        if call.startswith("apt-get ") and (m := LOCK_WAIT.search(call)):
            found.append((int(m["seconds"]), LOCK_WAIT.sub("", call, count=1)))
    return found


def test_installs_wait_for_the_dpkg_lock_and_refresh_the_lists_first(tmp_path):
    vm = Vm(tmp_path, without=("gcsfuse",))
    (vm.state / "dpkg-lock").touch()  # unattended-upgrades holds it at boot
    result, calls = vm.run([GcsMount("b", "/gcs/b")])
    apt = apt_calls(calls)
    assert len(apt) == len([c for c in calls if c.startswith("apt-get ")]), calls
    assert apt[0][0] == APT_LOCK_TIMEOUT_SECONDS, apt
    assert all(0 < wait <= APT_LOCK_TIMEOUT_SECONDS for wait, _ in apt), apt
    assert "dpkg-lock released to a waiting apt-get" in calls
    assert [c for _, c in apt] == [
        "apt-get update",
        f"apt-get install -y gcsfuse={GCSFUSE_VERSION}",
    ]
    assert f"curl -fsSL {GOOGLE_APT_KEY}" in calls
    # The Ops Agent's own installer calls apt-get: apt's configuration makes it wait too.
    assert vm.file(APT_LOCK_CONF) == f'DPkg::Lock::Timeout "{APT_LOCK_TIMEOUT_SECONDS}";\n'
    sources = vm.file("/etc/apt/sources.list.d/gcsfuse.list")
    assert sources.split() == [
        "deb",
        "[signed-by=/usr/share/keyrings/cloud.google.gpg]",
        "https://packages.cloud.google.com/apt",
        "gcsfuse-noble",
        "main",
    ]
    # Installed, then mounted.
    assert result.returncode == 0, result.stderr
    install = next(i for i, c in enumerate(calls) if f"install -y gcsfuse={GCSFUSE_VERSION}" in c)
    assert install < next(i for i, c in enumerate(calls) if c.startswith("gcsfuse "))


def test_both_mounts_wait_out_a_package_list_lock_held_for_a_minute(tmp_path):
    """apt-daily's `apt-get update` holds the lists' lock at boot, which apt-get takes without
    waiting: each apt-get tries again until it is free, within the lock timeout."""
    vm = Vm(tmp_path, without=("gcsfuse",))
    (vm.state / "lists-lock").write_text("60")
    result, calls = vm.run([GcsMount("a", "/gcs/a"), GcsMount("b", "/gcs/b")])
    assert result.returncode == 0, result.stderr
    assert vm.mounted() == [f"{vm.root}/gcs/a", f"{vm.root}/gcs/b"]
    assert "apt is busy" in result.stderr
    waits = [c for c in calls if c == f"sleep {startup.APT_LOCK_POLL_SECONDS}"]
    assert len(waits) == 60 // startup.APT_LOCK_POLL_SECONDS
    assert vm.signal() == startup.DONE


def test_a_lock_held_past_the_timeout_fails_the_step_and_names_it(tmp_path):
    vm = Vm(tmp_path, without=("gcsfuse",))
    (vm.state / "lists-lock").write_text(str(10 * APT_LOCK_TIMEOUT_SECONDS))
    result, _ = vm.run([GcsMount("a", "/gcs/a"), NfsMount("10.0.0.2", "share", "/nfs/h")])
    assert result.returncode == 1
    assert "FAILED: gcsfuse a /gcs/a" in result.stderr
    # The NFS mount needed no package and still ran.
    assert vm.mounted() == [f"{vm.root}/nfs/h"]
    assert vm.signal() == f"{startup.FAILED}gcsfuse a /gcs/a"
    # The step's retries share one lock timeout: the waits add up to it, not to five of it.
    waits = result.stderr.count("apt is busy")
    assert 0 < waits <= APT_LOCK_TIMEOUT_SECONDS // startup.APT_LOCK_POLL_SECONDS, waits


def test_the_ops_agent_installer_takes_turns_with_the_mounts_installs(tmp_path):
    """The Ops Agent's repository script runs apt-get in the background while the mounts
    install gcsfuse and NFS: with the script's own lock they never overlap (the stub refuses
    a second apt-get at once, as apt's lists lock does)."""
    vm = Vm(tmp_path, without=("gcsfuse", "mount.nfs"))
    result, calls = vm.run(
        [OpsAgent(), GcsMount("a", "/gcs/a"), NfsMount("10.0.0.2", "share", "/nfs/h")],
        STUB_CURL_BODY="apt-get update && apt-get install -y google-cloud-ops-agent",
        STUB_APT_SECONDS="0.2",
    )
    assert result.returncode == 0, result.stderr
    assert not [c for c in calls if c.startswith("OVERLAP")], calls
    assert "apt-get install -y google-cloud-ops-agent" in calls
    assert vm.mounted() == [f"{vm.root}/gcs/a", f"{vm.root}/nfs/h"]


def test_without_the_lock_wait_apt_would_have_failed(tmp_path):
    """The stub refuses an apt-get that does not wait: the test above means something."""
    vm = Vm(tmp_path)
    (vm.state / "dpkg-lock").touch()
    result = subprocess.run(
        ["apt-get", "install", "-y", "x"], env=vm.env(), capture_output=True, text=True
    )
    assert result.returncode == 100 and "Could not get lock" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_users_write_to_read_write_mounts_and_not_to_read_only_ones(tmp_path):
    # A root every user can traverse, as / is on a VM.
    root = Path(tempfile.mkdtemp(prefix="ai-infra-vm-", dir="/tmp"))
    try:
        root.chmod(0o755)
        vm = Vm(tmp_path, root=root)
        result, _ = vm.run(
            [GcsMount("data", "/gcs/data"), GcsMount("ref", "/gcs/ref", read_only=True)]
        )
        assert result.returncode == 0, result.stderr

        def write_as_nobody(path: Path) -> int:
            return subprocess.run(
                [
                    *("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"),
                    *("bash", "-c", f"echo checkpoint > {shlex.quote(str(path))}"),
                ],
                capture_output=True,
            ).returncode

        assert write_as_nobody(root / "gcs/data/ckpt") == 0
        assert write_as_nobody(root / "gcs/ref/ckpt") != 0
        assert not (root / "gcs/ref/ckpt").exists()
    finally:
        shutil.rmtree(root)


def test_ops_agent_retries_with_random_backoff_and_never_blocks(tmp_path):
    result, calls = Vm(tmp_path).run(
        [OpsAgent(attempts=4, max_backoff_seconds=8), Command("echo finished >&2")],
        STUB_CURL_FAIL="dl.google.com",
    )
    # The command ran and the script succeeded although every install attempt failed.
    assert "finished" in result.stderr
    assert result.returncode == 0, result.stderr
    assert "Ops Agent not installed" in result.stderr
    attempts = [c for c in calls if c.startswith("curl") and OPS_AGENT_REPO_SCRIPT in c]
    assert len(attempts) == 4
    sleeps = [int(c.split()[1]) for c in calls if c.startswith("sleep")]
    assert len(sleeps) == 3 and all(1 <= s <= 8 for s in sleeps)
    # The caps double (2, 4, 8): a random draw beneath each.
    assert [s <= cap for s, cap in zip(sleeps, (2, 4, 8), strict=True)] == [True] * 3


def test_the_ops_agent_collects_dcgm_metrics_and_installs_dcgm_where_missing(tmp_path):
    vm = Vm(tmp_path)
    result, calls = vm.run([OpsAgent()])
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(vm.file(monitoring.OPS_AGENT_CONFIG_PATH))
    assert config["metrics"]["receivers"]["dcgm"] == {
        "type": "dcgm",
        "receiver_version": 2,
        "collection_interval": "60s",
    }
    assert config["metrics"]["service"]["pipelines"]["dcgm"] == {"receivers": ["dcgm"]}
    install = f"install -y datacenter-gpu-manager={monitoring.DCGM_VERSION}"
    assert any(c.endswith(install) for c in calls), calls
    assert "systemctl enable --now nvidia-dcgm" in calls
    assert "systemctl restart google-cloud-ops-agent" in calls
    # An image with DCGM keeps its own.
    vm2 = Vm(tmp_path / "second")
    _, calls = vm2.run([OpsAgent()], STUB_UNITS="nvidia-dcgm.service")
    assert not any("datacenter-gpu-manager" in c for c in calls)


def test_the_gib_plugin_is_installed_held_and_in_every_shell(tmp_path):
    vm = Vm(tmp_path)
    result, calls = vm.run([Gib()])
    assert result.returncode == 0, result.stderr
    assert f"apt-get install -y nccl-gib={gpudirect.GIB_VERSION}" in [
        c for _, c in apt_calls(calls)
    ]
    assert "apt-mark hold nccl-gib" in calls
    # The artifact-registry transport comes before the repository that needs it.
    installs = [c.split()[-1] for c in calls if " install -y " in c]
    assert installs == ["apt-transport-artifact-registry", f"nccl-gib={gpudirect.GIB_VERSION}"]
    assert gpudirect.GIB_REPO in vm.file("/etc/apt/sources.list.d/gpudirect-gib.list")
    profile = vm.file(boot.NCCL_PROFILE)
    assert f". {gpudirect.GIB_PROFILE}" in profile and gpudirect.GIB_LIBRARIES in profile


@pytest.mark.parametrize("transport", ["tcpx", "tcpxo"])
def test_gpudirect_runs_the_pinned_daemon_and_plugin_on_a_prepared_image(tmp_path, transport):
    stack = gpudirect.STACKS[transport]
    vm = Vm(tmp_path)
    host = vm.root / stack.host_file.lstrip("/")
    host.parent.mkdir(parents=True, exist_ok=True)
    host.touch()
    result, calls = vm.run([GpuDirect(stack)])
    assert result.returncode == 0, result.stderr
    plugin = f"docker run --rm --network=host -v /var/lib:/var/lib {stack.plugin_image}"
    assert f"{plugin} {' '.join(stack.plugin_args)}" in calls
    assert [c for c in calls if c.startswith("modprobe")] == [
        f"modprobe {m}" for m in stack.modules
    ]
    unit = vm.file(f"/etc/systemd/system/{boot.RXDM_UNIT}")
    (start,) = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert shlex.split(start.removeprefix("ExecStart="))[-1 - len(stack.rxdm_args)] == (
        stack.rxdm_image
    )
    assert "Restart=always" in unit
    assert f"systemctl enable --now {boot.RXDM_UNIT}" in calls
    profile = vm.file(boot.NCCL_PROFILE)
    for key in stack.env:
        assert f"export {key}=" in profile
    # The profile is valid shell that leaves the settings behind.
    shown = subprocess.run(
        ["bash", "-c", f". {shlex.quote(str(vm.root))}{boot.NCCL_PROFILE} && env"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    assert f"NCCL_SOCKET_IFNAME={stack.env['NCCL_SOCKET_IFNAME']}" in shown


def test_gpudirect_refuses_to_start_on_an_image_not_prepared_for_it(tmp_path):
    vm = Vm(tmp_path)
    result, calls = vm.run([GpuDirect(gpudirect.STACKS["tcpxo"])])
    assert result.returncode == 1
    assert "/dev/aperture_devices" in result.stderr and "FAILED: GPUDirect-TCPXO" in result.stderr
    assert not any(c.startswith("docker") for c in calls)
    assert not (vm.root / f"etc/systemd/system/{boot.RXDM_UNIT}").exists()


def test_the_ray_unit_restarts_and_opens_its_session_to_other_users():
    unit = boot.ray_unit(Ray("ai-test-demo", "us-east5-a", 8))
    lines = set(unit.splitlines())
    assert {"User=ray", "Restart=always", "UMask=0000", f"ExecStart={boot.RAY_NODE}"} <= lines
    assert "WantedBy=multi-user.target" in lines


# Ray's head election, run as the unit runs it: the node script against the group's members.


def elect(
    tmp_path: Path,
    me: str,
    groups: Mapping[str, Sequence[tuple[str, str, str]]],
    heads: str = "",
    group: str = "ai-test-demo",
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    vm = Vm(tmp_path)
    for name, members in groups.items():
        (vm.state / f"group-{name}").write_text(
            "".join(f"{n}\t{status}\t{action}\n" for n, status, action in members)
        )
    ray = vm.root / f"opt/ai-infra/ray-{RAY_VERSION}/bin/ray"
    ray.parent.mkdir(parents=True)
    shutil.copy(vm.bin / "ray", ray)
    node = tmp_path / "ray-node"
    node.write_text(boot.ray_node_script(Ray(group, "us-east5-a", 8)))
    result = subprocess.run(
        ["bash", str(node)],
        env=vm.env(STUB_HOSTNAME=me, STUB_RAY_HEADS=heads),
        capture_output=True,
        text=True,
        timeout=60,
    )
    calls = vm.log.read_text().splitlines()
    return result, [c for c in calls if c.startswith("ray ")]


RUNNING: tuple[str, str] = ("RUNNING", "NONE")


def test_the_first_running_member_leads_a_new_cluster(tmp_path):
    members = [("ai-test-demo-b", *RUNNING), ("ai-test-demo-a", *RUNNING)]
    _, starts = elect(tmp_path, "ai-test-demo-a", {"ai-test-demo": members})
    assert starts == ["ray start --head --port=6379 --num-gpus=8 --disable-usage-stats --block"]
    _, starts = elect(tmp_path / "w", "ai-test-demo-b", {"ai-test-demo": members}, "ai-test-demo-a")
    assert starts == [
        "ray start --address=ai-test-demo-a:6379 --num-gpus=8 --disable-usage-stats --block"
    ]


def test_a_vm_added_later_joins_the_running_head_even_if_its_name_sorts_first(tmp_path):
    members = [
        ("ai-test-demo-0000", *RUNNING),  # the scale-up VM
        ("ai-test-demo-3x7k", *RUNNING),
        ("ai-test-demo-9f2q", *RUNNING),
    ]
    result, starts = elect(
        tmp_path, "ai-test-demo-0000", {"ai-test-demo": members}, heads="ai-test-demo-9f2q"
    )
    assert result.returncode == 0, result.stderr
    assert starts == [
        "ray start --address=ai-test-demo-9f2q:6379 --num-gpus=8 --disable-usage-stats --block"
    ]


@pytest.mark.parametrize(
    ("status", "action"),
    [
        ("STOPPED", "NONE"),
        ("TERMINATED", "NONE"),
        ("RUNNING", "STOPPING"),
        ("STAGING", "RECREATING"),
    ],
)
def test_a_stopped_or_preempted_vm_is_never_elected(tmp_path, status, action):
    members = [
        ("ai-test-demo-a", status, action),  # the old head, preempted
        ("ai-test-demo-b", *RUNNING),
        ("ai-test-demo-c", *RUNNING),
    ]
    # Its Ray port even answers (a stale route, a VM shutting down): still not the head.
    _, starts = elect(tmp_path, "ai-test-demo-b", {"ai-test-demo": members}, "ai-test-demo-a")
    assert starts == ["ray start --head --port=6379 --num-gpus=8 --disable-usage-stats --block"]
    _, starts = elect(
        tmp_path / "c", "ai-test-demo-c", {"ai-test-demo": members}, "ai-test-demo-a ai-test-demo-b"
    )
    assert starts == [
        "ray start --address=ai-test-demo-b:6379 --num-gpus=8 --disable-usage-stats --block"
    ]


def test_two_stacks_in_one_project_never_share_a_head(tmp_path):
    groups = {
        "ai-dev-demo": [("ai-dev-demo-m1", *RUNNING), ("ai-dev-demo-m2", *RUNNING)],
        "ai-prod-demo": [("ai-prod-demo-a1", *RUNNING), ("ai-prod-demo-a2", *RUNNING)],
    }
    # Prod's head is up and dev's is not: dev's VM waits for its own.
    result, starts = elect(
        tmp_path, "ai-dev-demo-m2", groups, heads="ai-prod-demo-a1", group="ai-dev-demo"
    )
    assert result.returncode == 1 and "ai-dev-demo-m1 did not come up" in result.stderr
    assert starts == []
    _, starts = elect(tmp_path / "m1", "ai-dev-demo-m1", groups, "ai-prod-demo-a1", "ai-dev-demo")
    assert starts == ["ray start --head --port=6379 --num-gpus=8 --disable-usage-stats --block"]


def test_a_vm_not_yet_listed_as_running_retries_through_systemd(tmp_path):
    result, starts = elect(tmp_path, "ai-test-demo-a", {"ai-test-demo": []})
    assert result.returncode == 1 and "no member" in result.stderr
    assert starts == []


@pytest.mark.parametrize(
    "hostile", ["x; touch /tmp/pwned", "$(touch /tmp/pwned)", "`id`", "a\nb", "it's"]
)
def test_values_reach_bash_quoted(tmp_path, hostile):
    result, calls = Vm(tmp_path).run([GcsMount(hostile, "/gcs/x")])
    assert result.returncode == 0, result.stderr
    mounts = [c for c in calls if c.startswith("gcsfuse")]
    assert mounts and hostile.split("\n")[0] in mounts[0]
    assert not os.path.exists("/tmp/pwned")


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_the_tcpxo_profile_is_read_with_nccl_lib_dir_set(tmp_path, shell):
    """Login shells (bash and /bin/sh alike) read /etc/profile.d: the installer's profile
    finds its libraries through NCCL_LIB_DIR, so it must be set before it is read. The
    stand-in profile fails as an unset NCCL_LIB_DIR would make the real one fail."""
    stack = gpudirect.STACKS["tcpxo"]
    assert stack.profile and stack.profile_lib_dir
    installed = tmp_path / stack.profile.lstrip("/")
    installed.parent.mkdir(parents=True)
    installed.write_text(
        '[ -n "${NCCL_LIB_DIR:-}" ] || return 127\nexport NCCL_FROM_PROFILE="$NCCL_LIB_DIR"\n'
    )
    profile = tmp_path / "ai-infra-nccl.sh"
    profile.write_text(boot.gpudirect_profile(stack).replace(stack.profile, str(installed)))
    shown = subprocess.run(
        [shell, "-c", f". {shlex.quote(str(profile))} && env"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert shown.returncode == 0, shown.stderr
    assert f"NCCL_FROM_PROFILE={stack.profile_lib_dir}" in shown.stdout.splitlines()
    # Without it, the shell would have failed the way the issue saw (`bash -lc` exit 127).
    bare = tmp_path / "bare.sh"
    bare.write_text(f". {shlex.quote(str(installed))}\n")
    assert subprocess.run([shell, str(bare)], env={"PATH": "/usr/bin:/bin"}).returncode == 127
