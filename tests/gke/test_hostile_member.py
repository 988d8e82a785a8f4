"""A hostile member of team vision tries, request by request, what a member can do, and each
try is refused by the layer of the real system that would refuse it first, as the layers
judge it: RBAC (the bindings the program renders, resolved with the charts' recorded roles),
the admission policies (the registered manifests, evaluated with Google's CEL), the
namespace's ResourceQuota (its registered hard limits, counted as the quota admission counts
them), the scheduler (the registered pools' taints), NetworkPolicy (the registered policies,
`plan/netpol.py`), the VPC firewall on the node networks (the registered rules), and IAM (the
registered grants). A try the real system would let through fails here: each row names the
layer that refuses it, and the first layer (in the API server's order) that does must be it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from catalog.tpu import ACCELERATOR_LABEL, TPU_TAINT_KEY
from components.gke.admission import SERVICES_PRIORITY_CLASS, refusals
from components.gke.admission.offline import RESOURCES as ADMITTED
from components.gke.checks.teams import quantity as parse_quantity
from components.gke.kueue import JOBSET_CONTROLLER
from components.gke.quota import DEDICATED_KEY
from graph import types
from graph.engine import Graph
from graph.netpol import Pod, connects
from graph.rbac import allowed
from tests.conftest import build_graph, with_config

VISION = {"vision@example.com"}
VISION_REPO = "us-docker.pkg.dev/test-project/vision"
SPEECH_REPO = "us-docker.pkg.dev/test-project/speech"
STACK = with_config(
    **{"gcp:region": "us-east5", "gcp:zone": "us-east5-b"},
    network={"additionalNodeNetworks": [{"name": "dcn-1", "subnetCidr": "10.200.0.0/22"}]},
    cluster={
        "rbacSecurityGroup": "gke-security-groups@example.com",
        "imageRepositories": ["us-docker.pkg.dev/test-project/base"],
    },
    tpuSlices=[
        {"name": "shared", "accelerator": "v6e-16", "count": 2},
        {"name": "own", "accelerator": "v6e-16", "team": "speech"},
    ],
    buckets=[{"name": "data", "owner": "vision"}],
    teams=[
        {
            "name": "vision",
            "groups": ["vision@example.com"],
            "imageRepositories": [VISION_REPO],
            "priorityClasses": ["low", "normal"],
            "buckets": {"data": "write"},
            "limits": {"cpu": "4", "memory": "16Gi", "pods": 5, "objects": 10},
        },
        {
            "name": "speech",
            "groups": ["speech@example.com"],
            "tpuHostNetwork": True,
            "imageRepositories": [SPEECH_REPO],
            "buckets": {"data": "read"},
        },
    ],
)
LAYERS = ("rbac", "admission", "quota", "scheduler", "network", "dcn", "iam")
"""In the order a request meets them: the API server authorizes, then admits (validating
admission policies, then the quota admission last), then the scheduler places pods, and the
data paths are judged by NetworkPolicy, the VPC firewall and IAM."""


@cache
def graph() -> Graph:
    return build_graph(STACK)


def documents() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    bindings = {
        b.inputs["spec"]["policyName"]: b.inputs
        for b in graph().of_type(types.VALIDATING_ADMISSION_POLICY_BINDING)
    }
    return [
        (p.inputs, bindings[p.inputs["metadata"]["name"]])
        for p in graph().of_type(types.VALIDATING_ADMISSION_POLICY)
    ]


def namespace(name: str) -> dict[str, Any]:
    (ns,) = [
        r.inputs for r in graph().of_type(types.NAMESPACE) if r.inputs["metadata"]["name"] == name
    ]
    labels = {**ns["metadata"].get("labels", {}), "kubernetes.io/metadata.name": name}
    return {"kind": "Namespace", "metadata": {**ns["metadata"], "labels": labels}}


# What a request is, and the layers that judge it.


@dataclass(frozen=True)
class Write:
    """A member's create (or, with `old`, update) of `obj` in its namespace."""

    obj: dict[str, Any]
    old: dict[str, Any] | None = None
    user: str = "member@example.com"
    groups: frozenset[str] = frozenset(VISION)


@dataclass(frozen=True)
class Verb:
    """A member's request RBAC alone judges (`kubectl auth can-i`)."""

    verb: str
    group: str
    resource: str
    namespace: str | None = "vision"


@dataclass(frozen=True)
class Path:
    """A data path: a connection from a team's pod (or a slice's host) to another's, judged
    by NetworkPolicy (`network`) or the node network's firewall (`dcn`), or a grant IAM
    judges (`iam`)."""

    layer: str
    check: Callable[[], bool]


