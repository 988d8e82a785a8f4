"""The admission policies of team namespaces, evaluated as the API server would: the objects
the program registers, run with Google's CEL implementation against hostile pod specs and
against the shipped example JobSets, which must still be admitted (and the pods the Job
controller makes of them once Kueue has admitted them)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.gke import admission
from components.gke.admission import HOST_NETWORK_LABEL, TEAM_LABEL, refusals
from components.tpu_catalog import ACCELERATOR_LABEL, TPU_TAINT_KEY
from plan.engine import REPO_ROOT, Graph, load_stack_config
from tests.conftest import build_graph, with_config

VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
SLICE = {"name": "s", "accelerator": "v5p-16"}
TPU_SELECTOR = {ACCELERATOR_LABEL: "tpu-v5p-slice", "cloud.google.com/gke-tpu-topology": "2x2x2"}
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
            tpuSlices=[SLICE],
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
    metadata = spec.pop("metadata", {"name": "p", "namespace": "vision"})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


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
    ("TPU toleration without a queue", pod(tolerations=[KUEUE_TOLERATION]), "Kueue-managed"),
    (
        "GPU toleration without a queue",
        pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}]),
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


def test_a_plain_pod_and_another_namespace_are_left_alone(documents):
    assert refusals(pod(), namespace("vision"), documents) == []
    outside = {"kind": "Namespace", "metadata": {"name": "kube-system", "labels": {}}}
    assert refusals(pod(hostNetwork=True, hostPID=True), outside, documents) == []


def test_host_network_only_for_kueue_pods_on_tpu_slices_of_an_opted_in_team(documents):
    kueue_tpu_pod = pod(
        hostNetwork=True,
        dnsPolicy="ClusterFirstWithHostNet",
        nodeSelector=TPU_SELECTOR,
        tolerations=[KUEUE_TOLERATION],
        metadata={"name": "p", "namespace": "speech", "ownerReferences": JOB_OWNER},
    )
    assert refusals(kueue_tpu_pod, namespace("speech", host_network=True), documents) == []
    # The same pod in a team that did not opt in, on a CPU node, or of a slice the stack has
    # not, is refused.
    assert refusals(kueue_tpu_pod, namespace("vision"), documents)
    cpu = copy.deepcopy(kueue_tpu_pod)
    del cpu["spec"]["nodeSelector"]
    assert refusals(cpu, namespace("speech", host_network=True), documents)
    other = copy.deepcopy(kueue_tpu_pod)
    other["spec"]["nodeSelector"][ACCELERATOR_LABEL] = "tpu-v6e-slice"
    assert refusals(other, namespace("speech", host_network=True), documents)
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
        ns = namespace(jobset["metadata"]["namespace"])
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


def test_the_registered_policies_are_the_manifests_the_offline_check_uses(documents):
    def shown(document: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": document["metadata"], "spec": document["spec"]}

    offline = admission.stack_documents(["tpu-v5p-slice"])
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
