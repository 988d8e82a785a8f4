"""The pinned Slurm-GCP runtime scripts: every file pinned by sha256, and the deploy-time
provider driven with a fake fetcher and a fake bucket. Nothing here touches the network."""

from __future__ import annotations

import hashlib
import io
import logging
import re
import zipfile
from types import SimpleNamespace
from typing import Any

import pytest
from google.cloud import tpu_v2

from components.slurm import scripts as slurm_scripts
from components.slurm.scripts import (
    ADDITIONS,
    COMPUTE_ZIP,
    CONTROLLER_ZIP,
    EDITS,
    MANIFEST,
    PATCHED,
    TOOLKIT_COMMIT,
    ZIPS,
    ScriptHashError,
    ScriptsProvider,
    build_zip,
    md5_base64,
    source_url,
)


def fake_file(path: str) -> bytes:
    """A stand-in for a pinned script, holding the text each of this program's edits finds."""
    edited = "".join(old for old, _ in EDITS.get(path, ()))
    return f"# stand-in for {path}\n{edited}".encode()


FAKE_MANIFEST = {path: hashlib.sha256(fake_file(path)).hexdigest() for path in MANIFEST}
FAKE_PATCHED = {
    path: hashlib.sha256(slurm_scripts.changed(path, fake_file(path))).hexdigest()
    for path in PATCHED
}


class FakeFetcher:
    def __init__(self, tamper: str | None = None) -> None:
        self.urls: list[str] = []
        self.tamper = tamper

    def __call__(self, url: str) -> bytes:
        self.urls.append(url)
        path = url.split("/slurm_files/scripts/", 1)[1]
        return fake_file(path) + (b"evil\n" if path == self.tamper else b"")


class FakeBucket:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}

    def upload(self, bucket: str, name: str, data: bytes) -> None:
        self.objects[(bucket, name)] = data

    def delete(self, bucket: str, name: str) -> None:
        self.objects.pop((bucket, name), None)

    def md5(self, bucket: str, name: str) -> str | None:
        data = self.objects.get((bucket, name))
        return None if data is None else md5_base64(data)


def props(**overrides: object) -> dict:
    found = {
        "bucket": "b",
        "prefix": "tpu-files",
        "commit": TOOLKIT_COMMIT,
        "manifest": FAKE_MANIFEST,
        "patched": FAKE_PATCHED,
        "mirror": None,
        "zips": {k: list(v) for k, v in ZIPS.items()},
    }
    return found | overrides


def test_every_script_is_pinned_by_a_sha256_at_one_commit():
    assert re.fullmatch(r"[0-9a-f]{40}", TOOLKIT_COMMIT)
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in MANIFEST.values()), MANIFEST
    for names in ZIPS.values():
        assert set(names) <= set(MANIFEST)
    assert set(ZIPS[CONTROLLER_ZIP]) == set(MANIFEST)
    # The compute zip lacks only the controller's resume/suspend programs and BigQuery loader.
    assert set(MANIFEST) - set(ZIPS[COMPUTE_ZIP]) == {
        "load_bq.py",
        "resume.py",
        "resume_wrapper.sh",
        "suspend_wrapper.sh",
    }
    assert {"setup.py", "tpu.py", "util.py", "conf.py"} <= set(ZIPS[COMPUTE_ZIP])


def test_the_image_family_is_pinned_with_the_toolkit_release():
    assert (slurm_scripts.TOOLKIT_RELEASE, slurm_scripts.IMAGE_FAMILY) == (
        "v1.95.0",
        "slurm-gcp-6-12-hpc-rocky-linux-8",
    )


def test_sources_are_fetched_over_https_from_the_pinned_commit():
    url = source_url("setup.py")
    assert url.startswith("https://raw.githubusercontent.com/GoogleCloudPlatform/cluster-toolkit/")
    assert f"/{TOOLKIT_COMMIT}/" in url and url.endswith("/slurm_files/scripts/setup.py")
    with pytest.raises(ValueError, match="only https"):
        slurm_scripts.fetch_over_https("http://example.com/setup.py")


