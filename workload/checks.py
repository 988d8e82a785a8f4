"""The offline checks of a rendered JobSet, in the order a person would ask them: does the
slice exist and hold the job, is the JobSet what the pinned JobSet CRD accepts, may the team's
members create it (RBAC as the program binds it, resolved against the charts' roles), do the
team namespace's admission policies let it and its pods in, and can Kueue ever admit it. A
check that fails for a flag's value raises `FlagError` naming the flag; the rest are reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from components.gke import GIB, Refusal, refusals
from graph import rbac, types
from graph.stack import Stack
from workload.admission import admit
from workload.render import replicas_and_pods
from workload.request import Request
from workload.schemas import validate
from workload.target import FlagError, Target

JOBSETS = ("jobset.x-k8s.io", "jobsets")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def capacity_check(request: Request, target: Target) -> Check:
    """The slice exists in the stack and holds the job: as many slices (or GPU nodes) as asked,
    a pod per host taking every chip of its machine."""
    replicas, pods = replicas_and_pods(request, target)
    flag = "--slices" if target.tpu else "--nodes"
    asked = replicas if target.tpu else pods
    unit = "slice(s)" if target.tpu else "node(s)"
    if asked < 1:
        raise FlagError(flag, f"{asked} is not a number of {unit}; give 1 or more")
    if asked > target.available:
        raise FlagError(
            flag,
            f"{target.source} has {target.available} {unit}; the job asks for {asked}, which "
            "Kueue could never admit",
        )
    if target.shape is not None:
        shape = target.shape
        detail = (
            f"{target.source}: {replicas} x {shape.accelerator} (topology {shape.topology}), "
            f"{pods} pod(s) per slice on {shape.machine_type}, {target.per_node} chips each, "
            f"{replicas * shape.chips} chips of {target.available * shape.chips}"
        )
        if pods * target.per_node != shape.chips:
            raise FlagError("--slice", f"{shape.accelerator} does not divide into its hosts")
    else:
        detail = (
            f"{target.source}: {pods} x {target.machine_type} with {target.per_node} GPU(s) "
            f"each, of {target.available} node(s)"
        )
    return Check("capacity", True, detail + _fits_node(request, target))


def _fits_node(request: Request, target: Target) -> str:
    """Each pod's CPU and memory within what its node offers pods (GKE's allocatable): a pod
    asking more is admitted by Kueue and then never scheduled."""
    node = target.node
    if node is None or not (request.cpu or request.memory):
        return ""
    for flag, asked, offered, unit in (
        ("--cpu", request.cpu, node.cpu_millis / 1000, "cores"),
        ("--memory", request.memory, node.memory_bytes / GIB, "GiB"),
    ):
        if asked is None:
            continue
        amount = float(parse_quantity(asked)) / (GIB if unit == "GiB" else 1)
        if amount > offered:
            raise FlagError(
                flag,
                f"each pod asks {asked}, but a {node.machine_type} node offers pods "
                f"{offered:.1f} {unit} (GKE's node allocatable); ask for less",
            )
    return f"; each pod fits its {node.machine_type} node's allocatable CPU and memory"


def crd_check(jobset: dict[str, Any]) -> Check:
    errors = validate(jobset)
    if errors:
        return Check("JobSet CRD", False, "; ".join(errors))
    return Check("JobSet CRD", True, "valid against jobset.x-k8s.io/v1alpha2 (JobSet 0.12.0)")


def rbac_check(stack: Stack, target: Target, groups: list[str]) -> Check:
    """With `--as-group`, whether those groups may create the JobSet in the team's namespace;
    without, which of the team's own groups may."""
    namespace = target.namespace
    if groups:
        if not rbac.allowed(stack.graph, set(groups), "create", *JOBSETS, namespace):
            raise FlagError(
                "--team",
                f"{', '.join(groups)} may not create JobSets in namespace {namespace}; team "
                f"{target.team.name}'s groups are {', '.join(target.team.groups) or 'none'}",
            )
        return Check("RBAC", True, f"{', '.join(groups)} may create JobSets in {namespace}")
    members = [
        g
        for g in target.team.groups
        if rbac.allowed(stack.graph, {g}, "create", *JOBSETS, namespace)
    ]
    if not members:
        return Check(
            "RBAC",
            False,
            f"no group may create JobSets in {namespace} (team {target.team.name} lists no "
            "groups); only cluster administrators can submit there",
        )
    return Check("RBAC", True, f"{', '.join(members)} may create JobSets in {namespace}")


