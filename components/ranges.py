"""Address ranges judged as the cloud reads them: a rule admits the union of its sources, so
two halves of the address space admit all of it, and an ingress rule that names no source
admits every address. Standard library only: the policy pack imports it under
`pulumi preview`, where only pulumi-policy is installed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Span = tuple[int, int]

EVERYWHERE = "0.0.0.0/0"

NOT_INTERNET_V4 = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/3",
)
"""IPv4 special-purpose blocks no internet host sends from (IANA IPv4 Special-Purpose Address
Registry, RFC 6890): private, shared (CGNAT), loopback, link-local, documentation,
benchmarking, multicast and reserved. Every other IPv4 address is the internet's."""
INTERNET_V6 = "2000::/3"
"""IPv6 global unicast (RFC 4291), where every internet host's address is."""


def network(text: object) -> Network | None:
    """A range as the firewall and NetworkPolicy APIs read one, host bits and all
    (`10.1.2.3/0` is every address), or None where the text is no range (an output not yet
    known)."""
    try:
        return ipaddress.ip_network(str(text).strip(), strict=False)
    except ValueError:
        return None


def within(inner: object, outer: object) -> bool:
    """Whether range `inner` lies inside range `outer` (both read as `network` does)."""
    a, b = network(inner), network(outer)
    if a is None or b is None or a.version != b.version:
        return False
    return int(b.network_address) <= int(a.network_address) and int(a.broadcast_address) <= int(
        b.broadcast_address
    )


def _spans(ranges: Iterable[object], version: int) -> list[Span]:
    """The ranges of one IP version as merged, sorted [first, last] integer spans."""
    spans = sorted(
        (int(n.network_address), int(n.broadcast_address))
        for n in (network(r) for r in ranges)
        if n is not None and n.version == version
    )
    merged: list[Span] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _uncovered(spans: Sequence[Span], wanted: Sequence[Span]) -> list[Span]:
    """The parts of `wanted` (merged, sorted) that no span of `spans` (merged, sorted) covers."""
    left: list[Span] = []
    i = 0
    for first, last in wanted:
        start = first
        while i < len(spans) and spans[i][1] < start:
            i += 1
        j = i
        while start <= last and j < len(spans) and spans[j][0] <= last:
            if spans[j][0] > start:
                left.append((start, spans[j][0] - 1))
            start = max(start, spans[j][1] + 1)
            j += 1
        if start <= last:
            left.append((start, last))
    return left


def _internet_v4() -> list[Span]:
    return _uncovered(_spans(NOT_INTERNET_V4, 4), [(0, 2**32 - 1)])


def covers_internet(ranges: Iterable[object]) -> bool:
    """Whether the union of `ranges` admits every internet address of IPv4 or of IPv6:
    `0.0.0.0/0`, `0.0.0.0/1` with `128.0.0.0/1`, or every public block listed one by one.
    Near-linear in the number of ranges."""
    ranges = list(ranges)
    v4 = _uncovered(_spans(ranges, 4), _internet_v4())
    v6 = _uncovered(_spans(ranges, 6), _spans([INTERNET_V6], 6))
    return not v4 or not v6


def ingress_sources(
    source_ranges: Sequence[object] | None,
    source_tags: Sequence[object] | None = None,
    source_service_accounts: Sequence[object] | None = None,
) -> list[object]:
    """The ranges an ingress firewall rule admits by address: its source ranges, or, when it
    names no source of any kind, every address (Compute Engine API `Firewall.sourceRanges`:
    an ingress rule without sourceRanges, sourceTags or sourceServiceAccounts applies to
    0.0.0.0/0; terraform-provider-google#6789 shows the provider sends it so)."""
    if source_ranges:
        return list(source_ranges)
    if source_tags or source_service_accounts:
        return []
    return [EVERYWHERE]


class Blocks:
    """CIDR blocks added in order, for "the first one this block overlaps" in a block's
    prefix length, however many there are: two CIDR blocks overlap only when one holds the
    other, so the answer is an exact block above it or the first block at or under it."""

    def __init__(self) -> None:
        self._at: dict[Network, tuple[int, str]] = {}
        self._first_under: dict[Network, tuple[int, str]] = {}

    def add(self, block: Network, key: str) -> None:
        entry = (len(self._at), key)
        self._at.setdefault(block, entry)
        for prefix in range(block.prefixlen + 1):
            self._first_under.setdefault(block.supernet(new_prefix=prefix), entry)

    def first_overlap(self, block: Network) -> str | None:
        """The key of the first block added that overlaps `block`, if any."""
        found = [
            self._at[above]
            for above in (block.supernet(new_prefix=p) for p in range(block.prefixlen))
            if above in self._at
        ]
        if block in self._first_under:
            found.append(self._first_under[block])
        return min(found)[1] if found else None
