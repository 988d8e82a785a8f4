"""The Slurm-GCP v6 runtime scripts, pinned: which Cluster Toolkit release they come from, the
image family that release pairs with, every file's sha256, the additions this program makes
to them, and the deploy-time step that fetches them (from GitHub, or from a mirror: a Cloud
Storage folder or a local one), verifies every hash and uploads the two zips the VMs download
at boot.

No upstream code is kept in this repository. The fetch happens only in the dynamic provider,
at `pulumi up`; tests drive the provider with a fake fetcher and a fake bucket.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import pulumi
from pulumi.dynamic import (
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

TOOLKIT_RELEASE = "v1.95.0"
TOOLKIT_COMMIT = "079cf8349a96cfd433cb89945bc467af21818424"
"""The commit tag v1.95.0 of GoogleCloudPlatform/cluster-toolkit points at."""
IMAGE_PROJECT = "schedmd-slurm-public"
IMAGE_FAMILY = "slurm-gcp-6-12-hpc-rocky-linux-8"
"""The controller's default image at that release (schedmd-slurm-gcp-v6-controller
variables_controller_instance.tf `instance_image`); scripts and image move together."""
IMAGE = f"projects/{IMAGE_PROJECT}/global/images/family/{IMAGE_FAMILY}"
SCRIPTS_DIR = (
    "community/modules/scheduler/schedmd-slurm-gcp-v6-controller/modules/slurm_files/scripts"
)
SOURCE_URL = "https://raw.githubusercontent.com/GoogleCloudPlatform/cluster-toolkit/{commit}/{path}"

CONTROLLER_ZIP = "slurm-gcp-devel-controller.zip"
COMPUTE_ZIP = "slurm-gcp-devel.zip"
"""The zips the boot script downloads from `<bucket path>/`, by instance role (slurm_files
main.tf `slurm_gcp_devel_controller_zip`, `slurm_gcp_devel_compute_zip`)."""

MANIFEST: dict[str, str] = {
    "tools/gpu-test": "c24fa5fd215a76078481d27d38bbc6baa9b009cd763d2a532732391fb1fc27a5",
    "tools/task-epilog": "2d358cc8ee8f84013bb9d8017fb3d9a3534c39620f9ca06ffeab841d80e399cf",
    "tools/task-prolog": "98106fd8d35eece3d81621736186f2bea7c5a8b006934d08279bf941754c3d55",
    "conf.py": "04107bfb4a06630bc1a2a185eab37b67f7f16a4393b64edfcb26a97a177d177c",
    "conf_v2411.py": "a6afd6e336f19b68c8bb0204541f08f308be469c61988f2c65b0652a7599f906",
    "file_cache.py": "bf2042ac8b098ca5bac851cceb0ea7754c4cf0cc19d368688062978520e3fa27",
    "get_tpu_vmcount.py": "954586defe73b3967ae96c4131f4d1c44c401f18b51527fc0abd1ee937c079a7",
    "job_submit.lua.tpl": "4ab200bd4f356ddb72f294d47659336b882c0041650c463a08220ad0626e3511",
    "load_bq.py": "b767a3fd456ceffe45cae92d089f20162854a59e31e85cac873e30035aed06f1",
    "local_pubsub.py": "72292098c47303ad0186af2032e985795a2e590a3012e975be14924611489820",
    "mig_flex.py": "bff27935bb286235d837a53b3bebb6bfb53a6fe89caa037ec07a7ca0939ce081",
    "resume_wrapper.sh": "86d043fe3f2e5e705db8345158b905fdd72abea7fcbdc6ae427c184e454f691e",
    "resume.py": "02ecd08c568279f95c57161cee15fba65509e30e9a95efd00934a362980264d7",
    "repair.py": "bdb9ee27b30e079b06d06a6e4dfe4b2b3acf83534a56b536698b5cc3b0d5f5bd",
    "setup_network_storage.py": "49bb54ebd95e2ca83a46cbaffdf672595de8bd2dc8739b8b24dd5a7dbbae89fb",
    "setup.py": "cd73a55efaf646fc32a46a2d4a993ca9d2925548298fe9eb6ee828c7c71810f9",
    "slurmsync.py": "65a8b3c098e5de0b2a05c714421c95fecd79620f6b720cb9e4392e3c79aa6cc6",
    "sort_nodes.py": "8c2291f5e80cb3e852d54a9bc42942ad7b578220a504ca88e67b7641d15e4f3d",
    "suspend_wrapper.sh": "7d4df72b7b664935f9213d25b98272f658c06683fae44cced93aa72901ac1b1a",
    "suspend.py": "2df8b7f3a35f2cb0b8153216af2d7013002ea2efec06cb1622b88b725a6cf08d",
    "tpu.py": "90bdf79e65b65fe2df525259cedc2d9d103590c8fa6f9962bef806458609e364",
    "util.py": "0aa49aad2115bcf57ed4d04687e07e4aec3cb2ade02cbe243b767932dd3cc676",
    "watch_delete_vm_op.py": "f8bfcf6596d18056501423bd8d1217051564956e6bb5d2d73aad186fd39152bd",
}
"""sha256 of each script at TOOLKIT_COMMIT, computed from the fetched files
(`git show <commit>:<path> | sha256sum`)."""
TPU_TREE_TOPOLOGY = """

