"""The run-on-every-host command against a fake gcloud on PATH that answers per host, as the
real one would: one worker hangs, one exits non-zero, IAP refuses one tunnel; the rest run.
Each outcome is classified, each log kept, the hung session killed at its timeout with its
whole process group, and no more sessions run at once than asked."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from hosts import cli
from hosts.run import MAX_PARALLEL

FAKE_GCLOUD = r"""#!/bin/bash
# A fake gcloud: `list-instances` prints $FAKE_MEMBERS; `ssh` finds its host (TPU VM and
# --worker=K, or VM name) and does what $FAKE_<behaviour> says for it.
echo "$*" >> "$FAKE_DIR/calls"
if [[ " $* " == *" list-instances "* ]]; then printf '%b' "$FAKE_MEMBERS"; exit 0; fi
if [[ " $* " == *" describe-profile "* ]]; then
  echo '{"posixAccounts": [{"username": "other"}, {"username": "me_x_io", "primary": true}]}'
  exit 0
fi
if [[ " $* " == *" --dry-run "* ]]; then echo "ssh -t me_x_io@10.0.0.2"; exit 0; fi
host=""
for arg in "$@"; do
  case $arg in
    --worker=*) host="$host/${arg#--worker=}";;
    --command=*) command=${arg#--command=};;
    --*) ;;
    *) case $prev in ssh) host=${arg#*@};; esac;;
  esac
  prev=$arg
done
# Sessions at once, counted under a lock.
exec 9>"$FAKE_DIR/lock"
flock 9; n=$(( $(cat "$FAKE_DIR/now" 2>/dev/null || echo 0) + 1 )); echo $n > "$FAKE_DIR/now"
if (( n > $(cat "$FAKE_DIR/most" 2>/dev/null || echo 0) )); then echo $n > "$FAKE_DIR/most"; fi
flock -u 9
trap 'flock 9; echo $(( $(cat "$FAKE_DIR/now") - 1 )) > "$FAKE_DIR/now"; flock -u 9' EXIT
if [[ " $FAKE_IAP " == *" $host "* ]]; then
  echo "ERROR: (gcloud.compute.start-iap-tunnel) Error while connecting \
[4033: 'not authorized']." | tr -d '\n' >&2
  exit 1
fi
if [[ " $FAKE_HANG " == *" $host "* ]]; then
  sleep 60 & echo $! > "$FAKE_DIR/hung.pid"; wait
fi
/bin/sleep "${FAKE_SECONDS:-0}"
echo "$host ran: $command"
for failing in $FAKE_FAIL; do
  if [[ ${failing%:*} == "$host" ]]; then echo "it broke" >&2; exit "${failing#*:}"; fi
done
exit 0
"""
STACK = {
    "gcp:project": "my-ml-project",
    "gcp:region": "us-central2",
    "gcp:zone": "us-central2-b",
    "ai-infra:protect": "false",
    "ai-infra:cluster": {"enabled": False},
    "ai-infra:tpuVms": [{"name": "maxtext", "accelerator": "v4-16", "nodeCount": 2}],
}
GPU_STACK = {
    "gcp:project": "my-ml-project",
    "gcp:region": "us-central1",
    "gcp:zone": "us-central1-a",
    "ai-infra:protect": "false",
    "ai-infra:cluster": {"enabled": False},
    "ai-infra:gpuClusters": [{"name": "train", "instanceCount": 3}],
}


@pytest.fixture
def fake(tmp_path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(FAKE_GCLOUD)
    gcloud.chmod(gcloud.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)  # where logs go by default
    for name in ("FAKE_IAP", "FAKE_HANG", "FAKE_FAIL", "FAKE_MEMBERS", "FAKE_SECONDS"):
        monkeypatch.setenv(name, "")
    return tmp_path


def stack_file(tmp_path: Path, config: dict) -> str:
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return str(path)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_every_worker_of_every_slice_runs_and_each_outcome_is_its_own(fake, monkeypatch):
    monkeypatch.setenv("FAKE_HANG", "maxtext-0/1")
    monkeypatch.setenv("FAKE_FAIL", "maxtext-1/0:3")
    monkeypatch.setenv("FAKE_IAP", "maxtext-1/1")
    logs = fake / "logs"
    started = time.monotonic()
    code, out, _ = run(
        stack_file(fake, STACK), "tpuVms", "maxtext", "--timeout", "2", "--logs", str(logs),
        "--", "bash", "setup.sh", "--flag=it's",
    )  # fmt: skip
    assert code == 1
    assert time.monotonic() - started < 30, "the hung worker was cut off at its timeout"
    assert "1 of 4 host(s) succeeded" in out
    assert "maxtext-0 worker 1  timed out: after 2 s, killed" in out
    assert "maxtext-1 worker 0  exit 3" in out
    assert "maxtext-1 worker 1  IAP refused: 4033: 'not authorized'" in out
    assert "roles/iap.tunnelResourceAccessor" in out
    # Each worker has its log, with the command quoted as the user wrote it.
    assert (
        (logs / "maxtext-0-w0.log")
        .read_text()
        .strip()
        .endswith("maxtext-0/0 ran: bash setup.sh '--flag=it'\"'\"'s'")
    )
    assert "it broke" in (logs / "maxtext-1-w0.log").read_text()
    # The hung session's children went with it.
    pid = int((fake / "hung.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_each_session_is_gclouds_documented_iap_ssh_with_os_login(fake):
    code, _, _ = run(stack_file(fake, STACK), "tpuVms", "maxtext", "--", "hostname")
    assert code == 0
    calls = (fake / "calls").read_text().splitlines()
    key = Path("~/.ssh/google_compute_engine").expanduser()
    plain = (
        f"--plain --ssh-flag=-oIdentityFile={key} --ssh-flag=-oIdentitiesOnly=yes "
        "--ssh-flag=-oStrictHostKeyChecking=no --ssh-flag=-oUserKnownHostsFile=/dev/null"
    )
    # One dry run prepares the key and the OS Login profile, then the sessions fan out.
    assert calls[:2] == [
        "alpha compute tpus tpu-vm ssh maxtext-0 --zone=us-central2-b --project=my-ml-project "
        "--worker=0 --tunnel-through-iap --quiet --dry-run",
        "compute os-login describe-profile --format=json",
    ]
    assert sorted(calls[2:])[0] == (
        "alpha compute tpus tpu-vm ssh me_x_io@maxtext-0 --zone=us-central2-b "
        f"--project=my-ml-project --worker=0 --tunnel-through-iap --quiet {plain} "
        "--command=hostname"
    )
    assert len(calls) == 2 + 4
    code, _, _ = run(
        stack_file(fake, STACK), "tpuVms", "maxtext", "--internal-ip", "--slice", "maxtext-1",
        "--worker", "1", "--", "hostname",
    )  # fmt: skip
    assert code == 0
    assert (fake / "calls").read_text().splitlines()[-1] == (
        "compute tpus tpu-vm ssh me_x_io@maxtext-1 --zone=us-central2-b "
        f"--project=my-ml-project --worker=1 --internal-ip --quiet {plain} --command=hostname"
    )


def test_no_more_sessions_run_at_once_than_asked(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SECONDS", "0.5")
    code, _, _ = run(stack_file(fake, STACK), "tpuVms", "maxtext", "--parallel", "2", "--", "true")
    assert code == 0
    assert int((fake / "most").read_text()) == 2


def test_a_gpu_clusters_running_vms_are_its_hosts_and_its_hostfile(fake, monkeypatch):
    monkeypatch.setenv(
        "FAKE_MEMBERS",
        "ai-train-b2\tRUNNING\tNONE\nai-train-a1\tRUNNING\tNONE\nai-train-c3\tRUNNING\tSTOPPING\n",
    )
    stack = stack_file(fake, GPU_STACK)
    code, out, _ = run(stack, "gpuClusters", "train", "--hostfile")
    assert code == 0
    assert out == "ai-train-a1 slots=2\nai-train-b2 slots=2\n"
    code, out, _ = run(stack, "gpuClusters", "train", "--", "nvidia-smi", "-L")
    assert code == 0 and "2 of 2 host(s) succeeded" in out
    calls = (fake / "calls").read_text().splitlines()
    assert calls[0].startswith("compute instance-groups managed list-instances ai-test-train ")
    assert (
        "compute ssh ai-train-a1 --zone=us-central1-a --project=my-ml-project "
        "--tunnel-through-iap --quiet --command=nvidia-smi -L"
    ) in calls


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tpuVms", "maxtext", "--slice", "maxtext-7", "--", "true"], "no slice maxtext-7"),
        (["tpuVms", "maxtext", "--worker", "2", "--", "true"], "workers 0 to 1, not 2"),
        (["tpuVms", "other", "--", "true"], "no entry other; its entries: maxtext"),
        (["tpuVms", "maxtext", "--parallel", "0", "--", "true"], "give 1 to 64"),
        (["tpuVms", "maxtext", "--parallel", str(MAX_PARALLEL + 1), "--", "true"], "1 to 64"),
        (["tpuVms", "maxtext", "--timeout", "0", "--", "true"], "more than 0"),
        (["tpuVms", "maxtext"], "give the command after --"),
        (["tpuVms", "maxtext", "--hostfile"], "for GPU clusters"),
        (["gpuClusters", "maxtext", "--", "true"], "ai-infra:gpuClusters has no entry"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(fake, argv, message):
    code, _, err = run(stack_file(fake, STACK), *argv)
    assert code == 2 and message in err, err
    assert not (fake / "calls").exists()


def test_a_missing_gcloud_says_what_to_install(fake, monkeypatch, capsys):
    (fake / "bin" / "gcloud").unlink()
    monkeypatch.setenv("PATH", str(fake / "bin"))
    for config, system, name in ((GPU_STACK, "gpuClusters", "train"), (STACK, "tpuVms", "maxtext")):
        code, _, err = run(stack_file(fake, config), system, name, "--", "true")
        assert code == 2, err
        assert "gcloud is not installed here: install the Google Cloud CLI" in err, err
        assert "Traceback" not in err


def test_a_hanging_gcloud_is_cut_off_and_named(fake, monkeypatch):
    gcloud = fake / "bin" / "gcloud"
    gcloud.write_text("#!/bin/bash\nexec sleep 60\n")

    def impatient(argv):
        return subprocess.run(argv, capture_output=True, text=True, timeout=0.5, check=False)

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(
            [stack_file(fake, GPU_STACK), "gpuClusters", "train", "--", "true"], run=impatient
        )
    assert code == 2
    message = err.getvalue()
    assert "listing the VMs of ai-test-train: `gcloud compute instance-groups managed " in message
    assert "did not finish within 0 s" in message or "did not finish within 1 s" in message
    assert "Traceback" not in message


def test_the_key_is_prepared_once_before_the_sessions_and_a_refusal_stops_them(fake, monkeypatch):
    monkeypatch.setenv("FAKE_MEMBERS", "".join(f"ai-train-{i}\tRUNNING\tNONE\n" for i in range(8)))
    stack = stack_file(fake, GPU_STACK)
    code, out, _ = run(stack, "gpuClusters", "train", "--parallel", "8", "--", "true")
    assert code == 0 and "8 of 8 host(s) succeeded" in out
    calls = (fake / "calls").read_text().splitlines()
    prepares = [i for i, c in enumerate(calls) if "--dry-run" in c]
    sessions = [i for i, c in enumerate(calls) if "--command=true" in c]
    assert len(prepares) == 1 and len(sessions) == 8
    assert prepares[0] < min(sessions)
    # A dry run that fails (gcloud cannot reach the VM, or the profile) runs nothing.
    gcloud = fake / "bin" / "gcloud"
    gcloud.write_text(
        FAKE_GCLOUD.replace(
            'echo "ssh -t me_x_io@10.0.0.2"; exit 0',
            'echo "ERROR: permission denied" >&2; exit 1',
        )
    )
    (fake / "calls").unlink()
    code, _, err = run(stack, "gpuClusters", "train", "--", "true")
    assert code == 2
    assert "preparing your SSH key (a dry run of gcloud's SSH): ERROR: permission denied" in err
    assert not [c for c in (fake / "calls").read_text().splitlines() if "--command=" in c]
