"""The JobSet of a request on its target: one replicated job of `--slices` TPU slices (a pod per
host) or of `--nodes` GPU nodes (a pod per node), in the team's namespace and queue, selecting
the flavor's nodes, on the fast path the capacity was built with, with the team's buckets.

Networking, as the capacity was built: hosts with NICs in the stack's additional node networks
hand them to the pod as GKE multi-network Device interfaces (`networking.gke.io/interfaces`,
which moves each NIC into the pod; a host-network pod has no namespace to move it into); a
multislice job otherwise runs on the host network with `dnsPolicy: ClusterFirstWithHostNet`,
as GKE's multislice guide, xpk (`workload create`) and Cluster Toolkit's tpu-multislice sample
run it; everything else on the pod network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from workload.mounts import Mounts
from workload.request import Request
from workload.target import Target

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
NO_PROVISIONING = "tpu-provisioner.cloud.google.com/disable-autoprovisioning"
"""A pod label the provisioner honours: it creates no pool for such a pod
(creation_controller.go DisableAutoProvisioningLabel at 6789e2a)."""
PROVISIONER_JOBSET = "google.com/tpu-provisioner-jobset-name"
PROVISIONER_NAMESPACE = "google.com/tpu-provisioner-jobset-namespace"
"""Labels the provisioner puts on every pool it creates for a JobSet (internal/cloud/common.go
at 6789e2a); selecting them keeps a JobSet's pods on its own pools."""
DEFAULT_INTERFACE = "networking.gke.io/default-interface"
INTERFACES = "networking.gke.io/interfaces"
CONTAINER = "main"
WORKLOAD_LABEL = "ai-infra/workload"


@dataclass(frozen=True)
class Networking:
    """How the pods reach each other and the nodes' NICs."""

    host_network: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    reason: str = "the pod network"


def networking(target: Target, replicas: int) -> Networking:
    if target.networks:
        interfaces = [{"interfaceName": "eth0", "network": "default"}]
        interfaces += [
            {"interfaceName": f"eth{i}", "network": network}
            for i, network in enumerate(target.networks, start=1)
        ]
        return Networking(
            annotations={
                DEFAULT_INTERFACE: "eth0",
                INTERFACES: json.dumps(interfaces, separators=(",", ":")),
            },
            reason=(
                "pod network on eth0, and the node's NICs in "
                f"{', '.join(target.networks)} moved into the pod as eth1.. (GKE multi-network "
                "Device interfaces)"
            ),
        )
    if target.tpu and target.multi_host and replicas > 1:
        return Networking(
            host_network=True,
            reason="host network with ClusterFirstWithHostNet DNS: multislice traffic over the "
            "data-center network, as GKE's multislice guide runs it",
        )
    return Networking()


def replicated_job_name(target: Target) -> str:
    return "slice" if target.tpu else "workers"


def replicas_and_pods(request: Request, target: Target) -> tuple[int, int]:
    """(replicas, pods per replica): TPU slices of a pod per host, or one replica of a pod per
    GPU node."""
    if target.tpu:
        return 1 if request.slices is None else request.slices, target.nodes_per_slice
    return 1, 1 if request.nodes is None else request.nodes


def jobset(request: Request, target: Target, mounts: Mounts, net: Networking) -> dict[str, Any]:
    replicas, pods = replicas_and_pods(request, target)
    labels = {QUEUE_LABEL: target.local_queue, WORKLOAD_LABEL: request.name}
    if request.priority:
        labels[PRIORITY_LABEL] = request.priority
    annotations = {EXCLUSIVE: NODE_POOL_LABEL} if target.multi_host else {}
    spec: dict[str, Any] = (
        {} if request.ttl_seconds is None else {"ttlSecondsAfterFinished": request.ttl_seconds}
    )
    spec |= {
        "failurePolicy": {"maxRestarts": request.max_restarts},
        "replicatedJobs": [
            {
                "name": replicated_job_name(target),
                "replicas": replicas,
                "template": {
                    "spec": {
                        "parallelism": pods,
                        "completions": pods,
                        # One pod failing fails its Job, and the JobSet restarts as a whole.
                        "backoffLimit": 0,
                        "template": pod_template(request, target, mounts, net),
                    }
                },
            }
        ],
    }
    metadata: dict[str, Any] = {
        "name": request.name,
        "namespace": target.namespace,
        "labels": labels,
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": metadata, "spec": spec}


def node_selector(request: Request, target: Target) -> dict[str, str]:
    """The flavor's labels, this entry's pools among the flavor's, and for provisioner
    capacity the pools the controller creates for this JobSet alone."""
    selector = {**target.node_labels, **target.pin}
    if target.provisioned:
        selector[PROVISIONER_JOBSET] = request.name
        selector[PROVISIONER_NAMESPACE] = target.namespace
    return dict(sorted(selector.items()))


def pod_template(
    request: Request, target: Target, mounts: Mounts, net: Networking
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": {WORKLOAD_LABEL: request.name}}
    if target.provisioner and not target.provisioned:
        metadata["labels"][NO_PROVISIONING] = "true"
    annotations = {**net.annotations, **mounts.annotations}
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {
        "serviceAccountName": target.service_account,
        "restartPolicy": "Never",
        "nodeSelector": node_selector(request, target),
        "tolerations": target.tolerations,
        "containers": [container(request, target, mounts)],
    }
    if net.host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if mounts.volumes:
        spec["volumes"] = mounts.volumes
    return {"metadata": metadata, "spec": spec}


def container(request: Request, target: Target, mounts: Mounts) -> dict[str, Any]:
    requests: dict[str, Any] = {target.resource: target.per_node}
    if request.cpu:
        requests["cpu"] = request.cpu
    if request.memory:
        requests["memory"] = request.memory
    main: dict[str, Any] = {
        "name": CONTAINER,
        "image": request.image,
        "resources": {
            "requests": requests,
            # Extended resources must be requested and limited alike; memory is limited at
            # its request so the pod is never the node's first to be evicted for it.
            "limits": {k: v for k, v in requests.items() if k != "cpu"},
        },
    }
    if request.command:
        main["command"] = request.command
    if request.env:
        main["env"] = [{"name": k, "value": v} for k, v in request.env.items()]
    if mounts.volume_mounts:
        main["volumeMounts"] = mounts.volume_mounts
    return main