# Added by ai-infra (components/slurm/scripts.py TPU_TREE_TOPOLOGY). A partition without CPU
# nodesets is a TPU partition: give it the tree topology, whose leaf switches hold one slice
# each and which job_submit.lua's --switches needs, rather than the block topology meant for
# A4X nodesets that all() of no nodesets would pick.
_ai_infra_has_block_topology = Lookup.has_block_topology


def _ai_infra_no_block_for_tpu(self, partition):
    if not partition.partition_nodeset:
        return False
    return _ai_infra_has_block_topology(self, partition)


Lookup.has_block_topology = _ai_infra_no_block_for_tpu
"""
"""On Slurm 25.05 and later conf.py gives each partition `Topology=` by `has_block_topology`,
which is `all(...)` over the partition's CPU nodesets (util.py), so True for a TPU partition:
the multi-host slices' workers would be placed by blocks of 18 VMs instead of by the leaf
switches `add_tpu_nodeset_topology` makes one per slice."""
TPU_SLICE_ORDER = """

# Added by ai-infra (components/slurm/scripts.py TPU_SLICE_ORDER). resume.py sorts the nodes
# it resumes as strings (group_nodes_bulk) before it cuts them into slices of `vmcount`, and
# slurmsync cuts them in the order Slurm lists them, while conf.py's leaf switches hold
# consecutive indexes: from index 10 on a slice would take workers of two switches. TPU
# nodes are cut by index // n instead, in index order; anything else as before.
_ai_infra_chunked = chunked


