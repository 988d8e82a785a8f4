"""The admission policies of team namespaces, evaluated as the API server would: the objects
the program registers, run with Google's CEL implementation against hostile pod specs and
against the shipped example JobSets, which must still be admitted (and the pods the Job
controller makes of them once Kueue has admitted them)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from catalog.tpu import ACCELERATOR_LABEL, TPU_TAINT_KEY
from components.gke import admission
from components.gke.admission import (
    HOST_NETWORK_LABEL,
    SERVICES_PRIORITY_CLASS,
    TEAM_LABEL,
    refusals,
)
from components.gke.kueue import JOBSET_CONTROLLER
from components.gke.quota import DEDICATED_KEY
from graph.engine import REPO_ROOT, Graph, load_stack_config
from tests.conftest import build_graph, with_config, with_mega_pool

VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
SLICE = {"name": "s", "accelerator": "v5p-16"}
TPU_SELECTOR = {ACCELERATOR_LABEL: "tpu-v5p-slice", "cloud.google.com/gke-tpu-topology": "2x2x2"}
OWN_SELECTOR = {**TPU_SELECTOR, DEDICATED_KEY: "speech"}
"""speech's own slices (tpuSlices[].team), where its host-network pods may run."""
OWN_TOLERATION = {"key": DEDICATED_KEY, "operator": "Equal", "value": "speech"}
JOB_OWNER = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}]
KUEUE_TOLERATION = {"key": TPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def registered(graph: Graph) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(policy, binding) as the program registered them."""
    bindings = {b.inputs["spec"]["policyName"]: b.inputs for b in graph.of_type(BINDING)}
    return [(p.inputs, bindings[p.inputs["metadata"]["name"]]) for p in graph.of_type(VAP)]


@pytest.fixture(scope="module")
def documents() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    graph = build_graph(
        with_config(
            tpuSlices=[SLICE, {"name": "own", "accelerator": "v5p-16", "team": "speech"}],
            teams=[{"name": "vision"}, {"name": "speech", "tpuHostNetwork": True}],
        )
    )
    return registered(graph)


def namespace(name: str, *, host_network: bool = False) -> dict[str, Any]:
    labels = {TEAM_LABEL: name, "kubernetes.io/metadata.name": name}
    if host_network:
        labels[HOST_NETWORK_LABEL] = "true"
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod(**spec: Any) -> dict[str, Any]:
    """A pod as a controller makes it: a Job's (Kueue's) when its metadata names a Job as its
    controller, else a Deployment's, under the services PriorityClass every such pod gets."""
    metadata = spec.pop("metadata", {"name": "p", "namespace": "vision"})
    kueue = any(o.get("kind") == "Job" for o in metadata.get("ownerReferences", []))
    defaults: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if not kueue:
        defaults["priorityClassName"] = SERVICES_PRIORITY_CLASS
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {**defaults, **spec}}


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "c", "image": "busybox", **fields}


HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("privileged", pod(containers=[container(securityContext={"privileged": True})]), "privileged"),
    ("hostPath", pod(volumes=[{"name": "root", "hostPath": {"path": "/"}}]), "hostPath"),
    ("hostPID", pod(hostPID=True), "hostPID"),
    ("hostIPC", pod(hostIPC=True), "hostPID and hostIPC"),
    ("hostNetwork on a CPU node", pod(hostNetwork=True), "hostNetwork"),
    (
        "hostNetwork on a TPU node, but not Kueue's",
        pod(hostNetwork=True, nodeSelector=TPU_SELECTOR),
        "hostNetwork",
    ),
    (
        "a host port",
        pod(containers=[container(ports=[{"containerPort": 80, "hostPort": 80}])]),
        "hostPort",
    ),
    (
        "SYS_ADMIN",
        pod(containers=[container(securityContext={"capabilities": {"add": ["SYS_ADMIN"]}})]),
        "capabilities",
    ),
    (
        "a privileged init container",
        pod(initContainers=[container(securityContext={"privileged": True})]),
        "privileged",
    ),
    (
        "unconfined seccomp",
        pod(securityContext={"seccompProfile": {"type": "Unconfined"}}),
        "seccomp",
    ),
    (
        "an unsafe sysctl",
        pod(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}),
        "sysctls",
    ),
    (
        "unmasked /proc",
        pod(containers=[container(securityContext={"procMount": "Unmasked"})]),
        "procMount",
    ),
    (
        "an SELinux type beyond the container ones",
        pod(securityContext={"seLinuxOptions": {"type": "spc_t"}}),
        "SELinux",
    ),
    (
        "a container's SELinux type beyond the container ones",
        pod(containers=[container(securityContext={"seLinuxOptions": {"type": "unconfined_t"}})]),
        "SELinux",
    ),
    (
        "a pod-level Windows host process",
        pod(securityContext={"windowsOptions": {"hostProcess": True}}),
        "Windows",
    ),
    (
        "an unconfined AppArmor annotation",
        pod(
            metadata={
                "name": "p",
                "namespace": "vision",
                "annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"},
            }
        ),
        "AppArmor",
    ),
    (
        "a probe that names a host",
        pod(
            containers=[container(livenessProbe={"tcpSocket": {"host": "10.0.0.2", "port": 6817}})]
        ),
        "name a host",
    ),
    (
        "a lifecycle hook that names a host",
        pod(
            containers=[
                container(
                    lifecycle={"preStop": {"httpGet": {"host": "169.254.169.254", "port": 80}}}
                )
            ]
        ),
        "name a host",
    ),
    ("TPU toleration without a queue", pod(tolerations=[KUEUE_TOLERATION]), "Kueue-managed"),
    (
        "GPU toleration without a queue",
        pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}]),
        "Kueue-managed",
    ),
    (
        "TPU chips outside Kueue (a Deployment's pod the provisioner would make a pool for)",
        pod(
            containers=[container(resources={"requests": {"google.com/tpu": "4"}})],
            metadata={
                "name": "p",
                "namespace": "vision",
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u"}
                ],
            },
        ),
        "Kueue-managed",
    ),
    (
        "GPU chips outside Kueue",
        pod(containers=[container(resources={"limits": {"nvidia.com/gpu": "1"}})]),
        "Kueue-managed",
    ),
    ("tolerate everything", pod(tolerations=[{"operator": "Exists"}]), "name its taint"),
    (
        "the system pool's taint",
        pod(tolerations=[{"key": admission.SYSTEM_TAINT, "operator": "Exists"}]),
        "system pool",
    ),
    ("a node name", pod(nodeName="gke-system-1"), "nodeName"),
    (
        "provisioner annotations",
        pod(
            metadata={
                "name": "p",
                "namespace": "vision",
                "annotations": {
                    "tpu-provisioner.cloud.google.com/additional-node-networks": "other:net"
                },
            }
        ),
        "tpu-provisioner.cloud.google.com/",
    ),
    (
        "a DaemonSet",
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "d", "namespace": "vision"},
            "spec": {"template": {"spec": {"containers": [container()]}}},
        },
        "DaemonSet",
    ),
]


