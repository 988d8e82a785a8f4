"""The cross-system claim checks answer by lookup what the pairwise rule answers: a VM named
`<prefix>-<n>` under a controller's prefix, and an account an entry runs as that another
system makes. Held against the pairwise rule on random claims."""

from __future__ import annotations

import random
import re

import pytest

from components.base import Problem, relative_path
from components.identity import service_account_email
from components.system import Claim, ClaimKind, StackView
from stacks import claims
from stacks.loading import parse
from tests.conftest import with_config

CONFIG = parse(with_config(), "test")
PROJECT = CONFIG.project


def _pairwise_vm_names(view: StackView) -> list[Problem]:
    patterns = [c for c in view.claimed(ClaimKind.VM_NAME) if c.pattern]
    names: dict[tuple, list[Claim]] = {}
    for claim in view.claimed(ClaimKind.VM_NAME):
        if not claim.pattern:
            names.setdefault(claim.path, []).append(claim)
    found = []
    for path, claimed in names.items():
        for owner in patterns:
            pattern = re.compile(re.escape(owner.value) + r"-[0-9]+")
            clash = next((c for c in claimed if pattern.fullmatch(c.value)), None)
            if clash is not None:
                message = f"{clash.what} {clash.value} is a name of {owner.what}; choose another"
                found.append(Problem(path, message + " prefix"))
                break
    return found


def _pairwise_account_uses(view: StackView) -> list[Problem]:
    found = []
    for use in view.claimed(ClaimKind.ACCOUNT_USE):
        owners = {
            service_account_email(c.value, PROJECT): c.path
            for c in view.claimed(ClaimKind.ACCOUNT)
            if c.system != use.system
        }
        if use.value in owners:
            found.append(Problem(use.path, use.what.format(owner=relative_path(owners[use.value]))))
    return found


def _random_claims(rng: random.Random) -> tuple[Claim, ...]:
    stems = ["hpc-v4", "hpc-v4-1", "hpc", "a", "a-1", "x-y"]
    found: list[Claim] = []
    for i in range(rng.randint(0, 6)):
        stem = rng.choice(stems)
        found.append(Claim(ClaimKind.VM_NAME, stem, ("slurm", i), f"nodeset {i}", pattern=True))
    for i in range(rng.randint(0, 12)):
        value = f"{rng.choice(stems)}-{rng.choice(['0', '12', 'x', '1-2'])}"
        found.append(Claim(ClaimKind.VM_NAME, value, ("tpuVms", i % 4), "TPU VM"))
    systems = ["gke", "slurm", "tpu-vms"]
    ids = ["ai-test-a", "ai-test-b", "ai-test-c"]
    for i in range(rng.randint(0, 5)):
        found.append(
            Claim(ClaimKind.ACCOUNT, rng.choice(ids), (f"k{i}",), system=rng.choice(systems))
        )
    for i in range(rng.randint(0, 5)):
        email = service_account_email(rng.choice(ids), PROJECT)
        use = Claim(ClaimKind.ACCOUNT_USE, email, (f"u{i}",), "runs as {owner}'s")
        found.append(Claim(**{**use.__dict__, "system": rng.choice(systems)}))
    rng.shuffle(found)
    return tuple(found)


@pytest.mark.parametrize("seed", range(200))
def test_lookups_find_what_pairs_find(seed):
    view = StackView(CONFIG, claims=_random_claims(random.Random(seed)))
    assert claims._vm_names(view) == _pairwise_vm_names(view)
    assert claims._account_uses(view) == _pairwise_account_uses(view)


def test_a_numbered_name_under_a_prefix_that_itself_ends_in_a_number_is_found():
    view = StackView(
        CONFIG,
        claims=(
            Claim(ClaimKind.VM_NAME, "hpc-v4-1", ("slurm", 0), "nodeset v4-1", pattern=True),
            Claim(ClaimKind.VM_NAME, "hpc-v4-1-3", ("tpuVms", 0), "TPU VM"),
            Claim(ClaimKind.VM_NAME, "hpc-v4-13", ("tpuVms", 1), "TPU VM"),
        ),
    )
    assert [p.path for p in claims._vm_names(view)] == [("tpuVms", 0)]
