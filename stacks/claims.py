"""The one check of what spans systems: every system's claims (`components.system.Claim`) held
against each other. An account, a Kubernetes account and a Filestore name have one owner each;
no VM is named like those a Slurm nodeset's controller creates and deletes; no entry runs as an
account another system makes for itself; no tag a user lists is another system's; no
firewall rule name is derived twice.
"""

from __future__ import annotations

import re

from components.base import Problem, relative_path
from components.identity import ownership_problems, service_account_email
from components.system import Claim, ClaimKind, StackView


def problems(view: StackView) -> list[Problem]:
    """Every collision between the claims of `view`, at the config path that can be renamed."""
    # The program's own accounts (one per key) claim first, so that a clash is reported at
    # the list entry that can be renamed. Two entries of one list with one account id have
    # one name, which each list's duplicate check already reports.
    accounts = sorted(_pairs(view, ClaimKind.ACCOUNT), key=lambda claim: len(claim[0]) > 1)
    found = ownership_problems(accounts, ClaimKind.ACCOUNT, "name", within_a_key=False)
    found += ownership_problems(
        _pairs(view, ClaimKind.KUBERNETES_ACCOUNT), ClaimKind.KUBERNETES_ACCOUNT, "serviceAccount"
    )
    found += ownership_problems(
        _pairs(view, ClaimKind.FILESTORE), ClaimKind.FILESTORE, "name", within_a_key=False
    )
    found += _vm_names(view) + _account_uses(view) + _tags(view) + _volumes(view)
    # A share named like another's has its rules named alike: the instance says it first.
    said = {p.path for p in found}
    return found + [p for p in _firewalls(view) if p.path not in said]


def _pairs(view: StackView, kind: ClaimKind) -> list[tuple[tuple[str | int, ...], str]]:
    return [(c.path, c.value) for c in view.claimed(kind)]


def _vm_names(view: StackView) -> list[Problem]:
    """A VM named `<prefix>-<n>` where a controller creates and deletes VMs so named, once per
    entry. A name can be `<prefix>-<n>` of one prefix only (the part before its last '-'), so
    each name is one lookup."""
    owners: dict[str, tuple[int, Claim]] = {}
    for rank, claim in enumerate(c for c in view.claimed(ClaimKind.VM_NAME) if c.pattern):
        owners.setdefault(claim.value, (rank, claim))
    names: dict[tuple[str | int, ...], list[Claim]] = {}
    for claim in view.claimed(ClaimKind.VM_NAME):
        if not claim.pattern:
            names.setdefault(claim.path, []).append(claim)
    found = []
    for path, claimed in names.items():
        # The first owner (in claim order) any name of the entry falls under, and the first
        # of its names that does.
        clashes = [(owner, c) for c in claimed if (owner := _owner_of(c.value, owners))]
        if clashes:
            (_, owner), clash = min(clashes, key=lambda pair: pair[0][0])
            found.append(
                Problem(
                    path,
                    f"{clash.what} {clash.value} is a name of {owner.what}; choose another prefix",
                )
            )
    return found


_NUMBERED = re.compile(r"(?P<stem>.+)-[0-9]+")


def _owner_of(name: str, owners: dict[str, tuple[int, Claim]]) -> tuple[int, Claim] | None:
    match = _NUMBERED.fullmatch(name)
    return owners.get(match["stem"]) if match else None


def _account_uses(view: StackView) -> list[Problem]:
    """An account an entry runs as that another system creates for itself."""
    project = view.config.project
    owners: dict[str, list[Claim]] = {}
    for claim in view.claimed(ClaimKind.ACCOUNT):
        owners.setdefault(service_account_email(claim.value, project), []).append(claim)
    found = []
    for use in view.claimed(ClaimKind.ACCOUNT_USE):
        # Named by another system's claim of the email; the last, as ever.
        other = [c for c in owners.get(use.value, []) if c.system != use.system]
        if other:
            owner = relative_path(other[-1].path)
            found.append(Problem(use.path, use.what.format(owner=owner)))
    return found


def _tags(view: StackView) -> list[Problem]:
    """A network tag a user lists that names another system's VMs would let those VMs in
    wherever that system's rules admit it: a TPU VM tagged like the Slurm cluster would reach
    its controller's NFS exports."""
    claims = view.claimed(ClaimKind.TAG)
    reserved = {c.value: c.what for c in claims if not c.chosen}
    return [
        Problem(
            c.path,
            f"'{c.value}' is the network tag of {reserved[c.value]} VMs, which the stack's "
            "firewall rules admit by it; pick a tag of your own",
        )
        for c in claims
        if c.chosen and c.value in reserved and c.value not in c.own
    ]


def _volumes(view: StackView) -> list[Problem]:
    """One volume per bucket or instance: a second volume on the same data would carry an
    owner and grants of its own past the first's (an `existingFilestore` naming the share
    the stack creates, a bucket behind two volumes that grant it differently). Two bucket
    volumes that grant alike (`own`, the storage entry's grants) are two mount profiles."""
    first: dict[str, Claim] = {}
    found = []
    for claim in view.claimed(ClaimKind.VOLUME):
        earlier = first.setdefault(claim.value, claim)
        if earlier is not claim and not (claim.own and claim.own == earlier.own):
            found.append(
                Problem(
                    claim.path,
                    f"'{claim.what}' is already behind {relative_path(earlier.path[:-1])}; a "
                    "second volume on the same data would carry its own owner and grants past "
                    "the first's: grant it as the first does, or mount the first volume by "
                    "its name",
                )
            )
    return found


def _firewalls(view: StackView) -> list[Problem]:
    """One owner per firewall rule name: a name a config entry gives (`<prefix>-allow-<name>`,
    `<prefix>-<cluster>-gpu-vm-internal`) that another system's rule, or the stack's own
    (`<prefix>-allow-internal`), already has would either register one URN twice or fail at
    `pulumi up` on a name taken. Reported at the name that can be changed: a chosen one over
    a fixed one, else the later. Two entries of one list with one name are left to that
    list's duplicate check."""
    first: dict[str, Claim] = {}
    found = []
    for claim in view.claimed(ClaimKind.FIREWALL):
        earlier = first.setdefault(claim.value, claim)
        if earlier is claim or _same_list(earlier.path, claim.path):
            continue
        blamed, owner = (earlier, claim) if not claim.chosen else (claim, earlier)
        found.append(
            Problem(
                blamed.path,
                f"gives the firewall rule '{claim.value}', which is already the rule of "
                f"{owner.what} ({relative_path(owner.path)}); a project has one "
                "rule of a name, so choose another name",
            )
        )
    return found


def _same_list(a: tuple[str | int, ...], b: tuple[str | int, ...]) -> bool:
    """Two paths into entries of one list (`allow[0].name`, `allow[2].name`)."""
    return (
        len(a) == len(b)
        and a != b
        and all(
            x == y or (isinstance(x, int) and isinstance(y, int)) for x, y in zip(a, b, strict=True)
        )
    )
