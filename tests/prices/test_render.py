"""How cost reads: the plan's cost section, a diff's cost change, and the same numbers in JSON."""

from __future__ import annotations

import re
from typing import Any

import pytest

from prices import cost_change, cost_change_json, cost_json, cost_section
from prices.catalog import HOURS_PER_MONTH
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
    assert "age unknown: SkyPilot catalog v9" in text and "undated" not in text
    # How old the oldest price behind the figures is, and how to read today's.
    (oldest,) = [x for x in text.splitlines() if x.startswith("  Oldest price used: ")]
    assert oldest.startswith("  Oldest price used: 2026-07-30, ")
    # v5p's price comes from a catalog that carries no date: counted apart, never as new.
    assert "3 prices of age unknown (source gke-pricing, nat-pricing, skypilot-v9: it" in oldest
    assert "`uv run python -m prices refresh`" in oldest
    assert "Left out:" in text and "sustained-use discounts" in text
    assert text.count("a month is 730 h") == 1


def test_unknown_prices_are_listed_with_their_reason_and_marked_in_the_totals(cost: Cost):
    report = cost(
        tpuSlices=[{"name": "flex", "accelerator": "v5p-32", "provisioning": "flex-start"}]
    )
    text = "\n".join(cost_section(report))
    assert "Unknown prices (the totals exclude them, never count them as $0):" in text
    assert re.search(r"v5p chip: no verified flex-start .*: NodePool tpu-flex-0", text)
    assert re.search(r"per hour .*/h excl\. 1 unknown", text)
    # Idle, flex-start costs nothing; at full scale its chips are unknown, never $0: the
    # line says what it knows (its boot disks) and that more is unknown.
    row = re.search(r"^  NodePool tpu-flex-0 .* flex-start +(\S+) +(.+?)  ", text, re.M)
    assert row and (row[1], row[2]) == ("$0.00/h", "$0.0548/h + unknown"), text
    # In JSON an amount with an unknown part has no total, never 0 or the priced part alone.
    flex = next(x for x in cost_json(report)["lines"] if x["label"] == "NodePool tpu-flex-0")
    assert flex["full"]["perHour"] is None and flex["full"]["perMonth"] is None
    assert flex["full"]["pricedPerHour"] == pytest.approx(0.0548, abs=1e-4)
    assert flex["idle"]["perHour"] == 0.0


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
    assert document["currency"] == "USD" and document["hoursPerMonth"] == 730
    assert document["total"]["full"]["perHour"] == pytest.approx(report.full.usd)
    assert document["total"]["idle"]["perMonth"] == pytest.approx(report.idle.usd * 730)
    assert document["oldestPrice"]["asOf"] == "2026-07-30"
    assert document["oldestPrice"]["daysOld"] >= 120
    lines = {x["label"]: x for x in document["lines"]}
    train = lines["NodePool tpu-train-0"]
    assert train["configKey"] == "tpuSlices[0]"
    assert train["full"]["perHour"] == pytest.approx(line(report, "NodePool tpu-train-0").full.usd)
    chips = next(p for p in train["parts"] if p["what"] == "v5p chip")
    assert (chips["fullUnits"], chips["usdPerUnitHour"]) == (128, 4.2)
    assert {s["asOf"][0] for s in document["sources"]} >= {"2026-07-30", "unknown"}
    assert chips["asOf"] == ["unknown"] and document["ageUnknown"] == 3
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
    assert document["idle"]["change"]["perMonth"] == pytest.approx(added.idle.usd * 730)
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


IRON = {"name": "iron", "accelerator": "tpu7x-128", "zone": "us-central1-c", "provisioning": "spot"}
"""tpu7x has no public price: its line is unknown."""


def _central(**keys: Any) -> dict[str, Any]:
    return with_config(
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-a"}, network=_wide(), **keys
    )


