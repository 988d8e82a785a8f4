"""The TPU provisioner on the cluster: its config checks, what it renders (Deployment, ConfigMap,
RBAC, identity), when it starts, how its capacity becomes Kueue quota, and the JobSet example a
team submits for it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from catalog.tpu import ACCELERATOR_LABEL, TOPOLOGY_LABEL, TPU_RESOURCE, resolve
from components import gke
from components.gke.config import TpuProvisionerConfig
from components.gke.quota import tpu_node
from components.types import is_digest_pinned
from graph.engine import REPO_ROOT, Graph, record_program
from plan.cli import main as plan_main
from stacks import environment
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import build_graph, with_config
from tests.gke.test_kueue import kueue_objects, nominal, objects_of
from tests.test_docs import examples
from workload.schemas import validate

DIGEST = "sha256:" + "ab" * 32
IMAGE = f"us-docker.pkg.dev/test-project/images/tpu-provisioner@{DIGEST}"
TAGGED = "us-docker.pkg.dev/test-project/images/tpu-provisioner:v0.1.0"
NODES = "ai-test-nodes@test-project.iam.gserviceaccount.com"
KMS_KEY = "projects/kms-project/locations/us-central1/keyRings/tpu/cryptoKeys/boot"
PROVISIONER = "ai-test-tpu-prov@test-project.iam.gserviceaccount.com"
EXAMPLE = REPO_ROOT / "examples" / "provisioned-jobset.yaml"


def enabled(**fields: Any) -> dict[str, Any]:
    """Config overrides for a stack running the provisioner."""
    return {
        "cluster": {"releaseChannel": "NONE", "maxPodsPerNode": 32},
        "tpuProvisioner": {"enabled": True, "image": IMAGE, **fields},
    }


def problems(**overrides: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as error:
        parse(with_config(**overrides), "test")
    return dict(error.value.rendered)


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(
        with_config(
            **enabled(quota={"v5p-32": 4}),
            tpuSlices=[{"name": "train", "accelerator": "v5p-32"}],
            teams=[{"name": "research"}, {"name": "applied"}],
        )
    )


def pod_spec(graph: Graph) -> dict[str, Any]:
    return graph.named("tpu-provisioner-deployment").inputs["spec"]["template"]["spec"]


# Config: shapes and cross-checks, before anything registers.


@pytest.mark.parametrize(
    "image",
    [
        IMAGE,
        TAGGED,
        "controller:latest",
        "localhost:5000/tpu-provisioner",
        f"registry.example.com/team/tpu-provisioner:v1@{DIGEST}",
    ],
)
def test_image_references_are_accepted(image):
    assert TpuProvisionerConfig(enabled=True, image=image).image == image


@pytest.mark.parametrize(
    "image",
    [
        "",
        "US-DOCKER.pkg.dev/Project/Image:v1/extra",
        "repo/image:v1\n",
        " repo/image:v1",
        "repo/image@sha256:short",
        "repo/image:" + "t" * 129,
        "repo/Image:v1",
    ],
)
def test_bad_image_references_are_refused(image):
    with pytest.raises(ValidationError, match="not a container image reference"):
        TpuProvisionerConfig(enabled=True, image=image)


def test_only_a_digest_pins_an_image():
    assert is_digest_pinned(IMAGE)
    assert not is_digest_pinned(TAGGED)
    assert not is_digest_pinned("controller")


@pytest.mark.parametrize("image", [TAGGED, "controller", "us-docker.pkg.dev/p/i/c:latest"])
def test_a_tagged_image_is_warned_about_in_the_plan(image):
    """docs/tpu-provisioner.md promises that the program and the plan warn about a tag: the
    warning is the stack's, so the plan lists it and `pulumi up` logs it."""
    config = parse(with_config(**enabled(image=image, quota={"v5p-32": 4})), "test")
    found = [
        w for w in environment.warnings(config) if w.startswith("ai-infra:tpuProvisioner.image")
    ]
    assert len(found) == 1 and "mutable tag" in found[0] and image in found[0]
    assert not any(
        w.startswith("ai-infra:tpuProvisioner.image")
        for w in environment.warnings(parse(with_config(**enabled(quota={"v5p-32": 4})), "test"))
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("nodeMinLifespan", "10", "not a duration"),
        ("nodeMinLifespan", "0s", "refuses to start"),
        ("nodeMinLifespan", "0m00s", "refuses to start"),
        ("nodePoolDeletionDelay", "30 s", "not a duration"),
        ("nodeTags", ["Bad_Tag"], "not a network tag"),
        ("nodeTags", ["a,b"], "not a network tag"),
        ("podToNodeLabels", ["team,run"], "not a Kubernetes label key"),
        ("nodeServiceAccount", "123-compute@developer.gserviceaccount.com", "default compute"),
        ("zone", "us-east5", "not a GCP zone"),
        ("concurrency", 0, "must be at least 1"),
        ("quota", {"v5p-32": 0}, "must be at least 1"),
        ("quota", {"v5p-32": 257}, "must be at most 256"),
        ("quota", {"v5p-32": True}, "whole number"),
        ("quota", {"v5p-32": 1.5}, "whole number"),
        ("quota", {"v5p-32": "4"}, "whole number"),
    ],
)
def test_field_shapes_are_checked_at_their_path(field, value, message):
    found = problems(**enabled(**{field: value}))
    paths = [p for p in found if p.startswith(f"ai-infra:tpuProvisioner.{field}")]
    assert paths, found
    assert message in found[paths[0]]


def test_enabled_without_an_image_is_refused():
    found = problems(
        cluster={"releaseChannel": "NONE"}, tpuProvisioner={"enabled": True, "quota": {}}
    )
    assert "build and push the controller image" in found["ai-infra:tpuProvisioner.image"]


def test_the_cluster_must_not_be_on_a_release_channel():
    found = problems(tpuProvisioner={"enabled": True, "image": IMAGE})
    assert "releaseChannel: NONE (now REGULAR)" in found["ai-infra:tpuProvisioner.enabled"]


