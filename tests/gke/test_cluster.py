"""The GKE cluster, its node service account and its CPU pool."""

from __future__ import annotations

import asyncio

import yaml

from components.gke.cluster import NODE_SA_ROLES
from graph.engine import run_program
from tests.conftest import with_config


def test_node_service_account_has_exactly_the_least_privilege_roles(build):
    member = "serviceAccount:ai-test-nodes@test-project.iam.gserviceaccount.com"

    def grants(graph):
        return {
            r.inputs["role"]
            for r in graph.of_type("gcp:projects/iAMMember:IAMMember")
            if r.inputs["member"] == member
        }

    graph = build()
    assert (
        grants(graph)
        == {*NODE_SA_ROLES, "roles/serviceusage.serviceUsageConsumer"}
        == {
            "roles/container.defaultNodeServiceAccount",
            "roles/serviceusage.serviceUsageConsumer",
        }
    )
    # No project-wide image read: a host-network pod acts as its node's account.
    assert not graph.of_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    cluster = graph.named("gke-cluster")
    for grant in graph.of_type("gcp:projects/iAMMember:IAMMember"):
        if grant.inputs["member"] == member:
            assert grant.urn in cluster.dependencies
    # Image streaming needs its API and Service Usage Consumer; without it, neither.
    services = {s.inputs["service"] for s in graph.of_type("gcp:projects/service:Service")}
    assert "containerfilesystem.googleapis.com" in services
    plain = build(cluster={"imageStreaming": False})
    assert grants(plain) == set(NODE_SA_ROLES)
    services = {s.inputs["service"] for s in plain.of_type("gcp:projects/service:Service")}
    assert "containerfilesystem.googleapis.com" not in services


def test_cluster_settings_follow_config(build):
    graph = build(
        cluster={
            "name": "train",
            "regional": False,
            "releaseChannel": "RAPID",
            "version": "1.33",
            "dataplaneV2": False,
            "gcsFuseCsiDriver": False,
            "imageStreaming": False,
            "maintenanceStartTime": "05:30",
        },
        network={"authorizedNetworks": [{"cidr": "198.51.100.0/24", "name": "ci"}]},
    )
    cluster = graph.named("gke-cluster").inputs
    assert cluster["name"] == "train" and cluster["location"] == "us-east5-a"
    assert cluster["releaseChannel"] == {"channel": "RAPID"}
    assert cluster["minMasterVersion"] == "1.33"
    assert cluster["datapathProvider"] == "LEGACY_DATAPATH"
    assert cluster["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": False}
    assert cluster["nodePoolDefaults"]["nodeConfigDefaults"]["gcfsConfig"] == {"enabled": False}
    assert cluster["maintenancePolicy"]["dailyMaintenanceWindow"]["startTime"] == "05:30"
    assert cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [
        {"cidrBlock": "198.51.100.0/24", "displayName": "ci"}
    ]
    cpu = graph.named("gke-cpu").inputs
    assert cpu["location"] == "us-east5-a"
    assert cpu["management"] == {"autoRepair": True, "autoUpgrade": True}


def test_defaults_are_regional_dataplane_v2_fuse_and_image_streaming(build):
    cluster = build().named("gke-cluster").inputs
    assert cluster["location"] == "us-east5"
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH"
    assert cluster["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert cluster["releaseChannel"] == {"channel": "REGULAR"}
    assert cluster["defaultMaxPodsPerNode"] == 110


def test_no_release_channel_turns_auto_upgrade_off_on_tpu_pools_only(build):
    graph = build(
        cluster={"releaseChannel": "NONE"},
        tpuSlices=[
            {"name": "s", "accelerator": "v5p-16"},
            {"name": "one", "accelerator": "v5p-8", "count": 2},
        ],
        gpuPools=[{"name": "l4", "machineType": "g2-standard-8", "acceleratorType": "nvidia-l4"}],
    )
    assert graph.named("gke-cluster").inputs["releaseChannel"] == {"channel": "UNSPECIFIED"}
    upgraded = {
        pool.inputs["name"]: pool.inputs["management"]["autoUpgrade"]
        for pool in graph.of_type("gcp:container/nodePool:NodePool")
    }
    # The system pool runs the controllers, the CPU pool teams' CPU pods: both keep getting
    # upgrades.
    assert upgraded == {"cpu": True, "system": True, "s-0": False, "one": False, "l4": True}


def test_cpu_pool_sizing(build):
    graph = build(
        cluster={
            "cpuPool": {
                "machineType": "n2-standard-16",
                "minNodes": 2,
                "maxNodes": 5,
                "diskSizeGb": 200,
                "spot": True,
            }
        }
    )
    cpu = graph.named("gke-cpu").inputs
    assert cpu["nodeConfig"]["machineType"] == "n2-standard-16"
    assert cpu["nodeConfig"]["diskSizeGb"] == 200
    assert cpu["nodeConfig"]["spot"] is True
    assert cpu["autoscaling"] == {"minNodeCount": 2, "maxNodeCount": 5}
    assert cpu["nodeConfig"]["gvnic"] == {"enabled": True}


def test_cluster_bootstrap_pool_changes_never_replace_the_cluster(build):
    cluster = build().named("gke-cluster")
    assert set(cluster.ignore_changes) >= {"nodeConfig", "initialNodeCount"}


def test_kubeconfig_uses_the_gke_auth_plugin_and_is_secret():
    captured = {}

    def program():
        from stacks import environment, loading

        gke = environment.build(loading.load()).gke
        assert gke is not None
        kubeconfig = gke.cluster.kubeconfig
        kubeconfig.apply(lambda text: captured.setdefault("kubeconfig", text))
        captured["secret"] = asyncio.ensure_future(kubeconfig.is_secret())

    run_program(with_config(), program=program)
    document = yaml.safe_load(captured["kubeconfig"])
    user = document["users"][0]["user"]
    assert user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert document["clusters"][0]["cluster"]["server"].startswith("https://")
    assert "token" not in user
    assert captured["secret"].result() is True


def test_maintenance_exclusion_holds_node_upgrades(build):
    graph = build(
        cluster={
            "maintenanceExclusions": [
                {"name": "campaign", "start": "2026-12-01T00:00:00Z"},
                {
                    "name": "freeze",
                    "start": "2026-11-20T00:00:00Z",
                    "end": "2026-11-27T00:00:00Z",
                    "scope": "NO_UPGRADES",
                },
            ]
        }
    )
    exclusions = graph.named("gke-cluster").inputs["maintenancePolicy"]["maintenanceExclusions"]
    assert exclusions == [
        {
            "exclusionName": "campaign",
            "startTime": "2026-12-01T00:00:00Z",
            "exclusionOptions": {
                "scope": "NO_MINOR_OR_NODE_UPGRADES",
                "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
            },
        },
        {
            "exclusionName": "freeze",
            "startTime": "2026-11-20T00:00:00Z",
            "endTime": "2026-11-27T00:00:00Z",
            "exclusionOptions": {"scope": "NO_UPGRADES"},
        },
    ]


def test_tpu7x_boots_from_hyperdisk(build):
    graph = build(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-a"},
        tpuSlices=[
            {"name": "iron", "accelerator": "tpu7x-8", "zone": "us-central1-c"},
            {"name": "v5p", "accelerator": "v5p-8"},
        ],
    )
    assert graph.named("tpu-iron-pool").inputs["nodeConfig"]["diskType"] == "hyperdisk-balanced"
    assert graph.named("tpu-v5p-pool").inputs["nodeConfig"]["diskType"] == "pd-balanced"