@pytest.mark.parametrize(("case", "obj", "word"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_pods_are_refused_in_a_team_namespace(documents, case, obj, word):
    found = refusals(obj, namespace("vision"), documents)
    assert found, f"{case}: admitted"
    assert any(word in r.message for r in found), f"{case}: {found}"


@pytest.mark.parametrize(("case", "obj", "word"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_the_same_pods_wrapped_in_a_job_are_refused_too(documents, case, obj, word):
    if obj["kind"] != "Pod" or "Kueue-managed" in word:
        pytest.skip("a Job is Kueue's: its template may carry the flavor's tolerations")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "vision"},
        "spec": {"template": {"metadata": obj["metadata"], "spec": obj["spec"]}},
    }
    assert refusals(job, namespace("vision"), documents), case


def test_what_baseline_allows_is_admitted(documents):
    allowed = pod(
        securityContext={
            "seLinuxOptions": {"type": "container_t", "level": "s0:c1,c2"},
            "sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "4096 87380 6291456"}],
        },
        containers=[
            container(
                securityContext={"capabilities": {"add": ["NET_BIND_SERVICE"]}},
                readinessProbe={"httpGet": {"path": "/healthz", "port": 8080}},
            )
        ],
        metadata={
            "name": "p",
            "namespace": "vision",
            "annotations": {"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"},
        },
    )
    assert refusals(allowed, namespace("vision"), documents) == []


def test_an_ephemeral_container_is_judged_like_any_other(documents):
    # `kubectl debug` writes the pod through pods/ephemeralcontainers, which a rule for pods
    # does not match.
    debug = {"name": "debug", "image": "busybox", "securityContext": {"privileged": True}}
    running = pod(ephemeralContainers=[debug])

    def through_debug() -> list[admission.Refusal]:
        return refusals(
            running, namespace("vision"), documents, old=pod(), subresource="ephemeralcontainers"
        )

    found = through_debug()
    assert [r.policy for r in found] == ["ai-infra-team-pod-security"]
    assert "privileged" in found[0].message
    debug["securityContext"] = {}
    debug["ports"] = [{"containerPort": 22, "hostPort": 22}]
    assert [r.message for r in through_debug()] == [
        "hostPort is not allowed (Pod Security baseline)"
    ]
    del debug["ports"]
    assert through_debug() == []


def test_an_update_is_judged_only_when_it_changes_what_the_policies_read(documents):
    # A host-network pod admitted while its team had tpuHostNetwork, which it no longer has:
    # the Job controller must still be able to take its finalizer off, as Pod Security
    # Admission lets a pod update through that leaves the spec alone.
    admitted = pod(
        hostNetwork=True,
        nodeSelector=OWN_SELECTOR,
        tolerations=[KUEUE_TOLERATION, OWN_TOLERATION],
        containers=[container(resources={"limits": {"google.com/tpu": "4"}})],
        metadata={
            "name": "p",
            "namespace": "speech",
            "ownerReferences": JOB_OWNER,
            "finalizers": ["batch.kubernetes.io/job-tracking"],
        },
    )
    assert refusals(admitted, namespace("speech", host_network=True), documents) == []
    opted_out = namespace("speech")
    assert refusals(admitted, opted_out, documents)
    finished = copy.deepcopy(admitted)
    finished["metadata"]["finalizers"] = []
    assert refusals(finished, opted_out, documents, old=admitted) == []
    # What the policies read is judged again: a toleration added, annotations for the
    # provisioner, a suspended Job's template given them.
    tolerating = copy.deepcopy(admitted)
    tolerating["spec"]["tolerations"].append({"key": "x", "operator": "Exists"})
    assert refusals(tolerating, opted_out, documents, old=admitted)
    plain = pod()
    annotated = copy.deepcopy(plain)
    annotated["metadata"]["annotations"] = {
        "tpu-provisioner.cloud.google.com/node-service-account": "other@p.iam.gserviceaccount.com"
    }
    found = refusals(annotated, namespace("vision"), documents, old=plain)
    assert [r.policy for r in found] == ["ai-infra-team-provisioner-annotations"]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "vision"},
        "spec": {"suspend": True, "template": {"metadata": {}, "spec": plain["spec"]}},
    }
    steered = copy.deepcopy(job)
    steered["spec"]["template"]["metadata"] = annotated["metadata"]
    assert refusals(steered, namespace("vision"), documents, old=job)
    labelled = copy.deepcopy(plain)
    labelled["metadata"]["labels"] = {"app": "x"}
    assert refusals(labelled, namespace("vision"), documents, old=plain) == []


