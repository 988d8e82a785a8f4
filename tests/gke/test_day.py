"""A team member's first day, followed on the objects the program renders: their JobSet is
allowed by RBAC, gets a LocalQueue (its own label, or Kueue's `default` for one without),
fits its ClusterQueue's quota in whole slices (or borrows from the cohort), is given a flavor
the way Kueue assigns one, and its pods, with the flavor's labels and tolerations merged in,
land on nodes of the slice pool: GKE's node labels match and GKE's taints are tolerated. The
pods of one JobSet reach each other through the team's NetworkPolicy, and the control plane
reaches every webhook and APIService the charts install.

Kueue's flavor fit is modelled on pkg/scheduler/flavorassigner at v0.19.2
(checkFlavorForPodSets: only the flavor's own label keys of the pod's nodeSelector count).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from catalog.charts import CONTROL_PLANE_CALLS
from catalog.tpu import TPU_RESOURCE, TPU_TAINT_KEY, resolve
from components.gke.kueue import DEFAULT_LOCAL_QUEUE
from graph.engine import REPO_ROOT, Graph, load_stack_config
from graph.netpol import Pod, connects
from graph.rbac import allowed
from stacks.loading import parse
from tests.conftest import build_graph
from tests.gke.test_kueue import nominal, objects_of
from tests.test_docs import examples
from workload.schemas import validate

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GKE_TPU_TAINT = {"key": TPU_TAINT_KEY, "value": "present", "effect": "NoSchedule"}
"""GKE taints every TPU node so (GKE "About TPUs in GKE")."""
GKE_QUEUED_TAINT = {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"}
"""GKE taints nodes it creates for a queued provisioning request (flex-start) so."""
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"


@dataclass
class Day:
    graph: Graph
    member: set[str]
    jobset: dict[str, Any]


def _pods(jobset: dict[str, Any]) -> list[tuple[dict[str, Any], int, int]]:
    """(pod spec, replicas, pods per replica) of each replicated job."""
    return [
        (
            job["template"]["spec"]["template"]["spec"],
            job.get("replicas", 1),
            job["template"]["spec"].get("parallelism", 1),
        )
        for job in jobset["spec"]["replicatedJobs"]
    ]


def _chips(pod: dict[str, Any]) -> int:
    return sum(
        int((c.get("resources", {}).get("limits") or c["resources"]["requests"])[TPU_RESOURCE])
        for c in pod["containers"]
    )


NODE_EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
    "NO_EXECUTE": "NoExecute",
}
"""GKE API `NodeTaint.effect` -> the node taint's effect (GKE "Node taints")."""


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, str]) -> bool:
    return any(
        t.get("key") == taint["key"]
        and (t.get("operator") == "Exists" or t.get("value") == taint["value"])
        and t.get("effect", taint["effect"]) == taint["effect"]
        for t in tolerations
    )


