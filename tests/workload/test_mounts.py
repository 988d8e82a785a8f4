"""A team's data in its job: what `--volume` mounts is what the stack grants the team, by the
stack's names, through the claim the storage model made or an inline bucket volume with the
same gcsfuse options, and each bucket's file cache is bounded in a volume sized for it."""

from __future__ import annotations

import dataclasses
from typing import Any

import kubernetes_validate
import pytest
import yaml

from catalog.storage import GKE_FILE_CACHE_MIB
from components.gke import NodeShape
from components.storage import GCS_PV_ATTRIBUTES, gke_mount_options
from graph.engine import REPO_ROOT
from tests.workload.conftest import Run
from tests.workload.test_submit import IMAGE, PRETRAIN, checks, manifest, pod
from workload import checks as offline
from workload.mounts import CACHE_VOLUME, cache_volume
from workload.request import FlagError
from workload.target import Target

KUBERNETES_VERSION = "1.33.0"
STORAGE = {
    "privateServiceRange": "10.200.0.0/20",
    "volumes": [
        {
            "name": "corpus",
            "bucket": "public-corpus-mirror",
            "teams": {"research": "read", "pretrain": "read"},
        },
        {
            "name": "shared",
            "filestore": {"capacityGib": 1024},
            "teams": {"research": "write", "pretrain": "read"},
            "sharedWrite": True,
        },
    ],
}


@pytest.fixture(scope="module")
def stack_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    """prod, with an `ai-infra:storage` bucket and Filestore share granted to research."""
    document = yaml.safe_load((REPO_ROOT / "Pulumi.prod.yaml").read_text())
    document["config"]["ai-infra:storage"] = STORAGE
    path = tmp_path_factory.mktemp("stack") / "Pulumi.prod-storage.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def research(stack: str, *volumes: str) -> tuple[str, ...]:
    argv = ["submit", "--team", "research", "--slice", "v6e-flex", "--name", "x", "--image", IMAGE]
    for volume in volumes:
        argv += ["--volume", volume]
    return (stack, *argv)


def volumes_of(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in spec.get("volumes", [])}


