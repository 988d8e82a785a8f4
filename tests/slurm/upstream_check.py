"""A development-time check, not a test: run Slurm-GCP v6's own scripts (Cluster Toolkit
v1.95.0, the pinned commit) on exactly what this program writes to the Slurm bucket, with every
cloud call faked, and record what they make of it in `upstream_recorded.json`, which
`test_upstream.py` reads. Tests never run upstream code and fetch nothing; this script does
not fetch either.

It needs the pinned scripts folder (checked here against `scripts.MANIFEST`) and a Python with
their requirements (`pip install -r <scripts>/requirements.txt`):

    git -C <cluster-toolkit clone> archive 079cf8349a96cfd433cb89945bc467af21818424 \\
        community/modules/scheduler/schedmd-slurm-gcp-v6-controller/modules/slurm_files \\
        | tar -x -C /tmp/tk
    uv run python -m tests.slurm.upstream_check --scripts /tmp/tk/community/.../scripts \\
        --python /tmp/venv-slurm/bin/python

For each case in `CASES` it builds the stack under the mock engine, writes the bucket objects
and instance templates to a folder, copies the scripts twice (as pinned, and with this
program's addition to util.py, `scripts.PATCHES`), and runs this file's `--upstream` half in
the scripts' Python on each copy: the config loader (`util._assemble_config`) as controller,
login and compute node; `conf.generate_configs_slurm_v2505` (slurm.conf, cloud.conf,
cloud_topology.yaml, job_submit.lua); `setup_network_storage.resolve_network_storage`;
`get_tpu_vmcount`; and `resume.create_instances_request` and `group_nodes_bulk`.

Faked: the metadata server (role, login group), `slurmctld -V` (25.11.4, the Slurm of the
pinned image family, slurm-gcp 6.12.2 ansible defaults), no VMs running yet, Compute Engine
(instanceTemplates.get from the registered template's inputs, machineTypes from
`MACHINE_TYPES`, bulkInsert recorded) and the TPU API's getAcceleratorType (`TPU_TOPOLOGIES`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).with_name("upstream_recorded.json")
SLURM_VERSION = "25.11.4"
MACHINE_TYPES: dict[str, dict[str, Any]] = {
    "n2-standard-2": {"guestCpus": 2, "memoryMb": 8192},
    "n1-standard-8": {"guestCpus": 8, "memoryMb": 30720},
}
"""Compute Engine "General-purpose machine family": vCPUs and memory."""
TPU_TOPOLOGIES = {"v2-8": "2x2", "v4-8": "2x2x1", "v4-16": "2x2x2", "v4-32": "2x2x4"}
"""Cloud TPU accelerator types' chip topologies ("TPU v2", "TPU v4")."""

REGION = {"gcp:region": "us-central2", "gcp:zone": "us-central2-b"}
CASES: dict[str, dict[str, Any]] = {
    "cpu-and-v4-16": {
        **REGION,
        "ai-infra:slurm": {
            "clusterName": "aic",
            "debugPartition": True,
            "loginGroups": [{"name": "login"}, {"name": "gpu", "count": 1}],
            "cpuNodesets": [
                {
                    "name": "t4",
                    "machineType": "n1-standard-8",
                    "gpu": {"type": "nvidia-tesla-t4", "count": 1},
                    "nodeCountDynamicMax": 2,
                    "zones": ["us-central2-b"],
                }
            ],
            "tpuNodesets": [{"name": "v4x16", "nodeType": "v4-16", "nodeCountDynamicMax": 4}],
            "partitions": [
                {"name": "tpu", "nodesets": ["v4x16"]},
                {"name": "t4", "nodesets": ["t4"], "partitionConf": {"MaxTime": "60"}},
            ],
            "networkStorage": [
                {
                    "serverIp": "10.0.0.9",
                    "remoteMount": "/data",
                    "localMount": "/data",
                    "fsType": "nfs",
                }
            ],
            "cloudParameters": {"resumeRate": 10, "treeWidth": 64},
            "prologScripts": [{"name": "check.sh", "content": "#!/bin/bash\ntrue\n"}],
        },
    },
    "seed-v2-8-tf-2-10": {
        "gcp:region": "us-central1",
        "gcp:zone": "us-central1-b",
        "ai-infra:slurm": {
            "clusterName": "seed",
            "home": {"filestore": False},
            "tpuNodesets": [
                {
                    "name": "v2x8",
                    "nodeType": "v2-8",
                    "tfVersion": "2.10.0",
                    "dockerImage": "us-docker.pkg.dev/my-project/slurm/slurm-gcp-6-9:tf-2.10.0",
                    "preemptible": True,
                    "nodeCountDynamicMax": 2,
                }
            ],
            "partitions": [{"name": "tpu", "nodesets": ["v2x8"], "default": True}],
        },
    },
}