def submit(day: Day) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """What Kueue does with the JobSet: (ClusterQueue name, the flavor it is admitted on, the
    pod spec with the flavor's labels and tolerations merged in), asserting each step."""
    graph, jobset = day.graph, day.jobset
    namespace = jobset["metadata"]["namespace"]
    assert validate(jobset) == []
    # RBAC: the member may create it here, and nowhere else.
    assert allowed(graph, day.member, "create", "jobset.x-k8s.io", "jobsets", namespace)
    others = {q["metadata"]["namespace"] for q in objects_of(graph, "LocalQueue").values()}
    for other in others - {namespace}:
        assert not allowed(graph, day.member, "create", "jobset.x-k8s.io", "jobsets", other)
    # The queue: its own label, else Kueue's `default` in a managed namespace.
    queue_name = jobset["metadata"].get("labels", {}).get(QUEUE_LABEL, DEFAULT_LOCAL_QUEUE)
    (local_queue,) = [
        r.inputs
        for r in graph.of_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")
        if r.inputs["metadata"] == {"name": queue_name, "namespace": namespace}
    ]
    cluster_queue = objects_of(graph, "ClusterQueue")[local_queue["spec"]["clusterQueue"]]
    assert cluster_queue["spec"]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": namespace}
    }
    ((pod, replicas, per_replica),) = _pods(jobset)
    request = _chips(pod) * replicas * per_replica
    # The flavor, as Kueue tries them in order: the pod's selectors on the flavor's keys.
    flavors = objects_of(graph, "ResourceFlavor")
    (group,) = [
        g for g in cluster_queue["spec"]["resourceGroups"] if TPU_RESOURCE in g["coveredResources"]
    ]
    fitting = [
        f["name"]
        for f in group["flavors"]
        if all(
            pod.get("nodeSelector", {}).get(key, value) == value
            for key, value in flavors[f["name"]]["spec"].get("nodeLabels", {}).items()
        )
    ]
    assert fitting, "no flavor of the queue fits the pod's selectors"
    flavor = flavors[fitting[0]]
    # Quota: its own nominal, or what the cohort can lend (nothing else runs yet).
    own = nominal(cluster_queue)[fitting[0]][TPU_RESOURCE]
    cohort = cluster_queue["spec"].get("cohortName")
    lendable = sum(
        nominal(q).get(fitting[0], {}).get(TPU_RESOURCE, 0)
        for q in objects_of(graph, "ClusterQueue").values()
        if cohort is not None and q["spec"].get("cohortName") == cohort
    )
    if cohort is None:
        lendable = own  # a queue outside any cohort has only its own quota
    else:
        lendable += (
            nominal(objects_of(graph, "Cohort")[cohort]).get(fitting[0], {}).get(TPU_RESOURCE, 0)
        )
    assert request <= lendable, f"{request} chips exceed everything the cohort has"
    admitted = copy.deepcopy(pod)
    admitted["nodeSelector"] = {**pod.get("nodeSelector", {}), **flavor["spec"]["nodeLabels"]}
    admitted["tolerations"] = [*pod.get("tolerations", []), *flavor["spec"]["tolerations"]]
    return cluster_queue["metadata"]["name"], {"name": fitting[0], "own": own}, admitted


def tpu_pools(graph: Graph, slice_name: str) -> list[dict[str, Any]]:
    """The slice's node pools with the labels and taints GKE gives their nodes: the pool's
    own labels, GKE's TPU accelerator and topology labels (the catalog's facts) and its
    node-pool label; GKE's TPU taint, and the queued-provisioning taint on flex-start pools."""
    assert graph.environment is not None
    (entry,) = [s for s in graph.environment.config.tpu_slices if s.name == slice_name]
    pools = []
    for r in graph.of_type("gcp:container/nodePool:NodePool"):
        node_config = r.inputs["nodeConfig"]
        if node_config.get("labels", {}).get("ai-infra/slice") != slice_name:
            continue
        # GKE writes a pool's taints on its nodes in Kubernetes' spelling of the effect.
        taints = [
            GKE_TPU_TAINT,
            *({**t, "effect": NODE_EFFECTS[t["effect"]]} for t in node_config.get("taints", [])),
        ]
        if r.inputs.get("queuedProvisioning", {}).get("enabled"):
            taints.append(GKE_QUEUED_TAINT)
        pools.append(
            {
                "name": r.inputs["name"],
                "nodes": r.inputs.get("nodeCount"),
                "labels": {
                    **node_config.get("labels", {}),
                    **entry.shape.node_labels,
                    NODE_POOL_LABEL: r.inputs["name"],
                },
                "taints": taints,
            }
        )
    assert pools, slice_name
    return pools


def lands_on(pod: dict[str, Any], pool: dict[str, Any]) -> bool:
    labels, taints = pool["labels"], pool["taints"]
    selected = all(labels.get(k) == v for k, v in pod["nodeSelector"].items())
    return selected and all(_tolerates(pod["tolerations"], t) for t in taints)


def reachable_by_control_plane(graph: Graph) -> None:
    (rule,) = [
        r
        for r in graph.of_type("gcp:compute/firewall:Firewall")
        if r.inputs["name"].endswith("allow-webhooks")
    ]
    (cluster,) = graph.of_type("gcp:container/cluster:Cluster")
    assert rule.inputs["sourceRanges"] == [
        cluster.inputs["privateClusterConfig"]["masterIpv4CidrBlock"]
    ]
    ports = {int(p) for a in rule.inputs["allows"] for p in a.get("ports", [])}
    assert {c.target_port for c in CONTROL_PLANE_CALLS} <= ports