RESOURCES = {**ADMITTED, "ConfigMap": ("", "configmaps")}
CONTROLLERS = {"Pod"}
"""Kinds members do not create themselves: a controller does, which RBAC lets."""


def _rbac(request: Write) -> bool:
    kind = request.obj["kind"]
    if kind in CONTROLLERS or request.user != "member@example.com":
        return True
    group, resource = RESOURCES[kind]
    verb = "update" if request.old is not None else "create"
    return allowed(graph(), set(request.groups), verb, group, resource, _ns(request.obj))


def _ns(obj: dict[str, Any]) -> str:
    return obj["metadata"].get("namespace", "vision")


def _admission(request: Write) -> bool:
    return not refusals(
        request.obj, namespace(_ns(request.obj)), documents(), old=request.old, user=request.user
    )


def quantity(text: str | int | float) -> float:
    return float(text) if isinstance(text, int | float) else parse_quantity(text)


def _pod_usage(spec: dict[str, Any], defaults: dict[str, str]) -> dict[str, float]:
    """What one pod counts against a quota: the requests of its containers, a LimitRange's
    defaultRequest filling what a container does not request."""
    usage = {"pods": 1.0}
    for c in spec.get("containers", []):
        requests = {**defaults, **(c.get("resources") or {}).get("requests", {})}
        for key in ("cpu", "memory"):
            usage[f"requests.{key}"] = usage.get(f"requests.{key}", 0.0) + quantity(
                requests.get(key, 0)
            )
    return usage


def _usage(obj: dict[str, Any], defaults: dict[str, str]) -> tuple[dict[str, float], bool]:
    """What an object adds to its namespace's quotas, and whether it is in the services scope
    (a pod of the PriorityClass ai-infra-services)."""
    kind, spec = obj["kind"], obj.get("spec", {})
    if kind == "Service":
        kind_ = spec.get("type", "ClusterIP")
        found = {"services.nodeports": float(kind_ in ("NodePort", "LoadBalancer"))}
        found["services.loadbalancers"] = float(kind_ == "LoadBalancer")
        return found, False
    if kind == "PersistentVolumeClaim":
        prefix = f"{spec.get('storageClassName', '')}.storageclass.storage.k8s.io"
        size = quantity(spec["resources"]["requests"]["storage"])
        return {f"{prefix}/requests.storage": size, f"{prefix}/persistentvolumeclaims": 1}, False
    if kind == "ConfigMap":
        return {"configmaps": float(obj.get("copies", 1))}, False
    if kind in ("Deployment", "StatefulSet"):
        pod = spec["template"]["spec"]
        one = _pod_usage(pod, defaults)
        scoped = pod.get("priorityClassName") == SERVICES_PRIORITY_CLASS
        return {k: v * spec.get("replicas", 1) for k, v in one.items()}, scoped
    return {}, False


def _quota(request: Write) -> bool:
    """The namespace's quotas, as the quota admission counts what the object brings."""
    ns = _ns(request.obj)
    (limits,) = [
        r.inputs
        for r in graph().of_type(types.LIMIT_RANGE)
        if r.inputs["metadata"]["namespace"] == ns
    ]
    usage, scoped = _usage(request.obj, limits["spec"]["limits"][0]["defaultRequest"])
    for quota in graph().of_type(types.RESOURCE_QUOTA):
        if quota.inputs["metadata"]["namespace"] != ns:
            continue
        spec = quota.inputs["spec"]
        if "scopeSelector" in spec and not scoped:
            continue
        for key, used in usage.items():
            if key in spec["hard"] and used > quantity(spec["hard"][key]):
                return False
    return True


def _scheduler(request: Write) -> bool:
    """Whether some node pool takes the pod: its selector matches the pool's labels and it
    tolerates every taint the pool carries."""
    pod = request.obj["spec"]
    selector = pod.get("nodeSelector", {})
    tolerations = pod.get("tolerations", [])
    for pool in graph().of_type(types.NODE_POOL):
        node = pool.inputs["nodeConfig"]
        labels = {**node.get("labels", {}), "cloud.google.com/gke-nodepool": pool.inputs["name"]}
        if ACCELERATOR_LABEL in selector:
            labels[ACCELERATOR_LABEL] = selector[ACCELERATOR_LABEL]  # GKE's own TPU labels
        taints = [(t["key"], t["value"]) for t in node.get("taints", [])]
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        if all(
            any(
                t.get("key") == key and (t.get("operator") == "Exists" or t.get("value") == value)
                for t in tolerations
            )
            for key, value in taints
        ):
            return True
    return False


