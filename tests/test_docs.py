"""The README and docs/ are the front door and the manual: every YAML example in them builds and
registers what its inventory pins, every config field is in exactly one generated reference,
and the README's two commands are what CI runs."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_origin

import jsonschema
import pytest
import yaml

from components.base import ConfigModel
from graph.engine import REPO_ROOT, Graph
from stacks import reference
from stacks.config import StackConfig
from stacks.messages import config_model_in
from tests.conftest import build_graph

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
_EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```yaml\n(.*?)```", re.S)
_ANY_YAML = re.compile(r"```yaml\n")


@dataclass(frozen=True)
class Example:
    name: str
    doc: Path
    config: dict[str, Any]


def examples() -> dict[str, Example]:
    """Every marked YAML example of the README and docs/, by name; names are unique."""
    found: dict[str, Example] = {}
    for doc in DOCS:
        for match in _EXAMPLE.finditer(doc.read_text()):
            name = match[1]
            assert name not in found, f"example {name} is in {found[name].doc} and {doc}"
            found[name] = Example(name, doc, yaml.safe_load(match[2])["config"])
    return found


# What each example registers: resources by type, and the values that make it the example it
# says it is. A change to an example, or to what the program makes of it, shows here.
COMMON = {
    "gcp:compute/firewall:Firewall": 3,
    # The team namespaces' admission policies, member role and the PriorityClass of the teams'
    # pods outside Kueue (components/gke/admission/, teams.py).
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy": 9,
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding": 9,
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": 1,
    "kubernetes:scheduling.k8s.io/v1:PriorityClass": 1,
    "gcp:compute/network:Network": 1,
    "gcp:compute/router:Router": 1,
    "gcp:compute/routerNat:RouterNat": 1,
    "gcp:compute/subnetwork:Subnetwork": 1,
    "gcp:container/cluster:Cluster": 1,
    "gcp:projects/service:Service": 12,
    "kubernetes:core/v1:Namespace": 2,
    "kubernetes:helm.sh/v3:Release": 2,
    "kubernetes:kueue.x-k8s.io/v1beta2:Cohort": 1,
    "kubernetes:yaml/v2:ConfigGroup": 1,
    "pulumi:providers:kubernetes": 1,
}
"""What every stack registers with today's GKE environment: the network, the cluster, the
project services, JobSet and Kueue, and what every team namespace shares. Node pools count the
system pool beside the CPU pool."""
TPU_VMS = COMMON | {
    # Its hosts' rule, and the stack's deny of them to GKE nodes.
    "gcp:compute/firewall:Firewall": 5,
    "gcp:container/nodePool:NodePool": 2,
    "gcp:projects/iAMMember:IAMMember": 4,
    "gcp:serviceaccount/account:Account": 2,
    "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 1,
    "pulumi-python:dynamic/tpu:QueuedResource": 1,
    "pulumi-python:dynamic/tpu:StartupWait": 1,
}
"""One queued resource with its dedicated account and two grants, and `pulumi up`'s wait for
its startup scripts, beside the GKE environment."""
SLURM_SINGLE_HOST = COMMON | {
    "gcp:compute/disk:Disk": 1,
    # The cluster's two, /home's egress pair and the deny of the cluster to GKE nodes.
    "gcp:compute/firewall:Firewall": 8,
    "gcp:compute/instance:Instance": 2,
    "gcp:container/nodePool:NodePool": 2,
    "gcp:filestore/instance:Instance": 1,
    "gcp:projects/iAMCustomRole:IAMCustomRole": 1,
    "gcp:projects/iAMMember:IAMMember": 9,
    "gcp:serviceaccount/account:Account": 4,
    "gcp:serviceaccount/iAMMember:IAMMember": 1,
    "gcp:storage/bucket:Bucket": 1,
    "gcp:storage/bucketIAMMember:BucketIAMMember": 6,
    "gcp:storage/bucketObject:BucketObject": 5,
    "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 1,
    "pulumi-python:dynamic/slurm:RuntimeScripts": 1,
    "pulumi-python:dynamic/slurm:TpuCleanup": 1,
}
"""A Slurm cluster of single-host TPU nodesets in a stack with a GKE cluster."""


INVENTORY: dict[str, dict[str, int]] = {
    "minimal": COMMON
    | {
        "gcp:container/nodePool:NodePool": 3,
        "gcp:projects/iAMMember:IAMMember": 2,
        "gcp:serviceaccount/account:Account": 1,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 2,
    },
    # One slice, two teams, monitoring on: a policy per slice, team and controller, the
    # stack's three pages and two team pages, Kueue's and JobSet's scrapes.
    "monitoring": COMMON
    | {
        "gcp:container/nodePool:NodePool": 3,
        "gcp:monitoring/alertPolicy:AlertPolicy": 5,
        "gcp:monitoring/dashboard:Dashboard": 5,
        "gcp:monitoring/notificationChannel:NotificationChannel": 2,
        "gcp:projects/iAMMember:IAMMember": 2,
        "gcp:serviceaccount/account:Account": 3,
        "gcp:serviceaccount/iAMMember:IAMMember": 2,
        "kubernetes:core/v1:LimitRange": 2,
        "kubernetes:core/v1:Namespace": 4,
        "kubernetes:core/v1:ResourceQuota": 4,
        "kubernetes:core/v1:Secret": 2,
        "kubernetes:core/v1:ServiceAccount": 4,
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": 4,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 2,
        "kubernetes:monitoring.googleapis.com/v1:PodMonitoring": 2,
        "kubernetes:networking.k8s.io/v1:NetworkPolicy": 2,
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": 2,
        "kubernetes:rbac.authorization.k8s.io/v1:Role": 2,
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": 2,
    },
    "storage": COMMON
    | {
        "kubernetes:core/v1:ResourceQuota": 4,
        "kubernetes:core/v1:LimitRange": 2,
        "gcp:compute/firewall:Firewall": 6,
        "gcp:compute/globalAddress:GlobalAddress": 1,
        "gcp:container/nodePool:NodePool": 2,
        "gcp:filestore/instance:Instance": 1,
        "gcp:lustre/instance:Instance": 1,
        "gcp:projects/iAMMember:IAMMember": 2,
        "gcp:projects/service:Service": 14,
        "gcp:serviceaccount/account:Account": 3,
        "gcp:serviceaccount/iAMMember:IAMMember": 2,
        "gcp:servicenetworking/connection:Connection": 1,
        "gcp:storage/bucket:Bucket": 2,
        "gcp:storage/bucketIAMMember:BucketIAMMember": 4,
        "kubernetes:core/v1:Namespace": 4,
        "kubernetes:core/v1:PersistentVolume": 6,
        "kubernetes:core/v1:PersistentVolumeClaim": 6,
        "kubernetes:core/v1:ServiceAccount": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": 4,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 1,
        "kubernetes:networking.k8s.io/v1:NetworkPolicy": 2,
    },
    "gke-teams": COMMON
    | {
        "kubernetes:core/v1:ResourceQuota": 4,
        "kubernetes:core/v1:LimitRange": 2,
        "gcp:container/nodePool:NodePool": 4,
        "gcp:projects/iAMMember:IAMMember": 3,
        "gcp:serviceaccount/account:Account": 3,
        "gcp:serviceaccount/iAMMember:IAMMember": 2,
        "gcp:storage/bucket:Bucket": 1,
        "gcp:storage/bucketIAMMember:BucketIAMMember": 2,
        "kubernetes:core/v1:Namespace": 4,
        "kubernetes:core/v1:ServiceAccount": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": 4,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 2,
        "kubernetes:networking.k8s.io/v1:NetworkPolicy": 2,
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": 2,
    },
    "provisioner": COMMON
    | {
        "kubernetes:core/v1:ResourceQuota": 4,
        "kubernetes:core/v1:LimitRange": 2,
        "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": 1,
        "gcp:container/nodePool:NodePool": 3,
        "gcp:projects/iAMCustomRole:IAMCustomRole": 1,
        "gcp:projects/iAMMember:IAMMember": 4,
        "gcp:serviceaccount/account:Account": 4,
        "gcp:serviceaccount/iAMMember:IAMMember": 4,
        "kubernetes:apps/v1:Deployment": 1,
        "kubernetes:core/v1:ConfigMap": 1,
        "kubernetes:core/v1:Namespace": 5,
        "kubernetes:core/v1:ServiceAccount": 3,
        # Each team's queues, and its `<team>-provisioned` pair for provisioner capacity.
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": 4,
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": 6,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 3,
        "kubernetes:networking.k8s.io/v1:NetworkPolicy": 2,
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": 2,
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": 1,
        "kubernetes:rbac.authorization.k8s.io/v1:Role": 1,
        # research's group: edit and batch-user in its namespace, clusterViewer.
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": 3,
    },
    "gke-fast-path": COMMON
    | {
        "gcp:compute/firewall:Firewall": 4,
        "gcp:compute/network:Network": 2,
        "gcp:compute/subnetwork:Subnetwork": 2,
        "gcp:container/nodePool:NodePool": 4,
        "gcp:projects/iAMMember:IAMMember": 2,
        "gcp:serviceaccount/account:Account": 1,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 2,
        "kubernetes:networking.gke.io/v1:GKENetworkParamSet": 1,
        "kubernetes:networking.gke.io/v1:Network": 1,
    },
    # Eight GPU NICs of an A3 Mega pool: a VPC, subnet and firewall rule each, GKE's pod
    # network objects for each, and the TCPXO installer with its NRI device injector.
    "gke-gpu-fast-path": COMMON
    | {
        "kubernetes:core/v1:ResourceQuota": 2,
        "kubernetes:core/v1:LimitRange": 1,
        "gcp:compute/firewall:Firewall": 11,
        "gcp:compute/network:Network": 9,
        "gcp:compute/subnetwork:Subnetwork": 9,
        "gcp:container/nodePool:NodePool": 3,
        "gcp:projects/iAMMember:IAMMember": 3,
        "gcp:serviceaccount/account:Account": 2,
        "gcp:serviceaccount/iAMMember:IAMMember": 1,
        "kubernetes:core/v1:Namespace": 3,
        "kubernetes:core/v1:ServiceAccount": 1,
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": 1,
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 2,
        "kubernetes:networking.gke.io/v1:GKENetworkParamSet": 8,
        "kubernetes:networking.gke.io/v1:Network": 8,
        "kubernetes:networking.k8s.io/v1:NetworkPolicy": 1,
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": 2,
        "kubernetes:yaml/v2:ConfigFile": 2,
    },
    "tpu-vms": TPU_VMS,
    # As tpu-vms, and the opening of its JAX port to the pods range.
    "network-allow": TPU_VMS | {"gcp:compute/firewall:Firewall": 6},
    # As tpu-vms, and one login: its OS Login, IAP and viewer grants, the viewer role and
    # account use on the VMs' account.
    "tpu-vms-spot": TPU_VMS
    | {
        "gcp:projects/iAMMember:IAMMember": 7,
        "gcp:projects/iAMCustomRole:IAMCustomRole": 1,
        "gcp:serviceaccount/iAMMember:IAMMember": 1,
    },
    "gpu-cluster": COMMON
    | {
        # The cluster's own rule on the stack's network and the deny of it to GKE nodes.
        "gcp:compute/firewall:Firewall": 5,
        "gcp:compute/instanceGroupManager:InstanceGroupManager": 1,
        "gcp:compute/instanceTemplate:InstanceTemplate": 1,
        "gcp:monitoring/dashboard:Dashboard": 1,
        "gcp:container/nodePool:NodePool": 2,
        "gcp:projects/iAMMember:IAMMember": 4,
        "gcp:serviceaccount/account:Account": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 1,
        "pulumi-python:dynamic/compute:StartupWait": 1,
    },
    "gpu-cluster-ray": COMMON
    | {
        # As gpu-cluster, and its share's egress pair.
        "gcp:compute/firewall:Firewall": 7,
        "gcp:compute/instanceGroupManager:InstanceGroupManager": 1,
        "gcp:compute/instanceTemplate:InstanceTemplate": 1,
        "gcp:compute/resourcePolicy:ResourcePolicy": 1,
        "gcp:container/nodePool:NodePool": 2,
        "gcp:filestore/instance:Instance": 1,
        "gcp:monitoring/dashboard:Dashboard": 1,
        # Ray's discovery role and the logins' viewer role; three project grants and
        # account use per login.
        "gcp:projects/iAMCustomRole:IAMCustomRole": 2,
        "gcp:projects/iAMMember:IAMMember": 11,
        "gcp:serviceaccount/account:Account": 2,
        "gcp:serviceaccount/iAMMember:IAMMember": 2,
        "gcp:storage/bucket:Bucket": 1,
        "gcp:storage/bucketIAMMember:BucketIAMMember": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 1,
        "pulumi-python:dynamic/compute:StartupWait": 1,
    },
    "gpu-a3-ultra": COMMON
    | {
        # Two host VPCs with their subnets, internal rules, NAT on the first, IAP SSH, and the
        # RoCE VPC with a subnet per RDMA NIC.
        "gcp:compute/firewall:Firewall": 6,
        "gcp:compute/network:Network": 4,
        "gcp:compute/router:Router": 2,
        "gcp:compute/routerNat:RouterNat": 2,
        "gcp:compute/subnetwork:Subnetwork": 11,
        "gcp:compute/instanceGroupManager:InstanceGroupManager": 1,
        "gcp:compute/instanceTemplate:InstanceTemplate": 1,
        "pulumi-python:dynamic/compute:FlexCapacity": 1,
        "gcp:compute/resourcePolicy:ResourcePolicy": 1,
        "gcp:container/nodePool:NodePool": 2,
        "gcp:monitoring/dashboard:Dashboard": 1,
        "gcp:projects/iAMMember:IAMMember": 4,
        "gcp:serviceaccount/account:Account": 2,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 1,
    },
    "slurm": SLURM_SINGLE_HOST,
    "slurm-multihost": COMMON
    | {
        "gcp:compute/disk:Disk": 1,
        "gcp:compute/firewall:Firewall": 8,
        "gcp:compute/instance:Instance": 2,
        "gcp:compute/instanceTemplate:InstanceTemplate": 1,
        "gcp:container/nodePool:NodePool": 2,
        "gcp:filestore/instance:Instance": 1,
        "gcp:projects/iAMCustomRole:IAMCustomRole": 1,
        "gcp:projects/iAMMember:IAMMember": 11,
        "gcp:serviceaccount/account:Account": 5,
        "gcp:serviceaccount/iAMMember:IAMMember": 2,
        "gcp:storage/bucket:Bucket": 1,
        "gcp:storage/bucketIAMMember:BucketIAMMember": 8,
        "gcp:storage/bucketObject:BucketObject": 7,
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": 1,
        "pulumi-python:dynamic/slurm:ComputeCleanup": 1,
        "pulumi-python:dynamic/slurm:RuntimeScripts": 1,
        "pulumi-python:dynamic/slurm:TpuCleanup": 1,
    },
    # The seed example (v2-8, TF 2.10 with its own image) builds what the first one does.
    "slurm-seed": SLURM_SINGLE_HOST,
    "slurm-cpu": {
        "gcp:compute/disk:Disk": 1,
        "gcp:compute/firewall:Firewall": 5,
        "gcp:compute/instance:Instance": 4,
        "gcp:compute/instanceTemplate:InstanceTemplate": 2,
        "gcp:compute/network:Network": 1,
        "gcp:compute/router:Router": 1,
        "gcp:compute/routerNat:RouterNat": 1,
        "gcp:compute/subnetwork:Subnetwork": 1,
        "gcp:filestore/instance:Instance": 1,
        "gcp:projects/iAMCustomRole:IAMCustomRole": 1,
        "gcp:projects/iAMMember:IAMMember": 7,
        "gcp:projects/service:Service": 12,
        "gcp:serviceaccount/account:Account": 3,
        "gcp:serviceaccount/iAMMember:IAMMember": 1,
        "gcp:storage/bucket:Bucket": 1,
        "gcp:storage/bucketIAMMember:BucketIAMMember": 6,
        "gcp:storage/bucketObject:BucketObject": 9,
        "pulumi-python:dynamic/slurm:ComputeCleanup": 1,
        "pulumi-python:dynamic/slurm:RuntimeScripts": 1,
        "pulumi-python:dynamic/slurm:TpuCleanup": 1,
    },
    "slurm-a3": {
        "gcp:compute/disk:Disk": 1,
        # The stack's internal and IAP rules, the cluster's two, and one per GPU NIC's VPC.
        "gcp:compute/firewall:Firewall": 13,
        "gcp:compute/instance:Instance": 2,
        "gcp:compute/instanceTemplate:InstanceTemplate": 1,
        "gcp:compute/network:Network": 9,
        "gcp:compute/router:Router": 1,
        "gcp:compute/routerNat:RouterNat": 1,
        "gcp:compute/subnetwork:Subnetwork": 9,
        "gcp:filestore/instance:Instance": 1,
        "gcp:projects/iAMCustomRole:IAMCustomRole": 1,
        "gcp:projects/iAMMember:IAMMember": 7,
        "gcp:projects/service:Service": 12,
        "gcp:serviceaccount/account:Account": 3,
        "gcp:serviceaccount/iAMMember:IAMMember": 1,
        "gcp:storage/bucket:Bucket": 1,
        "gcp:storage/bucketIAMMember:BucketIAMMember": 6,
        "gcp:storage/bucketObject:BucketObject": 5,
        "pulumi-python:dynamic/slurm:ComputeCleanup": 1,
        "pulumi-python:dynamic/slurm:RuntimeScripts": 1,
        "pulumi-python:dynamic/slurm:TpuCleanup": 1,
    },
    "slurm-flex": {
        "gcp:compute/disk:Disk": 1,
        "gcp:compute/firewall:Firewall": 5,
        "gcp:compute/instance:Instance": 2,
        "gcp:compute/instanceTemplate:InstanceTemplate": 1,
        "gcp:compute/network:Network": 1,
        "gcp:compute/router:Router": 1,
        "gcp:compute/routerNat:RouterNat": 1,
        "gcp:compute/subnetwork:Subnetwork": 1,
        "gcp:filestore/instance:Instance": 1,
        "gcp:projects/iAMCustomRole:IAMCustomRole": 1,
        "gcp:projects/iAMMember:IAMMember": 7,
        "gcp:projects/service:Service": 12,
        "gcp:serviceaccount/account:Account": 3,
        "gcp:serviceaccount/iAMMember:IAMMember": 1,
        "gcp:storage/bucket:Bucket": 1,
        "gcp:storage/bucketIAMMember:BucketIAMMember": 6,
        "gcp:storage/bucketObject:BucketObject": 5,
        "pulumi-python:dynamic/slurm:ComputeCleanup": 1,
        # Deletes the groups the controller made for flex-start jobs.
        "pulumi-python:dynamic/slurm:FlexCleanup": 1,
        "pulumi-python:dynamic/slurm:RuntimeScripts": 1,
        "pulumi-python:dynamic/slurm:TpuCleanup": 1,
    },
}


NETWORK = "gcp:compute/network:Network"


def _one(graph: Graph, type_: str) -> dict[str, Any]:
    (found,) = graph.of_type(type_)
    return found.inputs


def _pool(graph: Graph, name: str) -> dict[str, Any]:
    pools = [
        p for p in graph.of_type("gcp:container/nodePool:NodePool") if p.inputs["name"] == name
    ]
    assert len(pools) == 1, [p.urn for p in pools]
    return pools[0].inputs


def _slurm_objects(graph: Graph) -> dict[str, Any]:
    """The Slurm bucket's YAML objects by name, parsed (content is marked secret)."""
    found = {}
    for r in graph.of_type("gcp:storage/bucketObject:BucketObject"):
        value = r.inputs["content"]
        text = value["value"] if isinstance(value, dict) else value
        if r.inputs["name"].endswith(".yaml"):
            found[r.inputs["name"]] = yaml.safe_load(text)
    return found


