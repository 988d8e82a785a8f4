"""The JobSet of a request on its target: one replicated job of `--slices` TPU slices (a pod per
host) or of `--nodes` GPU nodes (a pod per node), in the team's namespace and queue, selecting
the flavor's nodes, on the fast path the capacity was built with, with the team's data.

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

from components.gke import TRANSPORTS
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
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
"""The annotation an Indexed Job's controller puts on each pod: its index, 0 to completions-1."""
RESTARTABLE_EXIT_CODES = (42, *range(128, 256))
"""Exit codes of the main container after which the JobSet restarts (up to `--max-restarts`):
42, which a program exits with to ask for a restart, and 128+N, killed by signal N (a node's
maintenance, preemption or OOM kill), as xpk's `get_restart_exit_codes` (at 367c8382) has them;
without its 127, the shell's "command not found", a user's error. Any other failure fails the
JobSet at once: a typo in a script is not retried."""
RENDEZVOUS_PORT = 29500
"""torchrun's default `--master-port` (torch.distributed.run)."""
JAX_COORDINATOR_PORT = 6002
"""The port xpk gives JAX's coordinator on GPUs (core/docker_resources.py get_gpu_env)."""


@dataclass(frozen=True)
class Networking:
    """How the pods reach each other and the nodes' NICs."""

    host_network: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    reason: str = "the pod network"


TPU_NICS_UNCLAIMED = (
    "; no Google document says libtpu sends DCN traffic over them, so no bandwidth is "
    "claimed for them: multislice traffic is only known to use eth0"
)
"""What the report says of a TPU pod's extra NICs. GKE's multislice guide, xpk and Cluster
Toolkit's v6e multislice sample (examples/gke-tpu-v6e/tpu-multislice.yaml, which takes its NICs
through a DRA claim) set no libtpu flag or variable for them; dranet's v6e guide measures them
with TCP streams bound to each NIC's address, not with libtpu."""