def test_zone_outside_the_region_is_refused():
    found = problems(**enabled(zone="us-central1-a"))
    assert found["ai-infra:tpuProvisioner.zone"] == (
        "us-central1-a is not in gcp:region us-east5; node pools must be in the cluster's region"
    )


def test_an_ai_zone_the_catalog_lists_for_tpu7x_is_accepted(build):
    # Issue 14: the provisioner refused us-central1-ai1a, which gcp:zone and the catalog accept.
    graph = build(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-a"},
        **enabled(zone="us-central1-ai1a", quota={"tpu7x-8": 1}),
    )
    config_map = graph.named("tpu-provisioner-config")
    assert config_map.inputs["data"]["GCP_ZONE"] == "us-central1-ai1a", config_map.urn


def test_zone_of_a_zonal_cluster_must_be_its_zone():
    overrides = enabled(zone="us-east5-b")
    overrides["cluster"]["regional"] = False
    found = problems(**overrides)
    assert "zonal in us-east5-a" in found["ai-infra:tpuProvisioner.zone"]


def test_quota_for_an_unknown_shape_names_the_valid_ones():
    found = problems(**enabled(quota={"v5p-33": 1, "v9-8": 1}))
    assert "v5p sizes are v5p-8, v5p-16" in found["ai-infra:tpuProvisioner.quota.v5p-33"]
    assert "not a Cloud TPU accelerator type" in found["ai-infra:tpuProvisioner.quota.v9-8"]


@pytest.mark.parametrize("key", ["v5p-32\n", " v5p-32", "V5P-32", "v5p-" + "1" * 40])
def test_quota_keys_must_be_written_as_accelerator_types(key):
    found = problems(**enabled(quota={key: 1}))
    (path,) = [p for p in found if p.startswith("ai-infra:tpuProvisioner.quota")]
    assert "not an accelerator type" in found[path]


def test_quota_without_the_controller_is_refused():
    found = problems(tpuProvisioner={"quota": {"v5p-32": 1}})
    assert "needs enabled: true" in found["ai-infra:tpuProvisioner.quota"]


def test_shapes_needing_different_boot_disks_are_refused():
    found = problems(**enabled(quota={"v5p-32": 1, "tpu7x-8": 1}))
    assert "hyperdisk-balanced for tpu7x-8" in found["ai-infra:tpuProvisioner.quota"]


def test_an_entry_taking_the_provisioner_account_id_is_refused():
    found = problems(**enabled(), teams=[{"name": "tpu-prov"}])
    assert "already belongs to tpuProvisioner" in found["ai-infra:teams[0].name"]


def test_teams_cannot_claim_more_than_the_provisioner_may_create():
    found = problems(
        **enabled(quota={"v5p-32": 2}),
        teams=[{"name": "research", "quota": {"tpuProvisioner.v5p-32": 48}}],
    )
    assert "provides 32" in found['ai-infra:teams[0].quota["tpuProvisioner.v5p-32"]']


def test_provisioner_nodes_count_against_the_pods_range():
    overrides = enabled(quota={"v5p-128": 8})
    overrides["cluster"]["maxPodsPerNode"] = 110
    found = problems(**overrides)
    # 3 CPU nodes in each of 3 zones at the cluster's 110 pods (a /24 each), a system node in
    # each at 32 (a /26), and 8 slices of 16 hosts at the provisioner's own 15 pods (a /27
    # each, gke.go maxPodsPerNode): 9 x 256 + 3 x 64 + 128 x 32 against the /20's 4,096.
    message = found["ai-infra:network.podsCidr"]
    assert "grow to need 6592" in message
    assert "'the TPU provisioner's pools' at 15 pods per node" in message
    # The cluster's default does not change what the provisioner's nodes take.
    overrides["cluster"]["maxPodsPerNode"] = 32
    assert "grow to need 4864" in problems(**overrides)["ai-infra:network.podsCidr"]


def test_bad_config_registers_nothing_and_reports_every_problem():
    graph, error = record_program(
        with_config(tpuProvisioner={"enabled": True, "zone": "europe-west4-a", "quota": {"x": 1}})
    )
    assert isinstance(error, ConfigError)
    assert len(graph) == 0
    assert {path for path, _ in error.rendered} >= {
        "ai-infra:tpuProvisioner.enabled",
        "ai-infra:tpuProvisioner.image",
        "ai-infra:tpuProvisioner.zone",
        "ai-infra:tpuProvisioner.quota.x",
    }


def test_disabled_registers_nothing_of_the_provisioner(build):
    graph = build()
    assert not graph.of_type("kubernetes:apps/v1:Deployment")
    assert not [r for r in graph if "tpu-prov" in str(r.inputs.get("accountId"))]


# What it renders.


def test_deployment_runs_one_leader_elected_non_root_replica_on_the_cpu_pool(graph):
    deployment = graph.named("tpu-provisioner-deployment").inputs
    assert deployment["metadata"] == {
        "name": "tpu-provisioner-controller-manager",
        "namespace": "tpu-provisioner-system",
    }
    spec = deployment["spec"]
    assert spec["replicas"] == 1
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"] == labels
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "tpu-provisioner-controller-manager"
    # On the system pool, tolerating its taint, beside Kueue and JobSet.
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": "system",
        "iam.gke.io/gke-metadata-server-enabled": "true",
    }
    assert pod["tolerations"] == [
        {
            "key": "components.gke.io/gke-managed-components",
            "operator": "Equal",
            "value": "true",
            "effect": "NoSchedule",
        }
    ]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["args"] == [
        "--leader-elect",
        "--health-probe-bind-address=:8081",
        "--metrics-bind-address=127.0.0.1:8080",
    ]
    assert container["envFrom"] == [{"configMapRef": {"name": "manager"}}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8081}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8081}
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}


