"""The stack's invariants as plain functions of the resources a deployment registers: each
takes the resources (type, URN, inputs, outputs, protect) and returns its violations. The
policy pack (`pack.py`) runs them under `pulumi preview --policy-pack policy`, and the tests run
the same functions over every shipped stack and docs example. They read only what is
registered, never the config.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components.ranges import covers_internet, ingress_sources, within
from graph import reachability, types

BASIC_ROLES = frozenset({"roles/owner", "roles/editor", "roles/viewer"})
AUTHORITATIVE_IAM = ("iAMBinding:", "iAMPolicy:")
"""Project-wide grants that replace every other member of a role (or the whole policy)."""
DEFAULT_COMPUTE_ACCOUNT = "-compute@developer.gserviceaccount.com"
PROTECTED_IN_PROD = (
    types.CLUSTER,
    types.BUCKET,
    types.FILESTORE,
    types.INSTANCE_GROUP_MANAGER,
    types.QUEUED_RESOURCE,
)
"""What holds state or costs most to rebuild (`ai-infra:protect`, docs/stack.md)."""
SYSTEMS = ("Slurm ", "GPU cluster ", "TPU VMs ")
DEFAULT_ACCOUNT = "default"
"""What GKE and Compute Engine read as the project's default compute account when a node
pool or VM names it (GKE API `NodeConfig.serviceAccount`: "If not specified, the 'default'
service account is used")."""


@dataclass(frozen=True)
class Resource:
    type: str
    urn: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any] = field(default_factory=dict)
    protect: bool = False


@dataclass(frozen=True)
class Violation:
    urn: str
    message: str


class Resources:
    """The resources as `graph.reachability` reads a graph."""

    def __init__(self, resources: Iterable[Resource]) -> None:
        self.resources = list(resources)

    def of_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_]


Check = Callable[[Sequence[Resource]], list[Violation]]


def no_basic_roles(resources: Sequence[Resource]) -> list[Violation]:
    return [
        Violation(r.urn, f"grants the basic role {r.inputs['role']}; name a predefined role")
        for r in resources
        if "IAM" in r.type and str(r.inputs.get("role", "")).lower() in BASIC_ROLES
    ]


def no_authoritative_project_iam(resources: Sequence[Resource]) -> list[Violation]:
    return [
        Violation(r.urn, "replaces every member of the role; grant per member (IAMMember)")
        for r in resources
        if r.type.startswith("gcp:projects/") and any(a in r.type for a in AUTHORITATIVE_IAM)
    ]


def buckets_are_private(resources: Sequence[Resource]) -> list[Violation]:
    return [
        Violation(r.urn, "needs uniform bucket-level access and public access prevention")
        for r in resources
        if r.type == types.BUCKET
        and (
            r.inputs.get("uniformBucketLevelAccess") is not True
            or r.inputs.get("publicAccessPrevention") != "enforced"
        )
    ]


def private_nodes(resources: Sequence[Resource]) -> list[Violation]:
    """The cluster makes its nodes private, and no node pool, registered apart or inline,
    overrides that (GKE API `NodeNetworkConfig.enablePrivateNodes` on a pool wins over the
    cluster's setting)."""
    found = []
    for r in resources:
        if r.type == types.CLUSTER:
            private = (r.inputs.get("privateClusterConfig") or {}).get("enablePrivateNodes")
            if private is not True:
                found.append(
                    Violation(
                        r.urn, "nodes must be private (privateClusterConfig.enablePrivateNodes)"
                    )
                )
            pools = r.inputs.get("nodePools") or []
        elif r.type == types.NODE_POOL:
            pools = [r.inputs]
        else:
            continue
        for pool in pools:
            if (pool.get("networkConfig") or {}).get("enablePrivateNodes") is False:
                found.append(
                    Violation(r.urn, "a node pool turns private nodes off (networkConfig)")
                )
    return found


def metadata_server_everywhere(resources: Sequence[Resource]) -> list[Violation]:
    found = []
    for r in resources:
        if r.type not in (types.NODE_POOL, types.CLUSTER):
            continue
        mode = ((r.inputs.get("nodeConfig") or {}).get("workloadMetadataConfig") or {}).get("mode")
        if mode != "GKE_METADATA":
            found.append(Violation(r.urn, "nodes must run the GKE metadata server (GKE_METADATA)"))
    return found


def _accounts(r: Resource) -> list[str | None]:
    i = r.inputs
    if r.type in (types.NODE_POOL, types.CLUSTER):
        return [(i.get("nodeConfig") or {}).get("serviceAccount")]
    if r.type in (types.INSTANCE, types.INSTANCE_TEMPLATE):
        return [(i.get("serviceAccount") or {}).get("email")]
    if r.type == types.QUEUED_RESOURCE:
        return [i.get("serviceAccount")]
    return []


def _default_account(account: object) -> bool:
    """Whether an account as written is the project's default compute account: none, the
    word `default` in any case, or its email."""
    text = str(account or "").strip().lower()
    return text in ("", DEFAULT_ACCOUNT) or text.endswith(DEFAULT_COMPUTE_ACCOUNT)


