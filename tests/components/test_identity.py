"""One builder of service accounts and one naming scheme of IAM grants (components/identity.py),
held by every system: accounts are `<owner>-sa`, grants `<owner>[-<scope>]-<role key>`."""

from __future__ import annotations

import pytest

from components.identity import grant_name, role_key
from graph.engine import Graph
from tests.conftest import build_graph
from tests.slurm.test_config import stack

GRANTS = (
    "gcp:projects/iAMMember:IAMMember",
    "gcp:serviceaccount/iAMMember:IAMMember",
    "gcp:storage/bucketIAMMember:BucketIAMMember",
)


def test_grant_names_are_owner_scope_and_role_key():
    assert grant_name("wi-a", "roles/storage.objectUser") == "wi-a-storage.objectUser"
    assert grant_name("wi-a", "roles/storage.objectUser", "bucket-data") == (
        "wi-a-bucket-data-storage.objectUser"
    )
    # A custom role carries a path, which is slugged; a predefined one keeps IAM's case.
    assert role_key("projects/my-project/roles/Train.Job") == "projects-my-project-roles-train.job"
    assert role_key("roles/compute.instanceAdmin.v1") == "compute.instanceAdmin.v1"


@pytest.fixture(scope="module")
def every_system() -> Graph:
    """A stack with every system that makes accounts or grants."""
    config = stack(loginGroups=[{"name": "login", "count": 1}])
    config |= {
        "ai-infra:cluster": {"releaseChannel": "NONE"},
        "ai-infra:buckets": [
            {
                "name": "data",
                "members": [
                    {"member": "group:readers@example.com", "role": "roles/storage.objectViewer"}
                ],
            }
        ],
        "ai-infra:tpuProvisioner": {
            "enabled": True,
            "image": "us-docker.pkg.dev/p/images/tpu-provisioner:v1",
        },
        "ai-infra:teams": [
            {"name": "vision", "buckets": {"data": "read"}, "groups": ["ml@example.com"]}
        ],
        "ai-infra:workloadIdentities": [
            {
                "name": "trainer",
                "namespace": "jobs",
                "serviceAccount": "runner",
                "roles": ["roles/tpu.viewer"],
                "buckets": {"data": "write"},
            }
        ],
        "ai-infra:tpuVms": [{"name": "exp", "accelerator": "v4-8", "buckets": {"data": "read"}}],
        "ai-infra:gpuClusters": [
            {"name": "demo", "gcsMounts": [{"bucket": "data", "mountPath": "/gcs/data"}]}
        ],
    }
    config["ai-infra:cluster"]["rbacSecurityGroup"] = "gke-security-groups@example.com"
    return build_graph(config)


def test_every_account_is_its_owner_and_sa(every_system: Graph):
    accounts = every_system.of_type("gcp:serviceaccount/account:Account")
    assert {a.name for a in accounts} == {
        "gke-nodes-sa",
        "tpu-provisioner-identity-sa",
        "team-vision-identity-sa",
        "wi-trainer-sa",
        "tpuvm-exp-sa",
        "gpucluster-demo-sa",
        "slurm-ctl-sa",
        "slurm-tpu-sa",
        "slurm-lgn-sa",
    }


def test_every_grant_ends_in_the_key_of_the_role_it_grants(every_system: Graph):
    grants = [r for r in every_system if r.type in GRANTS]
    assert {r.type for r in grants} == set(GRANTS)
    for grant in grants:
        assert grant.name.endswith(f"-{role_key(grant.inputs['role'])}"), grant.urn