def test_config_map_carries_every_setting_from_the_stack(graph):
    config_map = graph.named("tpu-provisioner-config").inputs
    assert config_map["metadata"] == {"name": "manager", "namespace": "tpu-provisioner-system"}
    assert config_map["data"] == {
        "PROVIDER": "gke",
        "GCP_PROJECT_ID": "test-project",
        "GCP_CLUSTER": "ai-test-gke",
        "GCP_CLUSTER_LOCATION": "us-east5",
        "GCP_ZONE": "us-east5-a",
        "GCP_NODE_SERVICE_ACCOUNT": NODES,
        "GCP_NODE_SECURE_BOOT": "true",
        "GCP_NODE_DISK_TYPE": "pd-balanced",
        # On by default: otherwise a pod's selectors buy Spot or spend reservations.
        "GCP_FORCE_ON_DEMAND": "true",
        "NODE_MIN_LIFESPAN": "10s",
        "NODEPOOL_DELETION_DELAY": "30s",
        "CONCURRENCY": "3",
        "POD_RESOURCE_TYPE": "google.com/tpu",
        # Every GKE node's tag, which the stack's firewall rules name the nodes by.
        "GCP_NODE_TAGS": "ai-test-gke-node",
    }


def test_config_map_follows_every_setting(build):
    graph = build(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-a"},
        **enabled(
            zone="us-central1-c",
            nodeServiceAccount="tpu-nodes@other-project.iam.gserviceaccount.com",
            nodeTags=["tpu", "no-egress"],
            podToNodeLabels=["team", "example.com/run"],
            forceOnDemand=False,
            concurrency=8,
            nodeMinLifespan="1m",
            nodePoolDeletionDelay="2m30s",
            secondaryBootDisk="projects/images-project/global/images/jax-preload",
            additionalNodeNetworks=[
                {"network": "dcn-1", "subnetwork": "dcn-1-sub"},
                {"network": "dcn-2", "subnetwork": "dcn-2-sub"},
            ],
            bootDiskKmsKey=KMS_KEY,
            confidentialStorage=True,
            quota={"tpu7x-128": 2},
        ),
    )
    data = graph.named("tpu-provisioner-config").inputs["data"]
    assert {k: v for k, v in data.items() if k not in ("GCP_PROJECT_ID", "GCP_CLUSTER")} == {
        "PROVIDER": "gke",
        "GCP_CLUSTER_LOCATION": "us-central1",
        "GCP_ZONE": "us-central1-c",
        "GCP_NODE_SERVICE_ACCOUNT": "tpu-nodes@other-project.iam.gserviceaccount.com",
        # The stack's GKE node tag first, which its firewall rules name every node by.
        "GCP_NODE_TAGS": "ai-test-gke-node,tpu,no-egress",
        "GCP_POD_TO_NODE_LABELS": "team,example.com/run",
        "GCP_NODE_SECURE_BOOT": "true",
        "GCP_NODE_DISK_TYPE": "hyperdisk-balanced",
        "GCP_FORCE_ON_DEMAND": "false",
        "GCP_NODE_SECONDARY_DISK": "projects/images-project/global/images/jax-preload",
        "GCP_NODE_ADDITIONAL_NETWORKS": "dcn-1:dcn-1-sub,dcn-2:dcn-2-sub",
        "GCP_NODE_BOOT_DISK_KMS_KEY": KMS_KEY,
        "GCP_NODE_CONFIDENTIAL_STORAGE": "true",
        "NODE_MIN_LIFESPAN": "1m",
        "NODEPOOL_DELETION_DELAY": "2m30s",
        "CONCURRENCY": "8",
        "POD_RESOURCE_TYPE": "google.com/tpu",
    }
    # The account the nodes run as is the one the provisioner may act as.
    grant = graph.named("tpu-provisioner-nodes-iam.serviceAccountUser").inputs
    assert grant["serviceAccountId"] == (
        "projects/other-project/serviceAccounts/tpu-nodes@other-project.iam.gserviceaccount.com"
    )
    # ... and has what the cluster's node account has, image streaming included.
    node_roles = {
        r.inputs["role"]
        for r in graph.of_type("gcp:projects/iAMMember:IAMMember")
        if r.inputs["member"] == "serviceAccount:tpu-nodes@other-project.iam.gserviceaccount.com"
    }
    assert node_roles == {
        "roles/container.defaultNodeServiceAccount",
        "roles/serviceusage.serviceUsageConsumer",
    }
    for grant_name in node_roles:
        key = grant_name.removeprefix("roles/")
        urn = graph.named(f"tpu-provisioner-nodes-{key}").urn
        assert urn in graph.named("tpu-provisioner-deployment").dependencies
    # Images: a read on each repository the stack names, never on the project.
    reads = [
        r
        for r in graph.of_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
        if r.inputs["member"] == "serviceAccount:tpu-nodes@other-project.iam.gserviceaccount.com"
    ]
    assert reads
    for read in reads:
        assert read.urn in graph.named("tpu-provisioner-deployment").dependencies
    # tpu7x pools are placed by the workload policy the controller names after the topology.
    (policy,) = graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["name"] == "tpu-provisioner-4x4x4"
    assert policy.inputs["region"] == "us-central1"
    assert policy.inputs["workloadPolicy"] == {
        "type": "HIGH_THROUGHPUT",
        "acceleratorTopology": "4x4x4",
    }
    assert policy.urn in graph.named("tpu-provisioner-deployment").dependencies


def test_cluster_role_grants_reads_and_events_only(graph):
    role = graph.named("tpu-provisioner-manager-role").inputs
    assert role["metadata"] == {"name": "tpu-provisioner-manager-role"}
    grants = {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert grants == {
        ("", "events"): {"create", "patch"},
        ("", "pods"): {"get", "list", "watch"},
        ("", "nodes"): {"get", "list", "watch"},
        ("jobset.x-k8s.io", "jobsets"): {"get", "list", "watch"},
    }
    binding = graph.named("tpu-provisioner-manager-rolebinding").inputs
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "tpu-provisioner-manager-role",
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "tpu-provisioner-controller-manager",
            "namespace": "tpu-provisioner-system",
        }
    ]


def test_leader_election_is_confined_to_its_namespace(graph):
    role = graph.named("tpu-provisioner-leader-election-role").inputs
    assert role["metadata"]["namespace"] == "tpu-provisioner-system"
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["ecaf1259.google.com"],
            "verbs": ["get", "update"],
        },
    ]
    binding = graph.named("tpu-provisioner-leader-election-rolebinding").inputs
    assert binding["metadata"]["namespace"] == "tpu-provisioner-system"
    assert binding["roleRef"]["kind"] == "Role"
    assert binding["roleRef"]["name"] == "tpu-provisioner-leader-election-role"
    assert binding["subjects"][0]["name"] == "tpu-provisioner-controller-manager"


