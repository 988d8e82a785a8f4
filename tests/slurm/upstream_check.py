"""A development-time check, not a test: run Slurm-GCP v6's own scripts (Cluster Toolkit
v1.95.0, the pinned commit) on exactly what this program writes to the Slurm bucket, with every
cloud call faked, and record what they make of it in `upstream_recorded.json`, which
`test_upstream.py` reads. Tests never run upstream code and fetch nothing; this script does
not fetch either.

It needs the pinned scripts folder (checked here against `scripts.MANIFEST`), a Python with
their requirements (`pip install -r <scripts>/requirements.txt`) and Debian's `lua5.4`; the
recording names the Toolkit commit and the script hashes it was made with (`provenance`):

    git -C <cluster-toolkit clone> archive 079cf8349a96cfd433cb89945bc467af21818424 \\
        community/modules/scheduler/schedmd-slurm-gcp-v6-controller/modules/slurm_files \\
        | tar -x -C /tmp/tk
    uv run python -m tests.slurm.upstream_check --scripts /tmp/tk/community/.../scripts \\
        --python /tmp/venv-slurm/bin/python

For each case in `CASES` it builds the stack under the mock engine, writes the bucket objects
and instance templates to a folder, copies the scripts twice (as pinned, and with this
program's additions, `scripts.ADDITIONS`), and runs this file's `--upstream` half in
the scripts' Python on each copy: the config loader (`util._assemble_config`) as controller,
login and compute node; `conf.generate_configs_slurm_v2505` (slurm.conf, cloud.conf,
cloud_topology.yaml, job_submit.lua); `setup_network_storage.resolve_network_storage`;
`get_tpu_vmcount`; `resume.create_instances_request`, `group_nodes_bulk` (every node at
once, as the exclusive jobs of a partition, and as a job on nodes of two leaf switches) and
`tpu.start_tpu` (with the SSH metadata of the TPU node it creates); the rendered
job_submit.lua's submit and modify under Lua (`SUBMITS`); and slurmsync's
`_find_tpu_node_action` with the action it picks, for a preempted static node.

Faked: the metadata server (role, login group), `slurmctld -V` (25.11.4, the Slurm of the
pinned image family, slurm-gcp 6.12.2 ansible defaults), no VMs running yet, Compute Engine
(instanceTemplates.get from the registered template's inputs, machineTypes from
`MACHINE_TYPES`, bulkInsert recorded), the TPU API (getAcceleratorType from
`TPU_TOPOLOGIES`, nodes kept and recorded) and `scontrol` (recorded).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

try:
    from tests.slurm.blueprints import FACTS, translation
except ImportError:  # the upstream half, run as a script in the scripts' own Python
    from blueprints import FACTS, translation  # type: ignore[no-redef]

RECORDED = Path(__file__).with_name("upstream_recorded.json")
COMPUTE = "https://www.googleapis.com/compute/v1"
SLURM_VERSION = "25.11.4"


def _gpus(kind: str, count: int) -> list[dict[str, Any]]:
    return [{"guestAcceleratorType": kind, "guestAcceleratorCount": count}]


MACHINE_TYPES: dict[str, dict[str, Any]] = {
    "n2-standard-2": {"guestCpus": 2, "memoryMb": 8192},
    "n1-standard-8": {"guestCpus": 8, "memoryMb": 30720},
    "n2-standard-32": {"guestCpus": 32, "memoryMb": 131072},
    "c2-standard-60": {"guestCpus": 60, "memoryMb": 245760},
    "a3-megagpu-8g": {
        "guestCpus": 208,
        "memoryMb": 1884160,
        "accelerators": _gpus("nvidia-h100-mega-80gb", 8),
    },
    "a3-ultragpu-8g": {
        "guestCpus": 224,
        "memoryMb": 2952192,
        "accelerators": _gpus("nvidia-h200-141gb", 8),
    },
    "a4-highgpu-8g": {
        "guestCpus": 224,
        "memoryMb": 4063232,
        "accelerators": _gpus("nvidia-b200", 8),
    },
    "c2-standard-8": {"guestCpus": 8, "memoryMb": 32768},
}
"""Compute Engine "General-purpose", "Compute-optimized" and "Accelerator-optimized machine
family": vCPUs, memory and built-in GPUs."""
RESERVATIONS: dict[str, dict[str, Any]] = {
    "a3mega-block": {
        "specificReservationRequired": True,
        "specificReservation": {
            "count": "4",
            "assuredCount": "4",
            "instanceProperties": {"machineType": "a3-megagpu-8g"},
        },
    },
}
"""reservations.get answers (Compute Engine API `Reservation`), by name."""
TPU_TOPOLOGIES = {
    "v2-8": "2x2",
    "v4-8": "2x2x1",
    "v4-16": "2x2x2",
    "v4-32": "2x2x4",
    "v4-64": "2x4x4",
}
"""Cloud TPU accelerator types' chip topologies ("TPU v2", "TPU v4")."""