# Our half: build, write, run, record.


def documents(case: str) -> tuple[dict[str, str], dict[str, Any]]:
    """The bucket objects (path under the cluster's folder -> text) and instance templates
    (self link -> inputs) the program registers for a case."""
    from tests.conftest import build_graph, with_config

    raw = with_config(**{k: v for k, v in CASES[case].items()})
    graph = build_graph(raw, stack="upstream")
    objects: dict[str, str] = {}
    for r in graph.of_type("gcp:storage/bucketObject:BucketObject"):
        value = r.inputs["content"]
        text = value["value"] if isinstance(value, dict) else value
        objects[r.inputs["name"].split("/", 1)[1]] = text
    templates = {
        f"https://www.googleapis.com/compute/v1/projects/test-project/{r.inputs['name']}": r.inputs
        for r in graph.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
    }
    return objects, templates


def inputs_digest(case: str) -> str:
    objects, templates = documents(case)
    text = json.dumps({"objects": objects, "templates": templates}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _copy_scripts(source: Path, target: Path, *, patch: bool) -> None:
    from components.slurm import scripts

    shutil.copytree(source, target)
    for path, expected in scripts.MANIFEST.items():
        data = (target / path).read_bytes()
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise SystemExit(f"{source}/{path} is not the pinned file ({actual} != {expected})")
        if patch:
            (target / path).write_bytes(scripts.patched(path, data))


def record(scripts_dir: Path, python: str) -> dict[str, Any]:
    found: dict[str, Any] = {
        "about": "Written by tests/slurm/upstream_check.py; read by test_upstream.py.",
        "slurm_version": SLURM_VERSION,
        "cases": {},
    }
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for patch in (False, True):
            _copy_scripts(scripts_dir, root / f"scripts-{patch}", patch=patch)
        for case in CASES:
            objects, templates = documents(case)
            folder = root / case
            for path, text in objects.items():
                (folder / "bucket" / path).parent.mkdir(parents=True, exist_ok=True)
                (folder / "bucket" / path).write_text(text)
            (folder / "templates.json").write_text(json.dumps(templates, default=str))
            runs = {}
            for patch in (False, True):
                out = subprocess.run(
                    [python, __file__, "--upstream", str(folder), str(root / f"scripts-{patch}")],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs["with_addition" if patch else "as_pinned"] = json.loads(out.stdout)
            found["cases"][case] = {"inputs_sha256": inputs_digest(case), **runs}
    return found


# The upstream half: runs in the scripts' own Python, imports nothing of this program.


def run_upstream(folder: Path, scripts_dir: Path) -> dict[str, Any]:
    import logging
    import socket

    logging.disable(logging.CRITICAL)
    sys.path.insert(0, str(scripts_dir))
    import util  # type: ignore[import-not-found]
    import yaml

    bucket = folder / "bucket"
    templates = json.loads((folder / "templates.json").read_text())
    out_dir = folder / "out"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir()
    metadata = {"attributes/universe_domain": "googleapis.com"}

    def fake_metadata(path: str, silent: bool = False) -> str:
        if path in metadata:
            return metadata[path]
        raise util.MetadataNotFoundError(path)

    util.instance_metadata = fake_metadata
    socket.gethostbyname = lambda host: "10.0.0.2"

    import conf  # type: ignore[import-not-found]
    import get_tpu_vmcount  # type: ignore[import-not-found]
    import resume  # type: ignore[import-not-found]
    import setup_network_storage  # type: ignore[import-not-found]
    import tpu  # type: ignore[import-not-found]
    from google.cloud import tpu_v2

    class FakeTpuClient:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def get_accelerator_type(self, request: Any = None, **kwargs: Any) -> Any:
            name = request.name.rsplit("/", 1)[-1]
            version = tpu_v2.AcceleratorConfig.Type[name.split("-")[0].upper()]
            return tpu_v2.AcceleratorType(
                type_=name,
                accelerator_configs=[
                    tpu_v2.AcceleratorConfig(type_=version, topology=TPU_TOPOLOGIES[name])
                ],
            )

    tpu.tpu.TpuClient = FakeTpuClient
    calls: list[dict[str, Any]] = []

    class Request:
        def __init__(self, method: str, kwargs: dict[str, Any], result: Any) -> None:
            self.methodId, self.kwargs, self.result = method, kwargs, result
            self.uri, self.body = "", json.dumps(kwargs.get("body"), default=str)

        def execute(self) -> Any:
            return self.result

    def integral(value: Any) -> Any:
        """Pulumi's wire format carries numbers as floats; the Compute API answers ints."""
        if isinstance(value, dict):
            return {k: integral(v) for k, v in value.items()}
        if isinstance(value, list):
            return [integral(v) for v in value]
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def template_properties(inputs: dict[str, Any]) -> dict[str, Any]:
        """An instanceTemplates.get answer from the inputs the program registered."""
        inputs = integral(inputs)
        return {
            "machineType": inputs["machineType"],
            "guestAccelerators": [
                {"acceleratorType": g["type"], "acceleratorCount": g["count"]}
                for g in inputs.get("guestAccelerators", [])
            ],
            "advancedMachineFeatures": inputs.get("advancedMachineFeatures", {}),
            "labels": inputs.get("labels", {}),
            "disks": [
                {"boot": d.get("boot"), "initializeParams": {"diskType": d.get("diskType")}}
                for d in inputs.get("disks", [])
            ],
        }

    class Api:
        def __init__(self, name: str) -> None:
            self.name = name

        def __getattr__(self, method: str) -> Any:
            def call(**kwargs: Any) -> Request:
                calls.append({"method": f"{self.name}.{method}", **kwargs})
                result: Any = None
                if (self.name, method) == ("instanceTemplates", "get"):
                    link = next(k for k in templates if k.endswith(kwargs["instanceTemplate"]))
                    result = {"properties": template_properties(templates[link])}
                elif (self.name, method) == ("machineTypes", "aggregatedList"):
                    result = {
                        "items": {
                            "zones/z": {
                                "machineTypes": [
                                    {"name": n, "zone": "z", **facts}
                                    for n, facts in MACHINE_TYPES.items()
                                ]
                            }
                        }
                    }
                return Request(f"compute.{self.name}.{method}", kwargs, result)

            return call

        def aggregatedList_next(self, *args: Any) -> None:
            return None

    class Compute:
        def __getattr__(self, name: str) -> Any:
            return lambda: Api(name)

    util.Lookup.compute = property(lambda self: Compute())
    util.Lookup.slurm_version = property(lambda self: SLURM_VERSION)
    util.Lookup.instances = lambda self: {}

    def load(pattern: str) -> list[Any]:
        return [yaml.safe_load(p.read_text()) for p in sorted(bucket.glob(pattern))]

    def assemble(role: str, **extra: str) -> Any:
        metadata["attributes/slurm_instance_role"] = role
        metadata.update({f"attributes/{k}": v for k, v in extra.items()})
        util.instance_metadata = fake_metadata
        cfg = util._assemble_config(
            core=yaml.safe_load((bucket / "config.yaml").read_text()),
            controller_addr=None,
            partitions=load("partition_configs/*.yaml"),
            nodesets=load("nodeset_configs/*.yaml"),
            nodesets_dyn=load("nodeset_dyn_configs/*.yaml"),
            nodesets_tpu=load("nodeset_tpu_configs/*.yaml"),
            login_groups=load("login_group_configs/*.yaml"),
        )
        cfg.output_dir = str(out_dir)
        # Read job_submit.lua.tpl from here, but write the paths a VM has (/slurm/scripts).
        cfg.slurm_scripts_dir = scripts_dir
        cfg.install_dir = "/slurm/scripts"
        lkp = util.Lookup(cfg)
        util._lkp = lkp
        return lkp

    result: dict[str, Any] = {}
    lkp = assemble("controller")
    conf.generate_configs_slurm_v2505(lkp)
    for name in ("slurm.conf", "slurmdbd.conf", "cloud.conf", "cloud_topology.yaml"):
        if (out_dir / name).exists():
            # Without comment lines: upstream's preamble is prose, and the settings are facts.
            lines = (out_dir / name).read_text().splitlines()
            result[name] = "\n".join(x for x in lines if not x.lstrip().startswith("#"))
    result["topology.yaml links to"] = (
        (out_dir / "topology.yaml").resolve().name if (out_dir / "topology.yaml").exists() else None
    )
    result["job_submit.lua installed"] = (out_dir / "job_submit.lua").exists()
    result["tpu vmcount"] = {
        p: get_tpu_vmcount.get_vmcount_of_tpu_part(p)
        for p, part in lkp.cfg.partitions.items()
        if part.partition_nodeset_tpu
    }
    result["block topology"] = {
        p: lkp.has_block_topology(part) for p, part in lkp.cfg.partitions.items()
    }
    result["controller mounts"] = _mounts(setup_network_storage.resolve_network_storage())
    for group in sorted(lkp.cfg.login_groups):
        login = assemble("login", slurm_login_group=group)
        result[f"login {group} mounts"] = _mounts(setup_network_storage.resolve_network_storage())
        del login
    for name, nodeset in sorted(lkp.cfg.nodeset.items()):
        lkp = assemble("compute")
        nodes = list(lkp.nodenames(nodeset)[1])[:2]
        util.Lookup.hostname = property(lambda self, n=nodes[0]: n)
        result[f"compute {name} mounts"] = _mounts(setup_network_storage.resolve_network_storage())
        del util.Lookup.hostname
        lkp = assemble("controller")
        calls.clear()
        resume.log_api_request = lambda request: None
        request = resume.create_instances_request(nodes, None, None)
        result[f"resume {name}"] = {"method": request.methodId, **request.kwargs}
    for name, nodeset in sorted(lkp.cfg.nodeset_tpu.items()):
        nodes = [*lkp.nodenames(nodeset)[0], *lkp.nodenames(nodeset)[1]]
        groups = resume.group_nodes_bulk(nodes, None, lkp)
        result[f"resume {name} chunks"] = [chunk.nodes for chunk in groups.values()]
    return json.loads(json.dumps(result, default=str))


def _mounts(mounts: list[Any]) -> list[list[str]]:
    return sorted(
        [str(m.local_mount), str(m.server_ip), str(m.remote_mount), str(m.fs_type)] for m in mounts
    )


def main() -> None:
    if sys.argv[1:2] == ["--upstream"]:
        print(json.dumps(run_upstream(Path(sys.argv[2]), Path(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--scripts", type=Path, required=True)
    parser.add_argument("--python", required=True)
    args = parser.parse_args()
    recorded = record(args.scripts, args.python)
    RECORDED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORDED}")


if __name__ == "__main__":
    main()
