"""Entries whose VMs answer another entry's `--TPU_PREFIX` are refused at the entry whose
prefix is answered, naming the first such VM of the first other entry, whatever the order of
the entries; prefixes that only look alike are accepted."""

from __future__ import annotations

from tests.tpu_vms.test_vms import built, rejected, stack, vm


def _message(vm_name: str, entry: int, prefix: str) -> str:
    return (
        f"TPU VM {vm_name} of tpuVms[{entry}] would also answer --TPU_PREFIX={prefix}; give "
        "the entries distinct prefixes"
    )


def test_every_answered_prefix_is_refused_at_its_entry_with_the_first_answering_vm():
    entries = [
        vm(name="a", nodeCount=3),  # a-0, a-1, a-2
        vm(name="b", nodePrefix="a-1"),  # the VM a-1: answers a, and a's a-1 answers it
        vm(name="c", nodePrefix="a"),  # the VM a: answers a's prefix, and a's VMs answer it
        vm(name="d", nodePrefix="x-7-8"),  # its prefix is no one's
        vm(name="e", nodePrefix="x-7"),  # x-7-8 is x-7 numbered
    ]
    problems = rejected(stack(tpuVms=entries))
    assert problems == {
        "ai-infra:tpuVms[0].name": _message("a-1", 1, "a"),
        "ai-infra:tpuVms[1].nodePrefix": _message("a-1", 0, "a-1"),
        "ai-infra:tpuVms[2].nodePrefix": _message("a-0", 0, "a"),
        "ai-infra:tpuVms[4].nodePrefix": _message("x-7-8", 3, "x-7"),
    }


def test_prefixes_that_only_look_alike_are_accepted():
    entries = [
        vm(name="a", nodeCount=2),
        vm(name="b", nodePrefix="a-x"),  # not numbered
        vm(name="c", nodePrefix="a-1-0"),  # a-1-0 answers a-1, which no entry is
        vm(name="d", nodePrefix="aa"),
    ]
    assert built(*entries)