REGION = {"gcp:region": "us-central2", "gcp:zone": "us-central2-b"}
CUSTOM_IMAGE = {"project": "my-images", "family": "slurm-gcp-custom"}
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
                {
                    "name": "t4",
                    "nodesets": ["t4"],
                    "partitionConf": {"maxtime": "60", "GraceTime": "30"},
                },
            ],
            "networkStorage": [
                {
                    "serverIp": "10.0.0.9",
                    "remoteMount": "/data",
                    "localMount": "/data",
                    "fsType": "nfs",
                }
            ],
            "cloudParameters": {"treeWidth": 64},
            "prologScripts": [{"name": "check.sh", "content": "#!/bin/bash\ntrue\n"}],
        },
    },
    "tpu-slices-at-scale": {
        **REGION,
        "ai-infra:slurm": {
            "clusterName": "big",
            "debugPartition": True,
            "home": {"filestore": False},
            # At least 12 nodes of every slice size: 1, 2, 4 and 8 workers per slice.
            "tpuNodesets": [
                {"name": "v4x8", "nodeType": "v4-8", "nodeCountDynamicMax": 12},
                {"name": "v4x16", "nodeType": "v4-16", "nodeCountDynamicMax": 12},
                {
                    "name": "v4x32",
                    "nodeType": "v4-32",
                    "nodeCountDynamicMax": 12,
                    "dataDisks": ["projects/test-project/zones/us-central2-b/disks/data"],
                },
                {"name": "v4x64", "nodeType": "v4-64", "nodeCountDynamicMax": 24},
                {"name": "pre", "nodeType": "v4-8", "preemptible": True, "nodeCountStatic": 2},
                {
                    "name": "one",
                    "nodeType": "v4-8",
                    "nodeCountDynamicMax": 1,
                    "dataDisks": ["projects/test-project/zones/us-central2-b/disks/scratch"],
                },
            ],
            "partitions": [
                {"name": "single", "nodesets": ["v4x8", "one"]},
                {"name": "pairs", "nodesets": ["v4x16"]},
                {"name": "quads", "nodesets": ["v4x32"]},
                {"name": "octs", "nodesets": ["v4x64"]},
                {"name": "spot", "nodesets": ["pre"], "exclusive": False},
            ],
        },
    },
    "toolkit-parity": {
        "gcp:region": "us-central1",
        "gcp:zone": "us-central1-a",
        "ai-infra:slurm": {
            "clusterName": "tk",
            "controller": {"allowAutomaticUpdates": False, "image": CUSTOM_IMAGE},
            "loginGroups": [
                {"name": "login", "allowAutomaticUpdates": False, "image": CUSTOM_IMAGE}
            ],
            # One nodeset per Toolkit key of the docs' mapping table.
            "cpuNodesets": [
                {
                    "name": "tier1",
                    "machineType": "c2-standard-60",
                    "bandwidthTier": "tier_1_enabled",
                    "allowAutomaticUpdates": False,
                    "nodeCountDynamicMax": 4,
                },
                {
                    "name": "place",
                    "machineType": "c2-standard-60",
                    "enablePlacement": True,
                    "placementMaxDistance": 2,
                    "nodeCountDynamicMax": 4,
                },
                {
                    "name": "disks",
                    "machineType": "n2-standard-32",
                    "additionalDisks": [
                        {"deviceName": "scratch", "diskType": "pd-ssd", "diskSizeGb": 200}
                    ],
                    "localSsd": {"count": 2},
                    "nodeCountDynamicMax": 4,
                },
                {
                    "name": "resv",
                    "machineType": "a3-megagpu-8g",
                    "diskType": "pd-ssd",
                    "reservation": "a3mega-block",
                    "bandwidthTier": "gvnic_enabled",
                    "gpuNetworks": {"subnetCidr": "10.200.0.0/20"},
                    "nodeCountDynamicMax": 4,
                },
                {
                    "name": "flex",
                    "machineType": "a3-ultragpu-8g",
                    "diskType": "hyperdisk-balanced",
                    "dwsFlex": {"maxRunDuration": 7200},
                    "gpuNetworks": {"subnetCidr": "10.201.0.0/20"},
                    "nodeCountDynamicMax": 4,
                },
            ],
            "cloudParameters": {"resumeRate": 10},
            "partitions": [
                {"name": "cpu", "nodesets": ["tier1", "place", "disks"], "default": True},
                {"name": "a3", "nodesets": ["resv"]},
                {"name": "flex", "nodesets": ["flex"]},
            ],
        },
    },
    **{f"blueprint-{b}": translation(b) for b in FACTS},
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