def test_create_verifies_every_file_and_uploads_both_zips():
    fetch, bucket = FakeFetcher(), FakeBucket()
    result = ScriptsProvider(fetch, bucket).create(props())
    assert len(fetch.urls) == len(MANIFEST)
    assert set(bucket.objects) == {
        ("b", f"tpu-files/{CONTROLLER_ZIP}"),
        ("b", f"tpu-files/{COMPUTE_ZIP}"),
    }
    assert result.id == "b/tpu-files"
    assert result.outs is not None
    for zip_name, names in ZIPS.items():
        data = bucket.objects[("b", f"tpu-files/{zip_name}")]
        assert result.outs["md5"][zip_name] == md5_base64(data)
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            assert sorted(archive.namelist()) == sorted(names)
            assert archive.read("conf.py") == fake_file("conf.py")
            # util.py and tpu.py carry this program's additions, after the pinned files.
            for path in ("util.py", "tpu.py"):
                assert archive.read(path) == fake_file(path) + ADDITIONS[path].encode()


def test_a_wrong_hash_fails_the_deploy_step_and_uploads_nothing():
    bucket = FakeBucket()
    with pytest.raises(ScriptHashError, match=r"tpu\.py at [0-9a-f]{40} has sha256"):
        ScriptsProvider(FakeFetcher(tamper="tpu.py"), bucket).create(props())
    assert bucket.objects == {}


def test_the_real_manifest_refuses_files_that_are_not_upstream_s():
    with pytest.raises(ScriptHashError):
        ScriptsProvider(FakeFetcher(), FakeBucket()).create(props(manifest=MANIFEST))


def test_zips_are_deterministic():
    files = {p: fake_file(p) for p in MANIFEST}
    first = build_zip(files, ZIPS[CONTROLLER_ZIP])
    second = build_zip(dict(reversed(list(files.items()))), tuple(reversed(ZIPS[CONTROLLER_ZIP])))
    assert first == second
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert {i.date_time for i in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_diff_read_update_delete():
    fetch, bucket = FakeFetcher(), FakeBucket()
    provider = ScriptsProvider(fetch, bucket)
    created = provider.create(props())
    assert created.outs is not None
    olds = created.outs
    assert provider.diff("b/tpu-files", olds, props()).changes is False
    moved = provider.diff("b/tpu-files", olds, props(commit="0" * 40))
    assert moved.changes is True and moved.replaces == []
    assert provider.diff("b/tpu-files", olds, props(prefix="x-files")).replaces == ["prefix"]
    # Reading the same files from a mirror changes nothing in the bucket.
    assert provider.diff("b/tpu-files", olds, props(mirror="/srv/mirror")).changes is False

    read = provider.read("b/tpu-files", olds).outs
    assert read is not None and read["md5"] == olds["md5"]
    bucket.delete("b", f"tpu-files/{COMPUTE_ZIP}")
    drifted = provider.read("b/tpu-files", olds).outs
    assert drifted is not None and drifted["md5"][COMPUTE_ZIP] is None

    updated = provider.update("b/tpu-files", olds, props()).outs
    assert updated is not None and updated["md5"] == olds["md5"]
    assert len(bucket.objects) == 2

    provider.delete("b/tpu-files", olds)
    assert bucket.objects == {}


def test_the_providers_deserialize_where_pulumi_runs_them(tmp_path):
    """Pulumi pickles a dynamic provider by reference to its module (dill) and loads it in
    `python -m pulumi.dynamic`, started in the project directory: the modules must import
    there without registering anything, and the real fetcher and clients come back."""
    import subprocess
    import sys

    from pulumi.dynamic.dynamic import serialize_provider

    from components.slurm.cleanup import ComputeCleanupProvider, TpuCleanupProvider
    from graph.engine import REPO_ROOT

    (tmp_path / "scripts").write_text(serialize_provider(ScriptsProvider()))
    (tmp_path / "cleanup").write_text(serialize_provider(TpuCleanupProvider()))
    (tmp_path / "compute").write_text(serialize_provider(ComputeCleanupProvider()))
    check = (
        "import base64, dill, sys\n"
        "load = lambda p: dill.loads(base64.b64decode(open(p).read()))\n"
        f"scripts = load({str(tmp_path / 'scripts')!r})\n"
        f"cleanup = load({str(tmp_path / 'cleanup')!r})\n"
        f"compute = load({str(tmp_path / 'compute')!r})\n"
        "print(scripts.fetch.__name__, type(scripts.bucket).__name__,\n"
        "      cleanup._client_factory.__name__, cleanup._sleep.__name__,\n"
        "      compute._client_factory.__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", check],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "fetch_any",
        "GcsBucket",
        "_default_client",
        "sleep",
        "_default_compute_client",
    ]


def write_mirror(root, tamper: str | None = None) -> None:
    for path in MANIFEST:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(fake_file(path) + (b"evil\n" if path == tamper else b""))