def passes(request: Write | Verb | Path, layer: str) -> bool | None:
    """Whether `layer` lets the request through; None where it does not judge it."""
    if isinstance(request, Verb):
        if layer != "rbac":
            return None
        return allowed(
            graph(), VISION, request.verb, request.group, request.resource, request.namespace
        )
    if isinstance(request, Path):
        return request.check() if layer == request.layer else None
    judges: dict[str, Callable[[Write], bool]] = {
        "rbac": _rbac,
        "admission": _admission,
        "quota": _quota,
    }
    if request.obj["kind"] == "Pod":
        judges["scheduler"] = _scheduler
    return judges[layer](request) if layer in judges else None


# The requests. Pods are written as a controller makes them: a Deployment's (under the
# services PriorityClass) unless a Job owns it.

JOB_OWNER = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
IMAGE = "us-docker.pkg.dev/test-project/vision/train:1"


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "c", "image": IMAGE, **fields}


def spec(**fields: Any) -> dict[str, Any]:
    return {"containers": [container()], **fields}


def pod(kueue: bool = False, ns: str = "vision", **fields: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "namespace": ns}
    body = spec(**fields)
    if kueue:
        metadata["ownerReferences"] = [JOB_OWNER]
    else:
        body.setdefault("priorityClassName", SERVICES_PRIORITY_CLASS)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}