def _ai_infra_tpu_slices(items, n):
    lkp = _lkp
    if lkp is None or n < 1 or not items or not all(isinstance(i, str) for i in items):
        return None
    try:
        if not all(lkp.node_is_tpu(i) for i in items):
            return None
        keys = {i: (lkp.node_prefix(i), lkp.node_index(i)) for i in items}
    except Exception:
        return None
    slices = {}
    for item in sorted(items, key=keys.__getitem__):
        prefix, index = keys[item]
        slices.setdefault((prefix, index // n), []).append(item)
    return list(slices.values())


def chunked(iterable, n=API_REQ_LIMIT):
    items = list(iterable)
    slices = _ai_infra_tpu_slices(items, n)
    return iter(slices) if slices is not None else _ai_infra_chunked(items, n)
"""
"""resume.py (`group_nodes_bulk`: `sorted(set(pn.nodes) & nodes_set)`, `sorted(non_excl)`),
slurmsync.py (`start_instances`) and conf.py (`add_tpu_nodeset_topology`) all cut a TPU
nodeset's nodes into slices with util's `chunked(nodes, n=vmcount)`; the first two hand it
names in string order. Replacing `chunked` in util.py, which the three import, makes every
slice the nodes of one leaf switch: a whole-slice job on nodes 4-11 of a v4-32 nodeset gets
{4..7} and {8..11}, not {10, 11, 4, 5} and {6..9}."""
TPU_RECOVERY = """

# Added by ai-infra (components/slurm/scripts.py TPU_RECOVERY).
# Cloud TPU reports a preempted TPU VM as PREEMPTED (TERMINATED at the end of a preemptible
# node's life), never STOPPED, the state slurmsync's _find_tpu_node_action recovers a
# preemptible node from: slurmsync sees such a node as STOPPED.
_AI_INFRA_GONE = (TPU.State.PREEMPTED, TPU.State.TERMINATED)
_ai_infra_get_node = TPU.get_node


def _ai_infra_gone_as_stopped(self, nodename):
    node = _ai_infra_get_node(self, nodename)
    if node is None or node.state not in _AI_INFRA_GONE:
        return node
    stopped = type(node).deserialize(type(node).serialize(node))
    stopped.state = TPU.State.STOPPED
    return stopped


TPU.get_node = _ai_infra_gone_as_stopped

# slurmsync's recovery (start_instances) hands start_tpu {"tpu": ..., "node": [...]} rather
# than the node list, and a node that is gone must be deleted before one of its name can be
# created again.
_ai_infra_start_tpu = start_tpu


def start_tpu(node):
    if isinstance(node, dict):
        node = node["node"]
    lkp = util.lookup()
    tpuobj = TPU.make(lkp.node_nodeset_name(node[0]), lkp)
    left = _ai_infra_get_node(tpuobj, node[0])
    if left is not None and left.state in _AI_INFRA_GONE:
        log.info(f"deleting TPU node {node[0]}, which Cloud TPU ended, to create it again")
        tpuobj.delete_node(node[0])
    return _ai_infra_start_tpu(node)


# A disk in read-write mode attaches to one TPU VM at a time; a nodeset that may hold more
# than one TPU VM attaches its data disks read-only, the mode several VMs may share.
_ai_infra_init = TPU.__init__


def _ai_infra_init_shared_disks_read_only(self, nodeset, lkp):
    _ai_infra_init(self, nodeset, lkp)
    if nodeset.node_count_static + nodeset.node_count_dynamic_max > 1:
        for disk in self.data_disks:
            disk.mode = tpu.AttachedDisk.DiskMode.READ_ONLY


TPU.__init__ = _ai_infra_init_shared_disks_read_only
"""
"""Two fixes and one mode on top of tpu.py. A preempted static TPU node never came back:
slurmsync acts on a preemptible node it finds STOPPED (`NodeActionPrempt`: down, then
start), but Cloud TPU says PREEMPTED ("Preemptible TPUs": the status changes from READY to
PREEMPTED), and the start it then calls (`start_instances`) passes `start_tpu` a dict it
cannot read. And tpu.py attaches data disks with the API's default mode, read-write, which
"only one TPU node can attach at a time" (tpu_v2 AttachedDisk.DiskMode): every VM after the
first failed to create."""
TPU_NODE_METADATA = """

# Added by ai-infra (components/slurm/scripts.py TPU_NODE_METADATA). create_node gives every
# TPU VM a fixed metadata dict; the nodeset's own `metadata` (OS Login on, project SSH keys
# off) joins it on the create request. A key create_node sets keeps create_node's value.
class _AiInfraNodeMetadata:
    def __init__(self, client, metadata):
        self._ai_infra_client = client
        self._ai_infra_metadata = metadata

    def __getattr__(self, name):
        return getattr(self._ai_infra_client, name)

    def create_node(self, request=None, **kwargs):
        for key, value in self._ai_infra_metadata.items():
            if key not in request.node.metadata:
                request.node.metadata[key] = value
        return self._ai_infra_client.create_node(request=request, **kwargs)


_ai_infra_init_metadata = TPU.__init__


def _ai_infra_init_with_metadata(self, nodeset, lkp):
    _ai_infra_init_metadata(self, nodeset, lkp)
    metadata = dict(getattr(nodeset, "metadata", None) or {})
    if metadata:
        self._client = _AiInfraNodeMetadata(
            self._client, {str(k): str(v) for k, v in metadata.items()}
        )


TPU.__init__ = _ai_infra_init_with_metadata
"""
"""tpu.py's create_node sets `node.metadata` from a fixed dict (bucket, cluster, role, worker
names, boot script) and reads no metadata of the nodeset (Toolkit's nodeset_tpu has none), so
a TPU VM it creates had no `enable-oslogin`: SSH to it went by project and instance keys.
The nodeset document's `metadata` (files.nodeset_document) now reaches the create request."""
MAX_SWITCH_WAIT = 2147483647
"""`SchedulerParameters=max_switch_wait=`, read with atoi (slurmctld/job_mgr.c
`_max_switch_wait`; default 300): the most a job asking for a leaf switch count waits before
it takes any nodes. INT_MAX seconds: a TPU job waits for whole switches (slices) however
long that takes."""
TPU_WHOLE_SLICES_SUBMIT = """
        -- Added by ai-infra (components/slurm/scripts.py TPU_WHOLE_SLICES_SUBMIT). A TPU is
        -- created for the nodes of one leaf switch (slice) only, so the job waits for whole
        -- switches (max_switch_wait, not its own --switches wait), and cannot choose nodes
        -- that would span slices (--nodelist, or --contiguous, which skips the topology).
        if job_desc.contiguous == 1 or job_desc.req_nodes ~= nil then
            slurm.log_user("Partition " .. part .. " gives whole TPU slices of " .. vmcount ..
                           " nodes; submit without --nodelist and --contiguous.")
            return slurm.ERROR
        end
        job_desc.wait4switch = NO_VAL
"""
TPU_WHOLE_SLICES_MODIFY = """function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    -- Added by ai-infra (components/slurm/scripts.py TPU_WHOLE_SLICES_MODIFY). A pending job
    -- of whole TPU slices keeps the node count, switches and partition its submission got.
    if modify_uid == 0 then
        return slurm.SUCCESS
    end
    local part = job_desc.partition or job_rec.partition
    if part == nil or get_vmcount(part) <= 1 then
        return slurm.SUCCESS
    end
    if job_desc.partition ~= nil or job_desc.min_nodes ~= NO_VAL or
        job_desc.max_nodes ~= NO_VAL or job_desc.req_switch ~= NO_VAL or
        job_desc.wait4switch ~= NO_VAL or job_desc.contiguous == 1 or
        job_desc.req_nodes ~= nil then
        slurm.log_user("A job of whole TPU slices keeps its partition, node count and " ..
                       "switches; cancel it and submit again.")
        return slurm.ERROR
    end
    return slurm.SUCCESS
end
"""
EDITS: dict[str, tuple[tuple[str, str], ...]] = {
    "job_submit.lua.tpl": (
        (
            "        job_desc.req_switch = min_nodes\n",
            "        job_desc.req_switch = min_nodes\n" + TPU_WHOLE_SLICES_SUBMIT,
        ),
        (
            "function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)\n"
            "    return slurm.SUCCESS\nend\n",
            TPU_WHOLE_SLICES_MODIFY,
        ),
    ),
}
"""path -> (text, replacement) pairs this program makes in a verified file, each text found
exactly once. job_submit.lua sets a multi-host TPU job's leaf switch count to its slices
(req_switch = -N); after `max_switch_wait` of waiting, the tree topology places it on any
nodes (topology/tree eval_nodes_tree.c `_eval_nodes_topo`, `wait4switch`), and a job's
own `--switches=N@TIME`, `--nodelist` or `--contiguous` (which skips the topology:
`eval_nodes_tree`) gets it nodes of two slices at once; resume.py then has no whole slice to
create (tpu.py `create_node` wants `vmcount` nodes), and slurmsync finds a TPU by its
node's leaf switch (`_find_tpu_node_action`). conf.py formats the file with `str.format`,
so the text holds no braces."""
ADDITIONS: dict[str, str] = {
    "util.py": TPU_TREE_TOPOLOGY + TPU_SLICE_ORDER,
    "tpu.py": TPU_RECOVERY + TPU_NODE_METADATA,
}
"""path -> text this program appends to the verified file, after the pinned file's own hash
is verified."""
PATCHED: dict[str, str] = {
    "util.py": "d15b078d70e90cb254979f782761e845622c4f4952daf9516523eb46c743e3e9",
    "tpu.py": "5e75d57d1a11170c02a1565f82ce7cac4af667dd1e5b9fe38edef9af2a2cc811",
    "job_submit.lua.tpl": "4278c27211103e8c20cb643d4e6a6047d77c422a448f0ed5226e417328cb208e",
}
"""path -> sha256 of the pinned file with its edits and addition, checked before it is
zipped."""
CONTROLLER_ONLY = (
    "load_bq.py",
    "resume_wrapper.sh",
    "resume.py",
    "suspend_wrapper.sh",
)
"""The controller zip holds every file; the compute zip all but these (slurm_files main.tf
`controller_files`, `compute_files`)."""
ZIPS: dict[str, tuple[str, ...]] = {
    CONTROLLER_ZIP: tuple(sorted(MANIFEST)),
    COMPUTE_ZIP: tuple(sorted(set(MANIFEST) - set(CONTROLLER_ONLY))),
}
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
"""Every entry gets the same timestamp and mode, so a zip depends only on its files; the boot
script makes them executable after unzipping."""

Fetch = Callable[[str], bytes]


class Bucket(Protocol):
    """What the provider needs of Cloud Storage."""

    def upload(self, bucket: str, name: str, data: bytes) -> None: ...

    def delete(self, bucket: str, name: str) -> None: ...

    def md5(self, bucket: str, name: str) -> str | None:
        """The object's base64 MD5 as GCS reports it, or None when it does not exist."""
        ...


class ScriptHashError(RuntimeError):
    """A fetched script is not the file the manifest pins."""


def source_url(path: str, commit: str = TOOLKIT_COMMIT, mirror: str | None = None) -> str:
    """Where a script is read: GitHub at `commit`, or `<mirror>/<path>`."""
    if mirror is not None:
        return f"{mirror.rstrip('/')}/{path}"
    return SOURCE_URL.format(commit=commit, path=f"{SCRIPTS_DIR}/{path}")


def fetch_over_https(url: str) -> bytes:
    if not url.startswith("https://"):
        raise ValueError(f"refusing to fetch {url}: only https")
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read()


def fetch_from_gcs(url: str) -> bytes:
    """An object `gs://BUCKET/NAME`, with the deployer's credentials."""
    from google.cloud import storage

    bucket, _, name = url.removeprefix("gs://").partition("/")
    return storage.Client().bucket(bucket).blob(name).download_as_bytes()


def fetch_from_folder(path: str) -> bytes:
    """A file of a local mirror; `path` is absolute."""
    with open(path, "rb") as file:
        return file.read()


def fetch_any(url: str) -> bytes:
    """GitHub over https, a Cloud Storage mirror or a local one, by the address's form."""
    if url.startswith("gs://"):
        return fetch_from_gcs(url)
    if url.startswith("/"):
        return fetch_from_folder(url)
    return fetch_over_https(url)


def fetch_verified(
    fetch: Fetch,
    manifest: Mapping[str, str],
    commit: str,
    mirror: str | None = None,
    patched_hashes: Mapping[str, str] | None = None,
) -> dict[str, bytes]:
    """Every file of the manifest, each checked against its pinned sha256, wherever it was
    read from, then with this program's additions checked against `patched_hashes`."""
    files = {}
    where = f"{mirror} (mirror of {commit})" if mirror else commit
    for path, expected in sorted(manifest.items()):
        data = fetch(source_url(path, commit, mirror))
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise ScriptHashError(
                f"{path} at {where} has sha256 {actual}, but the manifest pins {expected}; "
                "refusing to upload it (re-pin only after reading the upstream change)"
            )
        files[path] = patched(path, data, (patched_hashes or PATCHED).get(path))
    return files


def changed(path: str, data: bytes) -> bytes:
    """A script with this program's edits and addition, before any pin is checked."""
    for old, new in EDITS.get(path, ()):
        if data.count(old.encode()) != 1:
            raise ScriptHashError(
                f"{path} holds {data.count(old.encode())} copies of the text ai-infra edits, "
                f"not one: {old.splitlines()[0].strip()!r}; the edit needs reading again"
            )
        data = data.replace(old.encode(), new.encode())
    return data + ADDITIONS.get(path, "").encode()


def patched(path: str, data: bytes, expected: str | None = None) -> bytes:
    """A verified script with this program's edits and addition, if it has any, checked
    against the result's own pin (by default `PATCHED`)."""
    if path not in ADDITIONS and path not in EDITS:
        return data
    expected = expected or PATCHED[path]
    result = changed(path, data)
    actual = hashlib.sha256(result).hexdigest()
    if actual != expected:
        raise ScriptHashError(
            f"{path} with ai-infra's addition has sha256 {actual}, but {expected} is pinned; "
            "re-pin PATCHED only after checking the addition against the pinned file"
        )
    return result


def build_zip(files: Mapping[str, bytes], names: tuple[str, ...]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(names):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o100644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


def md5_base64(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()  # GCS reports md5Hash so


class GcsBucket:
    """Cloud Storage through Google's client library, with the deployer's credentials."""

    def _blob(self, bucket: str, name: str) -> Any:
        from google.cloud import storage

        return storage.Client().bucket(bucket).blob(name)

    def upload(self, bucket: str, name: str, data: bytes) -> None:
        self._blob(bucket, name).upload_from_string(data, content_type="application/zip")

    def delete(self, bucket: str, name: str) -> None:
        from google.api_core.exceptions import NotFound

        # Deleting what is already gone is done.
        with contextlib.suppress(NotFound):
            self._blob(bucket, name).delete()

    def md5(self, bucket: str, name: str) -> str | None:
        from google.cloud import storage

        blob = storage.Client().bucket(bucket).get_blob(name)
        return None if blob is None else blob.md5_hash


class ScriptsProvider(ResourceProvider):
    """Fetches the pinned scripts, verifies them, and keeps the two zips in the bucket."""

    def __init__(self, fetch: Fetch | None = None, bucket: Bucket | None = None) -> None:
        super().__init__()
        self._fetch = fetch
        self._bucket = bucket

    @property
    def fetch(self) -> Fetch:
        return self._fetch or fetch_any

    @property
    def bucket(self) -> Bucket:
        return self._bucket or GcsBucket()

    def _put(self, props: dict[str, Any]) -> dict[str, Any]:
        files = fetch_verified(
            self.fetch,
            props["manifest"],
            props["commit"],
            props.get("mirror") or None,
            props.get("patched") or PATCHED,
        )
        hashes = {}
        for zip_name, names in sorted(props["zips"].items()):
            data = build_zip(files, tuple(names))
            self.bucket.upload(props["bucket"], f"{props['prefix']}/{zip_name}", data)
            hashes[zip_name] = md5_base64(data)
        return {**props, "md5": hashes}

    def create(self, props: dict[str, Any]) -> CreateResult:
        outputs = self._put(props)
        return CreateResult(id_=f"{props['bucket']}/{props['prefix']}", outs=outputs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # The mirror is where the files are read, not what they are: changing it changes
        # nothing in the bucket.
        keys = ("bucket", "prefix", "commit", "manifest", "patched", "zips")
        changed = [k for k in keys if olds.get(k) != news.get(k)]
        return DiffResult(
            changes=bool(changed),
            replaces=[k for k in changed if k in ("bucket", "prefix")],
            delete_before_replace=False,
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._put(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The zips as they are: one deleted or changed by hand shows up as drift."""
        md5 = {
            zip_name: self.bucket.md5(props["bucket"], f"{props['prefix']}/{zip_name}")
            for zip_name in props.get("zips", {})
        }
        return ReadResult(id_=id_, outs={**props, "md5": md5})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        for zip_name in props.get("zips", {}):
            self.bucket.delete(props["bucket"], f"{props['prefix']}/{zip_name}")


class SlurmScripts(Resource, module="slurm", name="RuntimeScripts"):
    """The runtime script zips under `<bucket>/<prefix>/`."""

    md5: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        *,
        bucket: str,
        prefix: str,
        mirror: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
        provider: ScriptsProvider | None = None,
    ) -> None:
        super().__init__(
            provider or ScriptsProvider(),
            name,
            {
                "bucket": bucket,
                "prefix": prefix,
                "commit": TOOLKIT_COMMIT,
                "manifest": dict(MANIFEST),
                "patched": dict(PATCHED),
                "mirror": mirror,
                "zips": {k: list(v) for k, v in ZIPS.items()},
                "md5": None,
            },
            opts,
        )