def test_storage_volumes_mount_through_the_claims_the_stack_made(run: Run, stack_file: str):
    code, out, err = run(*research(stack_file, "corpus", "shared", "datasets"))
    assert code == 0, err
    jobset = manifest(out)
    assert all(c.startswith("ok") for c in checks(out).values()), checks(out)
    spec = pod(jobset)
    volumes = volumes_of(spec)
    assert volumes["data-corpus"]["persistentVolumeClaim"] == {
        "claimName": "corpus",
        "readOnly": True,
    }
    assert volumes["data-shared"]["persistentVolumeClaim"] == {
        "claimName": "shared",
        "readOnly": False,
    }
    # The team's own bucket grant, inline, with the options the storage model gives a read
    # mount and the attributes of its PersistentVolumes.
    inline = volumes["data-datasets"]["csi"]
    assert inline["readOnly"] is True
    attributes = inline["volumeAttributes"]
    assert attributes["mountOptions"].split(",") == gke_mount_options("training")
    assert GCS_PV_ATTRIBUTES.items() <= attributes.items()
    (main,) = spec["containers"]
    assert {(m["mountPath"], m.get("readOnly")) for m in main["volumeMounts"]} == {
        ("/data/corpus", True),
        ("/data/shared", False),
        ("/data/datasets", True),
        ("/dev/shm", None),
    }
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert template["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    # Two buckets' caches, bounded, in the one cache volume the sidecar takes.
    size = volumes[CACHE_VOLUME]["emptyDir"]["sizeLimit"]
    assert int(size.removesuffix("Mi")) >= 2 * GKE_FILE_CACHE_MIB
    for created in offline.created_objects(jobset)[1:]:
        for owner in created["metadata"].get("ownerReferences", []):
            owner["uid"] = "0"  # The API server's; the rendered pod has none yet.
        kubernetes_validate.validate(created, KUBERNETES_VERSION, strict=True)


def test_a_host_network_pod_mounts_a_granted_bucket_inline_as_its_own_account(
    run: Run, stack_file: str
):
    argv = [stack_file, *PRETRAIN[1:], "--volume", "corpus", "--volume", "shared"]
    code, out, err = run(*argv)
    assert code == 0, err
    spec = pod(manifest(out))
    assert spec["hostNetwork"] is True
    volumes = volumes_of(spec)
    inline = volumes["data-corpus"]["csi"]
    # The claim's PersistentVolume lacks hostNetworkPodKSA; the same bucket and options inline.
    assert inline["volumeAttributes"]["bucketName"] == "public-corpus-mirror"
    assert inline["volumeAttributes"]["hostNetworkPodKSA"] == "true"
    assert inline["volumeAttributes"]["mountOptions"].split(",") == gke_mount_options("training")
    assert inline["readOnly"] is True
    assert volumes["data-shared"]["persistentVolumeClaim"]["claimName"] == "shared"


def test_a_filestore_share_alone_needs_no_gcsfuse_sidecar(run: Run, stack_file: str):
    code, out, err = run(*research(stack_file, "shared"))
    assert code == 0, err
    template = manifest(out)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert "gke-gcsfuse/volumes" not in template["metadata"].get("annotations", {})
    assert CACHE_VOLUME not in volumes_of(template["spec"])


def test_a_name_the_team_is_not_granted_lists_what_it_has(run: Run, stack_file: str):
    code, out, err = run(*research(stack_file, "checkpoints"))
    assert code == 2 and out == ""
    assert err.startswith(
        "error: --volume: team research is granted no volume or bucket 'checkpoints' (it has: "
        "corpus, datasets, shared)"
    ), err


def test_each_bucket_mount_bounds_its_file_cache():
    for profile in ("training", "checkpoint"):
        options = gke_mount_options(profile)
        assert f"file-cache:max-size-mb:{GKE_FILE_CACHE_MIB}" in options
        assert not any(o.startswith("file-cache:max-size-mb:-") for o in options)


def target(**changes: Any) -> Target:
    base = Target(
        team=None,  # type: ignore[arg-type]
        service_account="training",
        local_queue="q",
        cluster_queue="q",
        flavor="f",
        node_labels={},
        tolerations=[],
        resource="nvidia.com/gpu",
        per_node=8,
        nodes_per_slice=1,
        available=1,
        source="gpuPools[0] g",
        machine_type="m",
    )
    return dataclasses.replace(base, **changes)


GIB = 1024**3


@pytest.mark.parametrize(
    ("changes", "medium", "where"),
    [
        ({"local_ssd": True, "node": NodeShape("m", 8, 1, 64 * GIB)}, None, "local SSD"),
        ({"node": NodeShape("m", 8, 1, 1000 * GIB), "boot_disk_gib": 100}, "Memory", "RAM"),
        ({"node": NodeShape("m", 8, 1, 64 * GIB), "boot_disk_gib": 200}, None, "boot disk"),
        ({"node": None, "boot_disk_gib": 200}, None, "boot disk"),
    ],
)
def test_the_cache_goes_to_local_ssd_then_ram_then_a_sized_boot_disk_volume(
    changes: dict[str, Any], medium: str | None, where: str
):
    volume, said = cache_volume(target(**changes), 2)
    assert volume["name"] == CACHE_VOLUME
    assert volume["emptyDir"].get("medium") == medium
    assert int(volume["emptyDir"]["sizeLimit"].removesuffix("Mi")) > 2 * GKE_FILE_CACHE_MIB
    assert where in said


def test_caches_that_fit_nowhere_are_refused_naming_the_flag():
    small = target(node=NodeShape("m", 8, 1, 64 * GIB), boot_disk_gib=50)
    with pytest.raises(FlagError, match="--volume: 2 bucket mounts need 34 GiB"):
        cache_volume(small, 2)