def test_a_local_mirror_is_read_instead_of_github_with_the_same_pins(tmp_path):
    write_mirror(tmp_path)
    bucket = FakeBucket()
    result = ScriptsProvider(bucket=bucket).create(props(mirror=str(tmp_path)))
    assert result.outs is not None and len(bucket.objects) == 2
    data = bucket.objects[("b", f"tpu-files/{COMPUTE_ZIP}")]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.read("tools/gpu-test") == fake_file("tools/gpu-test")


def test_a_mirror_holding_another_file_is_refused(tmp_path):
    write_mirror(tmp_path, tamper="setup.py")
    bucket = FakeBucket()
    with pytest.raises(ScriptHashError, match=r"setup\.py at .*\(mirror of [0-9a-f]{40}\)"):
        ScriptsProvider(bucket=bucket).create(props(mirror=str(tmp_path)))
    assert bucket.objects == {}


def test_a_bucket_mirror_is_read_from_cloud_storage(monkeypatch):
    read: list[str] = []

    def fake_gcs(url: str) -> bytes:
        read.append(url)
        return fake_file(url.removeprefix("gs://m/slurm/"))

    monkeypatch.setattr(slurm_scripts, "fetch_from_gcs", fake_gcs)
    bucket = FakeBucket()
    ScriptsProvider(bucket=bucket).create(props(mirror="gs://m/slurm"))
    assert sorted(read) == sorted(f"gs://m/slurm/{path}" for path in MANIFEST)
    assert len(bucket.objects) == 2


def test_the_addition_is_checked_against_its_own_pin():
    with pytest.raises(ScriptHashError, match=r"util\.py with ai-infra's addition"):
        ScriptsProvider(FakeFetcher(), FakeBucket()).create(
            props(patched={**FAKE_PATCHED, "util.py": "0" * 64})
        )


UTIL_STAND_IN = """
API_REQ_LIMIT = 2000


class Lookup:
    def has_block_topology(self, partition):
        return all(n == 'a4x' for n in partition.partition_nodeset)


def chunked(iterable, n=API_REQ_LIMIT):
    items = list(iterable)
    for start in range(0, len(items), n):
        yield items[start:start + n]
"""
"""The parts of util.py the addition builds on: upstream's has_block_topology is all(...) over
the partition's CPU nodesets, and chunked cuts an iterable into lists of n."""


class StandInLookup:
    """util.Lookup's node-name parsing for cluster `c`, TPU nodesets `tpu` and `big`."""

    def _parts(self, node: str) -> tuple[str, int]:
        prefix, _, index = node.rpartition("-")
        if not prefix.startswith("c-") or not index.isdigit():
            raise ValueError(f"node name {node} is not valid")
        return prefix, int(index)

    def node_is_tpu(self, node: str) -> bool:
        return self._parts(node)[0] in ("c-tpu", "c-big")

    def node_prefix(self, node: str) -> str:
        return self._parts(node)[0]

    def node_index(self, node: str) -> int:
        return self._parts(node)[1]


def util_with_addition(lookup: object | None = None) -> dict:
    """The appended text under the scripts' own Python semantics, on the stand-in util."""
    namespace: dict = {}
    exec(UTIL_STAND_IN, namespace)
    namespace["_lkp"] = lookup
    exec(ADDITIONS["util.py"], namespace)
    return namespace


def test_the_addition_only_overrides_the_block_topology_of_partitions_without_cpu_nodesets():
    namespace = util_with_addition()

    class Partition:
        def __init__(self, nodesets: list[str]) -> None:
            self.partition_nodeset = nodesets

    lookup = namespace["Lookup"]()
    assert lookup.has_block_topology(Partition([])) is False  # a TPU partition: tree
    assert lookup.has_block_topology(Partition(["a4x"])) is True  # upstream's own answer
    assert lookup.has_block_topology(Partition(["debug"])) is False


def tpu(*indexes: int, nodeset: str = "tpu") -> list[str]:
    return [f"c-{nodeset}-{i}" for i in indexes]