def admission_check(stack: Stack, target: Target, jobset: dict[str, Any]) -> Check:
    """Kueue can admit the JobSet on the team's queue, on its own quota or by borrowing; a
    refusal caused by a flag's value (too many slices, too much CPU) names the flag."""
    admission = admit(stack, jobset)
    flags = {target.resource: "--slices" if target.tpu else "--nodes"}
    flags |= {"cpu": "--cpu", "memory": "--memory"}
    if admission.problems:
        messages = "; ".join(p.message for p in admission.problems)
        named = [flags.get(p.resource or "") for p in admission.problems]
        if all(named):
            raise FlagError(str(named[0]), messages)
        return Check("Kueue admission", False, messages)
    parts = []
    for fit in admission.fits:
        own = "within its nominal quota" if not fit.borrows else "borrowing from the cohort"
        parts.append(f"{fit.resource} {fit.requested.normalize():f} on {fit.flavor} ({own})")
    detail = f"ClusterQueue {admission.cluster_queue}: {'; '.join(parts)}"
    return Check("Kueue admission", True, detail)


def created_objects(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    """The JobSet and what the API server sees created of it: each replicated job's first Job
    (the JobSet controller's), and a pod of it as the Job controller makes it once Kueue has
    admitted it (its controller owner is the Job, which the policies read as Kueue-managed)."""
    meta = jobset["metadata"]
    created = [jobset]
    for replicated in jobset["spec"]["replicatedJobs"]:
        job_name = f"{meta['name']}-{replicated['name']}-0"
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": job_name, "namespace": meta["namespace"]},
            "spec": replicated["template"]["spec"],
        }
        template = replicated["template"]["spec"]["template"]
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "controller": True}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **template.get("metadata", {}),
                "name": f"{job_name}-0",
                "namespace": meta["namespace"],
                "ownerReferences": [owner],
            },
            "spec": template["spec"],
        }
        created += [job, pod]
    return created


def policy_check(stack: Stack, target: Target, jobset: dict[str, Any]) -> Check:
    """The admission policies bound to the team's namespace, as the program registers them
    (components/gke/admission.py), evaluated with CEL on the JobSet, its Jobs and its pods."""
    bindings = {
        b.inputs["spec"]["policyName"]: b.inputs
        for b in stack.graph.of_type(types.VALIDATING_ADMISSION_POLICY_BINDING)
    }
    documents = [
        (p.inputs, bindings[p.inputs["metadata"]["name"]])
        for p in stack.graph.of_type(types.VALIDATING_ADMISSION_POLICY)
        if p.inputs["metadata"]["name"] in bindings
    ]
    namespace = stack.object("Namespace", target.namespace)
    if namespace is None:
        return Check("admission policies", False, f"no namespace {target.namespace} in the stack")
    found: dict[Refusal, list[str]] = {}
    for obj in created_objects(jobset):
        for refusal in refusals(obj, namespace, documents):
            found.setdefault(refusal, []).append(obj["kind"])
    if found:
        problems = [
            f"{r.policy} refuses the {'/'.join(dict.fromkeys(kinds))}: {r.message}"
            for r, kinds in found.items()
        ]
        return Check("admission policies", False, "; ".join(problems))
    return Check(
        "admission policies",
        True,
        f"the JobSet, its Jobs and pods pass the {len(documents)} policies bound to "
        f"{target.namespace}",
    )