def wrap(kind: str, pod_spec: dict[str, Any], ns: str = "vision", **meta: Any) -> dict[str, Any]:
    """A member's object of `kind` around a pod template."""
    template = {"metadata": {}, "spec": pod_spec}
    job = {"template": template}
    metadata = {"name": "x", "namespace": ns, **meta}
    bodies = {
        "Job": ("batch/v1", job),
        "JobSet": (
            "jobset.x-k8s.io/v1alpha2",
            {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": job}}]},
        ),
        "CronJob": ("batch/v1", {"schedule": "* * * * *", "jobTemplate": {"spec": job}}),
        "Deployment": (
            "apps/v1",
            {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": template},
        ),
        "StatefulSet": (
            "apps/v1",
            {"serviceName": "s", "selector": {"matchLabels": {"a": "b"}}, "template": template},
        ),
    }
    api, body = bodies[kind]
    return {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": body}


SERVICE_KINDS = ("Deployment", "StatefulSet")
KUEUE_KINDS = ("Job", "JobSet", "CronJob")


def as_service(**fields: Any) -> dict[str, Any]:
    return spec(priorityClassName=SERVICES_PRIORITY_CLASS, **fields)


def hostile_specs() -> dict[str, dict[str, Any]]:
    """Pod specs every layer-free path refuses, whoever holds them."""
    found = {
        "privileged": {"containers": [container(securityContext={"privileged": True})]},
        "hostPID": {"hostPID": True},
        "hostIPC": {"hostIPC": True},
        "hostNetwork": {"hostNetwork": True},
        "a host port": {"containers": [container(ports=[{"containerPort": 22, "hostPort": 22}])]},
        "SYS_ADMIN": {
            "containers": [container(securityContext={"capabilities": {"add": ["SYS_ADMIN"]}})]
        },
        "NET_RAW": {
            "containers": [container(securityContext={"capabilities": {"add": ["NET_RAW"]}})]
        },
        "unmasked /proc": {"containers": [container(securityContext={"procMount": "Unmasked"})]},
        "unconfined seccomp": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
        "unconfined AppArmor": {
            "containers": [container(securityContext={"appArmorProfile": {"type": "Unconfined"}})]
        },
        "spc_t SELinux": {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}},
        "an unsafe sysctl": {"securityContext": {"sysctls": [{"name": "kernel.msgmax"}]}},
        "a Windows host process": {"securityContext": {"windowsOptions": {"hostProcess": True}}},
        "a probe to another host": {
            "containers": [container(livenessProbe={"httpGet": {"host": "10.0.0.2", "port": 80}})]
        },
        "a privileged init container": {
            "initContainers": [container(securityContext={"privileged": True})]
        },
        "the system pool's toleration": {
            "tolerations": [
                {"key": "components.gke.io/gke-managed-components", "operator": "Exists"}
            ]
        },
        "a toleration of everything": {"tolerations": [{"operator": "Exists"}]},
        "speech's own slices' toleration": {
            "tolerations": [{"key": DEDICATED_KEY, "operator": "Equal", "value": "speech"}]
        },
        "any team's own slices' toleration": {
            "tolerations": [{"key": DEDICATED_KEY, "operator": "Exists"}]
        },
        "a node name": {"nodeName": "gke-system-node-1"},
        "another team's image": {"containers": [container(image=f"{SPEECH_REPO}/asr:1")]},
        "another team's image, host in capitals": {
            "containers": [container(image="US-DOCKER.PKG.DEV/test-project/speech/asr:1")]
        },
        "another team's image, host with a trailing dot": {
            "containers": [container(image="us-docker.pkg.dev./test-project/speech/asr:1")]
        },
        "another team's image, on port 443": {
            "containers": [container(image="us-docker.pkg.dev:443/test-project/speech/asr:1")]
        },
        "another team's image, on port 0443": {
            "containers": [container(image="Us-Docker.Pkg.Dev:0443/test-project/speech/asr:1")]
        },
        "another team's image by digest": {
            "containers": [container(image=f"{SPEECH_REPO}/asr@sha256:{'a' * 64}")]
        },
        "an image by id alone": {"containers": [container(image="sha256:" + "b" * 64)]},
        "another team's image in an init container": {
            "initContainers": [container(image=f"{SPEECH_REPO}/asr:1")]
        },
        "another team's image as an image volume": {
            "volumes": [{"name": "v", "image": {"reference": f"{SPEECH_REPO}/weights:1"}}]
        },
    }
    volumes = {
        "nfs": {"server": "10.0.0.2", "path": "/home"},
        "hostPath": {"path": "/"},
        "iscsi": {"targetPortal": "10.0.0.2:3260", "iqn": "iqn.x", "lun": 0},
        "gcePersistentDisk": {"pdName": "slurm-controller-state"},
        "rbd": {"monitors": ["10.0.0.2"], "image": "i"},
        "cephfs": {"monitors": ["10.0.0.2"]},
        "glusterfs": {"endpoints": "e", "path": "p"},
        "flexVolume": {"driver": "x/y"},
        "cinder": {"volumeID": "v"},
        "fc": {"wwids": ["w"]},
        "azureFile": {"secretName": "s", "shareName": "s"},
        "azureDisk": {"diskName": "d", "diskURI": "u"},
        "gitRepo": {"repository": "https://example.com/r.git"},
        "portworxVolume": {"volumeID": "v"},
        "quobyte": {"registry": "r", "volume": "v"},
        "storageos": {"volumeName": "v"},
        "vsphereVolume": {"volumePath": "p"},
        "photonPersistentDisk": {"pdID": "p"},
        "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "n"}},
        "awsElasticBlockStore": {"volumeID": "v"},
    }
    for kind, source in volumes.items():
        found[f"an inline {kind} volume"] = {"volumes": [{"name": "v", kind: source}]}
    drivers = {
        "Filestore": {"driver": "filestore.csi.storage.gke.io"},
        "Managed Lustre": {"driver": "lustre.csi.storage.gke.io"},
        "Persistent Disk": {"driver": "pd.csi.storage.gke.io"},
        "a Cloud Storage FUSE look-alike": {"driver": "GCSFUSE.csi.storage.gke.io"},
    }
    for name, source in drivers.items():
        found[f"an inline {name} CSI volume"] = {"volumes": [{"name": "v", "csi": source}]}
    return found


def admission_rows() -> list[tuple[str, Write]]:
    rows = []
    for case, fields in hostile_specs().items():
        for kind in (*SERVICE_KINDS, *KUEUE_KINDS):
            body = as_service(**fields) if kind in SERVICE_KINDS else spec(**fields)
            rows.append((f"{case} in a {kind}", Write(wrap(kind, body))))
        # ... and the pod a controller makes of it, should an older template slip through.
        rows.append((f"{case} in a Deployment's pod", Write(pod(**fields))))
    return rows


def _toleration(key: str) -> dict[str, str]:
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def scheduling_rows() -> list[tuple[str, Write]]:
    tpu = {"limits": {"google.com/tpu": "4"}}
    return [
        (
            "TPU toleration in a Deployment",
            Write(wrap("Deployment", as_service(tolerations=[_toleration(TPU_TAINT_KEY)]))),
        ),
        (
            "GPU toleration in a StatefulSet",
            Write(wrap("StatefulSet", as_service(tolerations=[_toleration("nvidia.com/gpu")]))),
        ),
        (
            "TPU chips in a Deployment",
            Write(wrap("Deployment", as_service(containers=[container(resources=tpu)]))),
        ),
        (
            "flex-start toleration in a Deployment",
            Write(
                wrap(
                    "Deployment",
                    as_service(tolerations=[_toleration("cloud.google.com/gke-queued")]),
                )
            ),
        ),
        (
            "a Kueue pod on TPU hosts without chips",
            Write(pod(kueue=True, tolerations=[_toleration(TPU_TAINT_KEY)])),
        ),
        (
            "hostNetwork on shared slices by an opted-in team",
            Write(
                pod(
                    kueue=True,
                    ns="speech",
                    hostNetwork=True,
                    tolerations=[_toleration(TPU_TAINT_KEY)],
                    containers=[container(resources=tpu)],
                )
            ),
        ),
        (
            "hostNetwork on vision's pods selecting speech's own slices",
            Write(
                pod(
                    kueue=True,
                    hostNetwork=True,
                    nodeSelector={DEDICATED_KEY: "speech"},
                    containers=[container(resources=tpu)],
                )
            ),
        ),
    ]


def placement_rows() -> list[tuple[str, Write]]:
    """Pods the policies admit that no node takes: the taints of the pools they select."""
    tpu = {"limits": {"google.com/tpu": "4"}}
    return [
        (
            "a vision job's pod selecting speech's own slices",
            Write(
                pod(
                    kueue=True,
                    nodeSelector={DEDICATED_KEY: "speech"},
                    tolerations=[_toleration(TPU_TAINT_KEY)],
                    containers=[container(resources=tpu)],
                )
            ),
        ),
        (
            "a vision job's pod selecting a speech slice pool by name",
            Write(
                pod(
                    kueue=True,
                    nodeSelector={"cloud.google.com/gke-nodepool": "own-0"},
                    tolerations=[_toleration(TPU_TAINT_KEY)],
                    containers=[container(resources=tpu)],
                )
            ),
        ),
        (
            "a Deployment's pod selecting the system pool",
            Write(pod(nodeSelector={"cloud.google.com/gke-nodepool": "system"})),
        ),
    ]


OWNER_KINDS = {
    "Job": "batch/v1",
    "JobSet": "jobset.x-k8s.io/v1alpha2",
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "Pod": "v1",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
    "RayCluster": "ray.io/v1",
    "RayJob": "ray.io/v1",
    "PyTorchJob": "kubeflow.org/v1",
    "MPIJob": "kubeflow.org/v2beta1",
    "AppWrapper": "workload.codeflare.dev/v1beta2",
    "TrainJob": "trainer.kubeflow.org/v1alpha1",
}
"""Kinds Kueue v0.19.2 walks through as a known owner (integrationmanager.go isKnownOwner)."""


def owner_rows() -> list[tuple[str, Write]]:
    rows = []
    for owner, api in OWNER_KINDS.items():
        ref = {"apiVersion": api, "kind": owner, "name": "o", "uid": "u", "controller": True}
        for kind in ("Job", "JobSet"):
            obj = wrap(kind, spec(), ownerReferences=[ref])
            rows.append((f"a {kind} whose controller is an admitted {owner}", Write(obj)))
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "o", "uid": "u", "controller": True}
    plain = wrap("Job", spec())
    rows.append(
        (
            "a Job given an admitted Job as controller afterwards",
            Write(wrap("Job", spec(), ownerReferences=[ref]), old=plain),
        )
    )
    jobset = {**ref, "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}
    rows.append(
        (
            "the JobSet controller making a JobSet",
            Write(wrap("JobSet", spec(), ownerReferences=[jobset]), user=JOBSET_CONTROLLER),
        )
    )
    return rows


def priority_rows() -> list[tuple[str, Write]]:
    rows = []
    for name in ("high", "system-cluster-critical", "unknown"):
        label = {"kueue.x-k8s.io/priority-class": name}
        for kind in ("Job", "JobSet"):
            rows.append((f"a {kind} at priority {name}", Write(wrap(kind, spec(), labels=label))))
        cron = wrap("CronJob", spec())
        cron["spec"]["jobTemplate"]["metadata"] = {"labels": label}
        rows.append((f"a CronJob whose Jobs run at priority {name}", Write(cron)))
    relabelled = wrap("Job", spec(), labels={"kueue.x-k8s.io/priority-class": "high"})
    rows.append(("a Job relabelled to priority high", Write(relabelled, old=wrap("Job", spec()))))
    for name in ("system-node-critical", "system-cluster-critical"):
        for kind in KUEUE_KINDS:
            rows.append(
                (
                    f"a {kind} pod of PriorityClass {name}",
                    Write(wrap(kind, spec(priorityClassName=name))),
                )
            )
        rows.append(
            (
                f"a Deployment pod of PriorityClass {name}",
                Write(wrap("Deployment", spec(priorityClassName=name))),
            )
        )
    rows.append(
        ("a Deployment outside the services PriorityClass", Write(wrap("Deployment", spec())))
    )
    for annotation in ("node-service-account", "additional-node-networks", "copy-labels"):
        for kind in (*KUEUE_KINDS, *SERVICE_KINDS):
            obj = wrap(kind, spec() if kind in KUEUE_KINDS else as_service())
            template = (
                obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
                if kind == "JobSet"
                else obj["spec"]["jobTemplate"]["spec"]["template"]
                if kind == "CronJob"
                else obj["spec"]["template"]
            )
            template["metadata"] = {
                "annotations": {f"tpu-provisioner.cloud.google.com/{annotation}": "x"}
            }
            rows.append((f"a {kind} with the provisioner's {annotation} annotation", Write(obj)))
    rows.append(
        (
            "a Job pod under the services PriorityClass",
            Write(wrap("Job", spec(priorityClassName=SERVICES_PRIORITY_CLASS))),
        )
    )
    return rows


def service(ns: str = "vision", **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": ns},
        "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}, **fields},
    }


def claim(storage_class: str | None, size: str = "10Gi") -> dict[str, Any]:
    body: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    }
    if storage_class is not None:
        body["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c", "namespace": "vision"},
        "spec": body,
    }


