"""The TPU VM startup script under bash against stubs: the entry's startupScript runs as a step
of its own with its interpreter line, and its outcome is the readiness signal `pulumi up`
waits for, afresh on every boot."""

from __future__ import annotations

import pytest

from components.startup import DONE, FAILED
from components.tpu_vms import boot
from components.tpu_vms.boot import USER_SCRIPT, render
from tests.components.startup_vm import Vm


def vm(tmp_path) -> Vm:
    return Vm(tmp_path, lambda script: render(boot.steps(script)))


def test_the_users_script_runs_as_written_and_the_vm_reports_done(tmp_path):
    machine = vm(tmp_path)
    marker = tmp_path / "ran"
    result, _ = machine.run(f'#!/bin/sh\necho "it\'s $0" > {marker}\n')
    assert result.returncode == 0, result.stderr
    assert marker.read_text().strip() == f"it's {machine.root}{USER_SCRIPT}"
    assert machine.signal() == DONE


def test_a_script_without_an_interpreter_line_runs_under_bash(tmp_path):
    machine = vm(tmp_path)
    marker = tmp_path / "ran"
    result, _ = machine.run(f"[[ -n $BASH_VERSION ]] && touch {marker}\n")
    assert result.returncode == 0, result.stderr
    assert marker.exists()


def test_a_failing_script_is_the_failed_step(tmp_path):
    machine = vm(tmp_path)
    result, _ = machine.run("echo broken >&2\nexit 3\n")
    assert result.returncode == 1
    assert "FAILED: startupScript" in result.stderr
    assert machine.signal() == f"{FAILED}startupScript"


def test_a_fixed_script_reports_done_at_the_next_boot(tmp_path):
    machine = vm(tmp_path)
    machine.run("exit 1\n")
    result, _ = machine.run("exit 0\n")
    assert result.returncode == 0, result.stderr
    assert machine.signal() == DONE


def test_without_a_script_the_vm_still_reports(tmp_path):
    machine = vm(tmp_path)
    result, _ = machine.run(None)
    assert result.returncode == 0 and machine.signal() == DONE


def test_a_script_holding_the_delimiter_is_refused():
    with pytest.raises(ValueError, match="delimiter"):
        render(boot.steps("echo a\nAI_INFRA_EOF\necho b\n"))
