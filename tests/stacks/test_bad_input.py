"""Bad input, as a careless or hostile editor writes it: every case is refused at its config
path with a word of the fix, and nothing is registered."""

from __future__ import annotations

from typing import Any

import pytest

from graph.engine import record_program
from stacks.messages import ConfigError
from tests.conftest import with_config

TEAM = {"name": "vision"}
TPU_VM = {"name": "exp", "accelerator": "v4-8"}
OPENING = {"name": "ray", "to": "tpuVms", "sources": ["pods"], "ports": ["tcp:8265"]}
SLICE = {"name": "s", "accelerator": "v5p-16"}
RBAC = {"rbacSecurityGroup": "gke-security-groups@example.com"}
FULLWIDTH_2026 = "\uff12\uff10\uff12\uff16"
"""2026 in fullwidth digits, which str.isdigit and datetime.fromisoformat both accept."""


def identity(**fields: Any) -> dict[str, Any]:
    return {"name": "wi", "namespace": "jobs", "serviceAccount": "runner", **fields}


def exclusion(name: str, start: str, end: str | None = None, **more: Any) -> dict[str, Any]:
    found = {"name": name, "start": start, **more}
    return found | ({"end": end} if end else {})


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # Security bypasses.
    (
        "basic role in another case",
        {"workloadIdentities": [identity(roles=["roles/Owner"])]},
        "ai-infra:workloadIdentities[0].roles[0]",
        "basic role",
    ),
    (
        "basic role with a trailing newline",
        {"workloadIdentities": [identity(roles=["roles/owner\n"])]},
        "ai-infra:workloadIdentities[0].roles[0]",
        "basic role",
    ),
    (
        "basic role with leading space",
        {"teams": [{"name": "a", "roles": [" roles/editor"]}]},
        "ai-infra:teams[0].roles[0]",
        "basic role",
    ),
    (
        "a team account that can set the project's IAM policy",
        {"teams": [{"name": "a", "roles": ["roles/resourcemanager.projectIamAdmin"]}]},
        "ai-infra:teams[0].roles[0]",
        "narrow roles",
    ),
    (
        "a workload identity that mints tokens for every account",
        {"workloadIdentities": [identity(roles=["roles/iam.serviceAccountTokenCreator"])]},
        "ai-infra:workloadIdentities[0].roles[0]",
        "narrow roles",
    ),
    (
        "a TPU VM account that acts as every account of the project",
        {"tpuVms": [{**TPU_VM, "roles": ["roles/iam.serviceAccountUser"]}]},
        "ai-infra:tpuVms[0].roles[0]",
        "narrow roles",
    ),
    (
        "a service agent's role on a team account",
        {"teams": [{"name": "a", "roles": ["roles/container.serviceAgent"]}]},
        "ai-infra:teams[0].roles[0]",
        "service agent role",
    ),
    ("name with a newline", {"teams": [{"name": "vision\n"}]}, "ai-infra:teams[0].name", "letters"),
    (
        "identity claims a team's Kubernetes service account",
        {
            "teams": [TEAM],
            "workloadIdentities": [
                identity(namespace="vision", serviceAccount="training", createNamespace=False)
            ],
        },
        "ai-infra:workloadIdentities[0].serviceAccount",
        "already belongs to teams[0]",
    ),
    (
        "two identities claim one Kubernetes service account",
        {
            "workloadIdentities": [
                identity(),
                identity(name="wi2", createNamespace=False),
            ]
        },
        "ai-infra:workloadIdentities[1].serviceAccount",
        "exactly one owner",
    ),
    # Derived names that collide.
    (
        "team takes the node account's id",
        {"teams": [{"name": "nodes"}]},
        "ai-infra:teams[0].name",
        "already belongs to cluster",
    ),
    (
        "identity takes the provisioner's id",
        {"workloadIdentities": [identity(name="tpu-prov")]},
        "ai-infra:workloadIdentities[0].name",
        "already belongs to tpuProvisioner",
    ),
    (
        "identity named like a team",
        {"teams": [TEAM], "workloadIdentities": [identity(name="vision")]},
        "ai-infra:workloadIdentities[0].name",
        "already belongs to teams[0]",
    ),
    (
        "groups differing only in case",
        {
            "cluster": RBAC,
            "teams": [
                {"name": "a", "groups": ["ML@example.com"]},
                {"name": "b", "groups": ["ml@example.com"]},
            ],
        },
        "ai-infra:teams[1].groups[0]",
        "list each group once",
    ),
    (
        "groups differing only in _ and -",
        {
            "cluster": RBAC,
            "teams": [{"name": "a", "groups": ["ml_team@example.com", "ml-team@example.com"]}],
        },
        "ai-infra:teams[0].groups[1]",
        "list each group once",
    ),
    (
        "a group listed twice",
        {"cluster": RBAC, "teams": [{"name": "a", "groups": ["x@example.com"] * 2}]},
        "ai-infra:teams[0].groups[1]",
        "list each group once",
    ),
    (
        "a role listed twice",
        {"teams": [{"name": "a", "roles": ["roles/tpu.viewer", "roles/tpu.viewer"]}]},
        "ai-infra:teams[0].roles[1]",
        "list each role once",
    ),
    (
        "a bucket member listed twice up to case",
        {
            "buckets": [
                {
                    "name": "b",
                    "members": [
                        {"member": "user:Al@example.com", "role": "roles/storage.objectViewer"},
                        {"member": "user:al@example.com", "role": "roles/storage.objectViewer"},
                    ],
                }
            ]
        },
        "ai-infra:buckets[0].members[1]",
        "list it once",
    ),
    (
        "custom roles differing only in case",
        {
            "workloadIdentities": [
                identity(
                    roles=["projects/test-project/roles/Train", "projects/test-project/roles/train"]
                )
            ]
        },
        "ai-infra:workloadIdentities[0].roles[1]",
        "list each role once",
    ),
    (
        "bucket roles differing only in case",
        {
            "buckets": [
                {
                    "name": "b",
                    "members": [
                        {
                            "member": "user:al@example.com",
                            "role": "projects/test-project/roles/Reader",
                        },
                        {
                            "member": "user:al@example.com",
                            "role": "projects/test-project/roles/reader",
                        },
                    ],
                }
            ]
        },
        "ai-infra:buckets[0].members[1]",
        "list it once",
    ),
    (
        "identity taking a GPU cluster's VM account",
        {"gpuClusters": [{"name": "demo"}], "workloadIdentities": [identity(name="demo-vm")]},
        "ai-infra:gpuClusters[0].name",
        "already belongs to workloadIdentities[0]",
    ),
    (
        "TPU VM entry named like a team",
        {
            "gcp:region": "us-central2",
            "gcp:zone": "us-central2-b",
            "teams": [TEAM],
            "tpuVms": [{"name": "vision", "accelerator": "v4-8"}],
        },
        "ai-infra:tpuVms[0].name",
        "already belongs to teams[0]",
    ),
    (
        "a predefined role in the wrong case",
        {"teams": [{"name": "a", "roles": ["roles/logging.logWriter", "roles/Logging.LogWriter"]}]},
        "ai-infra:teams[0].roles[1]",
        "written as IAM writes it",
    ),
    (
        "an identity binding a KSA in kube-system",
        {"workloadIdentities": [identity(namespace="kube-system", createNamespace=False)]},
        "ai-infra:workloadIdentities[0].namespace",
        "a namespace of your own",
    ),
    (
        "control plane open to the internet",
        {"network": {"authorizedNetworks": [{"cidr": "0.0.0.0/0", "name": "all"}]}},
        "ai-infra:network.authorizedNetworks[0].cidr",
        "whole internet",
    ),
    (
        "a GPU boot disk larger than Compute Engine makes",
        {
            "gpuPools": [
                {
                    "name": "g",
                    "machineType": "g2-standard-8",
                    "acceleratorType": "nvidia-l4",
                    "diskSizeGb": 10**12,
                }
            ]
        },
        "ai-infra:gpuPools[0].diskSizeGb",
        "at most 65536",
    ),
    (
        "a value with a newline cannot split the error line",
        {"tpuSlices": [{**SLICE, "zone": "us-east5-a\n"}]},
        "ai-infra:tpuSlices[0].zone",
        "'us-east5-a\\n' is not a GCP zone",
    ),
    (
        "provisioner quota for a family its zone does not offer",
        {
            "cluster": {"releaseChannel": "NONE"},
            "tpuProvisioner": {
                "enabled": True,
                "image": "us-docker.pkg.dev/p/r/tpu-provisioner@sha256:" + "a" * 64,
                "quota": {"tpu7x-8": 1},
            },
        },
        "ai-infra:tpuProvisioner.quota.tpu7x-8",
        "us-central1-c",
    ),
    (
        "a TPU VM role the program already grants",
        {
            "gcp:region": "us-central2",
            "gcp:zone": "us-central2-b",
            "tpuVms": [{"name": "q", "accelerator": "v4-8", "roles": ["roles/logging.logWriter"]}],
        },
        "ai-infra:tpuVms[0].roles[0]",
        "list each role once",
    ),
    (
        "TPU VM custom roles sharing a grant name",
        {
            "gcp:region": "us-central2",
            "gcp:zone": "us-central2-b",
            "tpuVms": [
                {
                    "name": "q",
                    "accelerator": "v4-8",
                    "roles": ["projects/test-project/roles/Foo", "projects/test-project/roles/foo"],
                }
            ],
        },
        "ai-infra:tpuVms[0].roles[1]",
        "list each role once",
    ),
    # Free strings GCP, GKE and Kubernetes constrain.
    ("cluster name in capitals", {"cluster": {"name": "Train"}}, "ai-infra:cluster.name", "40"),
    ("cluster name too long", {"cluster": {"name": "a" * 41}}, "ai-infra:cluster.name", "40"),
    ("garbled version", {"cluster": {"version": "1.33.x"}}, "ai-infra:cluster.version", "1.X"),
    (
        "version written as a YAML number",
        {"cluster": {"version": 1.33}},
        "ai-infra:cluster.version",
        "quote",
    ),
    (
        "empty machine type",
        {"cluster": {"cpuPool": {"machineType": ""}}},
        "ai-infra:cluster.cpuPool.machineType",
        "e2-standard-8",
    ),
    (
        "machine type with a space",
        {"cluster": {"cpuPool": {"machineType": "e2 standard"}}},
        "ai-infra:cluster.cpuPool.machineType",
        "e2-standard-8",
    ),
    (
        "existing VPC with spaces",
        {"network": {"existingVpc": "My VPC"}},
        "ai-infra:network.existingVpc",
        "lowercase",
    ),
    (
        "member with no address",
        {"buckets": [{"name": "b", "members": [{"member": "user:", "role": "roles/x.y"}]}]},
        "ai-infra:buckets[0].members[0].member",
        "user:alice@example.com",
    ),
    (
        "member with a space",
        {
            "buckets": [
                {"name": "b", "members": [{"member": "user:al @example.com", "role": "roles/x.y"}]}
            ]
        },
        "ai-infra:buckets[0].members[0].member",
        "group:ml-team@example.com",
    ),
    ("project id with google", {"gcp:project": "my-google-ml"}, "gcp:project", "google"),
    (
        "bucket name with google",
        {"buckets": [{"name": "google-data"}]},
        "ai-infra:buckets[0].name",
        "rename",
    ),
    (
        "RBAC group with another name",
        {"cluster": {"rbacSecurityGroup": "admins@example.com"}},
        "ai-infra:cluster.rbacSecurityGroup",
        "gke-security-groups@",
    ),
    (
        "non-ASCII digits in a time of day",
        {"cluster": {"maintenanceStartTime": "\uff10\uff13:\uff10\uff10"}},
        "ai-infra:cluster.maintenanceStartTime",
        "HH:MM",
    ),
    (
        "non-ASCII digits in an exclusion",
        {
            "cluster": {
                "maintenanceExclusions": [exclusion("a", FULLWIDTH_2026 + "-12-01T00:00:00Z")]
            }
        },
        "ai-infra:cluster.maintenanceExclusions[0].start",
        "RFC 3339",
    ),
    (
        "count: yes",
        {"tpuSlices": [{**SLICE, "count": True}]},
        "ai-infra:tpuSlices[0].count",
        "whole number",
    ),
    (
        "count as text",
        {"tpuSlices": [{**SLICE, "count": "3"}]},
        "ai-infra:tpuSlices[0].count",
        "whole number",
    ),
    ("protect: yes", {"protect": "yes"}, "ai-infra:protect", "true or false"),
    (
        "team named for GKE's Prometheus",
        {"teams": [{"name": "gmp-system"}]},
        "ai-infra:teams[0].name",
        "GKE",
    ),
    ("team named gke-*", {"teams": [{"name": "gke-gmp-system"}]}, "ai-infra:teams[0].name", "GKE"),
    ("team named kube-*", {"teams": [{"name": "kube-x"}]}, "ai-infra:teams[0].name", "Kubernetes"),
    (
        "identity creating a GKE namespace",
        {"workloadIdentities": [identity(namespace="gmp-public")]},
        "ai-infra:workloadIdentities[0].createNamespace",
        "GKE",
    ),
    # Documented GCP limits.
    (
        "subnet GKE cannot use",
        {"network": {"subnetCidr": "10.129.0.0/30"}},
        "ai-infra:network.subnetCidr",
        "/29",
    ),
    (
        "pods range too small",
        {"network": {"podsCidr": "192.168.64.0/25"}},
        "ai-infra:network.podsCidr",
        "/24",
    ),
    (
        "services range too large",
        {"network": {"servicesCidr": "10.0.0.0/15"}},
        "ai-infra:network.servicesCidr",
        "/16",
    ),
    ("zone that does not exist", {"gcp:zone": "us-east5-d"}, "gcp:zone", "us-east5-a"),
    (
        "slice in a zone that does not exist",
        {"tpuSlices": [{**SLICE, "zone": "us-east5-d"}]},
        "ai-infra:tpuSlices[0].zone",
        "us-east5-a",
    ),
    (
        "exclusion ending before it starts",
        {
            "cluster": {
                "maintenanceExclusions": [
                    exclusion("a", "2026-12-10T00:00:00Z", "2026-12-01T00:00:00Z")
                ]
            }
        },
        "ai-infra:cluster.maintenanceExclusions[0].end",
        "after the start",
    ),
    (
        "overlapping exclusions",
        {
            "cluster": {
                "maintenanceExclusions": [
                    exclusion("a", "2026-12-01T00:00:00Z", "2026-12-10T00:00:00Z"),
                    exclusion("b", "2026-12-05T00:00:00Z", "2026-12-20T00:00:00Z"),
                ]
            }
        },
        "ai-infra:cluster.maintenanceExclusions[1].start",
        "merge",
    ),
    (
        "exclusions sharing a name",
        {
            "cluster": {
                "maintenanceExclusions": [
                    exclusion("a", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"),
                    exclusion("a", "2026-12-05T00:00:00Z", "2026-12-06T00:00:00Z"),
                ]
            }
        },
        "ai-infra:cluster.maintenanceExclusions[1].name",
        "by name",
    ),
    (
        "NO_UPGRADES longer than GKE allows",
        {
            "cluster": {
                "maintenanceExclusions": [
                    exclusion(
                        "a", "2026-12-01T00:00:00Z", "2027-01-10T00:00:00Z", scope="NO_UPGRADES"
                    )
                ]
            }
        },
        "ai-infra:cluster.maintenanceExclusions[0].end",
        "NO_MINOR_OR_NODE_UPGRADES",
    ),
    (
        "more labels than GCP allows with the program's own",
        {"labels": {f"l{i}": "x" for i in range(62)}},
        "ai-infra:labels",
        "at most 61",
    ),
    (
        "a label the program sets",
        {"labels": {"managed-by": "me"}},
        "ai-infra:labels.managed-by",
        "choose another label key",
    ),
    (
        "priority outside int32",
        {"kueue": {"priorityClasses": {"urgent": 2**31}}},
        "ai-infra:kueue.priorityClasses.urgent",
        "at most 2147483647",
    ),
    (
        "percentages over 100%",
        {
            "tpuSlices": [SLICE],
            "teams": [{"name": "a", "quota": {"s": "60%"}}, {"name": "b", "quota": {"s": "50%"}}],
        },
        "ai-infra:teams[1].quota.s",
        "110%",
    ),
    (
        "hierarchical namespace with versioning",
        {"buckets": [{"name": "b", "hierarchicalNamespace": True, "versioning": True}]},
        "ai-infra:buckets[0].versioning",
        "turn one off",
    ),
    # Resource exhaustion.
    (
        "a billion slices",
        {"tpuSlices": [{**SLICE, "count": 10**9}]},
        "ai-infra:tpuSlices[0].count",
        "at most 256",
    ),
    (
        "a billion GPU nodes",
        {
            "gpuPools": [
                {
                    "name": "g",
                    "machineType": "g2-standard-8",
                    "acceleratorType": "nvidia-l4",
                    "maxNodes": 10**9,
                }
            ]
        },
        "ai-infra:gpuPools[0].maxNodes",
        "at most 1000",
    ),
    # Misleading messages.
    (
        "CIDR without a prefix length",
        {"network": {"podsCidr": "10.8.0.0"}},
        "ai-infra:network.podsCidr",
        "10.8.0.0/20",
    ),
    (
        "garbled time",
        {"cluster": {"maintenanceStartTime": "25:00"}},
        "ai-infra:cluster.maintenanceStartTime",
        "HH:MM",
    ),
    ("misspelt namespace", {"ai-infr:tpuSlices": [SLICE]}, "ai-infr:tpuSlices", "ai-infra:<key>"),
    ("snake_case key", {"tpu_slices": [SLICE]}, "ai-infra:tpu_slices", "ai-infra:tpuSlices"),
    (
        "snake_case field",
        {"buckets": [{"name": "b", "force_destroy": True}]},
        "ai-infra:buckets[0].force_destroy",
        "forceDestroy",
    ),
    (
        "a mapping where a list belongs",
        {"tpuSlices": SLICE},
        "ai-infra:tpuSlices",
        "expected a list",
    ),
    (
        "text where a slice belongs",
        {"tpuSlices": ["v5p-16"]},
        "ai-infra:tpuSlices[0]",
        "mapping of fields",
    ),
    # What GKE would reject.
    (
        "v5e where Cloud TPU has none",
        {"tpuSlices": [{"name": "s", "accelerator": "v5litepod-4", "zone": "us-east5-b"}]},
        "ai-infra:tpuSlices[0].zone",
        "us-west4-a",
    ),
    (
        "tpu7x in the stack's zone, which has none",
        {"tpuSlices": [{"name": "s", "accelerator": "tpu7x-8"}]},
        "ai-infra:tpuSlices[0].zone",
        "inherits gcp:zone",
    ),
    (
        "flex-start on v4",
        {
            "gcp:region": "us-central2",
            "gcp:zone": "us-central2-b",
            "tpuSlices": [{"name": "s", "accelerator": "v4-8", "provisioning": "flex-start"}],
        },
        "ai-infra:tpuSlices[0].provisioning",
        "no flex-start",
    ),
    (
        "tpu7x on a GKE version without it",
        {
            "gcp:region": "us-central1",
            "gcp:zone": "us-central1-c",
            "cluster": {"version": "1.33"},
            "tpuSlices": [{"name": "s", "accelerator": "tpu7x-8"}],
        },
        "ai-infra:tpuSlices[0].accelerator",
        "1.34.0-gke.2201000",
    ),
    (
        "GPUs a machine type does not carry",
        {
            "gpuPools": [
                {
                    "name": "g",
                    "machineType": "g2-standard-24",
                    "acceleratorType": "nvidia-l4",
                    "acceleratorCount": 4,
                }
            ]
        },
        "ai-infra:gpuPools[0].acceleratorType",
        "comes with 2 x nvidia-l4",
    ),
    (
        "Hyperdisk-only machine on pd-balanced",
        {
            "gpuPools": [
                {
                    "name": "g",
                    "machineType": "a3-ultragpu-8g",
                    "acceleratorType": "nvidia-h200-141gb",
                    "acceleratorCount": 8,
                }
            ]
        },
        "ai-infra:gpuPools[0].diskType",
        "hyperdisk-balanced",
    ),
    (
        "a GPU N1 cannot attach",
        {
            "gpuPools": [
                {"name": "g", "machineType": "n1-standard-8", "acceleratorType": "nvidia-l4"}
            ]
        },
        "ai-infra:gpuPools[0].acceleratorType",
        "attach only",
    ),
    (
        "a reservation name with a slash",
        {"tpuSlices": [{**SLICE, "provisioning": "reservation", "reservation": "my/reservation"}]},
        "ai-infra:tpuSlices[0].reservation",
        "projects/PROJECT/reservations/NAME",
    ),
    # Openings of other systems' ports (issue 25).
    (
        "an opening to the whole internet",
        {"network": {"allow": [OPENING | {"sources": ["0.0.0.0/0"]}]}, "tpuVms": [TPU_VM]},
        "ai-infra:network.allow[0].sources[0]",
        "whole internet",
    ),
    (
        "an opening of every port to all pods",
        {"network": {"allow": [OPENING | {"ports": []}]}, "tpuVms": [TPU_VM]},
        "ai-infra:network.allow[0].ports",
        "at least 1",
    ),
    (
        "an opening without ports",
        {"network": {"allow": [{k: v for k, v in OPENING.items() if k != "ports"}]}},
        "ai-infra:network.allow[0].ports",
        "required",
    ),
    (
        "an opening of a port range written backwards",
        {"network": {"allow": [OPENING | {"ports": ["tcp:9000-8000"]}]}, "tpuVms": [TPU_VM]},
        "ai-infra:network.allow[0].ports[0]",
        "tcp:6820",
    ),
    (
        "an opening of a system the stack does not have",
        {"network": {"allow": [OPENING | {"to": "slurm"}]}, "tpuVms": [TPU_VM]},
        "ai-infra:network.allow[0].to",
        "no slurm VMs",
    ),
    (
        "an opening of a system nobody heard of",
        {"network": {"allow": [OPENING | {"to": "everything"}]}},
        "ai-infra:network.allow[0].to",
        "slurm",
    ),
    (
        "a TPU VM tagged as the GKE nodes",
        {"tpuVms": [TPU_VM | {"tags": ["ai-test-gke-node"]}]},
        "ai-infra:tpuVms[0].tags[0]",
        "network tag of GKE nodes",
    ),
]


@pytest.mark.parametrize(("case", "overrides", "path", "fix"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_at_its_path_before_anything_registers(case, overrides, path, fix):
    graph, error = record_program(with_config(**overrides))
    assert isinstance(error, ConfigError), f"{case}: accepted"
    found = dict(error.rendered)
    assert path in found, f"{case}: {found}"
    assert fix in found[path], f"{case}: {found[path]}"
    assert graph.resources == [], [r.urn for r in graph]


def test_an_invalid_prefix_from_the_stack_name_says_where_it_came_from():
    graph, error = record_program(with_config(), stack="My_Stack")
    assert isinstance(error, ConfigError)
    message = dict(error.rendered)["ai-infra:prefix"]
    assert "stack name 'My_Stack'" in message and "set ai-infra:prefix" in message
    assert graph.resources == []


def test_the_cases_cover_every_class_the_review_named():
    """Guards the table against shrinking: at least the classes of issue 6 stay covered."""
    assert len(CASES) >= 60
