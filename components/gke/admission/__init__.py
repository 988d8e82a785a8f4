"""What the API server refuses in team namespaces, as ValidatingAdmissionPolicies (CEL, GA in
Kubernetes 1.30), bound to every namespace labelled `ai-infra/team`: Pod Security's baseline
checks with the restricted level's inline volumes at every level (`pod_security.py`); where
pods may land and who may own a job (`scheduling.py`); and what a team's objects may name, its
priority classes, images, Services and claims, the TPU provisioner's annotations, DaemonSets
(`tenancy.py`). The same manifests the program registers (`manifests.py`) are evaluated
offline with Google's CEL implementation by `refusals()` (`offline.py`), so a rendered object
can be checked against them before it reaches a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.gke.admission.expressions import (
    GPU_DIRECT_LABEL,
    HOST_NETWORK_LABEL,
    NODE_POOL_LABEL,
    PRIORITY_CLASSES_ANNOTATION,
    SERVICES_PRIORITY_CLASS,
    STORAGE_CLASSES_ANNOTATION,
    SYSTEM_TAINT,
    TEAM_LABEL,
    Check,
    Policy,
    listed,
)
from components.gke.admission.manifests import binding_manifest, manifest, register
from components.gke.admission.offline import Refusal, refusals
from components.gke.admission.pod_security import pod_security
from components.gke.admission.scheduling import owners, scheduling
from components.gke.admission.tenancy import (
    PRIORITY_LABEL,
    claims,
    daemonsets,
    images,
    priorities,
    provisioner_annotations,
    services,
)

__all__ = [
    "GPU_DIRECT_LABEL",
    "HOST_NETWORK_LABEL",
    "NODE_POOL_LABEL",
    "PRIORITY_CLASSES_ANNOTATION",
    "PRIORITY_LABEL",
    "SERVICES_PRIORITY_CLASS",
    "STORAGE_CLASSES_ANNOTATION",
    "SYSTEM_TAINT",
    "TEAM_LABEL",
    "Check",
    "Policy",
    "Refusal",
    "binding_manifest",
    "listed",
    "manifest",
    "policies",
    "refusals",
    "register",
    "stack_documents",
]


def policies(
    repositories: Mapping[str, Sequence[str]] | None = None, gpu_direct_pools: Sequence[str] = ()
) -> list[Policy]:
    """Every team-namespace policy: `repositories` maps a team to its own image repositories,
    which no other team may run from; `gpu_direct_pools` are the GPU pools built on their fast
    path, where gpuDirectPods teams' pods may take what GKE's manifests do. What else differs
    by team (its priority and storage classes, host networking, GPUDirect) each policy reads
    on the namespace."""
    return [
        pod_security(sorted(set(gpu_direct_pools))),
        scheduling(),
        owners(),
        priorities(),
        images(repositories or {}),
        provisioner_annotations(),
        services(),
        claims(),
        daemonsets(),
    ]


def stack_documents(
    repositories: Mapping[str, Sequence[str]] | None = None, gpu_direct_pools: Sequence[str] = ()
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The stack's policies and bindings as manifests, for `refusals`."""
    return [(manifest(p), binding_manifest(p)) for p in policies(repositories, gpu_direct_pools)]