def object_rows() -> list[tuple[str, Write]]:
    rows = []
    for ns in ("vision", "speech"):
        groups = frozenset(VISION if ns == "vision" else {"speech@example.com"})
        for kind in ("LoadBalancer", "NodePort", "ExternalName"):
            rows.append((f"a {kind} Service in {ns}", Write(service(ns, type=kind), groups=groups)))
        rows.append(
            (
                f"a Service with externalIPs in {ns}",
                Write(service(ns, externalIPs=["169.254.169.254"]), groups=groups),
            )
        )
    for storage_class in (
        "premium-rwo",
        "standard",
        "standard-rwx",
        "premium-rwx",
        "enterprise-rwx",
        "zonal-rwx",
        "lustre",
        "hyperdisk-balanced",
    ):
        rows.append((f"a claim of class {storage_class}", Write(claim(storage_class))))
    return rows


def quota_rows() -> list[tuple[str, Write]]:
    big = as_service(containers=[container(resources={"requests": {"cpu": "8"}})])
    many = wrap("Deployment", as_service())
    many["spec"]["replicas"] = 6
    memory = as_service(containers=[container(resources={"requests": {"memory": "32Gi"}})])
    defaults = wrap("StatefulSet", as_service())
    defaults["spec"]["replicas"] = 41  # 41 x the LimitRange's 100m is over the 4 CPUs
    configs = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "vision"},
        "copies": 11,
    }
    return [
        ("a Deployment asking 8 CPUs of 4", Write(wrap("Deployment", big))),
        ("six service pods of five", Write(many)),
        ("a StatefulSet asking 32Gi of 16Gi", Write(wrap("StatefulSet", memory))),
        ("41 pods that request nothing, at the LimitRange's default", Write(defaults)),
        ("a standard-rwo claim of 1Ti, over its 500Gi", Write(claim("standard-rwo", "1Ti"))),
        ("eleven ConfigMaps of ten", Write(configs)),
    ]


