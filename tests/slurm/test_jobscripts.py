"""Prologs and epilogs of one partition, and the slurm.conf timeouts of long prologs: the
wrapper run under bash as slurmd would run it, the objects setup installs, and the files
the controller renders (Toolkit's A3 blueprints set both)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.slurm.fields import JobScript
from components.slurm.jobscripts import guarded
from graph.engine import record_program
from stacks.messages import ConfigError
from tests.conftest import build_graph
from tests.slurm.test_cluster import content, objects
from tests.slurm.test_config import stack

CHECK = JobScript(
    name="gpu-check.sh",
    content='#!/bin/bash\necho "ran $1 in $SLURM_JOB_PARTITION" >> "$MARK"\nexit "${FAIL:-0}"\n',
)


def run_wrapper(tmp_path: Path, partition: str | None, **env: str) -> tuple[int, str]:
    script = tmp_path / "wrapper.sh"
    script.write_text(guarded("a3mega", CHECK))
    mark = tmp_path / "mark"
    environment = {"PATH": os.environ["PATH"], "MARK": str(mark), "TMPDIR": str(tmp_path), **env}
    if partition is not None:
        environment["SLURM_JOB_PARTITION"] = partition
    done = subprocess.run(["bash", str(script), "first"], env=environment, check=False)
    return done.returncode, mark.read_text() if mark.exists() else ""


@pytest.mark.skipif(shutil.which("base64") is None, reason="coreutils' base64 is not here")
def test_a_partition_s_script_runs_for_its_jobs_only_and_its_status_is_the_prolog_s(
    tmp_path: Path,
):
    assert run_wrapper(tmp_path, "a3mega") == (0, "ran first in a3mega\n")
    # Other partitions' jobs, one whose name starts the same included, do not run it.
    assert run_wrapper(tmp_path, "debug") == (0, "ran first in a3mega\n")
    assert run_wrapper(tmp_path, "a3mega-big") == (0, "ran first in a3mega\n")
    assert run_wrapper(tmp_path, None)[0] == 0
    # A failing script fails the prolog (which drains the node, as Slurm does for its own).
    status, _ = run_wrapper(tmp_path, "a3mega", FAIL="3")
    assert status == 3
    # Nothing is left behind in the temporary directory but the mark and the wrapper.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mark", "wrapper.sh"]


GPU_TEST = "#!/bin/bash\nexec /slurm/scripts/tools/gpu-test\n"
"""The GPU health check the pinned scripts carry (scripts.MANIFEST tools/gpu-test)."""


def partitioned(**fields: Any) -> dict[str, Any]:
    return stack(
        partitions=[
            {
                "name": "tpu",
                "nodesets": ["v4"],
                "default": True,
                "prologScripts": [{"name": "rxdm.sh", "content": "#!/bin/bash\ntrue\n"}],
                "epilogScripts": [
                    {
                        "name": "gpu-test.sh",
                        "content": "#!/bin/bash\n/slurm/scripts/tools/gpu-test\n",
                    }
                ],
            }
        ],
        **fields,
    )


def test_partition_scripts_are_installed_beside_the_cluster_s_and_listed_in_config_yaml():
    graph = build_graph(
        partitioned(epilogScripts=[{"name": "clean.sh", "content": "#!/bin/bash\ntrue\n"}])
    )
    found = objects(graph)
    document = yaml.safe_load(content(found["tpu-files/config.yaml"]))
    assert document["prolog_scripts"] == ["zz-tpu-rxdm_sh"]
    assert document["epilog_scripts"] == ["clean_sh", "zz-tpu-gpu-test_sh"]
    wrapper = content(found["tpu-files/slurm-epilog-script-zz-tpu-gpu-test_sh"])
    assert wrapper.startswith("#!/bin/bash\n") and "== tpu ]]" in wrapper
    # The cluster's own keeps its object and resource name.
    assert graph.named("slurm-epilog-clean.sh").inputs["name"] == (
        "tpu-files/slurm-epilog-script-clean_sh"
    )


def test_long_prolog_timeouts_reach_slurm_conf_and_unkillable_follows_the_message_timeout():
    long = {
        "messageTimeout": 600,
        "batchStartTimeout": 600,
        "prologEpilogTimeout": 600,
        "credentialExpire": 600,
    }
    graph = build_graph(stack(timeouts=long))
    document = yaml.safe_load(content(objects(graph)["tpu-files/config.yaml"]))
    template = document["slurm_conf_tpl"].splitlines()
    for line in (
        "AuthInfo=cred_expire=600",
        "MessageTimeout=600",
        "BatchStartTimeout=600",
        "PrologEpilogTimeout=600",
    ):
        assert line in template, line
    assert document["cloud_parameters"]["unkillable_step_timeout"] == 3000
    default = yaml.safe_load(content(objects(build_graph(stack()))["tpu-files/config.yaml"]))
    assert "MessageTimeout=60" in default["slurm_conf_tpl"].splitlines()
    assert "BatchStartTimeout" not in default["slurm_conf_tpl"]
    assert "unkillable_step_timeout" not in default["cloud_parameters"]


@pytest.mark.parametrize(
    ("raw", "path", "fix"),
    [
        (
            stack(timeouts={"messageTimeout": 600}, cloudParameters={"unkillableStepTimeout": 300}),
            "ai-infra:slurm.cloudParameters.unkillableStepTimeout",
            "at least 3000",
        ),
        (
            stack(cloudParameters={"slurmdTimeout": 86400}),
            "ai-infra:slurm.cloudParameters.slurmdTimeout",
            "65535",
        ),
        (
            stack(timeouts={"messageTimeout": 20000}),
            "ai-infra:slurm.timeouts.messageTimeout",
            "13107",
        ),
    ],
)
def test_timeouts_slurm_cannot_hold_are_refused(raw: dict[str, Any], path: str, fix: str):
    graph, error = record_program(raw)
    assert isinstance(error, ConfigError)
    found = dict(error.rendered)
    assert fix in found[path], found
    assert graph.resources == []


def test_a_partition_whose_name_hides_its_scripts_is_refused():
    raw = stack(
        partitions=[
            {
                "name": "script",
                "nodesets": ["v4"],
                "epilogScripts": [{"name": "a.sh", "content": "#!/bin/bash\n"}],
            }
        ]
    )
    _, error = record_program(raw)
    assert isinstance(error, ConfigError)
    assert "rename the partition" in dict(error.rendered)["ai-infra:slurm.partitions[0].name"]