def test_a_change_of_what_bills_at_an_unknown_price_is_a_change_never_none():
    before = cost_of(_central(tpuSlices=[IRON]))
    after = cost_of(_central(tpuSlices=[{**IRON, "count": 2}]))
    text = cost_change(before, after)
    assert "  No change." not in text
    (added,) = [x for x in text if "NodePool tpu-iron-1" in x]
    assert added.endswith("unknown at full scale, unknown idle"), added
    # The stack's totals say what they exclude, before and after, and that the change does.
    assert re.search(
        r"full scale: .*excl\. 2 unknown -> .*excl\. 4 unknown \(.* \+ unknown", text[-1]
    )


def test_a_reserved_autoscaled_pool_bills_its_reservation_while_idle():
    pools = [
        {
            "name": "held",
            "machineType": "g2-standard-24",
            "acceleratorType": "nvidia-l4",
            "acceleratorCount": 2,
            "minNodes": 0,
            "maxNodes": 4,
            "provisioning": "reservation",
            "reservation": "l4-held",
            "zone": "us-central1-a",
        }
    ]
    report = cost_of(_central(gpuPools=pools))
    held = line(report, "NodePool gpu-held-pool")
    machine = next(p for p in held.parts if p.quote.what == "g2-standard-24")
    assert (machine.idle, machine.full) == (4, 4)
    disk = next(p for p in held.parts if p.quote.what.endswith(" GB"))
    assert disk.idle == 0, "boot disks exist only with nodes"
    assert held.units == "0..4 x g2-standard-24, the reservation billed for 4 while idle"


def test_a_gpu_cluster_template_change_books_the_new_price_for_new_vms_only():
    def cluster(machine: str, gpus: int, count: int) -> dict[str, Any]:
        return _central(
            gpuClusters=[
                {"name": "demo", "instanceCount": count, "machineType": machine, "gpuCount": gpus}
            ]
        )

    before = cost_of(cluster("a2-highgpu-2g", 2, 2))
    after = cost_of(cluster("a2-highgpu-4g", 4, 3))
    old = line(before, "InstanceGroupManager gpucluster-demo-mig")
    new = line(after, "InstanceGroupManager gpucluster-demo-mig")
    assert new.deferred
    # Two running VMs keep the a2-highgpu-2g price; the third is made from the new template.
    booked = 2 * old.full.usd / 2 + new.full.usd / 3
    document = cost_change_json(before, after)
    (group,) = [x for x in document["lines"] if x["label"].startswith("InstanceGroupManager")]
    assert group["full"]["after"]["perHour"] == pytest.approx(booked)
    assert "once its running VMs are recreated" in group["deferred"]
    assert document["full"]["after"]["perHour"] == pytest.approx(
        after.full.usd - new.full.usd + booked
    )
    (text,) = [x for x in cost_change(before, after) if "InstanceGroupManager" in x]
    assert "more at full scale once its running VMs are recreated" in text


def test_a_deferred_change_to_an_unpriced_machine_is_unknown_never_priced():
    def cluster(machine: str, gpu: str, gpus: int, disk: str) -> dict[str, Any]:
        demo = {"name": "demo", "instanceCount": 2, "machineType": machine, "gpuCount": gpus}
        demo |= {"gpuType": gpu, "diskType": disk, "provisioning": "spot"}
        return _central(gpuClusters=[demo])

    before = cost_of(cluster("a2-highgpu-2g", "nvidia-tesla-a100", 2, "pd-ssd"))
    # No public catalog prices A3 Ultra with its bundled SSD: its row is unknown.
    after = cost_of(cluster("a3-ultragpu-8g", "nvidia-h200-141gb", 8, "hyperdisk-balanced"))
    assert not line(after, "InstanceGroupManager gpucluster-demo-mig").full.known
    (text,) = [x for x in cost_change(before, after) if "InstanceGroupManager" in x]
    # The priced part (the old machine's price goes) is shown with the unknown beside it.
    assert re.search(r"; -\$[0-9.,]+/h \+ unknown more at full scale once its running", text)
    document = cost_change_json(before, after)
    (group,) = [x for x in document["lines"] if x["label"].startswith("InstanceGroupManager")]
    assert "+ unknown more" in group["deferred"]
    assert document["full"]["after"]["perHour"] is None
    assert document["full"]["change"]["perHour"] is None