def child_job(owner: str = "train") -> dict[str, Any]:
    """A Job that names a JobSet as its controller, as the JobSet controller makes them."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{owner}-workers-0",
            "namespace": "vision",
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": owner,
                    "uid": "admitted-jobset-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "template": {"spec": {"containers": [container()], "tolerations": [KUEUE_TOLERATION]}}
        },
    }


def test_only_the_jobset_controller_makes_a_jobsets_jobs(documents):
    # Kueue runs a JobSet's Job unsuspended once the JobSet is admitted: a member's Job that
    # claims an admitted JobSet would take free TPU hosts outside the queue.
    forged = child_job()
    found = refusals(forged, namespace("vision"), documents)
    assert [r.policy for r in found] == ["ai-infra-team-owners"]
    assert "JobSet controller" in found[0].message
    assert refusals(forged, namespace("vision"), documents, user=JOBSET_CONTROLLER) == []
    # ... nor may a member's own Job be given such an owner afterwards.
    own = child_job()
    del own["metadata"]["ownerReferences"]
    assert refusals(own, namespace("vision"), documents) == []
    assert refusals(forged, namespace("vision"), documents, old=own)
    # The owner the controller set stays through other updates (the garbage collector
    # orphaning it, a member suspending it).
    suspended = child_job()
    suspended["spec"]["suspend"] = True
    assert refusals(suspended, namespace("vision"), documents, old=child_job()) == []
    assert refusals(own, namespace("vision"), documents, old=child_job()) == []


def test_no_job_claims_another_job(documents):
    # batch/job is a Kueue integration as well: a Job whose controller is the member's
    # admitted Job is that Job's child to Kueue, run unsuspended beside it, queue or no queue.
    forged = child_job()
    forged["metadata"]["ownerReferences"][0].update(
        {"apiVersion": "batch/v1", "kind": "Job", "uid": "admitted-job-uid"}
    )
    for user in ("member@example.com", JOBSET_CONTROLLER):
        found = refusals(forged, namespace("vision"), documents, user=user)
        assert [r.policy for r in found] == ["ai-infra-team-owners"], user
    # A CronJob's Jobs are Kueue's own top-level Jobs (CronJob is no integration).
    scheduled = copy.deepcopy(forged)
    scheduled["metadata"]["ownerReferences"][0].update({"kind": "CronJob"})
    assert refusals(scheduled, namespace("vision"), documents) == []
    # A reference that is not the controller is no parent to Kueue (GetControllerOf).
    mentioned = copy.deepcopy(forged)
    mentioned["metadata"]["ownerReferences"][0]["controller"] = False
    assert refusals(mentioned, namespace("vision"), documents) == []


def test_a_kueue_pod_on_accelerator_hosts_requests_their_chips(documents):
    # Kueue admits a pod that requests no chips on CPU quota alone (the cpu flavor has no
    # node labels), so a Job's pod that tolerates the TPU taint and selects a slice's nodes
    # would sit on TPU hosts, another team's included, and keep their pods off.
    squatter = pod(
        nodeSelector=TPU_SELECTOR,
        tolerations=[KUEUE_TOLERATION],
        containers=[container(resources={"requests": {"cpu": "8"}})],
        metadata={"name": "p", "namespace": "vision", "ownerReferences": JOB_OWNER},
    )
    found = refusals(squatter, namespace("vision"), documents)
    assert [r.policy for r in found] == ["ai-infra-team-scheduling"]
    assert "must request their chips" in found[0].message
    for kind in ("requests", "limits"):
        worker = copy.deepcopy(squatter)
        worker["spec"]["containers"][0]["resources"][kind] = {"google.com/tpu": "4"}
        assert refusals(worker, namespace("vision"), documents) == [], kind
    gpu = pod(
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}],
        initContainers=[container(resources={"limits": {"nvidia.com/gpu": "1"}})],
        metadata={"name": "p", "namespace": "vision", "ownerReferences": JOB_OWNER},
    )
    assert refusals(gpu, namespace("vision"), documents) == []


def test_a_plain_pod_and_another_namespace_are_left_alone(documents):
    assert refusals(pod(), namespace("vision"), documents) == []
    outside = {"kind": "Namespace", "metadata": {"name": "kube-system", "labels": {}}}
    assert refusals(pod(hostNetwork=True, hostPID=True), outside, documents) == []


def test_host_network_only_for_kueue_pods_on_the_teams_own_slices(documents):
    kueue_tpu_pod = pod(
        hostNetwork=True,
        dnsPolicy="ClusterFirstWithHostNet",
        nodeSelector=OWN_SELECTOR,
        tolerations=[KUEUE_TOLERATION, OWN_TOLERATION],
        containers=[container(resources={"limits": {"google.com/tpu": "4"}})],
        metadata={"name": "p", "namespace": "speech", "ownerReferences": JOB_OWNER},
    )
    assert refusals(kueue_tpu_pod, namespace("speech", host_network=True), documents) == []
    # The same pod in a team that did not opt in, on a CPU node, or on slices shared with
    # other teams (a shared node, a shared node account), is refused.
    assert refusals(kueue_tpu_pod, namespace("vision"), documents)
    cpu = copy.deepcopy(kueue_tpu_pod)
    del cpu["spec"]["nodeSelector"]
    assert refusals(cpu, namespace("speech", host_network=True), documents)
    shared = copy.deepcopy(kueue_tpu_pod)
    del shared["spec"]["nodeSelector"][DEDICATED_KEY]
    assert refusals(shared, namespace("speech", host_network=True), documents)
    # ... or on another team's own slices, which its toleration may not name either.
    other = copy.deepcopy(kueue_tpu_pod)
    other["spec"]["nodeSelector"][DEDICATED_KEY] = "vision"
    other["spec"]["tolerations"][1]["value"] = "vision"
    assert {
        r.policy for r in refusals(other, namespace("speech", host_network=True), documents)
    } == {
        "ai-infra-team-pod-security",
        "ai-infra-team-scheduling",
    }
    # Every other baseline check still holds there.
    privileged = copy.deepcopy(kueue_tpu_pod)
    privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    assert refusals(privileged, namespace("speech", host_network=True), documents)


EXAMPLES = {
    "multislice-jobset.yaml": "prod",
    "provisioned-jobset.yaml": None,
}


def test_the_example_jobsets_and_their_pods_are_admitted():
    prod = build_graph(load_stack_config("prod"), stack="prod")
    provisioner = build_graph(
        with_config(
            **{"gcp:region": "us-east5", "gcp:zone": "us-east5-a"},
            cluster={"releaseChannel": "NONE"},
            tpuProvisioner={
                "enabled": True,
                "image": "us-docker.pkg.dev/p/r/tpu-provisioner@sha256:" + "a" * 64,
                "quota": {"v5p-32": 4},
            },
            teams=[{"name": "research"}],
        )
    )
    for file, graph in (("multislice-jobset.yaml", prod), ("provisioned-jobset.yaml", provisioner)):
        jobset = yaml.safe_load((REPO_ROOT / "examples" / file).read_text())
        # The namespace as the program registers it: prod's pretrain team runs its multislice
        # JobSet on the host network (tpuHostNetwork), as GKE's multislice guide does.
        (ns,) = [
            {"kind": "Namespace", **r.inputs}
            for r in graph.of_type("kubernetes:core/v1:Namespace")
            if r.inputs["metadata"]["name"] == jobset["metadata"]["namespace"]
        ]
        assert refusals(jobset, ns, registered(graph)) == [], file
        # The pod the Job controller makes once Kueue admits it, with the flavor's toleration.
        template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        admitted = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "p",
                "namespace": ns["metadata"]["name"],
                "ownerReferences": JOB_OWNER,
            },
            "spec": {**template["spec"], "tolerations": [KUEUE_TOLERATION]},
        }
        assert refusals(admitted, ns, registered(graph)) == [], file
        # The JobSet's Jobs, which its controller makes once Kueue has admitted it.
        job = child_job(jobset["metadata"]["name"])
        job["metadata"]["namespace"] = ns["metadata"]["name"]
        job["spec"] = copy.deepcopy(jobset["spec"]["replicatedJobs"][0]["template"]["spec"])
        assert refusals(job, ns, registered(graph), user=JOBSET_CONTROLLER) == [], file


def test_the_registered_policies_are_the_manifests_the_offline_check_uses(documents):
    def shown(document: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": document["metadata"], "spec": document["spec"]}

    offline = admission.stack_documents()
    assert [(shown(p), shown(b)) for p, b in documents] == offline


def test_an_erring_expression_refuses_as_failure_policy_fail(documents):
    # A JobSet without replicatedJobs makes the specs variable err: Fail refuses.
    broken = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "x"},
        "spec": {},
    }
    assert refusals(broken, namespace("vision"), documents)


PLAIN_POOL = {
    "machineType": "g2-standard-8",
    "acceleratorType": "nvidia-l4",
    "acceleratorCount": 1,
    "maxNodes": 1,
}


def tcpxo_pod(namespace: str, **changes: Any) -> dict[str, Any]:
    """A pod of GKE's TCPXO example as the Job controller makes it on the pool `mega`."""
    sidecar = container(
        name="tcpxo-daemon",
        restartPolicy="Always",
        securityContext={"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}},
    )
    spec = {
        "nodeSelector": {"cloud.google.com/gke-nodepool": "mega"},
        "initContainers": [sidecar],
        "volumes": [
            {"name": "libraries", "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64"}},
            {"name": "sys", "hostPath": {"path": "/sys"}},
            {"name": "proc-sys", "hostPath": {"path": "/proc/sys"}},
        ],
        "metadata": {"name": "p", "namespace": namespace, "ownerReferences": JOB_OWNER},
    }
    return pod(**{**spec, **changes})


