"""How cost reads: the plan's cost section, a diff's cost change, and the same numbers in JSON."""

from __future__ import annotations

import re

import pytest

from prices import cost_change, cost_change_json, cost_json, cost_section
from prices.cost import HOURS_PER_MONTH
from prices.quotes import money
from tests.conftest import with_config
from tests.prices.conftest import Cost, cost_of, line

V5P = {"name": "train", "accelerator": "v5p-256"}
"""32 hosts: with the CPU pool the stack NAT serves more than 32 VMs, where its price stops."""


def _wide() -> dict:
    return {"podsCidr": "10.64.0.0/14"}


def test_the_cost_section_prints_each_line_the_totals_and_the_dates(cost: Cost):
    report = cost(tpuSlices=[V5P])
    text = "\n".join(cost_section(report))
    train = line(report, "NodePool tpu-train-0")
    row = re.search(
        r"^  NodePool tpu-train-0 +tpuSlices\[0\] +on-demand +(\S+)/h +(\S+)/h", text, re.M
    )
    assert row, text
    assert row[1] == row[2] == money(train.full.usd)
    assert "128 v5p chip x $4.2/chip-hour" in text
    assert re.search(rf"per hour +{re.escape(money(report.idle.usd))}/h", text)
    month = money(report.full.usd * HOURS_PER_MONTH)
    assert re.search(rf"per month .*{re.escape(month)}/mo", text)
    # Where the prices come from, and as of when.
    assert "2026-07-30: Cyclenerd" in text
    assert "undated: SkyPilot catalog" in text
    assert "Left out:" in text and "sustained-use discounts" in text


def test_unknown_prices_are_listed_with_their_reason_and_marked_in_the_totals(cost: Cost):
    report = cost(
        tpuSlices=[{"name": "flex", "accelerator": "v5p-32", "provisioning": "flex-start"}]
    )
    text = "\n".join(cost_section(report))
    assert "Unknown prices (not in the totals):" in text
    assert re.search(r"v5p chip: no verified flex-start .*: NodePool tpu-flex-0", text)
    assert re.search(r"per hour .* \+ 1 unknown", text)


def test_teams_are_shown_with_their_share(cost: Cost):
    report = cost(
        tpuSlices=[V5P],
        # Explicit shares: a team without one gets whole slices only, and the rest of this
        # one slice would go to the cohort (test_cost's whole-slice test).
        teams=[{"name": "a", "quota": {"train": "75%"}}, {"name": "b", "quota": {"train": "25%"}}],
    )
    text = "\n".join(cost_section(report))
    train = line(report, "NodePool tpu-train-0").full.usd
    assert re.search(rf"^    a +{re.escape(money(0.75 * train))}/h", text, re.M)
    assert re.search(rf"^    b +{re.escape(money(0.25 * train))}/h", text, re.M)
    assert "(outside team quotas)" in text


def test_the_json_carries_the_numbers_the_text_shows(cost: Cost):
    report = cost(tpuSlices=[V5P])
    document = cost_json(report)
    assert document["currency"] == "USD" and document["hoursPerMonth"] == 720
    assert document["total"]["full"]["perHour"] == pytest.approx(report.full.usd)
    assert document["total"]["idle"]["perMonth"] == pytest.approx(report.idle.usd * 720)
    lines = {x["label"]: x for x in document["lines"]}
    train = lines["NodePool tpu-train-0"]
    assert train["configKey"] == "tpuSlices[0]"
    assert train["full"]["perHour"] == pytest.approx(line(report, "NodePool tpu-train-0").full.usd)
    chips = next(p for p in train["parts"] if p["what"] == "v5p chip")
    assert (chips["fullUnits"], chips["usdPerUnitHour"]) == (128, 4.2)
    assert {s["asOf"][0] for s in document["sources"]} >= {"2026-07-30", "undated"}
    assert document["byTeam"]["(outside team quotas)"]["full"]["perHour"] > 0


def test_a_diff_adding_one_slice_changes_the_totals_by_that_slice_price():
    before = cost_of(with_config(tpuSlices=[V5P], network=_wide()))
    second = {"name": "more", "accelerator": "v5p-32"}
    after = cost_of(with_config(tpuSlices=[V5P, second], network=_wide()))
    added = line(after, "NodePool tpu-more-0")
    assert after.full.usd - before.full.usd == pytest.approx(added.full.usd, rel=1e-12)
    assert after.idle.usd - before.idle.usd == pytest.approx(added.idle.usd, rel=1e-12)
    text = cost_change(before, after)
    assert text[1] == (
        f"  + NodePool tpu-more-0 (tpuSlices[1])  4 x ct5p-hightpu-4t, 16 v5p chips  "
        f"+{money(added.full.usd)}/h at full scale, +{money(added.idle.usd)}/h idle"
    )
    assert len(text) == 4, text  # nothing else changed: the NAT was already at its 32 VMs
    change = money(added.full.usd * HOURS_PER_MONTH)
    assert re.search(
        rf"full scale: .* \(\+{re.escape(money(added.full.usd))}/h, \+{re.escape(change)}/mo\)",
        text[3],
    )
    document = cost_change_json(before, after)
    assert document["full"]["change"]["perHour"] == pytest.approx(added.full.usd)
    assert document["idle"]["change"]["perMonth"] == pytest.approx(added.idle.usd * 720)
    assert [(x["op"], x["label"]) for x in document["lines"]] == [("create", "NodePool tpu-more-0")]


def test_a_diff_shows_a_resized_pool_and_a_removed_slice_with_their_own_change():
    before = cost_of(
        with_config(tpuSlices=[V5P, {"name": "gone", "accelerator": "v5p-8"}], network=_wide())
    )
    after = cost_of(
        with_config(tpuSlices=[V5P], cluster={"cpuPool": {"maxNodes": 5}}, network=_wide())
    )
    text = "\n".join(cost_change(before, after))
    gone = line(before, "NodePool tpu-gone-pool")
    assert (
        "  - NodePool tpu-gone-pool (tpuSlices[1])  1 x ct5p-hightpu-4t, 4 v5p chips  "
        f"-{money(gone.full.usd)}/h at full scale" in text
    )
    old_cpu, new_cpu = line(before, "NodePool gke-cpu"), line(after, "NodePool gke-cpu")
    grown = money(new_cpu.full.usd - old_cpu.full.usd)
    assert (
        "  ~ NodePool gke-cpu (cluster)  3..9 x e2-standard-8 -> 3..15 x e2-standard-8  "
        f"+{grown}/h at full scale, +$0.00/h idle" in text
    )
    document = cost_change_json(before, after)
    assert {x["op"] for x in document["lines"]} == {"update", "delete"}


def test_an_unchanged_stack_has_no_cost_change(cost: Cost):
    report = cost(tpuSlices=[V5P])
    assert cost_change(report, report)[1] == "  No change."
    assert cost_change_json(report, report)["lines"] == []