def networking(target: Target, replicas: int) -> Networking:
    if target.networks:
        interfaces = [{"interfaceName": "eth0", "network": "default"}]
        interfaces += [
            {"interfaceName": f"eth{i}", "network": network}
            for i, network in enumerate(target.networks, start=target.first_interface)
        ]
        return Networking(
            annotations={
                DEFAULT_INTERFACE: "eth0",
                INTERFACES: json.dumps(interfaces, separators=(",", ":")),
            },
            reason=(
                f"pod network on eth0, and the node's NICs in {', '.join(target.networks)} "
                f"moved into the pod as eth{target.first_interface}.. (GKE multi-network Device "
                "interfaces)"
                + (
                    f" for GKE's {target.transport.upper()} NCCL plugin"
                    if target.transport
                    else TPU_NICS_UNCLAIMED
                )
            ),
        )
    if target.tpu and target.multi_host and replicas > 1:
        if not target.team.tpu_host_network:
            # The namespace's admission policy refuses host-network pods of such a team.
            return Networking(
                reason=f"the pod network: team {target.team.name} has no tpuHostNetwork, so "
                "multislice traffic goes through pod IPs rather than the host network GKE's "
                "multislice guide uses (set tpuHostNetwork: true on the team for that)"
            )
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
    spec: dict[str, Any] = {
        "ttlSecondsAfterFinished": request.ttl_seconds,
        "failurePolicy": {
            "maxRestarts": request.max_restarts,
            # A Job failed by its podFailurePolicy (a non-restartable exit) fails the JobSet
            # without a restart (JobSet FailurePolicyRule; xpk's rule of the same shape).
            "rules": [
                {
                    "name": "fail-on-program-error",
                    "action": "FailJobSet",
                    "onJobFailureReasons": ["PodFailurePolicy"],
                }
            ],
        },
        "replicatedJobs": [
            {
                "name": replicated_job_name(target),
                "replicas": replicas,
                "template": {
                    "spec": {
                        "parallelism": pods,
                        "completions": pods,
                        # Each pod's index is its rank (JobSet's webhook defaults to it too).
                        "completionMode": "Indexed",
                        # One pod failing fails its Job, and the JobSet restarts as a whole.
                        "backoffLimit": 0,
                        "podFailurePolicy": pod_failure_policy(),
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


def pod_failure_policy() -> dict[str, Any]:
    """Fail the Job (reason `PodFailurePolicy`) when the main container exits with a code
    that is not restartable; Kubernetes wants the values ascending and at most 255 of them
    (batch validation of `onExitCodes`)."""
    return {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": CONTAINER,
                    "operator": "NotIn",
                    "values": list(RESTARTABLE_EXIT_CODES),
                },
            }
        ]
    }


def rendezvous(request: Request, target: Target) -> dict[str, str]:
    """How a multi-node GPU job's processes find each other, as xpk gives them (get_gpu_env):
    the node count, this pod's rank (its completion index) and the rank-0 pod's address, the
    stable name JobSet's headless service gives it (`<jobset>-<job>-0-0.<jobset>`, JobSet
    `enableDNSHostnames`, on by default); and torchrun's `PET_*` defaults, so `torchrun` needs
    no rendezvous flags (torch/distributed/argparse_util.py `env`). TPU pods get theirs from
    GKE (`TPU_WORKER_ID`, `TPU_WORKER_HOSTNAMES`, and for multislice `MEGASCALE_*`)."""
    if target.tpu:
        return {}
    _, nodes = replicas_and_pods(request, target)
    leader = f"{request.name}-{replicated_job_name(target)}-0-0.{request.name}"
    env = {
        "NNODES": str(nodes),
        "NODE_RANK": f"$({COMPLETION_INDEX_ENV})",
        "GPUS_PER_NODE": str(target.per_node),
        "MASTER_ADDR": leader,
        "MASTER_PORT": str(RENDEZVOUS_PORT),
        "JAX_COORDINATOR_ADDRESS": leader,
        "JAX_COORDINATOR_PORT": str(JAX_COORDINATOR_PORT),
    }
    env |= {f"PET_{k}": v for k, v in env.items() if k in TORCHRUN}
    return env


COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
"""Set from the pod's completion-index annotation before the variables that refer to it."""
TORCHRUN = ("NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")


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
    gpu = gpu_direct(target)
    annotations = {**net.annotations, **mounts.annotations, **gpu.annotations}
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {
        "serviceAccountName": target.service_account,
        "restartPolicy": "Never",
        "nodeSelector": node_selector(request, target),
        "tolerations": target.tolerations,
    }
    if request.grace_seconds is not None:
        spec["terminationGracePeriodSeconds"] = request.grace_seconds
    if gpu.sidecars:
        spec["initContainers"] = gpu.sidecars
    spec["containers"] = [container(request, target, mounts, gpu)]
    if net.host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    spec["volumes"] = [*mounts.volumes, *gpu.volumes, SHM_VOLUME]
    return {"metadata": metadata, "spec": spec}


SHM_VOLUME = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
"""`/dev/shm` in RAM for every pod (a container's own is 64 MiB): NCCL's shared-memory
transport and data loaders' worker queues, as xpk mounts it for every workload
(core/docker_resources.py get_volumes)."""
SHM_MOUNT = {"name": "dshm", "mountPath": "/dev/shm"}


@dataclass(frozen=True)
class GpuDirectPod:
    """What a pod on a GPU pool's fast path adds, as GKE's examples for the transport have it
    (container-engine-accelerators gpudirect-tcpx/, gpudirect-tcpxo/ and gpudirect-rdma/
    nccl-test manifests at components.gke.gpu_direct.INSTALLERS_COMMIT)."""

    annotations: dict[str, str] = field(default_factory=dict)
    sidecars: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    setup: str = ""


def gpu_direct(target: Target) -> GpuDirectPod:
    if target.transport is None:
        return GpuDirectPod()
    stack = TRANSPORTS[target.transport]
    volumes = [{"name": name, "hostPath": {"path": path}} for name, path in stack.volumes]
    mounts = [{"name": name, "mountPath": path} for name, path in stack.mounts]
    sidecars, annotations = [], {}
    if stack.sidecar is not None:
        sidecar = stack.sidecar
        sidecars.append(
            {
                "name": sidecar.name,
                "image": sidecar.image,
                # A native sidecar: it runs beside the workload and the Job still completes.
                "restartPolicy": "Always",
                "command": list(sidecar.command),
                "securityContext": {"capabilities": {"add": list(sidecar.capabilities)}},
                "volumeMounts": [{"name": v, "mountPath": m} for v, m in sidecar.mounts],
                "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
            }
        )
        devices = "".join(f"- path: {path}\n" for path in stack.device_annotation)
        annotations[f"devices.gke.io/container.{sidecar.name}"] = devices
    return GpuDirectPod(annotations, sidecars, volumes, mounts, dict(stack.env), stack.setup)


def container(
    request: Request, target: Target, mounts: Mounts, gpu: GpuDirectPod
) -> dict[str, Any]:
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
    if request.command and gpu.setup:
        # NCCL's settings for the transport come from a script the installer puts on the node.
        main["command"] = ["/bin/bash", "-c", f'{gpu.setup} && exec "$@"', "--", *request.command]
    elif request.command:
        main["command"] = request.command
    env = {**rendezvous(request, target), **gpu.env, **request.env}
    listed: list[dict[str, Any]] = []
    if not target.tpu:
        # First, so that later values can refer to it as $(JOB_COMPLETION_INDEX).
        field_path = f"metadata.annotations['{COMPLETION_INDEX}']"
        listed.append(
            {"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}
        )
    listed += [{"name": k, "value": v} for k, v in env.items()]
    if listed:
        main["env"] = listed
    main["volumeMounts"] = [*mounts.volume_mounts, *gpu.mounts, SHM_MOUNT]
    return main