def verb_rows() -> list[tuple[str, Verb]]:
    rows = [
        ("create a bare pod", Verb("create", "", "pods")),
        ("update a pod (its ephemeral containers)", Verb("update", "", "pods/ephemeralcontainers")),
        ("create a namespace", Verb("create", "", "namespaces", None)),
        ("relabel its namespace", Verb("patch", "", "namespaces", None)),
        ("delete its NetworkPolicy", Verb("delete", "networking.k8s.io", "networkpolicies")),
        ("create a NetworkPolicy", Verb("create", "networking.k8s.io", "networkpolicies")),
        ("raise its ResourceQuota", Verb("update", "", "resourcequotas")),
        ("delete its LimitRange", Verb("delete", "", "limitranges")),
        ("bind itself a role", Verb("create", "rbac.authorization.k8s.io", "rolebindings")),
        ("write a role", Verb("create", "rbac.authorization.k8s.io", "roles")),
        ("write a ClusterRole", Verb("create", "rbac.authorization.k8s.io", "clusterroles", None)),
        (
            "bind a ClusterRole",
            Verb("create", "rbac.authorization.k8s.io", "clusterrolebindings", None),
        ),
        ("create a PriorityClass", Verb("create", "scheduling.k8s.io", "priorityclasses", None)),
        (
            "create a WorkloadPriorityClass",
            Verb("create", "kueue.x-k8s.io", "workloadpriorityclasses", None),
        ),
        ("raise its ClusterQueue", Verb("update", "kueue.x-k8s.io", "clusterqueues", None)),
        ("point its LocalQueue elsewhere", Verb("update", "kueue.x-k8s.io", "localqueues")),
        ("admit its own Workload", Verb("update", "kueue.x-k8s.io", "workloads/status")),
        ("create a DaemonSet", Verb("create", "apps", "daemonsets")),
        ("create a ReplicaSet", Verb("create", "apps", "replicasets")),
        ("create a PersistentVolume", Verb("create", "", "persistentvolumes", None)),
        ("create a StorageClass", Verb("create", "storage.k8s.io", "storageclasses", None)),
        (
            "delete an admission policy",
            Verb("delete", "admissionregistration.k8s.io", "validatingadmissionpolicies", None),
        ),
        (
            "unbind an admission policy",
            Verb(
                "delete",
                "admissionregistration.k8s.io",
                "validatingadmissionpolicybindings",
                None,
            ),
        ),
        ("create a service account", Verb("create", "", "serviceaccounts")),
        ("mint a token of the training account", Verb("create", "", "serviceaccounts/token")),
        ("read nodes", Verb("list", "", "nodes", None)),
    ]
    for verb, group, resource in (
        ("create", "jobset.x-k8s.io", "jobsets"),
        ("create", "batch", "jobs"),
        ("get", "", "secrets"),
        ("create", "", "pods/exec"),
        ("delete", "", "pods"),
        ("create", "", "services"),
        ("create", "", "persistentvolumeclaims"),
        ("get", "", "pods/log"),
    ):
        rows.append((f"{verb} {resource} in speech", Verb(verb, group, resource, "speech")))
    return rows


