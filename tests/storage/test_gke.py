"""Teams mount the stack's volumes on GKE: a PersistentVolume bound to one claim in each granted
team's namespace, read-only or read-write as granted, through the kind's CSI driver, and for a
bucket the one object role the team's Workload Identity needs, on that bucket alone."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest

from catalog.storage import GCSFUSE_FILE_CACHE, GCSFUSE_PROFILES, GKE_FILE_CACHE_MIB
from components.storage.mounts import team_mounts
from graph.engine import Graph, Registration, peered_address
from plan.diff import diff
from plan.verdicts import Effect
from stacks.loading import parse
from tests.conftest import build_graph
from tests.storage.stack import VOLUMES, config, storage

KUBERNETES_VERSION = "1.33.0"
"""The oldest GKE minor the Managed Lustre CSI driver runs on ("About the Managed Lustre CSI
driver": 1.33.2-gke.1111000 or later)."""


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(config())


def address_of(graph: Graph, name: str) -> str:
    """A Filestore instance's address, as the mock engine invents it."""
    return graph.named(name).outputs["networks"][0]["ipAddresses"][0]


def of_kind(graph: Graph, kind: str) -> dict[str, Registration]:
    return {
        r.inputs["metadata"]["name"]: r for r in graph if r.type == f"kubernetes:core/v1:{kind}"
    }


def test_each_granted_team_gets_a_volume_and_a_claim_per_grant(graph):
    pvs = of_kind(graph, "PersistentVolume")
    claims = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r
        for r in graph
        if r.type == "kubernetes:core/v1:PersistentVolumeClaim"
    }
    expected = {
        ("pretrain", "data"): "ReadOnlyMany",
        ("research", "data"): "ReadOnlyMany",
        ("pretrain", "ckpt"): "ReadWriteMany",
        ("research", "ckpt"): "ReadOnlyMany",
        ("pretrain", "scratch"): "ReadWriteMany",
        ("research", "shared"): "ReadWriteMany",
    }
    assert set(claims) == set(expected)
    assert set(pvs) == {f"{team}.{volume}" for team, volume in expected}
    for (team, volume), mode in expected.items():
        pv = pvs[f"{team}.{volume}"]
        spec = pv.inputs["spec"]
        assert spec["claimRef"] == {"namespace": team, "name": volume}, pv.urn
        assert spec["accessModes"] == [mode], pv.urn
        assert spec["csi"]["readOnly"] is (mode == "ReadOnlyMany"), pv.urn
        assert spec["persistentVolumeReclaimPolicy"] == "Retain", pv.urn
        claim = claims[(team, volume)]
        assert claim.inputs["spec"]["volumeName"] == f"{team}.{volume}", claim.urn
        assert claim.inputs["spec"]["accessModes"] == [mode], claim.urn
        assert claim.inputs["spec"]["storageClassName"] == "" == spec["storageClassName"]
        assert (
            claim.inputs["spec"]["resources"]["requests"]["storage"] == spec["capacity"]["storage"]
        )
        # The claim waits for the namespace its team's component makes.
        assert any(f"team-{team}-namespace" in d for d in claim.dependencies), claim.urn


def test_volumes_and_claims_are_valid_kubernetes_objects(graph):
    for r in graph:
        if r.type in (
            "kubernetes:core/v1:PersistentVolume",
            "kubernetes:core/v1:PersistentVolumeClaim",
        ):
            kubernetes_validate.validate(r.inputs, KUBERNETES_VERSION, strict=True)


def test_each_kind_names_its_driver_and_instance(graph):
    pvs = of_kind(graph, "PersistentVolume")
    bucket = pvs["pretrain.data"].inputs["spec"]["csi"]
    assert bucket["driver"] == "gcsfuse.csi.storage.gke.io"
    assert bucket["volumeHandle"] == "test-project-ai-test-datasets"
    lustre = pvs["pretrain.scratch"].inputs["spec"]["csi"]
    assert lustre["driver"] == "lustre.csi.storage.gke.io"
    assert lustre["volumeHandle"] == "test-project/us-central1-a/ai-test-scratch"
    instance = graph.named("storage-scratch")
    assert lustre["volumeAttributes"]["filesystem"] == instance.inputs["filesystem"] == "scratch"
    assert lustre["volumeAttributes"]["ip"] == peered_address("ai-test-scratch")
    assert pvs["pretrain.scratch"].inputs["spec"]["capacity"] == {"storage": "18000Gi"}
    filestore = pvs["research.shared"].inputs["spec"]["csi"]
    assert filestore["driver"] == "filestore.csi.storage.gke.io"
    assert filestore["volumeHandle"] == "modeInstance/us-central1-a/ai-test-shared/share"
    assert filestore["volumeAttributes"] == {
        "ip": address_of(graph, "storage-shared"),
        "volume": "share",
    }
    # Volumes of the instances the stack creates wait for them.
    assert instance.urn in pvs["pretrain.scratch"].dependencies


