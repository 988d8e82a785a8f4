"""The GPU cluster startup script, run under bash against stubs: every command it would run on a
VM (gcsfuse, mount, apt-get, systemctl, gcloud, ray, docker, ...) is a stub on PATH that logs
its arguments and keeps what a VM would remember (mounts, running units, the dpkg lock) in a
state directory, so that re-runs, reboots and lock contention behave as they would."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from components.gpu_clusters import boot, gpudirect, monitoring
from components.gpu_clusters.boot import (
    APT_LOCK_CONF,
    APT_LOCK_TIMEOUT_SECONDS,
    GCSFUSE_VERSION,
    GOOGLE_APT_KEY,
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

# Each stub logs "name arg arg ..." and runs its extra lines; it exits with
# $STUB_<NAME>_EXIT (0 by default) unless the extra lines exit first.
STUB = """#!/bin/bash
name=$(basename "$0")
echo "$name $*" >> "$STUB_LOG"
var="STUB_${name//[^a-zA-Z0-9]/_}_EXIT"
{extra}
exit "${!var:-0}"
"""
STUBS = {
    # gcsfuse [-o OPTS] [--file-mode=M] --dir-mode=M BUCKET PATH: the mount point takes the
    # directory mode (read-only: no write bit), as a FUSE mount with allow_other shows it.
    "gcsfuse": 'path=${@: -1}; mode=755; for a in "$@"; do case $a in --dir-mode=*) '
    "mode=${a#--dir-mode=};; esac; done; "
    'chmod "$mode" "$path" && echo "$path" >> "$STUB_STATE/mounts"',
    "mount": 'echo "${@: -1}" >> "$STUB_STATE/mounts"',
    "mountpoint": 'grep -qxF -- "${@: -1}" "$STUB_STATE/mounts" 2>/dev/null; exit $?',
    "mount.nfs": "",
    # The dpkg lock: while $STUB_STATE/dpkg-lock exists, apt-get fails at once unless told
    # to wait for it (then the holder, unattended-upgrades say, finishes).
    "apt-get": 'if [[ -e $STUB_STATE/dpkg-lock ]]; then if [[ " $* " == *" '
    'DPkg::Lock::Timeout="* ]]; then '
    'echo "dpkg-lock released to a waiting apt-get" >> "$STUB_LOG"; '
    'rm -f "$STUB_STATE/dpkg-lock"; else echo "E: Could not get lock" >&2; exit 100; fi; fi',
    "apt-mark": "",
    "curl": "",
    "gpg": "",
    "sleep": "",
    "useradd": "",
    "id": "",
    "modprobe": "",
    "docker": "",
    "blkid": "[[ -e $STUB_STATE/formatted ]]; exit $?",
    "mkfs.ext4": 'touch "$STUB_STATE/formatted"',
    # systemctl: remembers which units run; `cat` finds the units listed in $STUB_UNITS.
    "systemctl": 'case $1 in is-active) grep -qxF -- "${@: -1}" "$STUB_STATE/active" '
    "2>/dev/null; exit $?;; "
    'enable) echo "${@: -1}" >> "$STUB_STATE/active";; '
    'cat) [[ " ${STUB_UNITS:-} " == *" $2 "* ]]; exit $?;; esac',
    # python3 -m venv DIR: a venv whose pip and ray are stubs too.
    "python3": 'if [[ $1 == -m && $2 == venv ]]; then /bin/mkdir -p "${@: -1}/bin"; '
    'for tool in pip ray; do cp "$0" "${@: -1}/bin/$tool"; done; fi',
    "hostname": 'echo "$STUB_HOSTNAME"',
    # gcloud ... list-instances GROUP: the group's members from $STUB_STATE/group-GROUP.
    "gcloud": '[[ $4 == list-instances ]] && cat "$STUB_STATE/group-$5" 2>/dev/null',
    # timeout 3 bash -c PROBE probe HOST PORT: a Ray head listens on the hosts in
    # $STUB_RAY_HEADS.
    "timeout": '[[ " ${STUB_RAY_HEADS:-} " == *" ${@: -2:1} "* ]]; exit $?',
    "ray": "",
}


class Vm:
    """A scratch VM: ROOT for the files the script writes, stubs on PATH, and state that
    survives between runs of the script (a re-run in the same boot)."""

    def __init__(self, tmp_path: Path, root: Path | None = None, without: tuple[str, ...] = ()):
        self.tmp = tmp_path
        self.bin = tmp_path / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.root = root or tmp_path / "root"
        self.state = tmp_path / "state"
        self.state.mkdir(exist_ok=True)
        self.log = tmp_path / "calls.log"
        self.log.touch()
        for directory in ("usr/share/keyrings", "dev/disk/by-id"):
            (self.root / directory).mkdir(parents=True, exist_ok=True)
        (self.root / "dev/disk/by-id/google-data").touch()  # the data disk, attached
        (self.root / "etc").mkdir(exist_ok=True)
        (self.root / "etc/os-release").write_text("ID=ubuntu\nVERSION_CODENAME=noble\n")
        for name, extra in STUBS.items():
            if name in without:
                continue
            path = self.bin / name
            path.write_text(STUB.replace("{extra}", extra))
            path.chmod(path.stat().st_mode | stat.S_IEXEC)

    def env(self, **env: str) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "STUB_LOG": str(self.log),
            "STUB_STATE": str(self.state),
            "STUB_HOSTNAME": "demo-0001",
            "HOME": str(self.tmp),
            "AI_INFRA_ROOT": str(self.root),
            **env,
        }

    def run(self, steps, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        """One run of the script; returns what it printed and the calls of this run."""
        script = self.tmp / "startup.sh"
        # The prelude puts /opt/conda/bin first; stubs must win, so mask it.
        script.write_text(render(steps).replace('export PATH="/opt/conda/bin:$PATH"', ""))
        before = len(self.log.read_text().splitlines())
        result = subprocess.run(
            ["bash", str(script)], env=self.env(**env), capture_output=True, text=True, timeout=60
        )
        return result, self.log.read_text().splitlines()[before:]

    def file(self, path: str) -> str:
        return (self.root / path.lstrip("/")).read_text()

    def mounted(self) -> list[str]:
        mounts = self.state / "mounts"
        return mounts.read_text().splitlines() if mounts.exists() else []


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
    result, calls = Vm(tmp_path).run(steps)
    assert result.returncode == 0, result.stderr
    assert marker.exists()
    assert calls[-1].startswith("mount -t nfs")


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


def test_installs_wait_for_the_dpkg_lock_and_refresh_the_lists_first(tmp_path):
    vm = Vm(tmp_path, without=("gcsfuse",))
    (vm.state / "dpkg-lock").touch()  # unattended-upgrades holds it at boot
    result, calls = vm.run([GcsMount("b", "/gcs/b")])
    apt = [c for c in calls if c.startswith("apt-get ")]
    timeout = f"-o DPkg::Lock::Timeout={APT_LOCK_TIMEOUT_SECONDS}"
    assert apt and all(c.startswith(f"apt-get {timeout} ") for c in apt), apt
    assert "dpkg-lock released to a waiting apt-get" in calls
    assert [c.split()[3] for c in apt] == ["update", "install"]
    assert f"apt-get {timeout} install -y gcsfuse={GCSFUSE_VERSION}" in calls
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
    # The stub installed nothing, so the mount itself fails, and says so.
    assert result.returncode == 1 and "FAILED: gcsfuse b" in result.stderr


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
        STUB_curl_EXIT="1",
    )
    # The command ran and the script succeeded although every install attempt failed.
    assert "finished" in result.stderr
    assert result.returncode == 0, result.stderr
    assert "Ops Agent not installed" in result.stderr
    attempts = [c for c in calls if c.startswith("curl")]
    assert len(attempts) == 4
    assert all(OPS_AGENT_REPO_SCRIPT in c for c in attempts)
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
    timeout = f"-o DPkg::Lock::Timeout={APT_LOCK_TIMEOUT_SECONDS}"
    assert f"apt-get {timeout} install -y nccl-gib={gpudirect.GIB_VERSION}" in calls
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


def test_content_that_would_end_a_here_document_is_refused():
    with pytest.raises(ValueError, match="delimiter"):
        boot._heredoc("write_file /x 0644", f"a\n{boot.HEREDOC}\nb")


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
        '[ -n "${NCCL_LIB_DIR:-}" ] || return 127\n'
        'export NCCL_FROM_PROFILE="$NCCL_LIB_DIR"\n'
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