def test_identity_grants(graph):
    gsa = graph.named("tpu-provisioner-identity-sa")
    assert gsa.inputs["accountId"] == "ai-test-tpu-prov"
    # Exactly what the controller calls (gke_service.go, gke.go), not container.clusterAdmin.
    role = graph.named("tpu-provisioner-role").inputs
    assert (role["project"], role["roleId"], role["stage"]) == (
        "test-project",
        "ai_test_tpu_provisioner",
        "GA",
    )
    assert sorted(role["permissions"]) == [
        "container.clusters.get",
        "container.clusters.update",
        "container.operations.get",
    ]
    grant = graph.named("tpu-provisioner-projects-test-project-roles-ai-test-tpu-provisioner")
    assert (grant.inputs["role"], grant.inputs["member"]) == (
        "projects/test-project/roles/ai_test_tpu_provisioner",
        f"serviceAccount:{PROVISIONER}",
    )
    assert graph.named("tpu-provisioner-role").urn in grant.dependencies
    assert not [
        r
        for r in graph.of_type("gcp:projects/iAMMember:IAMMember")
        if r.inputs["role"].startswith("roles/container.")
        and r.inputs["member"] == f"serviceAccount:{PROVISIONER}"
    ]
    # The cluster's own node account needs no grants from the provisioner.
    assert not [
        r
        for r in graph.of_type("gcp:projects/iAMMember:IAMMember")
        if r.name.startswith("tpu-provisioner-nodes-")
    ]
    binding = graph.named("tpu-provisioner-identity-iam.workloadIdentityUser").inputs
    assert binding["role"] == "roles/iam.workloadIdentityUser"
    assert binding["member"] == (
        "serviceAccount:test-project.svc.id.goog"
        "[tpu-provisioner-system/tpu-provisioner-controller-manager]"
    )
    user = graph.named("tpu-provisioner-nodes-iam.serviceAccountUser")
    assert user.type == "gcp:serviceaccount/iAMMember:IAMMember"
    assert user.inputs == {
        "serviceAccountId": f"projects/test-project/serviceAccounts/{NODES}",
        "role": "roles/iam.serviceAccountUser",
        "member": f"serviceAccount:{PROVISIONER}",
    }
    assert graph.named("gke-nodes-sa").urn in user.dependencies
    # On the node account only: no project-wide actAs.
    assert not [
        r
        for r in graph.of_type("gcp:projects/iAMMember:IAMMember")
        if r.inputs["role"] == "roles/iam.serviceAccountUser"
    ]
    ksa = graph.named("tpu-provisioner-identity-service-account").inputs["metadata"]
    assert ksa == {
        "name": "tpu-provisioner-controller-manager",
        "namespace": "tpu-provisioner-system",
        "annotations": {"iam.gke.io/gcp-service-account": PROVISIONER},
    }
    namespace = graph.named("tpu-provisioner-namespace")
    assert namespace.inputs["metadata"]["name"] == "tpu-provisioner-system"
    assert namespace.urn in graph.named("tpu-provisioner-identity-service-account").dependencies


def _granted(condition: dict[str, Any], name: str) -> bool:
    """The grant's IAM condition on a resource name, evaluated with a CEL implementation."""
    from cel_expr_python import cel

    env = cel.NewEnv(variables={"resource": cel.Type.DYN})
    value = env.compile(condition["expression"]).eval(data={"resource": {"name": name}})
    assert value.type() == cel.Type.BOOL, value
    return value.plain_value() is True


@pytest.mark.parametrize("regional", [True, False])
def test_the_role_holds_on_this_cluster_and_its_operations_only(build, regional: bool):
    # The controller addresses projects/P/locations/L/clusters/C (gke_context.go); the API
    # also names zonal clusters projects/P/zones/Z/clusters/C, and IAM's "Full resource names"
    # gives projects/P/clusters/C: each form of this cluster is granted, no other cluster.
    overrides = enabled(quota={"v5p-32": 4})
    overrides["cluster"]["regional"] = regional
    graph = build(**overrides)
    grant = graph.named("tpu-provisioner-projects-test-project-roles-ai-test-tpu-provisioner")
    condition = grant.inputs["condition"]
    location = "us-east5" if regional else "us-east5-a"
    parent = "locations" if regional else "zones"
    own = f"projects/test-project/{parent}/{location}/clusters/ai-test-gke"
    for name in (
        own,
        f"{own}/nodePools/tpu-v5p-slice-2x2x4-abc",
        f"projects/test-project/locations/{location}/clusters/ai-test-gke",
        f"projects/test-project/locations/{location}/operations/operation-123",
        "projects/test-project/clusters/ai-test-gke",
        "projects/test-project/clusters/ai-test-gke/nodePools/tpu-v5p-slice-2x2x4-abc",
        "",
    ):
        assert _granted(condition, name), name
    for name in (
        f"projects/test-project/{parent}/{location}/clusters/ai-test-gke-other",
        f"projects/test-project/{parent}/{location}/clusters/other/nodePools/ai-test-gke",
        "projects/test-project/locations/europe-west4/clusters/ai-test-gke",
        "projects/test-project/locations/europe-west4/clusters/ai-test-gke/nodePools/np",
        "projects/test-project/zones/europe-west4-a/clusters/ai-test-gke",
        "projects/test-project/clusters/ai-test-gke-other",
        "projects/test-project/clusters/other/nodePools/ai-test-gke",
    ):
        assert not _granted(condition, name), name


def test_identity_is_a_child_of_the_provisioner_without_aliases(graph):
    identity = graph.named("tpu-provisioner-identity")
    assert identity.type == "ai-infra:gke:WorkloadIdentity", identity.urn
    assert identity.parent == graph.named("tpu-provisioner").urn, identity.urn
    assert identity.aliases == (), identity.urn


