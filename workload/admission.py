"""Whether Kueue can ever admit a JobSet, judged on the queues the program registers: the
LocalQueue its label names, the ClusterQueue behind it (which must select the JobSet's
namespace), a flavor per resource group that the pods' selectors and tolerations fit, and, for
every resource the pods request, that flavor's nominal quota plus what the cohort could lend
when every other queue is idle. A resource no resource group covers is refused: Kueue's quota
check strategy defaults to BlockUndeclared (apis/config/v1beta2 at v0.19.2), which rejects any
resource a ClusterQueue does not declare, ephemeral-storage included.

Flavor fit follows pkg/scheduler/flavorassigner at v0.19.2 (checkFlavorForPodSets): only the
flavor's own label keys of the pod's nodeSelector and required node affinity count, and the
flavor's nodeTaints must be tolerated by the pod's and the flavor's tolerations together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from graph.stack import Stack
from workload.render import QUEUE_LABEL

NAMESPACE_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Fit:
    """How one resource of the JobSet fits its ClusterQueue."""

    resource: str
    flavor: str
    requested: Decimal
    nominal: Decimal
    most: Decimal
    """The nominal quota plus all the cohort could lend it."""

    @property
    def borrows(self) -> bool:
        return self.requested > self.nominal


@dataclass(frozen=True)
class Refusal:
    """Why Kueue would never admit the JobSet; `resource` is the resource that cannot fit, or
    None when the queue itself refuses it."""

    message: str
    resource: str | None = None


@dataclass
class Admission:
    cluster_queue: str = ""
    fits: list[Fit] = field(default_factory=list)
    problems: list[Refusal] = field(default_factory=list)


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """What one pod requests, as Kueue counts it: each container's requests, a limit standing
    for a missing request (as the API server defaults it)."""
    total: dict[str, Decimal] = {}
    for c in pod.get("containers", []):
        resources = c.get("resources", {})
        merged = {**resources.get("limits", {}), **resources.get("requests", {})}
        for name, value in merged.items():
            total[name] = total.get(name, Decimal(0)) + parse_quantity(value)
    return total


def _nominal(queue: Mapping[str, Any], flavor: str, resource: str) -> tuple[Decimal, Any, Any]:
    """(nominalQuota, borrowingLimit, lendingLimit) of a flavor's resource in a queue or
    cohort, zero when it lists none."""
    for group in queue.get("spec", {}).get("resourceGroups", []):
        for f in group["flavors"]:
            if f["name"] != flavor:
                continue
            for r in f["resources"]:
                if r["name"] == resource:
                    limits = (r.get("borrowingLimit"), r.get("lendingLimit"))
                    return parse_quantity(r["nominalQuota"]), *limits
    return Decimal(0), None, None


def _matches(pod: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    selector = pod.get("nodeSelector", {})
    if any(selector[k] != v for k, v in labels.items() if k in selector):
        return False
    affinity = pod.get("affinity", {}).get("nodeAffinity", {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = []
    for term in required.get("nodeSelectorTerms", []):
        kept = [e for e in term.get("matchExpressions", []) if e["key"] in labels]
        if not kept:
            return True  # a term with no key of the flavor matches every flavor
        terms.append(kept)
    return any(all(_expression(e, labels) for e in term) for term in terms)


def _expression(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    value, values = labels.get(expression["key"]), expression.get("values", [])
    return {
        "In": value in values,
        "NotIn": value not in values,
        "Exists": value is not None,
        "DoesNotExist": value is None,
    }.get(expression["operator"], False)


def _tolerated(taints: list[Mapping[str, Any]], tolerations: list[Mapping[str, Any]]) -> bool:
    def tolerates(t: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
        if t.get("effect") and t["effect"] != taint["effect"]:
            return False
        if t.get("operator") == "Exists":
            return not t.get("key") or t["key"] == taint["key"]
        return t.get("key") == taint["key"] and t.get("value") == taint.get("value")

    return all(
        any(tolerates(t, taint) for t in tolerations)
        for taint in taints
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def _lendable(stack: Stack, queue: Mapping[str, Any], flavor: str, resource: str) -> Decimal:
    """What the cohort could lend `queue` of one flavor's resource with every other queue
    idle: their nominal quota, each capped by its lendingLimit, and the cohort's own."""
    cohort = queue["spec"].get("cohortName")
    if cohort is None:
        return Decimal(0)
    lent = Decimal(0)
    name = queue["metadata"]["name"]
    for other in stack.objects("ClusterQueue"):
        if other["metadata"]["name"] == name or other["spec"].get("cohortName") != cohort:
            continue
        nominal, _, lending = _nominal(other, flavor, resource)
        lent += min(nominal, parse_quantity(lending)) if lending is not None else nominal
    own = stack.object("Cohort", cohort)
    return lent + (_nominal(own, flavor, resource)[0] if own else Decimal(0))