def no_default_compute_account(resources: Sequence[Resource]) -> list[Violation]:
    return [
        Violation(r.urn, "runs as the default compute account (or none); give it its own")
        for r in resources
        for account in _accounts(r)
        if _default_account(account)
    ]


def no_internet_ingress(resources: Sequence[Resource]) -> list[Violation]:
    """No enabled ingress rule that allows anything admits every internet address: judged on
    the union of its sources, and a rule without any source admits them all."""
    found = []
    for r in resources:
        i = r.inputs
        if r.type != reachability.FIREWALL or i.get("direction") == "EGRESS":
            continue
        if not i.get("allows") or i.get("disabled") is True:
            continue
        sources = ingress_sources(
            i.get("sourceRanges"), i.get("sourceTags"), i.get("sourceServiceAccounts")
        )
        if covers_internet(sources):
            shown = ", ".join(str(s) for s in sources)
            found.append(Violation(r.urn, f"admits {shown}: together, the whole internet"))
    return found


def _opening_ports(rule: Resource, pods: object) -> reachability.Ports:
    """What an enabled ingress rule opens to the pods range by naming it: a source range
    inside the pods range (a wider range that happens to hold it names no pod), and ports
    listed for every protocol. Anything else opens nothing on purpose."""
    i = rule.inputs
    if i.get("direction") == "EGRESS" or i.get("disabled") is True:
        return reachability.Ports()
    if not any(within(s, pods) for s in i.get("sourceRanges") or []):
        return reachability.Ports()
    opened = reachability.Ports()
    for allow in i.get("allows") or []:
        if allow.get("protocol") not in ("tcp", "udp", "sctp") or not allow.get("ports"):
            return reachability.Ports()
        opened = opened | reachability.Ports.of(allow["protocol"], allow["ports"])
    return opened


def pods_reach_systems_only_where_opted_in(resources: Sequence[Resource]) -> list[Violation]:
    """No pod reaches a Slurm, GPU cluster or TPU VM port but through a rule that opens it to
    the pods range on purpose, as `network.allow` writes one: a source range inside the pods
    range and the ports listed (`_opening_ports`). A rule's name or description is not read:
    a rule that admits a wider range, or every port, opens nothing on purpose."""
    graph = Resources(resources)
    rules = graph.of_type(reachability.FIREWALL)
    found = []
    named = {p.name: p for p in reachability.principals(graph)}
    for (source, target), ports in reachability.matrix(graph).items():
        if not (named[source].kind == "pods" and named[target].system):
            continue
        tags = named[target].tags
        opened = reachability.Ports()
        for rule in rules:
            if set(rule.inputs.get("targetTags") or ()) & tags:
                opened = opened | _opening_ports(rule, named[source].cidr)
        extra = ports - opened
        if extra:
            found.append(
                Violation(
                    source,
                    f"{source} reach {target} on {extra} that no network.allow entry opened",
                )
            )
    return found


def team_namespaces_enforce_pod_security(resources: Sequence[Resource]) -> list[Violation]:
    """A team namespace enforces baseline or restricted through Pod Security Admission, or
    (with the host network on TPU slices, or GPUDirect pods on fast-path GPU pools) through the
    pod security admission policy."""
    policies = {
        (r.inputs.get("metadata") or {}).get("name")
        for r in resources
        if r.type.endswith("ValidatingAdmissionPolicyBinding")
    }
    found = []
    for r in resources:
        if r.type != types.NAMESPACE:
            continue
        labels = (r.inputs.get("metadata") or {}).get("labels") or {}
        if "ai-infra/team" not in labels:
            continue
        enforced = labels.get("pod-security.kubernetes.io/enforce")
        if enforced in ("baseline", "restricted"):
            continue
        opted_in = any(
            labels.get(label) == "true"
            for label in ("ai-infra/tpu-host-network", "ai-infra/gpu-direct-pods")
        )
        if opted_in and "ai-infra-team-pod-security" in policies:
            continue
        found.append(Violation(r.urn, f"enforces pod security level {enforced!r}, not baseline"))
    return found


def _team_namespaces(resources: Sequence[Resource]) -> list[tuple[Resource, str]]:
    found = []
    for r in resources:
        if r.type != types.NAMESPACE:
            continue
        metadata = r.inputs.get("metadata") or {}
        if "ai-infra/team" in (metadata.get("labels") or {}):
            found.append((r, str(metadata.get("name"))))
    return found


def network_policies_enforced(resources: Sequence[Resource]) -> list[Violation]:
    """Team namespaces are kept apart by NetworkPolicies, which GKE enforces with Dataplane
    V2 (`datapathProvider: ADVANCED_DATAPATH`) or with Calico's network policy enforcement
    (`networkPolicy.enabled`); without either, they are stored and ignored."""
    if not _team_namespaces(resources):
        return []
    found = []
    for r in resources:
        if r.type != types.CLUSTER:
            continue
        dataplane_v2 = r.inputs.get("datapathProvider") == "ADVANCED_DATAPATH"
        calico = (r.inputs.get("networkPolicy") or {}).get("enabled") is True
        if not (dataplane_v2 or calico):
            found.append(
                Violation(r.urn, "enforces no NetworkPolicy, and team namespaces rely on them")
            )
    return found