def test_buckets_get_their_profiles_settings_and_the_file_cache(graph):
    pvs = of_kind(graph, "PersistentVolume")
    data = pvs["pretrain.data"].inputs["spec"]["mountOptions"]
    ckpt = pvs["pretrain.ckpt"].inputs["spec"]["mountOptions"]
    assert "metadata-cache:ttl-secs:-1" in data
    assert (
        f"file-cache:max-size-mb:{GKE_FILE_CACHE_MIB}" in data
        and "file-cache:enable-parallel-downloads:true" in data
    )
    # Bounded: the pod's cache volume is sized to it, never the node's whole disk.
    assert not any(o.startswith("file-cache:max-size-mb:-") for o in data + ckpt)
    assert "file-cache:cache-file-for-range-read:true" not in data
    assert "file-cache:cache-file-for-range-read:true" in ckpt
    assert "file-system:rename-dir-limit:200000" in ckpt and "read_ahead_kb=1024" in ckpt
    assert "ro" in data and "ro" not in ckpt
    for path, value in (*GCSFUSE_PROFILES["checkpoint"].settings, *GCSFUSE_FILE_CACHE):
        if path != "file-cache.max-size-mb":
            assert f"{path.replace('.', ':')}:{value}" in ckpt
    assert "mountOptions" not in pvs["pretrain.scratch"].inputs["spec"]


def team_roles(graph: Graph, team: str) -> set[tuple[str, str]]:
    member = f"serviceAccount:ai-test-{team}@test-project.iam.gserviceaccount.com"
    return {
        (r.inputs["bucket"], r.inputs["role"])
        for r in graph
        if r.type == "gcp:storage/bucketIAMMember:BucketIAMMember" and r.inputs["member"] == member
    }


def test_a_teams_identity_gets_the_object_role_of_each_bucket_grant_and_nothing_wider(graph):
    assert team_roles(graph, "pretrain") == {
        ("test-project-ai-test-datasets", "roles/storage.objectViewer"),
        ("test-project-ai-test-checkpoints", "roles/storage.objectUser"),
    }
    assert team_roles(graph, "research") == {
        ("test-project-ai-test-datasets", "roles/storage.objectViewer"),
        ("test-project-ai-test-checkpoints", "roles/storage.objectViewer"),
    }
    project_roles = {
        r.inputs["role"] for r in graph if r.type == "gcp:projects/iAMMember:IAMMember"
    }
    assert not any(role.startswith("roles/storage.") for role in project_roles)


def test_a_bucket_of_another_stack_is_granted_by_its_full_name():
    volumes = copy.deepcopy(VOLUMES)
    volumes[0]["bucket"] = "shared-corpus-eu"
    graph = build_graph(config(storage=storage(volumes=volumes)))
    assert ("shared-corpus-eu", "roles/storage.objectViewer") in team_roles(graph, "research")
    pv = of_kind(graph, "PersistentVolume")["research.data"]
    assert pv.inputs["spec"]["csi"]["volumeHandle"] == "shared-corpus-eu"