# The prod stack's pretrain team runs examples/multislice-jobset.yaml.


@pytest.fixture(scope="module")
def prod() -> Graph:
    return build_graph(load_stack_config("prod"), stack="prod")


def test_pretrain_runs_the_multislice_example_on_its_own_quota(prod: Graph):
    jobset = yaml.safe_load((REPO_ROOT / "examples" / "multislice-jobset.yaml").read_text())
    day = Day(prod, {"ml-pretrain@example.com"}, jobset)
    queue, flavor, pod = submit(day)
    # v5p-train is pretrain's own (tpuSlices[].team): a flavor no other queue lists.
    assert (queue, flavor["name"]) == ("pretrain", "v5p-512-team-pretrain")
    ((_, replicas, per_replica),) = _pods(jobset)
    shape = resolve("v5p-512")
    # Whole slices: the queue's own quota is two v5p-512 slices, the job asks for two.
    assert flavor["own"] % shape.chips == 0
    assert replicas * per_replica * _chips(pod) == flavor["own"] == 2 * shape.chips
    # Each replica alone on one slice pool (exclusive-topology on gke-nodepool): every pool of
    # the entry takes a replica's pods on its own nodes.
    pools = tpu_pools(prod, "v5p-train")
    assert len(pools) >= replicas
    for pool in pools:
        assert lands_on(pod, pool), pool["name"]
        assert pool["nodes"] == per_replica
    # Not on the v6e pools, not on another team's flavor.
    assert not any(lands_on(pod, p) for p in tpu_pools(prod, "v6e-tune"))
    reachable_by_control_plane(prod)


def test_the_slices_of_a_jobset_talk_to_each_other_but_not_to_other_teams(prod: Graph):
    worker = Pod("pretrain", {"jobset.sigs.k8s.io/jobset-name": "llm-pretrain"})
    leader = Pod("pretrain", {"jobset.sigs.k8s.io/jobset-name": "llm-pretrain", "index": "0"})
    # JAX's coordinator (8476 by default, 8471 in the example) and MegaScale's DCN ports.
    for port in (8471, 8476, 8080, 9999):
        assert connects(prod, worker, leader, port)
    assert not connects(prod, worker, Pod("finetune", {}), 8471)


def test_a_member_of_another_team_cannot_submit_into_pretrain(prod: Graph):
    assert not allowed(
        prod, {"ml-finetune@example.com"}, "create", "jobset.x-k8s.io", "jobsets", "pretrain"
    )


# Dev: a JobSet built here, with no queue name, lands in research's default queue.


def built_jobset(
    namespace: str, replicas: int = 1, accelerator: str = "v5litepod-4"
) -> dict[str, Any]:
    """A JobSet of `replicas` slices of `accelerator`, one pod per host, naming no queue."""
    shape = resolve(accelerator)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "smoke", "namespace": namespace},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "slice",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "parallelism": shape.hosts,
                            "completions": shape.hosts,
                            "backoffLimit": 0,
                            "template": {
                                "spec": {
                                    "serviceAccountName": "training",
                                    "restartPolicy": "Never",
                                    "nodeSelector": dict(shape.node_labels),
                                    "containers": [
                                        {
                                            "name": "smoke",
                                            "image": "python:3.12",
                                            "command": ["python3", "-c", "print('ok')"],
                                            "resources": {
                                                "limits": {TPU_RESOURCE: shape.chips_per_host}
                                            },
                                        }
                                    ],
                                }
                            },
                        }
                    },
                }
            ]
        },
    }


@pytest.fixture(scope="module")
def dev() -> Graph:
    return build_graph(load_stack_config("dev"), stack="dev")


def test_an_unqueued_dev_jobset_borrows_the_cohorts_slice_and_lands_on_it(dev: Graph):
    day = Day(dev, {"ml-research@example.com"}, built_jobset("research"))
    queue, flavor, pod = submit(day)
    assert (queue, flavor["name"]) == ("research", "v5litepod-4")
    # The one 4-chip slice does not divide between two teams: the cohort holds it and the
    # job borrows all of it.
    assert flavor["own"] == 0
    (pool,) = tpu_pools(dev, "v5e-dev")
    assert lands_on(pod, pool)
    assert pool["nodes"] == 1
    reachable_by_control_plane(dev)