def team_namespaces_bounded(resources: Sequence[Resource]) -> list[Violation]:
    """A team namespace has a ResourceQuota that admits no LoadBalancer or NodePort Service,
    and one scoped to the services PriorityClass that bounds its pods outside Kueue."""
    quotas: dict[str, list[Mapping[str, Any]]] = {}
    for r in resources:
        if r.type == types.RESOURCE_QUOTA:
            metadata = r.inputs.get("metadata") or {}
            quotas.setdefault(str(metadata.get("namespace")), []).append(r.inputs.get("spec") or {})
    found = []
    for r, name in _team_namespaces(resources):
        specs = quotas.get(name, [])
        hard = [s.get("hard") or {} for s in specs]
        exposed = not any(
            h.get("services.loadbalancers") == "0" and h.get("services.nodeports") == "0"
            for h in hard
        )
        scoped = any(
            "pods" in (s.get("hard") or {}) and "requests.cpu" in (s.get("hard") or {})
            for s in specs
            if s.get("scopeSelector")
        )
        if exposed or not scoped:
            found.append(
                Violation(
                    r.urn,
                    "has no quota that refuses LoadBalancer and NodePort Services and bounds "
                    "its pods outside Kueue",
                )
            )
    return found


def protected_in_prod(resources: Sequence[Resource]) -> list[Violation]:
    """In a stack named `prod`, what holds state is protected, and the cluster's deletion
    protection is on."""
    found = []
    for r in resources:
        if _stack_of(r.urn) != "prod":
            continue
        if r.type in PROTECTED_IN_PROD and not r.protect:
            found.append(Violation(r.urn, "is not protected in prod (ai-infra:protect)"))
        if r.type == types.CLUSTER and r.inputs.get("deletionProtection") is not True:
            found.append(Violation(r.urn, "has deletionProtection off in prod"))
    return found


def images_pinned_by_digest(resources: Sequence[Resource]) -> list[Violation]:
    """Advisory: a Deployment's image given by a tag can change under a running pod."""
    found = []
    for r in resources:
        if r.type != types.DEPLOYMENT:
            continue
        spec = ((r.inputs.get("spec") or {}).get("template") or {}).get("spec") or {}
        for c in spec.get("containers") or []:
            if "@sha256:" not in str(c.get("image", "")):
                found.append(Violation(r.urn, f"image {c.get('image')} is a mutable tag"))
    return found


def _stack_of(urn: str) -> str:
    return urn.split("::", 1)[0].rsplit(":", 1)[-1] if urn.startswith("urn:pulumi:") else ""


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    check: Check
    mandatory: bool = True


RULES: tuple[Rule, ...] = (
    Rule("no-basic-roles", "No basic role (owner, editor, viewer) is granted.", no_basic_roles),
    Rule(
        "no-authoritative-project-iam",
        "Project IAM is granted per member, never authoritatively.",
        no_authoritative_project_iam,
    ),
    Rule(
        "buckets-are-private",
        "Buckets have uniform access and public access prevention.",
        buckets_are_private,
    ),
    Rule("private-nodes", "GKE nodes have no public address.", private_nodes),
    Rule(
        "metadata-server-everywhere",
        "Every node pool runs the GKE metadata server.",
        metadata_server_everywhere,
    ),
    Rule(
        "no-default-compute-account",
        "No node or VM runs as the default compute service account.",
        no_default_compute_account,
    ),
    Rule(
        "no-internet-ingress",
        "No firewall rule admits every internet address, by one range or several.",
        no_internet_ingress,
    ),
    Rule(
        "pods-reach-systems-only-where-opted-in",
        "No pod reaches Slurm, GPU cluster or TPU VM ports that network.allow did not open.",
        pods_reach_systems_only_where_opted_in,
    ),
    Rule(
        "team-namespaces-enforce-pod-security",
        "Every team namespace enforces baseline Pod Security or stricter.",
        team_namespaces_enforce_pod_security,
    ),
    Rule(
        "network-policies-enforced",
        "A cluster with team namespaces enforces their NetworkPolicies.",
        network_policies_enforced,
    ),
    Rule(
        "team-namespaces-bounded",
        "Every team namespace's quota refuses external Services and bounds pods outside Kueue.",
        team_namespaces_bounded,
    ),
    Rule(
        "protected-in-prod",
        "In prod, stateful and expensive resources are protected.",
        protected_in_prod,
    ),
    Rule(
        "images-pinned-by-digest",
        "Deployments' images are pinned by digest.",
        images_pinned_by_digest,
        mandatory=False,
    ),
)


def violations(resources: Sequence[Resource]) -> dict[str, list[Violation]]:
    """Each rule's violations, by rule name."""
    return {rule.name: rule.check(resources) for rule in RULES}