def _pod_of(team: str) -> Pod:
    return Pod(team, namespace_labels={"ai-infra/team": team})


def _node_pool_tags(name: str) -> set[str]:
    (pool,) = [p for p in graph().of_type(types.NODE_POOL) if p.inputs["name"] == name]
    return set(pool.inputs["nodeConfig"]["tags"])


def _dcn(source: str, target: str) -> bool:
    rules = [
        r.inputs
        for r in graph().of_type(types.FIREWALL)
        if r.inputs["network"] == "ai-test-dcn-1-vpc"
    ]
    return any(
        set(r["sourceTags"]) & _node_pool_tags(source)
        and set(r["targetTags"]) & _node_pool_tags(target)
        for r in rules
    )


def _bucket_role(team: str, role: str) -> bool:
    member = f"serviceAccount:ai-test-{team}@test-project.iam.gserviceaccount.com"
    return any(
        r.inputs["member"] == member and r.inputs["role"] == role
        for r in graph().of_type(types.BUCKET_IAM_MEMBER)
    )


def _reads_repository(account: str, repository: str) -> bool:
    member = f"serviceAccount:{account}@test-project.iam.gserviceaccount.com"
    return any(
        r.inputs["member"] == member and r.inputs["repository"].endswith(repository)
        for r in graph().of_type(types.REPOSITORY_IAM_MEMBER)
    )


