"""Every warning README.md and docs/*.md promise for a stack config is printed by the plan (its
"Warnings" section, which `pulumi up` logs line by line): one case per promise, with the words
of the promise as the docs hold them, a config that should be warned of, and a near miss that
should not. Warnings of other tools (preflight's `warn`, the diff's data-loss hazards,
Kubernetes' Pod Security `warn` mode) are tested with those tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stacks import environment
from stacks.loading import parse
from tests.conftest import with_config
from tests.gke.test_fast_path import DCN
from tests.gke.test_fast_path import stack as fast_path_stack
from tests.gke.test_gpu_fast_path import pool
from tests.gke.test_gpu_fast_path import stack as gpu_pool_stack
from tests.gke.test_quota import PART_SLICE
from tests.gke.test_tpu_provisioner import IMAGE, enabled
from tests.gpu_clusters.test_cluster import A3_HIGH
from tests.slurm.test_config import NODESET
from tests.slurm.test_config import stack as slurm_stack
from tests.tpu_vms.test_vms import stack as tpu_vm_stack
from tests.tpu_vms.test_vms import vm

DOCS = Path(__file__).parents[2] / "docs"


def tpu_vm_config(**fields: Any) -> dict[str, Any]:
    return tpu_vm_stack(tpuVms=[vm(**fields)])


V5P = {"tpuSlices": [{"name": "train", "accelerator": "v5p-32"}]}
T4 = {"name": "t4", "machineType": "n1-standard-8", "acceleratorType": "nvidia-tesla-t4"}
EOL = {"imageFamily": "pytorch-1-12-gpu-debian-10", "imageProject": "ml-images"}
OTHER_SUBNET = {"subnetwork": "default", "enablePublicIps": True}


def _provisioner(**fields: Any) -> dict[str, Any]:
    return with_config(**enabled(**fields), teams=[{"name": "a"}, {"name": "b"}])


# (doc, the promise's words, warned config, near miss, the path the warning is at)
PROMISES: list[tuple[str, str, dict[str, Any], dict[str, Any], str]] = [
    (
        "gke.md",
        "built for\n  nothing: the plan and `pulumi up` warn",
        with_config(tpuSlices=[{"name": "p", "accelerator": "v5p-16"}], network=DCN),
        fast_path_stack(network=DCN),
        "ai-infra:network.additionalNodeNetworks[0]",
    ),
    (
        "gke.md",
        "is warned about: multi-node\n  NCCL runs over the node's one NIC",
        gpu_pool_stack(pool("tcpxo", gpuDirect=False, gpuSubnetCidr=None)),
        gpu_pool_stack(pool("tcpxo")),
        "ai-infra:gpuPools[0].gpuDirect",
    ),
    (
        "gke.md",
        "slices is accepted with a warning in the plan and in `pulumi up`",
        with_config(**PART_SLICE),
        with_config(**{**PART_SLICE, "teams": [{"name": "a", "quota": {"train": "50%"}}]}),
        "ai-infra:teams[0].quota.train",
    ),
    (
        "gke.md",
        "`memory` set below that is accepted with a warning",
        with_config(**V5P, teams=[{"name": "a", "cpu": 100, "memory": "100Gi"}]),
        with_config(**V5P, teams=[{"name": "a", "cpu": 1000, "memory": "4000Gi"}]),
        "ai-infra:teams[0].cpu",
    ),
    (
        "gke.md",
        "adds nothing, with a warning to set both",
        with_config(gpuPools=[{**T4, "maxNodes": 2}], teams=[{"name": "a"}]),
        with_config(
            gpuPools=[{**T4, "maxNodes": 2}], teams=[{"name": "a", "cpu": 8, "memory": "30Gi"}]
        ),
        "ai-infra:teams[0].cpu",
    ),
    (
        "gke.md",
        'channels"); the plan and `pulumi up` warn',
        with_config(cluster={"releaseChannel": "NONE"}),
        with_config(cluster={"releaseChannel": "STABLE"}),
        "ai-infra:cluster.releaseChannel",
    ),
    (
        "tpu-provisioner.md",
        "the plan warns on every stack with `NONE`",
        _provisioner(quota={"v5p-32": 2}),
        with_config(cluster={"releaseChannel": "REGULAR"}),
        "ai-infra:cluster.releaseChannel",
    ),
    (
        "tpu-provisioner.md",
        "a plain tag works, but the program and the plan warn about it",
        _provisioner(quota={"v5p-32": 2}, image="us-docker.pkg.dev/p/images/tpu-provisioner:v1"),
        _provisioner(quota={"v5p-32": 2}, image=IMAGE),
        "ai-infra:tpuProvisioner.image",
    ),
    (
        "tpu-provisioner.md",
        "the plan\n  warns, and the provisioner never creates it",
        _provisioner(quota={"v5p-32": 3}),
        _provisioner(quota={"v5p-32": 2}),
        "ai-infra:tpuProvisioner.quota.v5p-32",
    ),
    (
        "gke.md",
        "`false` leaves NCCL on the node's one NIC, with a warning",
        gpu_pool_stack(pool("tcpx", gpuDirect=False, gpuSubnetCidr=None)),
        gpu_pool_stack(pool("tcpx")),
        "ai-infra:gpuPools[0].gpuDirect",
    ),
    (
        "gpu-clusters.md",
        "(still accepted, with a warning)",
        with_config(gpuClusters=[{"name": "a", **EOL}]),
        with_config(gpuClusters=[{"name": "a"}]),
        "ai-infra:gpuClusters[0].imageFamily",
    ),
    (
        "gpu-clusters.md",
        "uses the GPU NICs as plain sockets (a warning says so)",
        with_config(
            gpuClusters=[{"name": "a", **A3_HIGH, "instanceCount": 2, "network": "multi-nic"}]
        ),
        with_config(
            gpuClusters=[{"name": "a", **A3_HIGH, "instanceCount": 1, "network": "multi-nic"}]
        ),
        "ai-infra:gpuClusters[0].gpuDirect",
    ),
    (
        "gpu-clusters.md",
        "and warned about (in the plan\nand by `pulumi up`) when the cluster lists no logins",
        with_config(gpuClusters=[{"name": "a", "sshAmongVms": True}]),
        with_config(gpuClusters=[{"name": "a"}]),
        "ai-infra:gpuClusters[0].sshAmongVms",
    ),
    (
        "slurm.md",
        "so the plan lists, and `pulumi up` logs, a warning at\n"
        "`slurm.tpuNodesets[i].enablePublicIps`",
        slurm_stack(home={"filestore": False}, tpuNodesets=[{**NODESET, **OTHER_SUBNET}]),
        slurm_stack(home={"filestore": False}, tpuNodesets=[{**NODESET, "enablePublicIps": True}]),
        "ai-infra:slurm.tpuNodesets[0].enablePublicIps",
    ),
    (
        "tpu-vms.md",
        "so the plan lists, and `pulumi up` logs, a warning\nat `tpuVms[i].enablePublicIps`",
        tpu_vm_config(
            enablePublicIps=True,
            network={
                "network": "projects/test-project/global/networks/default",
                "subnetwork": "projects/test-project/regions/us-central2/subnetworks/default",
            },
        ),
        tpu_vm_config(enablePublicIps=True),
        "ai-infra:tpuVms[0].enablePublicIps",
    ),
]


def _plan_warnings(raw: dict[str, Any]) -> list[str]:
    sections = dict(environment.describe(parse(raw, "test")))
    return [line.strip() for line in sections.get("Warnings", [])]


@pytest.mark.parametrize(
    ("doc", "promise", "warned", "quiet", "path"),
    PROMISES,
    ids=[f"{doc}:{path}" for doc, _, _, _, path in PROMISES],
)
def test_each_promised_warning_is_printed_by_the_plan(doc, promise, warned, quiet, path):
    assert promise in (DOCS / doc).read_text(), f"docs/{doc} no longer promises: {promise!r}"
    assert any(line.startswith(f"{path}: ") for line in _plan_warnings(warned)), path
    assert not any(line.startswith(f"{path}: ") for line in _plan_warnings(quiet)), path