def test_the_cluster_runs_the_lustre_driver_only_when_a_team_mounts_lustre(graph):
    addons = graph.of_type("gcp:container/cluster:Cluster")[0].inputs["addonsConfig"]
    assert addons["lustreCsiDriverConfig"] == {"enabled": True}
    assert addons["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert addons["gcpFilestoreCsiDriverConfig"] == {"enabled": True}
    volumes = [
        {k: v for k, v in vol.items() if k != "teams"} if vol["name"] == "scratch" else vol
        for vol in VOLUMES
    ]
    without = build_graph(config(storage=storage(volumes=volumes)))
    assert (
        "lustreCsiDriverConfig"
        not in without.of_type("gcp:container/cluster:Cluster")[0].inputs["addonsConfig"]
    )


def test_an_existing_instance_granted_to_a_team_is_read_not_created():
    volumes = copy.deepcopy(VOLUMES)
    volumes[5]["teams"] = {"research": "read"}
    volumes[4]["teams"] = {"research": "read"}
    graph = build_graph(config(storage=storage(volumes=volumes)))
    pvs = of_kind(graph, "PersistentVolume")
    lustre = pvs["research.old-lustre"].inputs["spec"]["csi"]
    assert lustre["volumeHandle"] == "test-project/us-central1-a/legacy-lustre"
    assert lustre["volumeAttributes"] == {
        "ip": peered_address("legacy-lustre"),
        "filesystem": "legacylu",
    }
    nfs = pvs["research.old-nfs"].inputs["spec"]["csi"]
    assert nfs["volumeHandle"] == "modeInstance/us-central1-a/legacy-nfs/share"
    created = {
        r.inputs.get("instanceId") or r.inputs.get("name")
        for r in graph
        if r.type in ("gcp:lustre/instance:Instance", "gcp:filestore/instance:Instance")
    }
    assert created == {"ai-test-scratch", "ai-test-shared"}


def edit(after: dict[str, Any]):
    return diff(build_graph(config()), build_graph(after))


def test_a_new_grant_touches_that_team_alone():
    volumes = copy.deepcopy(VOLUMES)
    volumes[3]["teams"] = {"research": "write", "pretrain": "read"}
    changes = edit(config(storage=storage(volumes=volumes)))
    touched = {r.urn for r in changes}
    assert touched, "the grant changed nothing"
    assert all("storage-pretrain" in urn for urn in touched), touched
    assert changes.created == touched


def test_the_team_mounts_say_what_a_workload_mounts():
    parsed = parse(config(), "test")
    mounts = {m.volume: m for m in team_mounts(parsed.resolved_storage, "research")}
    assert set(mounts) == {"data", "ckpt", "shared"}
    assert mounts["ckpt"].claim == "ckpt" and mounts["ckpt"].read_only
    assert not mounts["shared"].read_only and mounts["shared"].mount_options == ()
    assert "file-cache:cache-file-for-range-read:true" in mounts["ckpt"].mount_options


def storage_changes(changes, kind: str) -> dict[str, Any]:
    return {c.urn.rsplit("::", 1)[1]: c for c in changes if c.resource.type.endswith(f":{kind}")}


def test_growing_a_lustre_instance_grows_its_volumes_not_their_claims():
    volumes = copy.deepcopy(VOLUMES)
    volumes[2]["lustre"]["capacityGib"] = 36000
    changes = edit(config(storage=storage(volumes=volumes)))
    # Kubernetes refuses to resize a claim without a StorageClass, so its request stays.
    assert not storage_changes(changes, "PersistentVolumeClaim"), changes.changed
    (pv,) = storage_changes(changes, "PersistentVolume").values()
    assert pv.op.value == "update", pv
    assert [c.rendered_path for c in pv.changes] == ["spec.capacity.storage"]
    assert not any("cannot complete" in c.note for c in pv.changes)


def test_a_read_write_flip_is_not_shown_as_an_update_that_succeeds():
    volumes = copy.deepcopy(VOLUMES)
    volumes[3]["teams"] = {"research": "read"}
    changes = edit(config(storage=storage(volumes=volumes)))
    pvs = storage_changes(changes, "PersistentVolume")
    csi = [c for pv in pvs.values() for c in pv.changes if c.rendered_path.startswith("spec.csi")]
    # The volume source is immutable once created: the API server refuses the update.
    assert csi and all(c.note.startswith("cannot complete:") for c in csi), csi
    # The claim's access mode is ForceNew in pulumi-kubernetes: it is replaced.
    (claim,) = storage_changes(changes, "PersistentVolumeClaim").values()
    assert claim.op.value == "replace", claim


def test_a_lustre_throughput_change_deletes_the_instance_before_recreating_its_id():
    volumes = copy.deepcopy(VOLUMES)
    volumes[2]["lustre"] = {"capacityGib": 18000, "throughput": 1000}
    changes = edit(config(storage=storage(volumes=volumes)))
    (lustre,) = [c for c in changes if c.resource.type == "gcp:lustre/instance:Instance"]
    assert lustre.op.value == "replace" and lustre.delete_before_replace, lustre
    assert lustre.hazards, "a replace that loses the file system's data says so"


def resized(index: int, kind: str, before: dict[str, Any], after: dict[str, Any]):
    """The diff of one volume's spec going from `before` to `after`."""
    old, new = copy.deepcopy(VOLUMES), copy.deepcopy(VOLUMES)
    old[index][kind], new[index][kind] = before, after
    was = build_graph(config(storage=storage(volumes=old)))
    return diff(was, build_graph(config(storage=storage(volumes=new))))


@pytest.mark.parametrize(
    ("index", "kind", "before", "after", "why"),
    [
        (
            2,
            "lustre",
            {"capacityGib": 36000, "throughput": 500},
            {"capacityGib": 18000, "throughput": 500},
            "never shrinks",
        ),
        (
            2,
            "lustre",
            {"capacityGib": 18000, "throughput": 500},
            {"capacityGib": 3168000, "throughput": 500},
            "grows only up to 3,060,000 GiB",
        ),
        (
            3,
            "filestore",
            {"capacityGib": 3000, "tier": "BASIC_SSD"},
            {"capacityGib": 2600, "tier": "BASIC_SSD"},
            "BASIC_SSD scales up only",
        ),
    ],
    ids=["lustre-shrink", "lustre-past-threshold", "basic-shrink"],
)
def test_a_resize_the_api_refuses_is_shown_as_one_that_cannot_complete(
    index: int, kind: str, before: dict[str, Any], after: dict[str, Any], why: str
):
    changes = resized(index, kind, before, after)
    instance = f"gcp:{kind}/instance:Instance"
    (change,) = [c for c in changes if c.resource.type == instance]
    (capacity,) = [c for c in change.changes if "apacity" in c.rendered_path]
    # The gate reads FAILS as an edit `pulumi up` cannot finish (docs/plan.md, exit 3).
    assert capacity.effect is Effect.FAILS and why in capacity.note, capacity


def test_a_lustre_grow_within_its_band_is_an_update():
    changes = resized(
        2,
        "lustre",
        {"capacityGib": 18000, "throughput": 500},
        {"capacityGib": 36000, "throughput": 500},
    )
    (change,) = [c for c in changes if c.resource.type == "gcp:lustre/instance:Instance"]
    assert change.op.value == "update" and not any(c.note for c in change.changes), change