def test_controller_starts_after_jobset_and_its_permissions_not_kueue(graph):
    deployment = graph.named("tpu-provisioner-deployment")
    deps = set(deployment.dependencies)
    for name in (
        "batch-jobset",
        "tpu-provisioner-config",
        "tpu-provisioner-manager-rolebinding",
        "tpu-provisioner-leader-election-rolebinding",
        "tpu-provisioner-identity-service-account",
        "tpu-provisioner-identity-iam.workloadIdentityUser",
        "tpu-provisioner-projects-test-project-roles-ai-test-tpu-provisioner",
        "tpu-provisioner-nodes-iam.serviceAccountUser",
    ):
        assert graph.named(name).urn in deps, (deployment.urn, name)
    assert graph.named("batch-kueue").urn not in deps
    assert not [d for d in deps if "kueue.x-k8s.io" in d]
    kubernetes = graph.named("gke-kubernetes")
    assert deployment.provider.startswith(kubernetes.urn)


def test_a_mutable_tag_is_warned_about(build, caplog):
    build(**enabled(image=TAGGED))
    assert [r.levelname for r in caplog.records if f"'{TAGGED}' is a mutable tag" in r.message] == [
        "WARNING"
    ]
    caplog.clear()
    build(**enabled())
    assert not [r for r in caplog.records if "mutable tag" in r.message]


