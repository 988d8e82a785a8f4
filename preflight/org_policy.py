"""Organization policy constraints that would refuse what the plan creates, read as they apply
to the project (`getEffectivePolicy`, which folds in the folders' and organization's):
resource locations, external IPs, OS Login, Shielded VM, domain-restricted sharing for the
members the plan grants, service account creation, trusted image projects, the subnets Cloud
NAT may serve, the services the project may use, and guest attributes. Rules with conditions
(tags) cannot be evaluated without the resources' tags and are reported as such; managed
constraints (`compute.managed.*`) are not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from google.api_core import exceptions
from google.cloud import orgpolicy_v2

from graph import types
from preflight.live import CannotCheck, Live
from preflight.needs import Needs
from preflight.report import Finding, Status, fail, ok, warn

NAME = "org-policy"
MEANING = (
    "no organization policy refuses the plan: allowed locations, VM external IPs, OS Login, "
    "Shielded VM, domain-restricted sharing of the members granted, service account "
    "creation, trusted image projects, Cloud NAT's subnets, allowed services, guest "
    "attributes"
)
LOCATIONS = "gcp.resourceLocations"
EXTERNAL_IPS = "compute.vmExternalIpAccess"
OS_LOGIN = "compute.requireOsLogin"
SHIELDED_VM = "compute.requireShieldedVm"
MEMBER_DOMAINS = "iam.allowedPolicyMemberDomains"
ACCOUNT_CREATION = "iam.disableServiceAccountCreation"
TRUSTED_IMAGES = "compute.trustedImageProjects"
NAT_SUBNETS = "compute.restrictCloudNATUsage"
SERVICES = "gcp.restrictServiceUsage"
GUEST_ATTRIBUTES = "compute.disableGuestAttributesAccess"
GKE_IMAGE_PROJECTS = {
    "COS_CONTAINERD": "gke-node-images",
    "UBUNTU_CONTAINERD": "ubuntu-os-gke-cloud",
}
"""Node image type -> the project GKE boots its nodes from (GKE "Node images": the image source
projects), which trustedImageProjects must allow."""
_IMAGE_PROJECT = re.compile(r"(?:.*/)?projects/(?P<project>[^/]+)/global/images/.*")
_REGION = re.compile(r"[a-z]+-[a-z]+[0-9]+")

Match = Callable[[str, str], bool | None]
"""(policy value, plan value) -> whether it matches, or None when it cannot tell."""


def exact(policy_value: str, value: str) -> bool | None:
    return policy_value.removeprefix("is:").casefold() == value.casefold()


def location(policy_value: str, value: str) -> bool | None:
    """A `gcp.resourceLocations` value against a region, zone or multi-region: a location
    (`us-east5`, `is:us-east5-a`) or a value group `in:<region>-locations` (the region and its
    zones) or `in:us-locations`. Other groups are Google's to expand, not ours."""
    text = policy_value.removeprefix("is:").casefold()
    value = value.casefold()
    if not text.startswith("in:"):
        return text == value
    group = text.removeprefix("in:").removesuffix("-locations")
    if group == "us" or _REGION.fullmatch(group):
        return value == group or value.startswith(group + "-")
    return None


def resource(policy_value: str, value: str) -> bool | None:
    """A list value naming a resource (`projects/P`, `projects/P/regions/R/subnetworks/S`)
    against one: equal, or under a project it names (`under:projects/P`); other groups
    (folders, organizations) are not ours to expand."""
    text = policy_value.removeprefix("is:")
    if text.startswith("under:"):
        parent = text.removeprefix("under:").rstrip("/")
        if parent.startswith("projects/"):
            return value == parent or value.startswith(parent + "/")
        return None
    return text == value


@dataclass(frozen=True)
class ListPolicy:
    """A list constraint's effective rules."""

    allow_all: bool = False
    deny_all: bool = False
    allowed: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    conditional: bool = False

    @classmethod
    def of(cls, policy: orgpolicy_v2.Policy) -> ListPolicy:
        allow_all = deny_all = conditional = False
        allowed: list[str] = []
        denied: list[str] = []
        for rule in policy.spec.rules:
            if rule.condition.expression:
                conditional = True
                continue
            allow_all |= rule.allow_all
            deny_all |= rule.deny_all
            allowed += rule.values.allowed_values
            denied += rule.values.denied_values
        return cls(allow_all, deny_all, tuple(allowed), tuple(denied), conditional)

    @property
    def restricts(self) -> bool:
        return self.deny_all or bool(self.allowed or self.denied) or self.conditional

    def verdict(self, value: str, match: Match) -> tuple[Status, str] | None:
        """Why `value` is refused (`fail`) or may be (`warn`); None when it is allowed."""
        if self.deny_all:
            return "fail", "the policy denies all values"
        for denied in self.denied:
            if match(denied, value):
                return "fail", f"denied by {denied}"
        if self.allowed and not self.allow_all:
            answers = [match(allowed, value) for allowed in self.allowed]
            if not any(answers):
                if None in answers:
                    unknown = [a for a, m in zip(self.allowed, answers, strict=True) if m is None]
                    return (
                        "warn",
                        f"allowed values include groups preflight cannot expand: "
                        f"{', '.join(unknown)}",
                    )
                return "fail", f"allowed values are {', '.join(self.allowed)}"
        if self.conditional:
            return "warn", "the policy has conditional rules preflight cannot evaluate"
        return None

    def refuses(self, value: str, match: Match) -> str | None:
        found = self.verdict(value, match)
        return found[1] if found is not None and found[0] == "fail" else None