def test_a_dev_jobset_larger_than_every_slice_is_never_admitted(dev: Graph):
    day = Day(dev, {"ml-research@example.com"}, built_jobset("research", replicas=2))
    with pytest.raises(AssertionError, match="exceed everything the cohort has"):
        submit(day)


def test_a_pod_without_the_tpu_toleration_would_not_land_without_its_flavor(dev: Graph):
    # What the flavor adds is what makes the pod schedulable: GKE's TPU taint.
    pod = _pods(built_jobset("research"))[0][0]
    (pool,) = tpu_pools(dev, "v5e-dev")
    assert not lands_on({**pod, "tolerations": []}, pool)


def test_research_runs_on_its_flex_start_slices_in_prod(prod: Graph):
    jobset = built_jobset("research", replicas=2, accelerator="v6e-64")
    queue, flavor, pod = submit(Day(prod, {"ml-research@example.com"}, jobset))
    assert (queue, flavor["name"]) == ("research", "v6e-64-flex-start")
    assert flavor["own"] == 2 * resolve("v6e-64").chips
    # Kueue's provisioning check then pins the pods to the nodes made for their request.
    (config,) = objects_of(prod, "ProvisioningRequestConfig").values()
    (update,) = config["spec"]["podSetUpdates"]["nodeSelector"]
    pod["nodeSelector"][update["key"]] = "smoke-request"
    for pool in tpu_pools(prod, "v6e-flex"):
        assert GKE_QUEUED_TAINT in pool["taints"]
        node = {**pool, "labels": {**pool["labels"], update["key"]: "smoke-request"}}
        assert lands_on(pod, node), pool["name"]
        assert not lands_on(pod, pool), "only nodes made for this request"


# The provisioner example of docs/tpu-provisioner.md.


def test_the_provisioned_example_is_admitted_on_the_shape_the_provisioner_creates():
    raw = examples()["provisioner"].config
    config = parse(raw, "provisioner")
    graph = build_graph(raw, stack="provisioner")
    jobset = yaml.safe_load((REPO_ROOT / "examples" / "provisioned-jobset.yaml").read_text())
    queue, flavor, pod = submit(Day(graph, {"ml-research@example.com"}, jobset))
    assert (queue, flavor["name"]) == ("research-provisioned", "v5p-32-provisioned")
    ((_, replicas, per_replica),) = _pods(jobset)
    shape = config.tpu_provisioner.shapes()["v5p-32"]
    assert flavor["own"] % shape.chips == 0 and flavor["own"] >= replicas * shape.chips
    # What the controller creates for the leader pod: ceil(topology chips / 4) nodes of the
    # machine type the pod's chip request names (gke.go tpuTopologyToNodeCount/tpuMachineType).
    topology = pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"]
    chips = 1
    for dim in topology.split("x"):
        chips *= int(dim)
    assert -(-chips // 4) == per_replica == shape.hosts
    assert f"ct5p-hightpu-{_chips(pod)}t" == shape.machine_type
    # The pool's labels: the pod's own selectors outside cloud.google.com/ and google.com/,
    # and the JobSet it was made for (gke.go nodePoolForPod at 6789e2a).
    created = {
        "labels": {
            **shape.node_labels,
            NODE_POOL_LABEL: "v5p-finetune-abcde",
            "ai-infra/capacity": "provisioned",
            "google.com/tpu-provisioner-jobset-name": "v5p-finetune",
            "google.com/tpu-provisioner-jobset-namespace": "research",
        },
        "taints": [GKE_TPU_TAINT],
    }
    assert lands_on(pod, created)
    # A pool the controller keeps for another JobSet (suspended, say) never takes these pods.
    other = {**created["labels"], "google.com/tpu-provisioner-jobset-name": "older-job"}
    assert not lands_on(pod, {**created, "labels": other})
    reachable_by_control_plane(graph)
