"""The shared startup-script frame under bash: every step runs under its name, a failing step
is named in the log and in the readiness signal `pulumi up` waits for, background steps never
fail the script, and a reboot starts the signal over."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence

import pytest

from components import startup
from components.startup import DONE, FAILED, RUNNING, Block, parse_signal
from tests.components.startup_vm import Vm


def render(blocks: Sequence[Block]) -> str:
    return startup.render(blocks, source="tests")


def vm(tmp_path) -> Vm:
    return Vm(tmp_path, render)


def test_the_frame_parses():
    script = render([Block("one", ("true",)), Block("two", ("false || fail",), background=True)])
    result = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


def test_a_clean_run_reports_running_then_done(tmp_path):
    machine = vm(tmp_path)
    probe = tmp_path / "seen"
    signal = machine.state / "guest" / startup.READY_PATH
    # A step sees the signal the script set when it started.
    step = Block("probe", (f"cp {shlex.quote(str(signal))} {shlex.quote(str(probe))}",))
    result, _ = machine.run([step])
    assert result.returncode == 0, result.stderr
    assert probe.read_text() == RUNNING
    assert machine.signal() == DONE


def test_the_first_failing_step_is_named_and_the_rest_still_run(tmp_path):
    machine = vm(tmp_path)
    marker = tmp_path / "ran"
    result, _ = machine.run(
        [
            Block("mount data", ("false || fail 'no such bucket'",)),
            Block("ray", ("false || fail",)),
            Block("startupCommand", (f"touch {shlex.quote(str(marker))}",)),
        ]
    )
    assert result.returncode == 1
    assert "FAILED: mount data (no such bucket)" in result.stderr
    assert "FAILED: ray" in result.stderr
    assert marker.exists()
    assert machine.signal() == f"{FAILED}mount data (+1 more)"
    assert parse_signal(machine.signal()) == ("failed", "mount data (+1 more)")


def test_a_step_that_fails_twice_is_counted_once(tmp_path):
    machine = vm(tmp_path)
    result, _ = machine.run([Block("gib", ("false || fail a", "false || fail b"))])
    assert result.returncode == 1
    assert machine.signal() == f"{FAILED}gib"


def test_a_background_step_never_fails_the_script(tmp_path):
    machine = vm(tmp_path)
    result, _ = machine.run(
        [Block("Ops Agent", ("false || fail", "exit 3"), background=True), Block("x", ("true",))]
    )
    assert result.returncode == 0, result.stderr
    assert machine.signal() == DONE


def test_a_reboot_starts_the_signal_over(tmp_path):
    """A VM that failed and is rebooted (or repaired) reports afresh: `pulumi up` never reads
    the last boot's outcome as this one's."""
    machine = vm(tmp_path)
    flag = tmp_path / "broken"
    flag.touch()
    step = Block("flaky", (f"[[ ! -e {shlex.quote(str(flag))} ]] || fail",))
    machine.run([step])
    assert machine.signal() == f"{FAILED}flaky"
    flag.unlink()
    result, calls = machine.run([step])
    assert result.returncode == 0, result.stderr
    puts = [c for c in calls if "guest-attributes" in c]
    assert [c.split("--data ")[1].split()[0] for c in puts] == [RUNNING, DONE]
    assert machine.signal() == DONE


def test_a_long_step_name_is_cut_in_the_signal_not_in_the_log(tmp_path):
    machine = vm(tmp_path)
    name = "gcsfuse " + "b" * 222
    result, _ = machine.run([Block(name, ("false || fail",))])
    assert f"FAILED: {name}" in result.stderr
    signal = machine.signal()
    assert signal is not None and len(signal) == startup.REPORT_MAX_CHARS
    assert signal.startswith(f"{FAILED}gcsfuse bbb")


def test_an_unreachable_metadata_server_is_logged_not_fatal(tmp_path):
    machine = vm(tmp_path)
    result, _ = machine.run([Block("x", ("true",))], STUB_CURL_FAIL="guest-attributes")
    assert result.returncode == 0, result.stderr
    assert "could not set the guest attribute" in result.stderr


def test_content_that_would_end_a_here_document_is_refused():
    with pytest.raises(ValueError, match="delimiter"):
        startup.heredoc("write_file /x 0644", f"a\n{startup.HEREDOC}\nb")


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        (None, ("missing", None)),
        ("", ("missing", None)),
        (RUNNING, ("running", None)),
        (DONE, ("done", None)),
        (f"{FAILED}ray", ("failed", "ray")),
        ("something else", ("unknown", "something else")),
    ],
)
def test_signals_read_back(value, parsed):
    assert parse_signal(value) == parsed