def test_tpu_nodes_in_string_order_are_cut_into_the_slices_of_their_leaf_switches():
    chunked = util_with_addition(StandInLookup())["chunked"]
    # resume.py's sorted(): a whole-slice job on nodes 4-11 of a v4-32 nodeset (4 per slice).
    resumed = sorted(tpu(*range(4, 12)))
    assert resumed[:4] == tpu(10, 11, 4, 5)
    assert list(chunked(resumed, n=4)) == [tpu(4, 5, 6, 7), tpu(8, 9, 10, 11)]
    # Two nodesets, as slurmsync lists static nodes: each slice stays in its nodeset.
    mixed = tpu(9, 8, 1, 0) + tpu(3, 2, nodeset="big")
    assert list(chunked(mixed, n=2)) == [
        tpu(2, 3, nodeset="big"),
        tpu(0, 1),
        tpu(8, 9),
    ]
    # A slice the job holds only part of is never filled up with another slice's nodes.
    assert list(chunked(tpu(3, 4), n=4)) == [tpu(3), tpu(4)]


def test_anything_but_tpu_nodes_is_cut_as_upstream_cuts_it():
    chunked = util_with_addition(StandInLookup())["chunked"]
    cpu = ["c-cpu-10", "c-cpu-2", "c-cpu-3"]
    assert list(chunked(cpu, n=2)) == [["c-cpu-10", "c-cpu-2"], ["c-cpu-3"]]
    requests = [("a", 1), ("b", 2), ("c", 3)]
    assert list(chunked(iter(requests), 2)) == [[("a", 1), ("b", 2)], [("c", 3)]]
    assert list(chunked([*tpu(10, 2), "c-cpu-1"], n=2)) == [tpu(10, 2), ["c-cpu-1"]]
    # Before the config is loaded there is no lookup to ask.
    unloaded = util_with_addition(None)["chunked"]
    assert list(unloaded(sorted(tpu(*range(8, 12))), n=2)) == [tpu(10, 11), tpu(8, 9)]


def nodeset(
    static: int = 0, dynamic: int = 2, disks: tuple[str, ...] = (), **more: Any
) -> SimpleNamespace:
    return SimpleNamespace(
        node_count_static=static, node_count_dynamic_max=dynamic, data_disks=list(disks), **more
    )


class FakeTpuClient:
    """The TpuClient calls create_node makes, recorded."""

    def __init__(self) -> None:
        self.created: list[tpu_v2.CreateNodeRequest] = []

    def create_node(self, request: tpu_v2.CreateNodeRequest) -> str:
        self.created.append(request)
        return "operation"

    def get_node(self, request: tpu_v2.GetNodeRequest) -> str:
        return "node"


def tpu_with_addition(nodes: dict[str, tpu_v2.Node]) -> tuple[dict, list[Any]]:
    """tpu.py's TPU class and start_tpu as far as the addition reaches, on a fake API of
    `nodes` by name; returns the namespace and what the original start_tpu was given."""
    started: list[Any] = []
    deleted: list[str] = []

    class Tpu:
        State = tpu_v2.Node.State

        def __init__(self, ns: Any, lkp: Any) -> None:
            self.nodes, self.deleted = nodes, deleted
            self._client = FakeTpuClient()
            self.data_disks = [
                tpu_v2.AttachedDisk(
                    source_disk=disk, mode=tpu_v2.AttachedDisk.DiskMode.DISK_MODE_UNSPECIFIED
                )
                for disk in ns.data_disks
            ]

        @classmethod
        def make(cls, name: str, lkp: Any) -> Any:
            return cls(nodeset(), lkp)

        def get_node(self, name: str) -> tpu_v2.Node | None:
            return nodes.get(name)

        def delete_node(self, name: str) -> bool:
            deleted.append(name)
            del nodes[name]
            return True

    lookup = SimpleNamespace(node_nodeset_name=lambda node: node.split("-")[1])
    namespace = {
        "TPU": Tpu,
        "start_tpu": started.append,
        "util": SimpleNamespace(lookup=lambda: lookup),
        "log": logging.getLogger("tpu"),
        "tpu": tpu_v2,
        "deleted": deleted,
    }
    exec(ADDITIONS["tpu.py"], namespace)
    return namespace, started


def node(state: str) -> tpu_v2.Node:
    return tpu_v2.Node(name="c-tpu-0", state=tpu_v2.Node.State[state])


@pytest.mark.parametrize("state", ["PREEMPTED", "TERMINATED"])
def test_a_tpu_vm_cloud_tpu_ended_is_stopped_to_slurmsync(state: str):
    nodes = {"c-tpu-0": node(state), "c-tpu-1": node("READY")}
    namespace, _ = tpu_with_addition(nodes)
    tpus = namespace["TPU"](nodeset(), None)
    assert tpus.get_node("c-tpu-0").state == tpu_v2.Node.State.STOPPED
    assert nodes["c-tpu-0"].state == tpu_v2.Node.State[state]  # the API's answer is kept
    assert tpus.get_node("c-tpu-1").state == tpu_v2.Node.State.READY
    assert tpus.get_node("c-tpu-2") is None