def enforced(policy: orgpolicy_v2.Policy) -> bool | None:
    """Whether a boolean constraint is enforced; None when only conditional rules decide."""
    plain = [r for r in policy.spec.rules if not r.condition.expression]
    if plain:
        return any(r.enforce for r in plain)
    return None if policy.spec.rules else False


def _locations(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    rules = ListPolicy.of(policy)
    subject = f"{LOCATIONS} for {', '.join(needs.locations)}"
    found = []
    for place in needs.locations:
        verdict = rules.verdict(place, location)
        if verdict is not None:
            status, why = verdict
            fix = "place the stack where the policy allows, or ask for an exception"
            found.append(Finding(NAME, status, f"{LOCATIONS} for {place}", why, fix))
    return found or [ok(NAME, subject, "allowed" if rules.restricts else "not restricted")]


def _external_ips(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    users = [v.source for v in needs.vms if v.external_ips] + [
        n.source for n in needs.tpu_nodes if n.external_ips
    ]
    rules = ListPolicy.of(policy)
    if not users:
        return [ok(NAME, EXTERNAL_IPS, "the plan gives no VM an external IP")]
    if rules.allow_all or not rules.restricts:
        return [ok(NAME, EXTERNAL_IPS, f"not restricted ({len(users)} plan entries use them)")]
    fix = "set enablePublicIps: false (the stack's Cloud NAT gives egress without them)"
    if rules.deny_all:
        return [
            fail(NAME, f"{EXTERNAL_IPS} for {u}", "the policy denies external IPs", fix)
            for u in users
        ]
    return [
        warn(
            NAME,
            f"{EXTERNAL_IPS} for {u}",
            f"allowed only for listed instances ({', '.join(rules.allowed) or 'none'})",
            fix,
        )
        for u in users
    ]


def _os_login(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    on = enforced(policy)
    if not on:
        state = "not enforced" if on is False else "conditional: cannot evaluate"
        return [Finding(NAME, "ok" if on is False else "warn", OS_LOGIN, state)]
    metadata = [*needs.vms, *needs.tpu_nodes]
    off = [
        m.source
        for m in metadata
        if str(m.metadata.get("enable-oslogin", "TRUE")).casefold() in ("false", "0", "no")
    ]
    if off:
        return [
            fail(
                NAME,
                f"{OS_LOGIN} for {s}",
                "enforced, and the plan turns OS Login off",
                "drop enable-oslogin from the entry's metadata",
            )
            for s in off
        ]
    return [ok(NAME, OS_LOGIN, "enforced; the plan keeps OS Login on")]


def _shielded(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    on = enforced(policy)
    if not on:
        state = "not enforced" if on is False else "conditional: cannot evaluate"
        return [Finding(NAME, "ok" if on is False else "warn", SHIELDED_VM, state)]
    gpu_reason = "; GPU clusters keep it off for the Deep Learning VM's unsigned NVIDIA driver"
    found = [
        fail(
            NAME,
            f"{SHIELDED_VM} for {vm.source}",
            f"enforced, and these VMs boot without Secure Boot{gpu_reason if vm.gpus else ''}",
            "ask for an exception for the project, or run the GPUs as a GKE pool "
            "(ai-infra:gpuPools), whose nodes keep Secure Boot on",
        )
        for vm in needs.vms
        if vm.secure_boot is False
    ]
    found += [
        warn(
            NAME,
            f"{SHIELDED_VM} for {vm.source}",
            "enforced, and the plan leaves Secure Boot to whoever creates these VMs",
            "make sure they are created with Secure Boot",
        )
        for vm in needs.vms
        if vm.secure_boot is None
    ]
    found += [
        warn(
            NAME,
            f"{SHIELDED_VM} for {n.source}",
            "enforced, and these TPU VMs boot without Secure Boot; whether the policy holds "
            "Cloud TPU VMs to it is not documented",
            "set secureBoot: true where the TPU software version supports it",
        )
        for n in needs.tpu_nodes
        if n.secure_boot is not True
    ]
    return found or [ok(NAME, SHIELDED_VM, "enforced; every VM the plan creates has Secure Boot")]


def _member_domains(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    rules = ListPolicy.of(policy)
    if not rules.restricts or rules.allow_all:
        return [ok(NAME, MEMBER_DOMAINS, "not restricted")]
    outside = sorted(
        {m for m, _ in needs.members if m.split(":", 1)[0] in ("user", "group", "domain")}
    )
    if not outside:
        return [ok(NAME, MEMBER_DOMAINS, "restricted; the plan grants only service accounts")]
    customers = ", ".join(rules.allowed) or "none"
    return [
        warn(
            NAME,
            f"{MEMBER_DOMAINS} for {member}",
            f"restricted to customer(s) {customers}, which preflight cannot map members to",
            "make sure the member belongs to an allowed Workspace customer",
        )
        for member in outside
    ]


def _account_creation(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    on = enforced(policy)
    created = dict(needs.types).get(types.SERVICE_ACCOUNT, 0)
    if on is False or not created:
        state = "not enforced" if on is False else "the plan creates no service account"
        return [ok(NAME, ACCOUNT_CREATION, state)]
    if on is None:
        return [warn(NAME, ACCOUNT_CREATION, "conditional: cannot evaluate")]
    return [
        fail(
            NAME,
            ACCOUNT_CREATION,
            f"enforced, and the plan creates {created} service accounts (each system's own, "
            "with least-privilege grants)",
            "ask for an exception for this project: iam.disableServiceAccountCreation set to "
            "not enforced on it",
        )
    ]


def _image_projects(needs: Needs) -> dict[str, list[str]]:
    """`projects/P` -> who boots an image of P, GKE's node images included."""
    found: dict[str, list[str]] = {}
    for source, image in needs.images:
        match = _IMAGE_PROJECT.fullmatch(image)
        if match is not None:
            found.setdefault(f"projects/{match['project']}", []).append(source)
    for image_type in needs.image_types:
        if image_type in GKE_IMAGE_PROJECTS:
            found.setdefault(f"projects/{GKE_IMAGE_PROJECTS[image_type]}", []).append(
                f"GKE node pools ({image_type})"
            )
    return found


def _list_findings(
    constraint: str,
    policy: orgpolicy_v2.Policy,
    users: dict[str, list[str]],
    fix: str,
) -> list[Finding]:
    """Each value the plan uses that a list policy refuses (or may), with who uses it."""
    rules = ListPolicy.of(policy)
    if not rules.restricts or rules.allow_all:
        return [ok(NAME, constraint, "not restricted")]
    found = []
    for value, who in sorted(users.items()):
        verdict = rules.verdict(value, resource)
        if verdict is not None:
            status, why = verdict
            subject = f"{constraint} for {value}"
            found.append(Finding(NAME, status, subject, f"{why} (for {', '.join(who)})", fix))
    return found or [ok(NAME, constraint, f"restricted; allows the {len(users)} the plan uses")]


def _trusted_images(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    fix = "ask for the image project to be trusted, or boot images from a trusted one"
    return _list_findings(TRUSTED_IMAGES, policy, _image_projects(needs), fix)


def _nat_subnets(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    users: dict[str, list[str]] = {}
    for source, subnet in needs.nat_subnets:
        users.setdefault(subnet, []).append(source)
    fix = (
        "ask for the subnet to be allowed Cloud NAT; without it the private nodes and VMs "
        "reach no registry or package mirror outside Google"
    )
    return _list_findings(NAT_SUBNETS, policy, users, fix)


def _services(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    users = {service: ["the stack enables it"] for service in needs.services}
    fix = "ask for the service to be allowed for this project"
    return _list_findings(SERVICES, policy, users, fix)


def _guest_attributes(needs: Needs, policy: orgpolicy_v2.Policy) -> list[Finding]:
    on = enforced(policy)
    if not on:
        state = "not enforced" if on is False else "conditional: cannot evaluate"
        return [Finding(NAME, "ok" if on is False else "warn", GUEST_ATTRIBUTES, state)]
    found = [
        warn(
            NAME,
            f"{GUEST_ATTRIBUTES} for {n.source}",
            "enforced: Cloud TPU publishes each TPU VM worker's state as guest attributes "
            "(`gcloud compute tpus tpu-vm get-guest-attributes`), which can no longer be "
            "read; whether the TPU runtime needs them is not documented",
            "ask for an exception if the workloads read the workers' guest attributes",
        )
        for n in needs.tpu_nodes
    ]
    return found or [ok(NAME, GUEST_ATTRIBUTES, "enforced; the plan reads no guest attributes")]


CONSTRAINTS: tuple[tuple[str, Callable[[Needs, orgpolicy_v2.Policy], list[Finding]]], ...] = (
    (LOCATIONS, _locations),
    (EXTERNAL_IPS, _external_ips),
    (OS_LOGIN, _os_login),
    (SHIELDED_VM, _shielded),
    (MEMBER_DOMAINS, _member_domains),
    (ACCOUNT_CREATION, _account_creation),
    (TRUSTED_IMAGES, _trusted_images),
    (NAT_SUBNETS, _nat_subnets),
    (SERVICES, _services),
    (GUEST_ATTRIBUTES, _guest_attributes),
)


def check(needs: Needs, live: Live) -> list[Finding]:
    findings = []
    for constraint, judge in CONSTRAINTS:
        try:
            policy = live.effective_policy(constraint)
        except (CannotCheck, exceptions.NotFound) as error:
            findings.append(warn(NAME, constraint, str(error)))
            continue
        findings += judge(needs, policy)
    return findings