@pytest.fixture(scope="module")
def gpu_documents() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    graph = build_graph(
        with_mega_pool(
            gpuPools=[{**PLAIN_POOL, "name": "plain"}],
            teams=[{"name": "vision", "gpuDirectPods": True}, {"name": "speech"}],
        )
    )
    return registered(graph)


def gpu_namespace(name: str, *, gpu_direct: bool) -> dict[str, Any]:
    ns = namespace(name)
    if gpu_direct:
        ns["metadata"]["labels"][admission.GPU_DIRECT_LABEL] = "true"
    return ns


def test_gpu_direct_pods_only_on_fast_path_pools_of_an_opted_in_team(gpu_documents):
    vision = gpu_namespace("vision", gpu_direct=True)
    assert refusals(tcpxo_pod("vision"), vision, gpu_documents) == []
    # The same pod in a team that did not opt in, on a pool without GPU NICs, or not made by
    # the Job controller (so not Kueue's), is held to baseline.
    speech = gpu_namespace("speech", gpu_direct=False)
    assert {
        r.message.split(" (")[0] for r in refusals(tcpxo_pod("speech"), speech, gpu_documents)
    } == {
        "volumes may be configMap, csi, downwardAPI, emptyDir, ephemeral, image, "
        "persistentVolumeClaim, projected, secret",
        "capabilities beyond the baseline set are not allowed",
    }
    plain = tcpxo_pod("vision", nodeSelector={"cloud.google.com/gke-nodepool": "plain"})
    assert len(refusals(plain, vision, gpu_documents)) == 2
    orphan = tcpxo_pod("vision")
    del orphan["metadata"]["ownerReferences"]
    found = refusals(orphan, vision, gpu_documents)
    assert len([r for r in found if r.policy == "ai-infra-team-pod-security"]) == 2
    # Only GKE's paths and NET_ADMIN: the node's root or another capability stays refused.
    root = tcpxo_pod("vision", volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    assert [r.message for r in refusals(root, vision, gpu_documents)] == [
        next(c.message for c in admission.policies()[0].checks if "hostPath" in c.message)
    ]
    sys_admin = tcpxo_pod(
        "vision",
        initContainers=[
            container(name="d", securityContext={"capabilities": {"add": ["SYS_ADMIN"]}})
        ],
    )
    assert len(refusals(sys_admin, vision, gpu_documents)) == 1
    privileged = tcpxo_pod(
        "vision", initContainers=[container(name="d", securityContext={"privileged": True})]
    )
    assert len(refusals(privileged, vision, gpu_documents)) == 1