def admit(stack: Stack, jobset: Mapping[str, Any]) -> Admission:
    """How Kueue would take the JobSet, and why it never could."""
    found = Admission()
    namespace = jobset["metadata"]["namespace"]
    queue_name = jobset["metadata"].get("labels", {}).get(QUEUE_LABEL, "default")
    local = stack.object("LocalQueue", queue_name, namespace)
    queue = local and stack.object("ClusterQueue", local["spec"]["clusterQueue"])
    if not queue:
        found.problems.append(Refusal(f"namespace {namespace} has no LocalQueue '{queue_name}'"))
        return found
    found.cluster_queue = queue["metadata"]["name"]
    selected = queue["spec"].get("namespaceSelector", {}).get("matchLabels", {})
    if selected.get(NAMESPACE_LABEL, namespace) != namespace:
        found.problems.append(
            Refusal(f"ClusterQueue {found.cluster_queue} admits no JobSet of {namespace}")
        )
    for job in jobset["spec"]["replicatedJobs"]:
        template = job["template"]["spec"]
        pods = job.get("replicas", 1) * template.get("parallelism", 1)
        pod = template["template"]["spec"]
        requested = {k: v * pods for k, v in pod_requests(pod).items()}
        _fit_groups(stack, queue, pod, requested, found)
    return found


def _fit_groups(
    stack: Stack,
    queue: Mapping[str, Any],
    pod: Mapping[str, Any],
    requested: dict[str, Decimal],
    found: Admission,
) -> None:
    groups = queue["spec"].get("resourceGroups", [])
    for resource in requested:
        if not any(resource in g["coveredResources"] for g in groups):
            message = (
                f"the pods request {resource}, which ClusterQueue {found.cluster_queue} does "
                "not declare; Kueue (BlockUndeclared) never admits it: drop the request"
            )
            found.problems.append(Refusal(message, resource))
    for group in groups:
        wanted = [r for r in group["coveredResources"] if r in requested]
        if wanted:
            _fit_group(stack, queue, group, pod, {r: requested[r] for r in wanted}, found)


def _fit_group(
    stack: Stack,
    queue: Mapping[str, Any],
    group: Mapping[str, Any],
    pod: Mapping[str, Any],
    requested: dict[str, Decimal],
    found: Admission,
) -> None:
    """The first flavor of the group that the pod fits and whose quota, with all the cohort
    could lend, holds every requested resource of the group."""
    reasons = []
    short_of: str | None = None
    for entry in group["flavors"]:
        flavor = stack.object("ResourceFlavor", entry["name"])
        spec = (flavor or {}).get("spec", {})
        if flavor is None or not _matches(pod, spec.get("nodeLabels", {})):
            reasons.append(f"{entry['name']} does not match the pods' node selector")
            continue
        tolerations = [*pod.get("tolerations", []), *spec.get("tolerations", [])]
        if not _tolerated(spec.get("nodeTaints", []), tolerations):
            reasons.append(f"{entry['name']} has a taint the pods do not tolerate")
            continue
        fits = []
        for resource, amount in requested.items():
            nominal, borrowing, _ = _nominal(queue, entry["name"], resource)
            lendable = _lendable(stack, queue, entry["name"], resource)
            if borrowing is not None:
                lendable = min(lendable, parse_quantity(borrowing))
            fits.append(Fit(resource, entry["name"], amount, nominal, nominal + lendable))
        short = [f for f in fits if f.requested > f.most]
        if not short:
            found.fits += fits
            return
        short_of = short_of or short[0].resource
        reasons += [
            f"{f.flavor} has at most {_shown(f.most)} {f.resource} for this queue (nominal "
            f"{_shown(f.nominal)} and what the cohort could lend), the job asks "
            f"{_shown(f.requested)}"
            for f in short
        ]
    covered = ", ".join(requested)
    message = f"no flavor of ClusterQueue {found.cluster_queue} can ever admit its {covered}: "
    found.problems.append(Refusal(message + "; ".join(reasons), short_of))


def _shown(amount: Decimal) -> str:
    return f"{amount.normalize():f}"
