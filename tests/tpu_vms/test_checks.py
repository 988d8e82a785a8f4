"""Hostile `ai-infra:tpuVms` input: each is refused at its config path with a word of the fix,
before anything is registered; near misses that are fine are accepted."""

from __future__ import annotations

from typing import Any

import pytest

from catalog import tpu as tpu_catalog
from tests.tpu_vms.test_vms import built, queued_resource, rejected, stack, vm

OTHER_PROJECT_SA = "trainer@other-proj.iam.gserviceaccount.com"
SLURM = {
    "clusterName": "tpu",
    "tpuNodesets": [{"name": "v4", "nodeType": "v4-8", "nodeCountDynamicMax": 2}],
    "partitions": [{"name": "tpu", "nodesets": ["v4"], "default": True}],
}
GPU_CLUSTER = {
    "name": "a3",
    "machineType": "a3-highgpu-8g",
    "zone": "us-central2-b",
}
EXTRA_NET = {
    "network": "projects/test-project/global/networks/dcn",
    "subnetwork": "projects/test-project/regions/us-central2/subnetworks/dcn",
}
KEY = "projects/test-project/locations/us-central2/keyRings/tpu/cryptoKeys/boot"


def own_account(account_id: str) -> str:
    return f"{account_id}@test-project.iam.gserviceaccount.com"


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # Accelerator names the API spells differently.
    ("leading zero", {"tpuVms": [vm(accelerator="v4-08")]}, "tpuVms[0].accelerator", "write v4-8"),
    (
        "leading zeros, v5e",
        {"tpuVms": [vm(accelerator="v5litepod-016", zone="us-central1-a")]},
        "tpuVms[0].accelerator",
        "v5litepod-16",
    ),
    ("upper case", {"tpuVms": [vm(accelerator="V4-8")]}, "tpuVms[0].accelerator", "v5p-32"),
    # Runtimes that do not exist for the family.
    (
        "no such TF",
        {"tpuVms": [vm(runtimeVersion="tpu-vm-tf-9.9.9")]},
        "tpuVms[0].runtimeVersion",
        "allowUnlistedRuntime",
    ),
    (
        "TF pjrt runtime with a suffix the catalog does not list",
        {"tpuVms": [vm(runtimeVersion="tpu-vm-tf-2.16.1-pjrt-v6e")]},
        "tpuVms[0].runtimeVersion",
        "allowUnlistedRuntime",
    ),
    (
        "another family's runtime, even when unlisted ones are allowed",
        {"tpuVms": [vm(runtimeVersion="v2-alpha-tpuv6e", allowUnlistedRuntime=True)]},
        "tpuVms[0].runtimeVersion",
        "is for v6e, not v4",
    ),
    (
        "v5e TF without pjrt",
        {
            "tpuVms": [
                vm(
                    accelerator="v5litepod-8",
                    zone="us-central1-a",
                    runtimeVersion="tpu-vm-tf-2.16.1",
                )
            ]
        },
        "tpuVms[0].runtimeVersion",
        "v2-alpha-tpuv5-lite",
    ),
    (
        "nothing to allow",
        {"tpuVms": [vm(allowUnlistedRuntime=True)]},
        "tpuVms[0].allowUnlistedRuntime",
        "set runtimeVersion",
    ),
    # Malformed accounts, default accounts and other systems' accounts.
    (
        "not an email",
        {"tpuVms": [vm(serviceAccount="trainer@other-proj")]},
        "tpuVms[0].serviceAccount",
        "NAME@PROJECT.iam.gserviceaccount.com",
    ),
    (
        "trailing newline",
        {"tpuVms": [vm(serviceAccount=OTHER_PROJECT_SA + "\n")]},
        "tpuVms[0].serviceAccount",
        "user-managed",
    ),
    (
        "App Engine default",
        {"tpuVms": [vm(serviceAccount="test-project@appspot.gserviceaccount.com")]},
        "tpuVms[0].serviceAccount",
        "is not a user-managed service account",
    ),
    (
        "a Google-managed service agent",
        {"tpuVms": [vm(serviceAccount="service-123@gcp-sa-tpu.iam.gserviceaccount.com")]},
        "tpuVms[0].serviceAccount",
        "service agent",
    ),
    (
        "the TPU provisioner's",
        {"tpuVms": [vm(serviceAccount=own_account("ai-test-tpu-prov"))]},
        "tpuVms[0].serviceAccount",
        "ai-infra:tpuProvisioner",
    ),
    (
        "the GKE nodes'",
        {"tpuVms": [vm(serviceAccount=own_account("ai-test-nodes"))]},
        "tpuVms[0].serviceAccount",
        "unset serviceAccount",
    ),
    (
        "Slurm's controller",
        {"slurm": SLURM, "tpuVms": [vm(serviceAccount=own_account("ai-test-slurm-ctl"))]},
        "tpuVms[0].serviceAccount",
        "ai-infra:slurm",
    ),
    (
        "a GPU cluster's",
        {
            "gpuClusters": [GPU_CLUSTER],
            "tpuVms": [vm(serviceAccount=own_account("ai-test-a3-vm"))],
        },
        "tpuVms[0].serviceAccount",
        "ai-infra:gpuClusters[0]",
    ),
    (
        "another TPU VM entry's",
        {"tpuVms": [vm(name="a"), vm(name="b", serviceAccount=own_account("ai-test-a"))]},
        "tpuVms[1].serviceAccount",
        "ai-infra:tpuVms[0]",
    ),
    # Zones that do not offer v2 or v3 of that size.
    (
        "v2-8 in us-central1-a",
        {
            "gcp:region": "us-central1",
            "gcp:zone": "us-central1-a",
            "tpuVms": [vm(accelerator="v2-8")],
        },
        "tpuVms[0].zone",
        "us-central1-b, us-central1-c",
    ),
    (
        "v2-32 in us-central1-b",
        {
            "gcp:region": "us-central1",
            "gcp:zone": "us-central1-b",
            "tpuVms": [vm(accelerator="v2-32")],
        },
        "tpuVms[0].zone",
        "v2-32 in us-central1-a, europe-west4-a",
    ),
    (
        "v3-32 in us-central1-a",
        {
            "gcp:region": "us-central1",
            "gcp:zone": "us-central1-a",
            "tpuVms": [vm(accelerator="v3-32")],
        },
        "tpuVms[0].zone",
        "europe-west4-a",
    ),
    # Labels that overwrite the program's own.
    (
        "managed-by",
        {"tpuVms": [vm(labels={"managed-by": "me"})]},
        "tpuVms[0].labels.managed-by",
        "program",
    ),
    (
        "stack label",
        {"tpuVms": [vm(labels={"ai-infra-stack": "other"})]},
        "tpuVms[0].labels.ai-infra-stack",
        "program",
    ),
    (
        "ai-infra:labels",
        {"labels": {"cost-center": "ml"}, "tpuVms": [vm(labels={"cost-center": "free"})]},
        "tpuVms[0].labels.cost-center",
        "ai-infra:labels",
    ),
    # Names inside a Slurm nodeset's, which its controller deletes when it suspends them.
    (
        "Slurm node name",
        {"slurm": SLURM, "tpuVms": [vm(name="tpu-v4-0")]},
        "tpuVms[0].name",
        "Slurm nodeset tpu-v4",
    ),
    (
        "Slurm node names by prefix",
        {"slurm": SLURM, "tpuVms": [vm(nodePrefix="tpu-v4", nodeCount=2)]},
        "tpuVms[0].nodePrefix",
        "tpu-v4-0",
    ),
    # Metadata that would bypass or turn off OS Login.
    (
        "OS Login off",
        {"tpuVms": [vm(metadata={"enable-oslogin": "FALSE"})]},
        "tpuVms[0].metadata.enable-oslogin",
        "OS Login",
    ),
    (
        "OS Login off, in capitals",
        {"tpuVms": [vm(metadata={"ENABLE-OSLOGIN": "FALSE"})]},
        "tpuVms[0].metadata.ENABLE-OSLOGIN",
        "OS Login",
    ),
    (
        "ssh keys",
        {"tpuVms": [vm(metadata={"ssh-keys": "me:ssh-ed25519 AAAA"})]},
        "tpuVms[0].metadata.ssh-keys",
        "remove",
    ),
    (
        "legacy sshKeys",
        {"tpuVms": [vm(metadata={"sshKeys": "me:ssh-rsa AAAA"})]},
        "tpuVms[0].metadata.sshKeys",
        "remove",
    ),
    (
        "project keys",
        {"tpuVms": [vm(metadata={"block-project-ssh-keys": "FALSE"})]},
        "tpuVms[0].metadata.block-project-ssh-keys",
        "project SSH keys",
    ),
    (
        "serial console",
        {"tpuVms": [vm(metadata={"serial-port-enable": "TRUE"})]},
        "tpuVms[0].metadata.serial-port-enable",
        "serial console",
    ),
    (
        "startup script as metadata",
        {"tpuVms": [vm(metadata={"startup-script": "echo"})]},
        "tpuVms[0].metadata.startup-script",
        "startupScript",
    ),
    # Queue controls.
    (
        "flex-start",
        {"tpuVms": [vm(provisioning="flex-start")]},
        "tpuVms[0].provisioning",
        "google-cloud-tpu 1.28.0",
    ),
    (
        "both kinds of latest start",
        {
            "tpuVms": [
                vm(queueing={"validUntilDuration": "1h", "validUntilTime": "2026-12-01T00:00:00Z"})
            ]
        },
        "tpuVms[0].queueing.validUntilTime",
        "not both",
    ),
    (
        "a start after pulumi stops waiting",
        {"tpuVms": [vm(timeoutMinutes=60, queueing={"validAfterDuration": "2h"})]},
        "tpuVms[0].queueing.validAfterDuration",
        "raise timeoutMinutes",
    ),
    (
        "a latest start after pulumi deletes the request",
        {"tpuVms": [vm(queueing={"validUntilDuration": "1d"})]},
        "tpuVms[0].queueing.validUntilDuration",
        "timeoutMinutes",
    ),
    (
        "an empty window",
        {
            "tpuVms": [
                vm(
                    queueing={
                        "validAfterTime": "2026-12-01T10:00:00Z",
                        "validUntilTime": "2026-12-01T09:00:00+00:00",
                    }
                )
            ]
        },
        "tpuVms[0].queueing.validUntilTime",
        "later than validAfterTime",
    ),
    (
        "a time without a zone",
        {"tpuVms": [vm(queueing={"validAfterTime": "2026-12-01T10:00:00"})]},
        "tpuVms[0].queueing.validAfterTime",
        "2026-12-01T02:00:00Z",
    ),
    (
        "a date that does not exist",
        {"tpuVms": [vm(queueing={"validAfterTime": "2026-02-30T10:00:00Z"})]},
        "tpuVms[0].queueing.validAfterTime",
        "RFC 3339",
    ),
    (
        "a duration gcloud does not write",
        {"tpuVms": [vm(queueing={"validUntilDuration": "1 hour"})]},
        "tpuVms[0].queueing.validUntilDuration",
        "90m",
    ),
    (
        "a zero duration",
        {"tpuVms": [vm(queueing={"validUntilDuration": "0h"})]},
        "tpuVms[0].queueing.validUntilDuration",
        "not a duration",
    ),
    (
        "an unknown queueing key",
        {"tpuVms": [vm(queueing={"validUntil": "1h"})]},
        "tpuVms[0].queueing.validUntil",
        "",
    ),
    (
        "a bad boot disk key",
        {"tpuVms": [vm(bootDisk={"kmsKey": "boot"})]},
        "tpuVms[0].bootDisk.kmsKey",
        "cryptoKeys",
    ),
    # Extra network configs.
    ("no queues", {"tpuVms": [vm(queueCount=0)]}, "tpuVms[0].queueCount", "at least 1"),
    (
        "a queue count as text",
        {"tpuVms": [vm(queueCount="8")]},
        "tpuVms[0].queueCount",
        "whole number",
    ),
    (
        "the stack's network twice",
        {
            "tpuVms": [
                vm(
                    additionalNetworks=[
                        {
                            "network": "projects/test-project/global/networks/ai-test-vpc",
                            "subnetwork": EXTRA_NET["subnetwork"],
                        }
                    ]
                )
            ]
        },
        "tpuVms[0].additionalNetworks[0].network",
        "VPC of its own",
    ),
    (
        "the stack's existing VPC twice",
        {
            "network": {"existingVpc": "shared-ml"},
            "tpuVms": [
                vm(
                    additionalNetworks=[
                        {
                            "network": "projects/test-project/global/networks/shared-ml",
                            "subnetwork": EXTRA_NET["subnetwork"],
                        }
                    ]
                )
            ],
        },
        "tpuVms[0].additionalNetworks[0].network",
        "VPC of its own",
    ),
    (
        "one network twice, by self link",
        {
            "tpuVms": [
                vm(
                    additionalNetworks=[
                        EXTRA_NET,
                        {
                            **EXTRA_NET,
                            "network": "https://www.googleapis.com/compute/v1/"
                            + EXTRA_NET["network"],
                        },
                    ]
                )
            ]
        },
        "tpuVms[0].additionalNetworks[1].network",
        "additionalNetworks[0]",
    ),
    (
        "another region",
        {
            "tpuVms": [
                vm(
                    additionalNetworks=[
                        {
                            **EXTRA_NET,
                            "subnetwork": "projects/p-12345/regions/us-east5/subnetworks/s",
                        }
                    ]
                )
            ]
        },
        "tpuVms[0].additionalNetworks[0].subnetwork",
        "us-east5",
    ),
    (
        "more interfaces than a VM has",
        {
            "tpuVms": [
                vm(
                    additionalNetworks=[
                        {**EXTRA_NET, "network": f"projects/test-project/global/networks/n{i}"}
                        for i in range(8)
                    ]
                )
            ]
        },
        "tpuVms[0].additionalNetworks",
        "at most 7",
    ),
    # Root through logins: a machine's account holds its token on every process there.
    (
        "the VMs' own dedicated account logs in with sudo",
        {
            "tpuVms": [
                vm(
                    logins=[
                        {"member": f"serviceAccount:{own_account('ai-test-exp')}", "sudo": True}
                    ]
                )
            ]
        },
        "tpuVms[0].logins[0].member",
        "as root",
    ),
    (
        "the VMs' own existing account logs in",
        {
            "tpuVms": [
                vm(
                    serviceAccount=OTHER_PROJECT_SA,
                    logins=[{"member": f"serviceAccount:{OTHER_PROJECT_SA}"}],
                )
            ]
        },
        "tpuVms[0].logins[0].member",
        "the TPU VMs' own service account",
    ),
    (
        "another system's VM account logs in",
        {
            "gpuClusters": [GPU_CLUSTER],
            "tpuVms": [vm(logins=[{"member": f"serviceAccount:{own_account('ai-test-a3-vm')}"}])],
        },
        "tpuVms[0].logins[0].member",
        "ai-infra:gpuClusters[0]",
    ),
    # Mounts over what every user owns, or root's PATH.
    (
        "a bucket every user writes over the homes",
        {
            "storage": {"volumes": [{"name": "d", "bucket": "data-bucket-x"}]},
            "tpuVms": [vm(storage=[{"volume": "d", "mountPath": "/home"}])],
        },
        "tpuVms[0].storage[0].mountPath",
        "home directories",
    ),
    (
        "a bucket under root's PATH",
        {
            "storage": {"volumes": [{"name": "d", "bucket": "data-bucket-x"}]},
            "tpuVms": [vm(storage=[{"volume": "d", "mountPath": "/snap/bin", "readOnly": True}])],
        },
        "tpuVms[0].storage[0].mountPath",
        "/snap",
    ),
    # What the plan prints is what runs: no terminal escapes, no C1 controls.
    (
        "an escape in the startup script",
        {"tpuVms": [vm(startupScript="#!/bin/bash\necho hi\x1b]0;x\x07")]},
        "tpuVms[0].startupScript",
        "the character \\x1b",
    ),
    (
        "a C1 control in metadata",
        {"tpuVms": [vm(metadata={"note": "a\x9bb"})]},
        "tpuVms[0].metadata.note",
        "the character \\x9b",
    ),
    # Every list is bounded at its path.
    (
        "too many tags",
        {"tpuVms": [vm(tags=[f"t{i}" for i in range(64)])]},
        "tpuVms[0].tags",
        "at most 63",
    ),
    (
        "too many roles",
        {"tpuVms": [vm(roles=[f"roles/r{i}.x" for i in range(65)])]},
        "tpuVms[0].roles",
        "at most 64",
    ),
    (
        "too many logins",
        {"tpuVms": [vm(logins=[{"member": f"user:u{i}@x.io"} for i in range(1501)])]},
        "tpuVms[0].logins",
        "at most 1500",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "path", "fix"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_hostile_input_is_refused_at_its_path_with_the_fix(overrides, path, fix):
    found = rejected(stack(**overrides))
    key = f"ai-infra:{path}"
    assert key in found, found
    assert fix in found[key], found[key]


@pytest.mark.parametrize(
    "entry",
    [
        vm(runtimeVersion="tpu-vm-tf-2.21.0", allowUnlistedRuntime=True),
        vm(runtimeVersion="tpu-vm-tf-2.10.0-pod-v4"),
        vm(runtimeVersion="v2-alpha-tpuv4-pod", accelerator="v4-32"),
        vm(name="tpu-v4", nodePrefix="tpu-v4x"),
        vm(serviceAccount=OTHER_PROJECT_SA),
        vm(serviceAccount=own_account("ai-test-trainer")),
        vm(metadata={"enable-oslogin-2fa": "TRUE", "shutdown-script": "sync"}),
        vm(timeoutMinutes=180, queueing={"validAfterDuration": "1h", "validUntilDuration": "2h"}),
        vm(queueing={"validUntilTime": "2026-12-01T00:00:00.5+02:00"}),
        vm(queueCount=16, additionalNetworks=[{**EXTRA_NET, "queueCount": 8}]),
        vm(bootDisk={"kmsKey": KEY, "confidentialCompute": True}),
        vm(logins=[{"member": f"serviceAccount:{OTHER_PROJECT_SA}", "sudo": True}]),
        vm(storage=[{"volume": "d", "mountPath": "/home/shared", "readOnly": True}]),
        vm(storage=[{"volume": "d", "mountPath": "/data/home"}]),
    ],
)
def test_near_misses_are_accepted(entry):
    graph = built(
        entry, slurm=SLURM, storage={"volumes": [{"name": "d", "bucket": "data-bucket-x"}]}
    )
    assert queued_resource(graph, entry["name"]).inputs["queuedResourceId"] == entry["name"]


def test_v2_and_v3_zones_are_per_size_and_v2_8_is_where_the_regions_page_lists_it():
    v2_8 = tpu_catalog.resolve("v2-8")
    assert tpu_catalog.tpu_vm_zone_problem(v2_8, "us-central1-b") is None
    assert tpu_catalog.tpu_vm_zone_problem(tpu_catalog.resolve("v2-512"), "us-central1-a") is None
    assert tpu_catalog.tpu_vm_zone_problem(tpu_catalog.resolve("v3-2048"), "europe-west4-a") is None
    # Families whose zones do not depend on the size keep the family's list, as GKE reads it.
    v4 = tpu_catalog.resolve("v4-8")
    assert tpu_catalog.tpu_vm_zone_problem(v4, "us-central2-b") is None
    assert tpu_catalog.tpu_vm_zone_problem(v4, "us-central1-a") == tpu_catalog.zone_problem(
        v4.family, "us-central1-a"
    )