def test_plan_shows_image_zone_and_node_service_account(tmp_path: Path, capsys):
    stack = tmp_path / "Pulumi.prov.yaml"
    config = with_config(**enabled(image=TAGGED, zone="us-east5-c"))
    stack.write_text(yaml.safe_dump({"config": config}))
    assert plan_main([str(stack)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    (deployment,) = [line for line in lines if "Deployment tpu-provisioner-deployment" in line]
    assert deployment.endswith(f"image={TAGGED} (mutable tag)")
    (config_map,) = [line for line in lines if "ConfigMap tpu-provisioner-config" in line]
    assert config_map.endswith(
        "tpu-provisioner-system/manager zone=us-east5-c "
        "nodeServiceAccount=ai-prov-nodes@test-project.iam.gserviceaccount.com"
    )


# Kueue: provisioner-created capacity as flavors of its own, in queues outside the cohort.


def test_provisioner_capacity_is_its_own_flavor_in_queues_that_never_borrow_or_lend(graph):
    flavors = objects_of(graph, "ResourceFlavor")
    assert sorted(flavors) == ["cpu", "v5p-32", "v5p-32-provisioned"]
    assert flavors["v5p-32"]["spec"]["nodeLabels"] == resolve("v5p-32").node_labels
    # The controller copies this selector onto the pool it creates (gke.go nodePoolForPod),
    # and fixed v5p-32 pools carry another capacity label.
    assert flavors["v5p-32-provisioned"]["spec"]["nodeLabels"] == {
        **resolve("v5p-32").node_labels,
        "ai-infra/capacity": "provisioned",
    }
    queues = objects_of(graph, "ClusterQueue")
    assert sorted(queues) == ["applied", "applied-provisioned", "research", "research-provisioned"]
    # Up to four provisioned slices (64 chips) split evenly, two each, each team's in a queue
    # outside the cohort that preempts nothing; the one fixed v5p-32 slice (16 chips) does
    # not divide in two, so the cohort holds it.
    for team in ("research", "applied"):
        own = queues[f"{team}-provisioned"]
        assert nominal(own)["v5p-32-provisioned"][TPU_RESOURCE] == 32
        assert "v5p-32" not in nominal(own)
        assert "cohortName" not in own["spec"]
        assert own["spec"]["preemption"] == {
            "reclaimWithinCohort": "Never",
            "withinClusterQueue": "Never",
        }
        assert own["spec"]["namespaceSelector"] == {
            "matchLabels": {"kubernetes.io/metadata.name": team}
        }
        # The CPU of the eight hosts behind its two slices.
        assert int(nominal(own)["cpu"]["cpu"]) == 8 * tpu_node(resolve("v5p-32")).cpu_millis // 1000
        shared = nominal(queues[team])
        assert "v5p-32-provisioned" not in shared and shared["v5p-32"][TPU_RESOURCE] == 0
    cohort = nominal(objects_of(graph, "Cohort")["ai-infra"])
    assert cohort["v5p-32"][TPU_RESOURCE] == 16 and "v5p-32-provisioned" not in cohort
    local = {
        (q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"]["clusterQueue"]
        for q in objects_of_kind(graph, "LocalQueue")
    }
    assert local[("research", "research-provisioned")] == "research-provisioned"
    assert local[("research", "default")] == "research"


def objects_of_kind(graph: Graph, kind: str) -> list[dict[str, Any]]:
    return [o for _, o in kueue_objects(graph) if o["kind"] == kind]


def test_a_shape_only_the_provisioner_creates_gets_its_flavor(build):
    graph = build(
        **enabled(quota={"v6e-16": 2}),
        teams=[
            {"name": "research", "quota": {"tpuProvisioner.v6e-16": 16}},
            {"name": "applied"},
        ],
    )
    flavors = objects_of(graph, "ResourceFlavor")
    assert flavors["v6e-16-provisioned"]["spec"]["nodeLabels"] == {
        ACCELERATOR_LABEL: "tpu-v6e-slice",
        TOPOLOGY_LABEL: "4x4",
        "ai-infra/capacity": "provisioned",
    }
    assert flavors["v6e-16-provisioned"]["spec"]["tolerations"] == [
        {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    queues = objects_of(graph, "ClusterQueue")
    # One of the two 16-chip slices named, the other to applied.
    assert nominal(queues["research-provisioned"])["v6e-16-provisioned"][TPU_RESOURCE] == 16
    assert nominal(queues["applied-provisioned"])["v6e-16-provisioned"][TPU_RESOURCE] == 16
    pools = {r.inputs["name"] for r in graph.of_type("gcp:container/nodePool:NodePool")}
    assert pools == {"cpu", "system"}, "only the CPU and system pools"


def test_a_team_named_like_another_teams_provisioner_queue_is_refused():
    found = problems(
        **enabled(quota={"v5p-32": 2}),
        teams=[{"name": "research"}, {"name": "research-provisioned"}],
    )
    assert "ai-infra:teams[1].name" in found
    assert "research's queue for provisioner-created slices" in found["ai-infra:teams[1].name"]


def test_provisioner_capacity_no_team_receives_is_a_warning():
    # Three slices between two teams without shares: one each, the third with the cohort,
    # which no provisioner queue borrows from.
    config = parse(
        with_config(**enabled(quota={"v5p-32": 3}), teams=[{"name": "a"}, {"name": "b"}]),
        "test",
    )
    (line,) = [w for w in environment.warnings(config) if "tpuProvisioner" in w.split(":")[1]]
    assert line.startswith("ai-infra:tpuProvisioner.quota.v5p-32: 16 of its 48 chips")


def test_no_release_channel_is_warned_about_with_what_the_provisioner_needs():
    config = parse(with_config(**enabled(quota={"v5p-32": 2}), teams=[{"name": "a"}]), "test")
    (line,) = environment.warnings(config)
    assert line.startswith(
        "ai-infra:cluster.releaseChannel: NONE is deprecated by GKE: only existing customers "
        "may set it, and on 2027-06-14 GKE enrolls such clusters in the Stable channel."
    )
    assert "creates its pools with auto-upgrade off, which GKE refuses on a channel" in line


def test_flex_start_tpu_slices_are_refused_beside_the_provisioner():
    # The controller would copy a pending flex-start pod's selectors onto an on-demand pool.
    found = problems(
        **enabled(quota={"v6e-16": 1}),
        tpuSlices=[
            {"name": "flex", "accelerator": "v6e-16", "provisioning": "flex-start"},
            {"name": "spot", "accelerator": "v6e-16", "provisioning": "spot"},
        ],
        gpuPools=[
            {
                "name": "l4",
                "machineType": "g2-standard-8",
                "acceleratorType": "nvidia-l4",
                "provisioning": "flex-start",
            }
        ],
    )
    assert list(found) == ["ai-infra:tpuSlices[0].provisioning"]
    assert (
        "cannot share a cluster with the TPU provisioner"
        in found["ai-infra:tpuSlices[0].provisioning"]
    )


# The example JobSet a team submits.


def test_example_jobset_matches_the_jobset_crd():
    assert validate(yaml.safe_load(EXAMPLE.read_text())) == []


def test_example_jobset_is_what_the_provisioner_acts_on_through_the_team_queue():
    raw = examples()["provisioner"].config
    config = parse(raw, "provisioner")
    graph = build_graph(raw, stack="provisioner")
    jobset = yaml.safe_load(EXAMPLE.read_text())
    namespace = jobset["metadata"]["namespace"]
    labels = jobset["metadata"]["labels"]

    local_queue = objects_of(graph, "LocalQueue")[labels["kueue.x-k8s.io/queue-name"]]
    assert local_queue["metadata"]["namespace"] == namespace
    assert labels["kueue.x-k8s.io/priority-class"] in objects_of(graph, "WorkloadPriorityClass")

    (job,) = jobset["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    selector = pod["nodeSelector"]
    (accelerator,) = config.tpu_provisioner.quota
    shape = resolve(accelerator)
    # The controller acts on a pod that selects the GKE TPU labels and requests google.com/tpu;
    # the pod selects the pools it creates for this JobSet alone.
    assert selector == {
        **shape.node_labels,
        "ai-infra/capacity": "provisioned",
        "google.com/tpu-provisioner-jobset-name": jobset["metadata"]["name"],
        "google.com/tpu-provisioner-jobset-namespace": namespace,
    }
    (container,) = pod["containers"]
    assert container["resources"]["requests"][TPU_RESOURCE] == shape.chips_per_host
    assert job["template"]["spec"]["parallelism"] == shape.hosts
    assert job["template"]["spec"]["completions"] == shape.hosts
    assert job["replicas"] <= config.tpu_provisioner.quota[accelerator]
    # Kueue has quota for the whole JobSet on the one flavor of its queue those labels select.
    queue = objects_of(graph, "ClusterQueue")[local_queue["spec"]["clusterQueue"]]
    flavors = objects_of(graph, "ResourceFlavor")
    (flavor,) = [
        name
        for name in nominal(queue)
        if flavors[name]["spec"].get("nodeLabels")
        and flavors[name]["spec"]["nodeLabels"].items() <= selector.items()
    ]
    assert flavor == "v5p-32-provisioned"
    assert nominal(queue)[flavor][TPU_RESOURCE] >= job["replicas"] * shape.chips
    assert pod["serviceAccountName"] == next(
        t.service_account for t in config.teams if t.name == namespace
    )


# Config edits, tested as edits.


def test_enabling_the_provisioner_adds_only_its_own_resources():
    base = {
        "cluster": {"releaseChannel": "NONE", "maxPodsPerNode": 32},
        "tpuSlices": [{"name": "train", "accelerator": "v5p-32"}],
        "teams": [{"name": "research"}],
    }
    before = build_graph(with_config(**base))
    after = build_graph(with_config(**{**base, **enabled()}))
    old = {r.urn: r for r in before}
    new = {r.urn: r for r in after}
    assert {u: old[u].inputs for u in old} == {u: new[u].inputs for u in old}
    added = {new[u].name for u in set(new) - set(old)}
    assert added == {
        "tpu-provisioner",
        "tpu-provisioner-identity",
        "tpu-provisioner-identity-sa",
        "tpu-provisioner-role",
        "tpu-provisioner-projects-test-project-roles-ai-test-tpu-provisioner",
        "tpu-provisioner-identity-iam.workloadIdentityUser",
        "tpu-provisioner-identity-service-account",
        "tpu-provisioner-namespace",
        "tpu-provisioner-nodes-iam.serviceAccountUser",
        "tpu-provisioner-config",
        "tpu-provisioner-manager-role",
        "tpu-provisioner-manager-rolebinding",
        "tpu-provisioner-leader-election-role",
        "tpu-provisioner-leader-election-rolebinding",
        "tpu-provisioner-deployment",
        # The system pool's nodes pull the controller's image from its repository.
        "gke-nodes-repo-us-docker.pkg.dev-test-project-images-artifactregistry.reader",
    }


def test_provisioner_quota_adds_its_flavor_and_queues_and_changes_only_the_controller():
    base = {
        **enabled(),
        "tpuSlices": [{"name": "train", "accelerator": "v5p-32"}],
        "teams": [{"name": "research"}],
    }
    before = build_graph(with_config(**base))
    after = build_graph(
        with_config(
            **enabled(quota={"v5p-32": 2}),
            **{k: v for k, v in base.items() if k not in ("cluster", "tpuProvisioner")},
        )
    )
    old = {r.urn: r for r in before}
    new = {r.urn: r for r in after}
    assert set(old) <= set(new)
    assert {new[u].name for u in set(new) - set(old)} == {
        "queues-flavor-v5p-32-provisioned",
        "team-research-provisioned-cluster-queue",
        "team-research-provisioned-local-queue",
    }
    changed = {new[u].name for u in old if old[u].inputs != new[u].inputs}
    # The new setting reaches the controller: the pod template's digest of its config moves.
    # The team's shared queue keeps its fixed v5p-32 slice.
    assert changed == {"tpu-provisioner-config", "tpu-provisioner-deployment"}
    data = after.named("tpu-provisioner-config").inputs["data"]
    assert data["GCP_NODE_DISK_TYPE"] == "pd-balanced"
    template = after.named("tpu-provisioner-deployment").inputs["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "ai-infra/manager-config-sha256": hashlib.sha256(
            json.dumps(data, sort_keys=True).encode()
        ).hexdigest()
    }
    old_spec = before.named("tpu-provisioner-deployment").inputs["spec"]
    assert {**old_spec, "template": None} == {
        **after.named("tpu-provisioner-deployment").inputs["spec"],
        "template": None,
    }
    queues = objects_of(after, "ClusterQueue")
    assert nominal(queues["research"])["v5p-32"][TPU_RESOURCE] == 16
    assert nominal(queues["research-provisioned"])["v5p-32-provisioned"][TPU_RESOURCE] == 2 * 16


# Bad input the controller or GKE would trip on, refused before anything registers.


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("nodeMinLifespan", "", "not a duration"),
        ("nodePoolDeletionDelay", "", "not a duration"),
        ("nodeMinLifespan", "99999999999999999999h", "longer than Go's longest duration"),
        ("nodePoolDeletionDelay", "2562048h", "longer than Go's longest duration"),
        ("nodePoolDeletionDelay", "2562047h60m", "longer than Go's longest duration"),
        ("secondaryBootDisk", "projects/p-1234/global/images/family/jax", "not a disk image"),
        ("secondaryBootDisk", "jax-preload", "not a disk image"),
        ("bootDiskKmsKey", "projects/kms-project/keyRings/r/cryptoKeys/k", "not a Cloud KMS key"),
        ("additionalNodeNetworks", [{"network": "Bad_Net", "subnetwork": "s"}], "Compute Engine"),
        ("additionalNodeNetworks", [{"network": "n:x", "subnetwork": "s"}], "Compute Engine"),
        ("additionalNodeNetworks", [{"network": "n"}], "required"),
    ],
)
def test_new_field_shapes_are_checked_at_their_path(field, value, message):
    found = problems(**enabled(**{field: value}))
    paths = [p for p in found if p.startswith(f"ai-infra:tpuProvisioner.{field}")]
    assert paths, found
    assert message in found[paths[0]], found[paths[0]]


def test_the_longest_go_duration_is_accepted():
    config = TpuProvisionerConfig.model_validate({"nodePoolDeletionDelay": "2562047h"})
    assert config.node_pool_deletion_delay == "2562047h"


def test_more_additional_networks_than_a_vm_has_interfaces_are_refused():
    networks = [{"network": f"n{i}", "subnetwork": f"s{i}"} for i in range(8)]
    found = problems(**enabled(additionalNodeNetworks=networks))
    assert "holds 8 entries; at most 7" in found["ai-infra:tpuProvisioner.additionalNodeNetworks"]


def test_each_additional_network_is_a_vpc_of_its_own_and_not_the_clusters():
    found = problems(
        **enabled(
            additionalNodeNetworks=[
                {"network": "dcn", "subnetwork": "a"},
                {"network": "dcn", "subnetwork": "b"},
                {"network": "ai-test-vpc", "subnetwork": "c"},
            ]
        )
    )
    assert (
        "a VM has one interface per VPC"
        in found["ai-infra:tpuProvisioner.additionalNodeNetworks[1].network"]
    )
    assert (
        "the cluster's own VPC"
        in found["ai-infra:tpuProvisioner.additionalNodeNetworks[2].network"]
    )
    assert not [p for p in found if "[0]" in p]


@pytest.mark.parametrize("accelerator", ["v5litepod-8", "v6e-8"])
def test_shapes_the_provisioner_would_bill_double_are_refused(accelerator):
    # 2x4 topology: ceil(8 / 4) = 2 nodes of the 8-chip machine type the pod requests.
    found = problems(**enabled(quota={accelerator: 1}))
    message = found[f"ai-infra:tpuProvisioner.quota.{accelerator}"]
    assert "= 2 nodes of the requested machine type" in message
    assert "would bill 16 chips" in message


@pytest.mark.parametrize(
    ("accelerator", "zone"),
    [
        ("v6e-1", "us-east5-a"),
        ("v6e-4", "us-east5-a"),
        ("v6e-16", "us-east5-a"),
        ("v5p-8", "us-east5-a"),
        ("v5p-32", "us-east5-a"),
    ],
)
def test_shapes_the_provisioner_sizes_right_are_accepted(accelerator, zone):
    config = parse(with_config(**enabled(quota={accelerator: 1}, zone=zone)), "test")
    (shape,) = config.tpu_provisioner.shapes().values()
    assert -(-shape.chips // 4) * shape.chips_per_host == shape.chips


def test_confidential_storage_needs_a_key_and_hyperdisk_shapes():
    found = problems(**enabled(confidentialStorage=True, quota={"v6e-16": 1}))
    assert "need bootDiskKmsKey" in found["ai-infra:tpuProvisioner.confidentialStorage"]
    found = problems(
        **enabled(confidentialStorage=True, bootDiskKmsKey=KMS_KEY, quota={"v5p-32": 1})
    )
    assert "v5p-32 boot from pd-balanced" in found["ai-infra:tpuProvisioner.confidentialStorage"]
    config = parse(
        with_config(
            **enabled(confidentialStorage=True, bootDiskKmsKey=KMS_KEY, quota={"v6e-16": 1})
        ),
        "test",
    )
    assert config.tpu_provisioner.confidential_storage


@pytest.mark.parametrize(
    ("account", "owner"),
    [
        ("ai-test-tpu-prov@test-project.iam.gserviceaccount.com", "the provisioner's own account"),
        ("ai-test-research@test-project.iam.gserviceaccount.com", "the account of teams[0]"),
        (
            "ai-test-jobs@test-project.iam.gserviceaccount.com",
            "the account of workloadIdentities[0]",
        ),
        ("ai-test-vm@test-project.iam.gserviceaccount.com", "the account of tpuVms[0]"),
    ],
)
def test_nodes_must_not_run_as_another_systems_account(account, owner):
    found = problems(
        **enabled(nodeServiceAccount=account),
        teams=[{"name": "research"}],
        workloadIdentities=[{"name": "jobs", "namespace": "jobs", "serviceAccount": "runner"}],
        tpuVms=[{"name": "vm", "accelerator": "v5p-8", "zone": "us-east5-a"}],
    )
    message = found["ai-infra:tpuProvisioner.nodeServiceAccount"]
    assert message.startswith(f"'{account}' is {owner}; nodes must not run as it")


def test_the_clusters_node_account_named_explicitly_is_fine():
    config = parse(with_config(**enabled(nodeServiceAccount=NODES)), "test")
    assert config.gke.provisioner_node_service_account == NODES


def test_workload_policies_can_be_left_to_another_stack(build):
    graph = build(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-c"},
        **enabled(quota={"tpu7x-128": 1}, createWorkloadPolicies=False),
    )
    assert not graph.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    data = graph.named("tpu-provisioner-config").inputs["data"]
    assert data["GCP_ZONE"] == "us-central1-c"


def test_a_slice_policy_named_like_the_provisioners_is_refused():
    found = problems(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-c", "ai-infra:prefix": "tpu"},
        **enabled(quota={"tpu7x-128": 1}),
        tpuSlices=[{"name": "provisioner-4x4x4", "accelerator": "tpu7x-128"}],
    )
    assert "also tpuSlices[0]'s own policy name" in found["ai-infra:tpuProvisioner.quota.tpu7x-128"]


def test_the_plan_says_what_the_provisioner_may_create_and_whose_policies_it_uses():
    config = parse(
        with_config(
            **{"gcp:region": "us-central1", "gcp:zone": "us-central1-c"},
            **enabled(quota={"tpu7x-128": 2}, createWorkloadPolicies=False),
            teams=[{"name": "a"}],
        ),
        "test",
    )
    sections = dict(gke.describe(config.gke))
    assert sections["TPU provisioner"] == [
        "  IAM: custom role ai_test_tpu_provisioner on cluster ai-test-gke in us-central1 only "
        "(an IAM condition on the resource name in each form GKE may give it, which this plan "
        "cannot test)",
        f"  zone us-central1-c, nodes run as {NODES}, 15 pods per node, forceOnDemand true",
        "  up to 2 x tpu7x-128 (16 x tpu7x-standard-4t, 64 chips) = 128 chips",
        "  billing bound: 2 x tpu7x-128 running (the teams' provisioner queues, which never "
        "borrow, lend or preempt), plus one idle slice per JobSet that Kueue evicted for pods "
        "not ready in 45 minutes and has not yet readmitted, and per JobSet deactivated or "
        "suspended by hand, until it is deleted (the controller keeps a pool until its JobSet "
        "is gone, completed or failed)",
        "  workload policies tpu-provisioner-<topology>: another stack's in this project and "
        "region (createWorkloadPolicies: false)",
    ]
    assert "TPU provisioner" not in dict(gke.describe(parse(with_config(), "test").gke))


def test_additional_node_networks_need_dataplane_v2():
    overrides = enabled(additionalNodeNetworks=[{"network": "dcn", "subnetwork": "dcn-sub"}])
    overrides["cluster"]["dataplaneV2"] = False
    found = problems(**overrides)
    assert "needs Dataplane V2" in found["ai-infra:tpuProvisioner.additionalNodeNetworks"]
    # Said once, at the key that asks for the networks.
    assert "ai-infra:cluster.dataplaneV2" not in found


def test_provisioner_pools_attach_to_the_stacks_node_networks_unless_it_names_its_own(build):
    network = {"additionalNodeNetworks": [{"name": "dcn-1", "subnetCidr": "10.200.0.0/24"}]}
    provisioner = {
        "enabled": True,
        "image": "us-docker.pkg.dev/p/i/tpu-provisioner@sha256:" + "a" * 64,
        "zone": "us-east5-b",
        "quota": {"v6e-16": 1},
    }
    cluster = {"releaseChannel": "NONE"}
    graph = build(network=network, cluster=cluster, tpuProvisioner=provisioner)
    (config_map,) = graph.of_type("kubernetes:core/v1:ConfigMap")
    assert config_map.inputs["data"]["GCP_NODE_ADDITIONAL_NETWORKS"] == (
        "ai-test-dcn-1-vpc:ai-test-dcn-1-subnet"
    ), config_map.urn
    deployment = graph.named("tpu-provisioner-deployment")
    # The controller starts once the subnet its pools attach to exists.
    assert graph.named("network-dcn-1-subnet").urn in deployment.dependencies, deployment.urn
    own = {"additionalNodeNetworks": [{"network": "other-vpc", "subnetwork": "other-subnet"}]}
    graph = build(network=network, cluster=cluster, tpuProvisioner={**provisioner, **own})
    (config_map,) = graph.of_type("kubernetes:core/v1:ConfigMap")
    assert config_map.inputs["data"]["GCP_NODE_ADDITIONAL_NETWORKS"] == "other-vpc:other-subnet"
