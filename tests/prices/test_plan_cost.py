"""End to end through `python -m plan`: the plan prints the stack's cost, the diff the cost of
an edit, and --json carries both."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from graph.engine import REPO_ROOT
from plan.cli import main
from prices import PLAN_COSTING
from prices.catalog import HOURS_PER_MONTH, load
from prices.quotes import money

DEV = REPO_ROOT / "Pulumi.dev.yaml"


def _v5e_spot_node() -> float:
    """dev's slice: one ct5lp-hightpu-4t of 4 v5e chips on Spot, with a 100 GB boot disk."""
    catalog = load()
    chip = catalog.get(("tpu", "v5litepod", "us-west4", "spot"))
    disk = catalog.get(("disk", "pd-balanced", "us-west4", "any"))
    assert chip and chip.usd and disk and disk.usd
    return 4 * chip.usd + 100 * disk.usd / HOURS_PER_MONTH


def test_the_dev_plan_prints_what_its_slice_costs(capsys):
    assert main(["dev"], costing=PLAN_COSTING) == 0
    out = capsys.readouterr().out
    section = out.split("Cost at list prices")[1]
    node = money(_v5e_spot_node())
    assert re.search(
        rf"^  NodePool tpu-v5e-dev-pool +tpuSlices\[0\] +spot +{re.escape(node)}/h +"
        rf"{re.escape(node)}/h +1 x ct5lp-hightpu-4t, 4 v5litepod chips",
        section,
        re.M,
    )
    assert "2026-07-30: Cyclenerd" in section


def test_the_plan_json_carries_the_cost(capsys):
    assert main(["dev", "--json"], costing=PLAN_COSTING) == 0
    document = json.loads(capsys.readouterr().out)
    lines = {x["label"]: x for x in document["cost"]["lines"]}
    assert lines["NodePool tpu-v5e-dev-pool"]["full"]["perHour"] == pytest.approx(
        _v5e_spot_node(), abs=1e-6
    )
    assert (
        document["cost"]["total"]["idle"]["perHour"] <= document["cost"]["total"]["full"]["perHour"]
    )


def _with_another_slice(tmp_path):
    config = yaml.safe_load(DEV.read_text())
    config["config"]["ai-infra:tpuSlices"].append(
        {"name": "v5e-more", "accelerator": "v5litepod-4", "provisioning": "spot"}
    )
    edited = tmp_path / "Pulumi.dev.yaml"
    edited.write_text(yaml.safe_dump(config))
    return edited


def test_the_diff_prints_the_cost_of_an_added_slice(tmp_path, capsys):
    edited = _with_another_slice(tmp_path)
    assert main([str(edited), "--base", str(DEV)], costing=PLAN_COSTING) == 2
    out = capsys.readouterr().out
    node = money(_v5e_spot_node())
    assert re.search(
        rf"^  \+ NodePool tpu-v5e-more-pool \(tpuSlices\[1\]\)  1 x ct5lp-hightpu-4t, 4 v5litepod "
        rf"chips  \+{re.escape(node)}/h at full scale, \+{re.escape(node)}/h idle$",
        out,
        re.M,
    )
    # dev's NAT serves fewer than 32 VMs: one more VM adds its per-VM price.
    assert re.search(r"^  ~ RouterNat network-nat \(network\)", out, re.M)
    assert re.search(r"^  full scale: \$\S+/h -> \$\S+/h \(\+\$\S+/h, \+\$\S+/mo\)$", out, re.M)


def test_the_diff_json_carries_the_same_numbers(tmp_path, capsys):
    edited = _with_another_slice(tmp_path)
    assert main([str(edited), "--base", str(DEV), "--json"], costing=PLAN_COSTING) == 2
    change = json.loads(capsys.readouterr().out)["diff"]["cost"]
    lines = {x["label"]: x for x in change["lines"]}
    added = lines["NodePool tpu-v5e-more-pool"]
    assert added["op"] == "create"
    assert added["full"]["change"]["perHour"] == pytest.approx(_v5e_spot_node(), abs=1e-6)
    nat = lines["RouterNat network-nat"]["full"]["change"]["perHour"]
    assert change["full"]["change"]["perHour"] == pytest.approx(
        added["full"]["change"]["perHour"] + nat, abs=1e-6
    )


def _text_blocks() -> list[list[str]]:
    text = (REPO_ROOT / "docs" / "cost.md").read_text()
    return [block.splitlines() for block in re.findall(r"```text\n(.*?)```", text, re.S)]


def test_the_docs_show_what_the_plan_prints(tmp_path, capsys):
    plan_block, diff_block = _text_blocks()
    assert main(["dev"], costing=PLAN_COSTING) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [x for x in plan_block if x not in printed] == []
    config = yaml.safe_load(DEV.read_text())
    config["config"]["ai-infra:tpuSlices"].append(
        {"name": "v5e-more", "accelerator": "v5litepod-16", "provisioning": "spot"}
    )
    config["config"]["ai-infra:cluster"]["cpuPool"]["maxNodes"] = 3
    edited = tmp_path / "Pulumi.dev.yaml"
    edited.write_text(yaml.safe_dump(config))
    assert main([str(edited), "--base", str(DEV)], costing=PLAN_COSTING) == 2
    printed = capsys.readouterr().out.splitlines()
    assert [x for x in diff_block if x not in printed] == []