def _quotas(graph: Graph) -> dict[str, float]:
    return {
        queue.inputs["metadata"]["name"]: resource["nominalQuota"]
        for queue in graph.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
        for group in queue.inputs["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for resource in flavor["resources"]
        if resource["name"] == "google.com/tpu"
    }


def _key_values(name: str, graph: Graph) -> None:
    """The values each example is there to show."""
    if name == "minimal":
        train = _pool(graph, "train-0")
        assert (train["nodeCount"], train["nodeConfig"]["machineType"]) == (4, "ct5p-hightpu-4t")
        assert train["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "2x2x4"}
    elif name == "gke-teams":
        assert _pool(graph, "pretrain-0")["nodeCount"] == 8
        # research names half, one whole 32-chip slice; applied gets the other.
        assert _quotas(graph) == {"research": 32, "applied": 32}
    elif name == "provisioner":
        config_map = _one(graph, "kubernetes:core/v1:ConfigMap")["data"]
        assert (config_map["GCP_ZONE"], config_map["PROVIDER"]) == ("us-east5-a", "gke")
        # The provisioner's 64 chips of v5p-32: 32 named by applied, the rest to research, in
        # their provisioner queues; the fixed slice's 16 chips, one slice, do not divide in
        # two and stay with the cohort.
        assert _quotas(graph) == {
            "research": 0,
            "applied": 0,
            "research-provisioned": 32,
            "applied-provisioned": 32,
        }
    elif name == "gke-gpu-fast-path":
        nics = _pool(graph, "mega")["networkConfig"]["additionalNodeNetworkConfigs"]
        assert [n["network"] for n in nics] == [
            f"ai-gke-gpu-fast-path-mega-gpu{k}-vpc" for k in range(8)
        ]
        (installer, injector) = sorted(
            r.inputs["file"].rsplit("/", 1)[1]
            for r in graph.of_type("kubernetes:yaml/v2:ConfigFile")
        )
        assert (installer, injector) == ("nccl-tcpxo-installer.yaml", "nri-device-injector.yaml")
    elif name == "gke-fast-path":
        for pool in ("tune-0", "tune-1"):
            inputs = _pool(graph, pool)
            assert inputs["networkConfig"]["additionalNodeNetworkConfigs"] == [
                {
                    "network": "ai-gke-fast-path-dcn-1-vpc",
                    "subnetwork": "ai-gke-fast-path-dcn-1-subnet",
                }
            ]
            policy = inputs["nodeConfig"]["hostMaintenancePolicy"]
            assert policy == {"maintenanceInterval": "PERIODIC"}
        mtus = {n.inputs["name"]: n.inputs["mtu"] for n in graph.of_type(NETWORK)}
        assert mtus == {"ai-gke-fast-path-vpc": 8896, "ai-gke-fast-path-dcn-1-vpc": 8896}
    elif name == "tpu-vms":
        qr = _one(graph, "pulumi-python:dynamic/tpu:QueuedResource")
        assert (qr["acceleratorType"], qr["nodeCount"], qr["capacity"]) == ("v4-8", 2, "reserved")
    elif name == "network-allow":
        opening = next(
            r.inputs
            for r in graph.of_type("gcp:compute/firewall:Firewall")
            if r.inputs["name"] == "ai-network-allow-allow-jax"
        )
        assert opening["targetTags"] == ["ai-network-allow-exp-tpu-vm"]
        assert opening["allows"] == [{"protocol": "tcp", "ports": ["8476"]}]
    elif name == "tpu-vms-spot":
        qr = _one(graph, "pulumi-python:dynamic/tpu:QueuedResource")
        assert (qr["capacity"], qr["apiVersion"]) == ("spot", "v2")
        assert qr["queueingPolicy"] == {"validAfterSeconds": 1800, "validUntilSeconds": 7200}
    elif name == "gpu-cluster":
        template = _one(graph, "gcp:compute/instanceTemplate:InstanceTemplate")
        assert template["machineType"] == "a2-highgpu-2g"
        assert template["guestAccelerators"] == [{"type": "nvidia-tesla-a100", "count": 2}]
        assert (
            _one(graph, "gcp:compute/instanceGroupManager:InstanceGroupManager")["targetSize"] == 1
        )
    elif name == "gpu-cluster-ray":
        template = _one(graph, "gcp:compute/instanceTemplate:InstanceTemplate")
        assert template["scheduling"]["provisioningModel"] == "SPOT"
        assert [d["deviceName"] for d in template["disks"]] == ["boot", "data"]
        assert "list-instances" in template["metadata"]["startup-script"]
        mig = _one(graph, "gcp:compute/instanceGroupManager:InstanceGroupManager")
        assert mig["statefulDisks"] == [
            {"deviceName": "data", "deleteRule": "ON_PERMANENT_INSTANCE_DELETION"}
        ]
    elif name == "gpu-a3-ultra":
        template = _one(graph, "gcp:compute/instanceTemplate:InstanceTemplate")
        assert template["scheduling"]["provisioningModel"] == "FLEX_START"
        assert [n["nicType"] for n in template["networkInterfaces"]].count("MRDMA") == 8
        capacity = _one(graph, "pulumi-python:dynamic/compute:FlexCapacity")
        assert (capacity["size"], capacity["runSeconds"]) == (2, 86400)
    elif name == "slurm":
        names = {r.inputs["name"] for r in graph.of_type("gcp:compute/instance:Instance")}
        assert names == {"tpu-controller", "tpu-login-0"}
        assert _one(graph, "gcp:filestore/instance:Instance")["tier"] == "BASIC_HDD"
    elif name == "slurm-multihost":
        objects = _slurm_objects(graph)
        assert objects["pods-files/partition_configs/tpu.yaml"]["partition_nodeset_tpu"] == [
            "v4x16"
        ]
        assert objects["pods-files/nodeset_tpu_configs/v4x16.yaml"]["node_type"] == "v4-16"
        assert _one(graph, "gcp:compute/instanceTemplate:InstanceTemplate")["machineType"] == (
            "n2-standard-2"
        )
    elif name == "slurm-seed":
        nodeset = _slurm_objects(graph)["seed-files/nodeset_tpu_configs/v2x8.yaml"]
        assert (nodeset["tf_version"], nodeset["preemptible"], nodeset["node_type"]) == (
            "2.10.0",
            True,
            "v2-8",
        )
        assert nodeset["docker_image"].endswith("slurmd:tf-2.10.0")
    elif name == "slurm-cpu":
        names = {r.inputs["name"] for r in graph.of_type("gcp:compute/instance:Instance")}
        assert names == {"hpc-controller", "hpc-login-0", "hpc-login-1", "hpc-big-0"}
        templates = {
            r.name: r.inputs for r in graph.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
        }
        t4 = templates["slurm-template-t4"]
        assert t4["guestAccelerators"] == [{"type": "nvidia-tesla-t4", "count": 1}]
        assert t4["scheduling"]["provisioningModel"] == "SPOT"
        assert templates["slurm-template-c2"]["machineType"] == "c2-standard-60"
    elif name == "slurm-a3":
        template = _one(graph, "gcp:compute/instanceTemplate:InstanceTemplate")
        nics = template["networkInterfaces"]
        assert [n["nicType"] for n in nics] == ["GVNIC"] * 9
        assert template["metadata"]["google_disable_automatic_updates"] == "TRUE"
        assert "/mnt/localssd" in template["metadata"]["startup-script"]
        document = _slurm_objects(graph)["a3-files/nodeset_configs/a3mega.yaml"]
        assert document["reservation_name"] == "projects/my-ml-project/reservations/a3mega-block"
    elif name == "slurm-flex":
        scheduling = _one(graph, "gcp:compute/instanceTemplate:InstanceTemplate")["scheduling"]
        assert scheduling["provisioningModel"] == "FLEX_START"
        assert scheduling["maxRunDuration"] == {"seconds": 86400}
        document = _slurm_objects(graph)["flex-files/nodeset_configs/h100.yaml"]
        assert document["dws_flex"]["enabled"] is True
    elif name == "storage":
        claims = {
            (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r.inputs["spec"]
            for r in graph.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        }
        assert claims[("research", "ckpt")]["accessModes"] == ["ReadOnlyMany"]
        assert claims[("pretrain", "ckpt")]["accessModes"] == ["ReadWriteMany"]
        lustre = _one(graph, "gcp:lustre/instance:Instance")
        assert (lustre["capacityGib"], lustre["perUnitStorageThroughput"]) == ("18000", "500")
        (network,) = _one(graph, "gcp:filestore/instance:Instance")["networks"]
        assert network["connectMode"] == "PRIVATE_SERVICE_ACCESS"
    elif name == "monitoring":
        # The team's queue alert goes to its own pager, sooner than the default.
        policy = next(r for r in graph if r.name == "monitoring-alert-team-pretrain")
        (condition,) = policy.inputs["conditions"]
        assert condition["conditionPrometheusQueryLanguage"]["duration"] == "1200s"
        assert [
            u.rsplit("::", 1)[1] for u in policy.property_dependencies["notificationChannels"]
        ] == ["monitoring-channel-pretrain-pager"]
    else:
        raise AssertionError(f"no key values pinned for example {name}")


def test_every_yaml_example_in_the_docs_is_marked():
    for doc in DOCS:
        text = doc.read_text()
        assert len(_ANY_YAML.findall(text)) == len(_EXAMPLE.findall(text)), (
            f"{doc.relative_to(REPO_ROOT)} has a ```yaml block without <!-- example: NAME -->"
        )


def test_the_inventory_pins_exactly_the_docs_examples():
    assert set(examples()) == set(INVENTORY)


@pytest.mark.parametrize("name", sorted(INVENTORY))
def test_a_docs_example_registers_its_inventory(name: str):
    example = examples()[name]
    graph = build_graph(example.config, stack=name)
    counts = Counter(r.type for r in graph.resources_to_apply)
    assert dict(sorted(counts.items())) == dict(sorted(INVENTORY[name].items())), example.doc
    _key_values(name, graph)


def test_docs_examples_validate_against_the_stack_file_schema():
    validator = jsonschema.Draft7Validator(json.loads(reference.SCHEMA.read_text()))
    for name, example in examples().items():
        errors = [e.message for e in validator.iter_errors({"config": example.config})]
        assert errors == [], name


def _fields(model: type[ConfigModel], path: str) -> list[str]:
    names = []
    for field, info in model.model_fields.items():
        key = f"{path}{info.alias or field}"
        names.append(key)
        nested = config_model_in(info.annotation)
        if nested is not None:
            sub = f"{key}[]." if get_origin(info.annotation) is list else f"{key}."
            names += _fields(nested, sub)
    return names


def _documented(doc: str) -> dict[str, set[str]]:
    """First-column keys of each table in a doc's config reference, by the heading above."""
    text = (reference.DOCS / doc).read_text()
    block = text[text.index(reference.BEGIN) : text.index(reference.END)]
    tables: dict[str, set[str]] = {}
    heading = ""
    for line in block.splitlines():
        if line.startswith("### "):
            heading = line.removeprefix("### ").strip("`")
        elif match := re.match(r"\| `([^`]+)` \|", line):
            tables.setdefault(heading, set()).add(match[1])
    return tables


def test_every_config_field_is_documented_once_by_its_exact_key():
    placed = [name for names in reference.REFERENCES.values() for name in names]
    assert sorted(placed) == sorted(StackConfig.model_fields)
    for doc, names in reference.REFERENCES.items():
        expected: dict[str, set[str]] = {}
        for name in names:
            info = StackConfig.model_fields[name]
            key = reference.stack_key(name, info)
            nested = config_model_in(info.annotation)
            if nested is None:
                expected.setdefault("Top-level keys", set()).add(key)
            else:
                expected[key] = set(_fields(nested, ""))
        assert _documented(doc) == expected, doc


def test_the_generated_references_and_schema_are_current():
    for doc in reference.REFERENCES:
        text = (reference.DOCS / doc).read_text()
        assert reference.with_reference(doc, text) == text, (
            f"docs/{doc} is stale: run uv run python -m stacks.reference"
        )
    assert reference.SCHEMA.read_text() == reference.schema_text(), (
        "schema/ is stale: run uv run python -m stacks.reference"
    )


def test_two_commands_set_up_a_fresh_clone():
    # All a fresh clone needs; `uv run` creates the venv, the first plan caches bytecode.
    readme = (REPO_ROOT / "README.md").read_text()
    block = re.search(r"## Two commands\n.*?```sh\n(.*?)```", readme, re.S)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block[1].splitlines()]
    assert commands == ["uv run python -m plan dev", "uv run pytest"]


def test_ci_runs_the_readme_test_command():
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert re.search(r"^uv run pytest$", ci, re.M)


def test_every_doc_link_resolves():
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"