REAL_LINKS = {
    "gcp:compute/subnetwork:Subnetwork": "regions/{region}/subnetworks/{name}",
    "gcp:compute/network:Network": "global/networks/{name}",
    "gcp:compute/instanceTemplate:InstanceTemplate": "global/instanceTemplates/{name}",
}
"""Compute Engine self links as the API writes them, where the mock engine gives
`projects/P/NAME`: util.py reads a nodeset's region from its subnetwork's link."""


def documents(case: str) -> tuple[dict[str, str], dict[str, Any]]:
    """The bucket objects (path under the cluster's folder -> text) and instance templates
    (self link -> inputs) the program registers for a case, with the mock engine's self
    links written as Compute Engine writes them."""
    from tests.conftest import build_graph, with_config

    raw = with_config(**{k: v for k, v in CASES[case].items()})
    graph = build_graph(raw, stack="upstream")
    links = {}
    for r in graph.resources:
        if r.type in REAL_LINKS:
            name, region = r.inputs["name"], r.inputs.get("region", "")
            mock = f"{COMPUTE}/projects/test-project/{name}"
            links[mock] = f"{COMPUTE}/projects/test-project/" + REAL_LINKS[r.type].format(
                name=name, region=region
            )

    def real(text: str) -> str:
        for mock in sorted(links, key=len, reverse=True):
            text = re.sub(re.escape(mock) + r"(?![-a-z0-9])", links[mock], text)
        return text

    objects: dict[str, str] = {}
    for r in graph.of_type("gcp:storage/bucketObject:BucketObject"):
        value = r.inputs["content"]
        text = value["value"] if isinstance(value, dict) else value
        objects[r.inputs["name"].split("/", 1)[1]] = real(text)
    templates = {
        links[f"{COMPUTE}/projects/test-project/{r.inputs['name']}"]: r.inputs
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


def provenance() -> dict[str, Any]:
    """What a recording was made with: the Toolkit commit, every pinned script's sha256 and
    the sha256 of each one this program changes; test_upstream.py holds them to the pins."""
    from components.slurm import scripts

    return {
        "toolkit_commit": scripts.TOOLKIT_COMMIT,
        "manifest": dict(scripts.MANIFEST),
        "patched": dict(scripts.PATCHED),
        "slurm_version": SLURM_VERSION,
    }


def record(scripts_dir: Path, python: str) -> dict[str, Any]:
    found: dict[str, Any] = {
        "about": "Written by tests/slurm/upstream_check.py; read by test_upstream.py.",
        **provenance(),
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
                    check=False,
                )
                if out.returncode:
                    raise SystemExit(f"{case}: the upstream half failed:\n{out.stderr}")
                runs["with_addition" if patch else "as_pinned"] = json.loads(out.stdout)
            found["cases"][case] = {"inputs_sha256": inputs_digest(case), **runs}
    return found


# The upstream half: runs in the scripts' own Python, imports nothing of this program.


class Upstream:
    """Slurm-GCP's modules, imported from `scripts_dir` with every cloud call faked, over the
    bucket objects and templates in `folder`."""

    def __init__(self, folder: Path, scripts_dir: Path) -> None:
        import logging
        import socket

        logging.disable(logging.CRITICAL)
        sys.path.insert(0, str(scripts_dir))
        import util  # type: ignore[import-not-found]

        self.folder, self.scripts_dir = folder, scripts_dir
        self.util: Any = util
        self.bucket = folder / "bucket"
        self.templates = json.loads((folder / "templates.json").read_text())
        self.out_dir = folder / "out"
        shutil.rmtree(self.out_dir, ignore_errors=True)
        self.out_dir.mkdir()
        self.metadata = {"attributes/universe_domain": "googleapis.com"}
        util.instance_metadata = self.fake_metadata
        socket.gethostbyname = lambda host: "10.0.0.2"
        socket.getnameinfo = lambda address, flags: (f"host-{address[0]}", "0")
        # The controller installs the TPU VMs' boot script as <scripts>/startup.sh.
        boot = self.bucket / "ai-infra-tpu-startup.sh"
        (scripts_dir / "startup.sh").write_text(boot.read_text() if boot.exists() else "")
        self.commands: list[str] = []
        util.run = self.fake_run
        self.tpu_api = FakeTpuApi()
        self.compute_calls: list[dict[str, Any]] = []
        self.operations: dict[str, dict[str, Any]] = {}
        import conf  # type: ignore[import-not-found]
        import get_tpu_vmcount  # type: ignore[import-not-found]
        import resume  # type: ignore[import-not-found]
        import setup_network_storage  # type: ignore[import-not-found]
        import slurmsync  # type: ignore[import-not-found]
        import tpu  # type: ignore[import-not-found]

        self.conf, self.resume, self.slurmsync, self.tpu = conf, resume, slurmsync, tpu
        # mig_flex.py names a group with the first 8 characters of a uuid4: fixed here, so
        # that a recording depends only on its inputs.
        mig_flex: Any = sys.modules["mig_flex"]
        mig_flex.uuid = type("Uuid", (), {"uuid4": staticmethod(lambda: "1a2b3c4d-0")})
        self.get_tpu_vmcount, self.storage = get_tpu_vmcount, setup_network_storage
        tpu.tpu.TpuClient = lambda *args, **kwargs: self.tpu_api
        slurmsync.run = self.fake_run
        resume.log_api_request = lambda request: None
        util.Lookup.compute = property(lambda lkp: FakeCompute(self))
        util.Lookup.slurm_version = property(lambda lkp: SLURM_VERSION)
        util.Lookup.instances = lambda lkp: {}

    def fake_metadata(self, path: str, silent: bool = False) -> str:
        if path in self.metadata:
            return self.metadata[path]
        raise self.util.MetadataNotFoundError(path)

    def fake_run(self, command: str, *args: Any, **kwargs: Any) -> Any:
        self.commands.append(command)
        return subprocess.CompletedProcess(command, 0, stdout="", stderr="")

    def load(self, pattern: str) -> list[Any]:
        import yaml

        return [yaml.safe_load(p.read_text()) for p in sorted(self.bucket.glob(pattern))]

    def assemble(self, role: str, **extra: str) -> Any:
        """The config loader as a VM of `role` runs it, and the Lookup over its result."""
        import yaml

        self.metadata["attributes/slurm_instance_role"] = role
        self.metadata.update({f"attributes/{k}": v for k, v in extra.items()})
        cfg = self.util._assemble_config(
            core=yaml.safe_load((self.bucket / "config.yaml").read_text()),
            controller_addr=None,
            partitions=self.load("partition_configs/*.yaml"),
            nodesets=self.load("nodeset_configs/*.yaml"),
            nodesets_dyn=self.load("nodeset_dyn_configs/*.yaml"),
            nodesets_tpu=self.load("nodeset_tpu_configs/*.yaml"),
            login_groups=self.load("login_group_configs/*.yaml"),
        )
        cfg.output_dir = str(self.out_dir)
        # Read job_submit.lua.tpl from here, but write the paths a VM has (/slurm/scripts).
        cfg.slurm_scripts_dir = self.scripts_dir
        cfg.install_dir = "/slurm/scripts"
        lkp = self.util.Lookup(cfg)
        self.util._lkp = lkp
        return lkp

    def configs(self) -> dict[str, Any]:
        """What the controller's setup writes: slurm.conf, cloud.conf, the topology, the
        job_submit plugin, and what its helpers make of the partitions."""
        lkp = self.assemble("controller")
        self.conf.generate_configs_slurm_v2505(lkp)
        result: dict[str, Any] = {}
        for name in ("slurm.conf", "slurmdbd.conf", "cloud.conf", "cloud_topology.yaml"):
            if (self.out_dir / name).exists():
                # Without comment lines: upstream's preamble is prose, the settings are facts.
                lines = (self.out_dir / name).read_text().splitlines()
                result[name] = "\n".join(x for x in lines if not x.lstrip().startswith("#"))
        topology = self.out_dir / "topology.yaml"
        result["topology.yaml links to"] = topology.resolve().name if topology.exists() else None
        result["job_submit.lua installed"] = (self.out_dir / "job_submit.lua").exists()
        result["tpu vmcount"] = {
            p: self.get_tpu_vmcount.get_vmcount_of_tpu_part(p)
            for p, part in lkp.cfg.partitions.items()
            if part.partition_nodeset_tpu
        }
        result["block topology"] = {
            p: lkp.has_block_topology(part) for p, part in lkp.cfg.partitions.items()
        }
        return result

    def mounts(self) -> dict[str, Any]:
        """What every role mounts, as setup_network_storage resolves it."""
        lkp = self.assemble("controller")
        result = {"controller mounts": _mounts(self.storage.resolve_network_storage())}
        for group in sorted(lkp.cfg.login_groups):
            self.assemble("login", slurm_login_group=group)
            result[f"login {group} mounts"] = _mounts(self.storage.resolve_network_storage())
        for name, nodeset in sorted(lkp.cfg.nodeset.items()):
            static, dynamic = self.assemble("compute").nodenames(nodeset)
            node = next(iter([*static, *dynamic]))
            self.util.Lookup.hostname = property(lambda lkp, n=node: n)
            result[f"compute {name} mounts"] = _mounts(self.storage.resolve_network_storage())
            del self.util.Lookup.hostname
        return result

    def cpu_resumes(self) -> dict[str, Any]:
        """The bulkInsert request resume makes for the first two nodes of each CPU nodeset."""
        lkp = self.assemble("controller")
        result = {}
        for name, nodeset in sorted(lkp.cfg.nodeset.items()):
            nodes = list(lkp.nodenames(nodeset)[1])[:2]
            if not nodes:  # static nodes only: slurmsync creates them, not resume
                continue
            request = self.resume.create_instances_request(nodes, None, None)
            result[f"resume {name}"] = {"method": request.methodId, **request.kwargs}
        return result

    def job_resumes(self) -> dict[str, Any]:
        """What resume does for an exclusive job on the first two nodes of each CPU nodeset:
        the Compute Engine requests it makes (placement policies, bulk inserts with their
        reservation, flex-start groups and resize requests), or where it fails."""
        lkp = self.assemble("controller")
        result: dict[str, Any] = {}
        for name, nodeset in sorted(lkp.cfg.nodeset.items()):
            [partition] = [
                p for p, part in lkp.cfg.partitions.items() if name in part.partition_nodeset
            ]
            nodes = list(lkp.nodenames(nodeset)[1])[:2]
            if not nodes:
                continue
            jobs = self.resume.ResumeData(jobs=[self.resume.ResumeJobData(7, partition, nodes)])
            self.compute_calls.clear()
            try:
                self.resume.resume_nodes(nodes, jobs)
                error = None
            except Exception as e:
                error = repr(e)
            calls = [c for c in self.compute_calls if not c["method"].endswith((".get", ".wait"))]
            result[f"resume job {name}"] = {"calls": calls, "error": error}
        return result

    def tpu_resumes(self) -> dict[str, Any]:
        """How resume cuts each TPU nodeset into slices: every node at once as no job's, and
        as the exclusive jobs of its partition (the first slice, then all the others), with
        the TPU node it creates for the first slice."""
        lkp = self.assemble("controller")
        result: dict[str, Any] = {}
        for name, nodeset in sorted(lkp.cfg.nodeset_tpu.items()):
            nodes = [*lkp.nodenames(nodeset)[0], *lkp.nodenames(nodeset)[1]]
            groups = self.resume.group_nodes_bulk(nodes, None, lkp)
            result[f"resume {name} chunks"] = [chunk.nodes for chunk in groups.values()]
            workers = self.tpu.TPU.make(name, lkp).vmcount
            [partition] = [
                p for p, part in lkp.cfg.partitions.items() if name in part.partition_nodeset_tpu
            ]
            jobs = self.resume.ResumeData(
                jobs=[
                    self.resume.ResumeJobData(1, partition, nodes[:workers]),
                    self.resume.ResumeJobData(2, partition, nodes[workers:]),
                ]
            )
            groups = self.resume.group_nodes_bulk(nodes, jobs, lkp)
            result[f"resume {name} jobs"] = {
                key: chunk.nodes for key, chunk in sorted(groups.items())
            }
            self.tpu_api.calls.clear()
            self.tpu.start_tpu(next(iter(groups.values())).nodes)
            result[f"resume {name} creates"] = list(self.tpu_api.calls)
            if workers > 1 and len(nodes) >= 2 * workers:
                result[f"resume {name} spanning"] = self.spanning(nodes, workers, partition)
        return result

    def spanning(self, nodes: list[str], workers: int, partition: str) -> dict[str, Any]:
        """What resume does with a job of one slice's worth of nodes from two leaf switches,
        the allocation Slurm gives once a job stops waiting for whole switches: the chunks it
        cuts and the TPU nodes it creates."""
        lkp = self.util.lookup()
        job = nodes[1 : 1 + workers]
        data = self.resume.ResumeData(jobs=[self.resume.ResumeJobData(3, partition, job)])
        groups = self.resume.group_nodes_bulk(job, data, lkp)
        self.tpu_api.calls.clear()
        for chunk in groups.values():
            self.tpu.start_tpu(chunk.nodes)
        return {
            "nodes": job,
            "chunks": [chunk.nodes for chunk in groups.values()],
            "creates": [c["create"] for c in self.tpu_api.calls if "create" in c],
        }

    def job_submits(self) -> dict[str, Any]:
        """What the rendered job_submit.lua does with each of `SUBMITS` in each multi-host TPU
        partition: its return code, the description after, and what it tells the user."""
        script = self.out_dir / "job_submit.lua"
        if not script.exists():
            return {}
        lkp = self.assemble("controller")
        harness = self.folder / "harness.lua"
        harness.write_text(LUA_HARNESS)
        result: dict[str, Any] = {}
        for part, partition in sorted(lkp.cfg.partitions.items()):
            if not partition.partition_nodeset_tpu:
                continue
            vmcount = self.get_tpu_vmcount.get_vmcount_of_tpu_part(part)
            if vmcount < 2:
                continue
            for name, fields in SUBMITS.items():
                args = [LUA, str(harness), str(script), part, str(vmcount), name.split()[0]]
                args += [str(x) for kv in fields.items() for x in kv]
                out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
                result[f"job_submit {part} {name}"] = dict(
                    line.split("=", 1) for line in out.splitlines()
                )
        return result

    def tpu_recovery(self) -> dict[str, Any]:
        """What slurmsync does about a static preemptible node Cloud TPU preempted: the action
        it picks, then what that action runs (scontrol, the TPU API), or where it fails."""
        lkp = self.assemble("controller")
        result: dict[str, Any] = {}
        for name, nodeset in sorted(lkp.cfg.nodeset_tpu.items()):
            static = list(lkp.nodenames(nodeset)[0])
            if not (nodeset.preemptible and static):
                continue
            node = static[0]
            state = self.util.NodeState(base="IDLE", flags=frozenset())
            self.preempt(node)
            action = self.slurmsync._find_tpu_node_action(node, state)
            result[f"slurmsync {name} preempted"] = {
                "action": type(action).__name__,
                **self.applied(action, node),
            }
            # The recovery slurmsync would pick for a stopped preemptible node, whichever
            # it picked here.
            self.preempt(node)
            result[f"slurmsync {name} restart"] = self.applied(
                self.slurmsync.NodeActionPrempt(), node
            )
        return result

    def preempt(self, node: str) -> None:
        from google.cloud import tpu_v2

        self.tpu_api.nodes = {node: FakeTpuApi.node(node, tpu_v2.Node.State.PREEMPTED)}

    def applied(self, action: Any, node: str) -> dict[str, Any]:
        """What applying a slurmsync action to `node` runs, and the error it stops at."""
        self.tpu_api.calls.clear()
        self.commands.clear()
        try:
            action.apply([node])
            error = None
        except Exception as e:
            error = repr(e)
        return {
            "scontrol": list(self.commands),
            "tpu api": list(self.tpu_api.calls),
            "error": error,
        }


class FakeCompute:
    """Compute Engine as the scripts call it: every request recorded, with the answers the
    program's inputs decide (instanceTemplates.get, machineTypes from `MACHINE_TYPES`)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    def __getattr__(self, name: str) -> Any:
        return lambda: FakeComputeApi(self.upstream, name)


class FakeComputeApi:
    def __init__(self, upstream: Upstream, name: str) -> None:
        self.upstream, self.name = upstream, name

    def __getattr__(self, method: str) -> Any:
        def call(**kwargs: Any) -> FakeRequest:
            self.upstream.compute_calls.append({"method": f"{self.name}.{method}", **kwargs})
            return FakeRequest(f"compute.{self.name}.{method}", kwargs, self.answer(method, kwargs))

        return call

    def answer(self, method: str, kwargs: dict[str, Any]) -> Any:
        templates = self.upstream.templates
        if (self.name, method) == ("instanceTemplates", "get"):
            link = next(k for k in templates if k.endswith(kwargs["instanceTemplate"]))
            return {"properties": template_properties(templates[link])}
        if (self.name, method) == ("machineTypes", "aggregatedList"):
            types = [{"name": n, "zone": "z", **f} for n, f in MACHINE_TYPES.items()]
            return {"items": {"zones/z": {"machineTypes": types}}}
        if (self.name, method) == ("reservations", "get"):
            return {"name": kwargs["reservation"], **RESERVATIONS[kwargs["reservation"]]}
        if method == "wait":
            return self.upstream.operations[kwargs["operation"]]
        if method in ("list", "listManagedInstances"):
            return {"items": []}
        if method in ("insert", "bulkInsert", "delete", "deleteInstances"):
            return self.operation(method, kwargs)
        return None

    def operation(self, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        """A finished operation, kept for the wait that asks for it; a bulkInsert reports
        every VM it was asked for created."""
        name = f"operation-{len(self.upstream.operations)}"
        scope = f"zones/{kwargs['zone']}" if "zone" in kwargs else f"regions/{kwargs['region']}"
        found: dict[str, Any] = {
            "name": name,
            "selfLink": f"{COMPUTE}/projects/{kwargs['project']}/{scope}/operations/{name}",
            scope.split("/")[0][:-1]: f"{COMPUTE}/projects/{kwargs['project']}/{scope}",
            "status": "DONE",
            "operationType": method,
            "operationGroupId": name,
        }
        if method == "bulkInsert":
            count = kwargs["body"]["count"]
            found["instancesBulkInsertOperationMetadata"] = {
                "perLocationStatus": {scope: {"createdVmCount": count}}
            }
        self.upstream.operations[name] = found
        return found

    def aggregatedList_next(self, *args: Any) -> None:
        return None


class FakeRequest:
    def __init__(self, method: str, kwargs: dict[str, Any], result: Any) -> None:
        self.methodId, self.kwargs, self.result = method, kwargs, result
        self.uri, self.body = "", json.dumps(kwargs.get("body"), default=str)

    def execute(self) -> Any:
        return self.result


SSH_METADATA = ("enable-oslogin", "block-project-ssh-keys", "ssh-keys")
"""The metadata keys that decide who may SSH to a VM (Compute Engine, "About OS Login")."""


class FakeTpuApi:
    """The Cloud TPU API as tpu.py calls it: accelerator types from `TPU_TOPOLOGIES`, nodes
    kept by name, every node request recorded."""

    def __init__(self) -> None:
        self.nodes: dict[str, Any] = {}
        self.calls: list[dict[str, Any]] = []

    @staticmethod
    def node(name: str, state: Any, endpoints: int = 1) -> Any:
        from google.cloud import tpu_v2

        return tpu_v2.Node(
            name=f"projects/p/locations/z/nodes/{name}",
            state=state,
            network_endpoints=[
                tpu_v2.NetworkEndpoint(ip_address=f"10.1.0.{i + 1}") for i in range(endpoints)
            ],
        )

    def get_accelerator_type(self, request: Any = None, **kwargs: Any) -> Any:
        from google.cloud import tpu_v2

        name = request.name.rsplit("/", 1)[-1]
        version = tpu_v2.AcceleratorConfig.Type[name.split("-")[0].upper()]
        config = tpu_v2.AcceleratorConfig(type_=version, topology=TPU_TOPOLOGIES[name])
        return tpu_v2.AcceleratorType(type_=name, accelerator_configs=[config])

    def get_node(self, request: Any = None, **kwargs: Any) -> Any:
        from google.api_core.exceptions import NotFound

        name = request.name.rsplit("/", 1)[-1]
        if name not in self.nodes:
            raise NotFound(name)
        return self.nodes[name]

    def list_nodes(self, request: Any = None, **kwargs: Any) -> list[Any]:
        return list(self.nodes.values())

    def create_node(self, request: Any = None, **kwargs: Any) -> Any:
        from google.cloud import tpu_v2

        node = request.node
        self.calls.append(
            {
                "create": request.node_id,
                "topology": node.accelerator_config.topology,
                "runtime": node.runtime_version,
                "slurm_names": node.metadata["slurm_names"],
                "preemptible": node.scheduling_config.preemptible,
                "data_disks": [[d.source_disk, d.mode.name] for d in node.data_disks],
                "ssh": {k: node.metadata[k] for k in SSH_METADATA if k in node.metadata},
            }
        )
        workers = len(node.metadata["slurm_names"].split(";"))
        created = self.node(request.node_id, tpu_v2.Node.State.READY, workers)
        self.nodes[request.node_id] = created
        return FakeOperation(created)

    def delete_node(self, request: Any = None, **kwargs: Any) -> Any:
        name = request.name.rsplit("/", 1)[-1]
        self.calls.append({"delete": name})
        self.nodes.pop(name, None)
        return FakeOperation(True)

    def start_node(self, request: Any = None, **kwargs: Any) -> Any:
        self.calls.append({"start": request.name.rsplit("/", 1)[-1]})
        return FakeOperation(None)

    def stop_node(self, request: Any = None, **kwargs: Any) -> Any:
        self.calls.append({"stop": request.name.rsplit("/", 1)[-1]})
        return FakeOperation(None)


class FakeOperation:
    def __init__(self, result: Any) -> None:
        self._result = result

    def result(self) -> Any:
        return self._result


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
            {
                "boot": d.get("boot", False),
                "type": d.get("type", "PERSISTENT"),
                "initializeParams": {
                    "diskType": d.get("diskType"),
                    "labels": d.get("labels", {}),
                },
            }
            for d in inputs.get("disks", [])
        ],
        "networkInterfaces": [
            {k: v for k, v in nic.items() if k in ("nicType", "subnetwork", "network")}
            for nic in inputs.get("networkInterfaces", [])
        ],
        "scheduling": inputs.get("scheduling", {}),
        "metadata": {"items": [{"key": k} for k in sorted(inputs.get("metadata", {}))]},
    }


LUA = "lua5.4"
"""Debian's Lua 5.4 (`apt-get install lua5.4`), which runs the rendered job_submit.lua."""
SUBMITS: dict[str, dict[str, Any]] = {
    "submit -N 2": {"min_nodes": 2, "max_nodes": 2},
    "submit -N 1 --switches=1@0": {"min_nodes": 1, "max_nodes": 1, "wait4switch": 0},
    "submit -N 1 --contiguous": {"min_nodes": 1, "max_nodes": 1, "contiguous": 1},
    "submit -N 1 --nodelist": {"min_nodes": 1, "max_nodes": 1, "req_nodes": "n-[2-3]"},
    "modify NumNodes=3": {"min_nodes": 3},
    "modify Switches=2@0": {"req_switch": 2, "wait4switch": 0},
    "modify TimeLimit=60 (not a slice's shape)": {},
    "modify NumNodes=3 as root": {"min_nodes": 3, "uid": 0},
}
"""Jobs as sbatch and scontrol fill a job description (NO_VAL where unset), to the rendered
job_submit.lua's slurm_job_submit and slurm_job_modify."""
LUA_HARNESS = """
NO_VAL = 4294967294
LOG = ""
slurm = {SUCCESS = 0, ERROR = -1, FAILURE = -2}
function slurm.log_user(message) LOG = message end
dofile(arg[1])
function get_vmcount(part) return tonumber(arg[3]) end
local desc = {partition = arg[2], min_nodes = NO_VAL, max_nodes = NO_VAL, req_switch = NO_VAL,
              wait4switch = NO_VAL, contiguous = 65534}
local uid = 1000
for i = 5, #arg, 2 do
  if arg[i] == "uid" then uid = tonumber(arg[i + 1])
  elseif arg[i] == "req_nodes" then desc.req_nodes = arg[i + 1]
  else desc[arg[i]] = tonumber(arg[i + 1]) end
end
local rc
if arg[4] == "submit" then rc = slurm_job_submit(desc, {}, uid)
else
  desc.partition = nil
  rc = slurm_job_modify(desc, {partition = arg[2]}, {}, uid)
end
print("rc=" .. rc)
for _, k in ipairs({"min_nodes", "max_nodes", "req_switch", "wait4switch"}) do
  print(k .. "=" .. tostring(desc[k]))
end
print("log=" .. LOG)
"""
"""Slurm's Lua job_submit plugin as the script sees it (job_submit_lua.c): the `slurm` table's
return codes and log_user, and a job description; get_vmcount answers with the partition's
vmcount as get_tpu_vmcount.py computes it."""


def run_upstream(folder: Path, scripts_dir: Path) -> dict[str, Any]:
    upstream = Upstream(folder, scripts_dir)
    result = {
        **upstream.configs(),
        **upstream.job_submits(),
        **upstream.mounts(),
        **upstream.cpu_resumes(),
        **upstream.job_resumes(),
        **upstream.tpu_resumes(),
        **upstream.tpu_recovery(),
    }
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
