"""The union of ranges as the cloud reads it, held against the standard library's own set
arithmetic (`ipaddress.address_exclude`) on random inputs, and the firewall's reading of a rule
that names no source."""

from __future__ import annotations

import ipaddress
import random

import pytest

from components.ranges import (
    EVERYWHERE,
    INTERNET_V6,
    NOT_INTERNET_V4,
    Blocks,
    covers_internet,
    ingress_sources,
    within,
)


def _public_blocks() -> list[str]:
    """Every public IPv4 block, as the complement of the special-purpose ones."""
    blocks = [ipaddress.IPv4Network(EVERYWHERE)]
    for special in NOT_INTERNET_V4:
        cut = ipaddress.IPv4Network(special)
        blocks = [
            piece
            for block in blocks
            for piece in (block.address_exclude(cut) if cut.subnet_of(block) else [block])
            if not piece.subnet_of(cut)
        ]
    return [str(b) for b in blocks]


@pytest.mark.parametrize(
    "ranges",
    [
        ["0.0.0.0/0"],
        ["10.1.2.3/0"],
        ["0.0.0.0/1", "128.0.0.0/1"],
        ["128.0.0.0/1", "0.0.0.0/2", "64.0.0.0/2"],
        # 0.0.0.0 to 223.255.255.255: what is left, 224.0.0.0/3, is multicast and reserved.
        ["0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3"],
        ["::/0"],
        [INTERNET_V6],
        ["2000::/4", "3000::/4"],
        _public_blocks(),
        [*_public_blocks(), "not a range", "(known after pulumi up)"],
    ],
    ids=[
        "slash-0",
        "slash-0-host-bits",
        "two-halves",
        "three-parts",
        "all-but-multicast",
        "v6-everything",
        "v6-global",
        "v6-two-halves",
        "every-public-block",
        "with-unknowns",
    ],
)
def test_ranges_that_together_admit_the_internet(ranges):
    assert covers_internet(ranges)


@pytest.mark.parametrize(
    "ranges",
    [
        [],
        ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"],
        ["0.0.0.0/1"],
        _public_blocks()[1:],
        ["0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/4"],
        ["2000::/4"],
        ["not a range"],
    ],
    ids=["none", "private", "half", "one-public-block-missing", "short-of-224", "v6-half", "junk"],
)
def test_ranges_that_leave_some_of_the_internet_out(ranges):
    assert not covers_internet(ranges)


def _oracle(ranges: list[str]) -> bool:
    """The same judgement by the standard library's set arithmetic, quadratic and plain."""
    left = [ipaddress.IPv4Network(b) for b in _public_blocks()]
    for text in ranges:
        cut = ipaddress.ip_network(text, strict=False)
        if cut.version != 4:
            continue
        rest = []
        for block in left:
            if block.subnet_of(cut):
                continue
            if cut.subnet_of(block):
                rest += list(block.address_exclude(cut))
            else:
                rest.append(block)
        left = rest
    return not left


def test_the_union_matches_the_standard_librarys_set_arithmetic():
    rng = random.Random(35)
    for _ in range(300):
        count = rng.randint(1, 12)
        ranges = [
            str(ipaddress.IPv4Network((rng.getrandbits(32), prefix), strict=False))
            for prefix in (rng.randint(0, 6) for _ in range(count))
        ]
        assert covers_internet(ranges) == _oracle(ranges), ranges


def test_a_hundred_thousand_ranges_are_judged_in_one_pass():
    # Near-linear: sorting and one sweep, however many ranges a rule lists.
    many = [f"10.{i // 256 % 256}.{i % 256}.0/24" for i in range(100_000)]
    assert not covers_internet(many)
    assert covers_internet([*many, "0.0.0.0/1", "128.0.0.0/1"])


def test_an_ingress_rule_without_a_source_admits_every_address():
    assert ingress_sources(None) == [EVERYWHERE]
    assert ingress_sources([], [], []) == [EVERYWHERE]
    assert ingress_sources(None, ["gke-node"]) == []
    assert ingress_sources(None, None, ["sa@p.iam.gserviceaccount.com"]) == []
    assert ingress_sources(["10.0.0.0/8"], ["gke-node"]) == ["10.0.0.0/8"]


def test_within_reads_ranges_as_the_apis_do():
    assert within("10.64.1.0/24", "10.64.0.0/14")
    assert within("10.64.0.0/14", "10.64.0.0/14")
    assert not within("10.0.0.0/8", "10.64.0.0/14")
    assert not within("::/0", "10.64.0.0/14")
    assert not within("(known after pulumi up)", "10.64.0.0/14")


@pytest.mark.parametrize("seed", range(20))
def test_the_first_block_overlapped_is_the_pairwise_answer(seed):
    """`Blocks` against `IPv4Network.overlaps`, block by block, in the order added."""
    draw = random.Random(seed)
    blocks = [
        ipaddress.IPv4Network((draw.randrange(0, 2**8) << 24, 32)).supernet(
            new_prefix=draw.randint(1, 8)
        )
        if draw.random() < 0.1
        else ipaddress.IPv4Network((10 << 24 | draw.randrange(0, 2**12) << 12, 32)).supernet(
            new_prefix=draw.randint(8, 20)
        )
        for _ in range(60)
    ]
    index = Blocks()
    answers = []
    for k, block in enumerate(blocks):
        expected = next((f"b{j}" for j in range(k) if block.overlaps(blocks[j])), None)
        assert index.first_overlap(block) == expected, (k, block)
        answers.append(expected)
        index.add(block, f"b{k}")
    assert None in answers and set(answers) != {None}, "the draw should hold both"