def path_rows() -> list[tuple[str, str, Path]]:
    rows: list[tuple[str, str, Path]] = []
    for port in (22, 80, 443, 6379, 8080, 8471, 8476, 9000):
        rows.append(
            (
                f"vision pod to speech pod on tcp:{port}",
                "network",
                Path(
                    "network",
                    lambda port=port: connects(graph(), _pod_of("vision"), _pod_of("speech"), port),
                ),
            )
        )
    kube = Pod("kueue-system", labels={"control-plane": "controller-manager"})
    for port in (8443, 9443, 8082):
        rows.append(
            (
                f"vision pod to Kueue's controller on tcp:{port}",
                "network",
                Path("network", lambda port=port: connects(graph(), _pod_of("vision"), kube, port)),
            )
        )
    dns = Pod("kube-system", labels={"k8s-app": "kube-dns"})
    rows.append(
        (
            "vision pod to kube-dns on tcp:8080",
            "network",
            Path("network", lambda: connects(graph(), _pod_of("vision"), dns, 8080)),
        )
    )
    for source, target in (("shared-0", "own-0"), ("own-0", "shared-1")):
        rows.append(
            (
                f"{source}'s hosts to {target}'s over dcn-1",
                "dcn",
                Path("dcn", lambda s=source, t=target: _dcn(s, t)),
            )
        )
    rows += [
        (
            "speech writes vision's bucket",
            "iam",
            Path("iam", lambda: _bucket_role("speech", "roles/storage.objectUser")),
        ),
        (
            "speech deletes in vision's bucket",
            "iam",
            Path("iam", lambda: _bucket_role("speech", "roles/storage.objectAdmin")),
        ),
        (
            "speech's host-network pod, as its nodes' account, reads vision's images",
            "iam",
            Path(
                "iam",
                lambda: _reads_repository("ai-test-speech-nodes", "/repositories/vision"),
            ),
        ),
        (
            "the shared nodes' account reads a repository nobody named",
            "iam",
            Path("iam", lambda: _reads_repository("ai-test-nodes", "/repositories/private")),
        ),
    ]
    return rows


def table() -> list[tuple[str, str, Write | Verb | Path]]:
    rows: list[tuple[str, str, Write | Verb | Path]] = []
    rows += [(case, "admission", r) for case, r in admission_rows()]
    rows += [(case, "admission", r) for case, r in scheduling_rows()]
    rows += [(case, "scheduler", r) for case, r in placement_rows()]
    rows += [(case, "admission", r) for case, r in owner_rows()]
    rows += [(case, "admission", r) for case, r in priority_rows()]
    rows += [(case, "admission", r) for case, r in object_rows()]
    rows += [(case, "quota", r) for case, r in quota_rows()]
    rows += [(case, "rbac", r) for case, r in verb_rows()]
    rows += path_rows()
    return rows


TABLE = table()


def test_the_table_tries_well_over_a_hundred_requests_each_once():
    names = [case for case, _, _ in TABLE]
    assert len(names) == len(set(names))
    assert len(names) > 300


@pytest.mark.parametrize(("case", "layer", "request_"), TABLE, ids=[c for c, _, _ in TABLE])
def test_each_try_is_refused_by_the_layer_that_would_refuse_it(case, layer, request_):
    verdicts = {name: passes(request_, name) for name in LAYERS}
    first = next((name for name in LAYERS if verdicts[name] is False), None)
    assert first == layer, f"{case}: {verdicts}"


def test_what_the_member_may_do_passes_every_layer():
    """The same paths, used as meant, are open: the hostile table does not refuse
    everything."""
    tpu = {"limits": {"google.com/tpu": "4"}}
    own = pod(
        kueue=True,
        ns="speech",
        hostNetwork=True,
        nodeSelector={DEDICATED_KEY: "speech"},
        tolerations=[
            _toleration(TPU_TAINT_KEY),
            {"key": DEDICATED_KEY, "operator": "Equal", "value": "speech", "effect": "NoSchedule"},
        ],
        containers=[container(image=f"{SPEECH_REPO}/asr:1", resources=tpu)],
    )
    fine = [
        Write(wrap("Deployment", as_service())),
        Write(wrap("JobSet", spec(), labels={"kueue.x-k8s.io/priority-class": "normal"})),
        Write(
            wrap(
                "Job",
                spec(volumes=[{"name": "v", "csi": {"driver": "gcsfuse.csi.storage.gke.io"}}]),
            )
        ),
        Write(
            wrap(
                "Job", spec(containers=[container(image="us-docker.pkg.dev/test-project/base/x:1")])
            )
        ),
        Write(wrap("Job", spec(containers=[container(image="python:3.12")]))),
        Write(service(clusterIP="None")),
        Write(claim("standard-rwo")),
        Write(claim("")),
        Write(own, groups=frozenset({"speech@example.com"})),
    ]
    for request in fine:
        verdicts = {name: passes(request, name) for name in LAYERS}
        assert False not in verdicts.values(), (request.obj["kind"], verdicts)
    assert connects(graph(), _pod_of("vision"), _pod_of("vision"), 8476)
    assert _dcn("shared-0", "shared-1")
    assert _bucket_role("vision", "roles/storage.objectUser")
    assert _reads_repository("ai-test-speech-nodes", "/repositories/speech")
    assert _reads_repository("ai-test-nodes", "/repositories/vision")