def test_slurmsync_s_restart_deletes_an_ended_node_and_starts_it_anew():
    namespace, started = tpu_with_addition({"c-tpu-0": node("PREEMPTED")})
    # slurmsync.start_instances passes start_tpu a dict (upstream's own start needs a list).
    namespace["start_tpu"]({"tpu": object(), "node": ["c-tpu-0"]})
    assert namespace["deleted"] == ["c-tpu-0"]
    assert started == [["c-tpu-0"]]


def test_a_running_or_stopped_node_is_started_as_upstream_starts_it():
    namespace, started = tpu_with_addition({"c-tpu-0": node("STOPPED"), "c-tpu-1": node("READY")})
    for nodes in (["c-tpu-0"], ["c-tpu-1"], ["c-tpu-2", "c-tpu-3"]):
        namespace["start_tpu"](nodes)
    assert namespace["deleted"] == []
    assert started == [["c-tpu-0"], ["c-tpu-1"], ["c-tpu-2", "c-tpu-3"]]


@pytest.mark.parametrize(
    ("static", "dynamic", "mode"),
    [
        (0, 1, "DISK_MODE_UNSPECIFIED"),
        (1, 0, "DISK_MODE_UNSPECIFIED"),
        (0, 2, "READ_ONLY"),
        (1, 1, "READ_ONLY"),
    ],
)
def test_data_disks_of_a_nodeset_of_more_than_one_tpu_vm_attach_read_only(static, dynamic, mode):
    namespace, _ = tpu_with_addition({})
    disks = ("projects/p/zones/z/disks/a", "projects/p/zones/z/disks/b")
    tpus = namespace["TPU"](nodeset(static, dynamic, disks), None)
    assert [d.mode for d in tpus.data_disks] == [tpu_v2.AttachedDisk.DiskMode[mode]] * 2


def test_a_nodeset_s_metadata_joins_what_create_node_sets_without_replacing_it():
    namespace, _ = tpu_with_addition({})
    metadata = {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE", "slurm_names": "x"}
    tpus = namespace["TPU"](nodeset(metadata=metadata), None)
    # As tpu.py's create_node builds its request: a fixed dict, then the client's create_node.
    node = tpu_v2.Node(metadata={"slurm_names": "WORKER_0:c-tpu-0", "startup-script": "boot"})
    request = tpu_v2.CreateNodeRequest(parent="p", node=node, node_id="c-tpu-0")
    assert tpus._client.create_node(request=request) == "operation"
    [sent] = tpus._client._ai_infra_client.created
    assert dict(sent.node.metadata) == {
        "slurm_names": "WORKER_0:c-tpu-0",
        "startup-script": "boot",
        "enable-oslogin": "TRUE",
        "block-project-ssh-keys": "TRUE",
    }
    # Every other call reaches the client as it was.
    assert tpus._client.get_node(request=tpu_v2.GetNodeRequest(name="n")) == "node"


def test_a_nodeset_without_metadata_keeps_its_client():
    namespace, _ = tpu_with_addition({})
    tpus = namespace["TPU"](nodeset(), None)
    assert isinstance(tpus._client, FakeTpuClient)


def test_an_edit_finds_its_text_once_in_the_pinned_file_or_the_deploy_step_stops():
    path = "job_submit.lua.tpl"
    [(first, _), (second, _)] = EDITS[path]
    with pytest.raises(ScriptHashError, match="0 copies"):
        slurm_scripts.changed(path, b"-- a job_submit.lua.tpl of another release\n")
    with pytest.raises(ScriptHashError, match="2 copies"):
        slurm_scripts.changed(path, (first + first + second).encode())
    edited = slurm_scripts.changed(path, fake_file(path)).decode()
    assert "job_desc.wait4switch = NO_VAL" in edited
    assert "function slurm_job_modify" in edited and edited.count("return slurm.SUCCESS") >= 3


def test_the_job_submit_edits_survive_conf_py_s_str_format():
    # conf.py install_jobsubmit_lua renders the template with str.format(scripts_dir=...).
    edited = slurm_scripts.changed("job_submit.lua.tpl", fake_file("job_submit.lua.tpl"))
    assert "{" not in edited.decode() and "}" not in edited.decode()
    assert edited.decode().format(scripts_dir="/slurm/scripts") == edited.decode()
