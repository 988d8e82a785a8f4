"""Toolkit's A3 Mega, A3 Ultra and A4 Slurm blueprints, translated whole: each translation
(tests/slurm/blueprints.py) renders, through Toolkit's own conf.py as the upstream check
recorded it, the partitions and nodes the blueprint's facts give, and the program registers
the machines, disks, NICs, scripts and timeouts the blueprint sets."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.conftest import build_graph, with_config
from tests.slurm.blueprints import CLUSTER, FACTS, translation
from tests.slurm.test_cluster import content, objects
from tests.slurm.test_upstream import hosts, run

SLURM_DEFAULTS = {"oversubscribe": "no", "powerdownonidle": "no", "default": "no"}
"""What Slurm reads for a partition option its line leaves out (slurm.conf(5))."""


def conf_lines(conf: str, key: str) -> dict[str, dict[str, str]]:
    """cloud.conf's `<key>=<name> k=v ...` lines by name, keys in lower case (Slurm reads
    option names without case)."""
    found = {}
    for line in conf.splitlines():
        if line.startswith(f"{key}="):
            head, *rest = line.split()
            found[head.split("=", 1)[1]] = {
                k.lower(): v for k, v in (item.split("=", 1) for item in rest)
            }
    return found


@pytest.mark.parametrize("blueprint", sorted(FACTS))
def test_the_translation_renders_the_blueprint_s_partitions(blueprint: str):
    facts = FACTS[blueprint]
    conf = run(f"blueprint-{blueprint}")["cloud.conf"]
    partitions = conf_lines(conf, "PartitionName")
    assert set(partitions) == set(facts["partitions"])
    for name, fact in facts["partitions"].items():
        line = SLURM_DEFAULTS | partitions[name]
        assert line["nodes"].split(",") == fact["nodesets"], name
        assert line["default"].lower() == ("yes" if fact["default"] else "no"), name
        assert line["oversubscribe"].lower() == fact["oversubscribe"], name
        assert line["powerdownonidle"].lower() == fact["power_down_on_idle"], name
        assert (line["resumetimeout"], line["suspendtimeout"]) == (
            fact["ResumeTimeout"],
            fact["SuspendTimeout"],
        ), name


@pytest.mark.parametrize("blueprint", sorted(FACTS))
def test_the_translation_renders_the_blueprint_s_nodes(blueprint: str):
    facts = FACTS[blueprint]
    conf = run(f"blueprint-{blueprint}")["cloud.conf"]
    nodes = {
        hosts(name)[0].rsplit("-", 1)[0]: (hosts(name), line)
        for name, line in conf_lines(conf, "NodeName").items()
    }
    assert set(nodes) == {f"{CLUSTER}-{n}" for n in facts["nodesets"]}
    static: list[str] = []
    for name, fact in facts["nodesets"].items():
        names, line = nodes[f"{CLUSTER}-{name}"]
        assert len(names) == fact["static"] + fact["dynamic"], name
        static += names[: fact["static"]]
        for key, value in fact.get("node", {}).items():
            assert line[key.lower()] == value, (name, key)
        if "gpus" in fact:
            assert line["gres"] == f"gpu:{fact['gpus']}", name
    # Static nodes are kept up: slurmctld never suspends them.
    excluded = [line for line in conf.splitlines() if line.startswith("SuspendExcNodes=")]
    assert [n for line in excluded for n in hosts(line.split("=", 1)[1])] == static


@pytest.mark.parametrize("blueprint", sorted(FACTS))
def test_the_translation_sets_the_blueprint_s_slurm_conf_and_scripts(blueprint: str):
    facts = FACTS[blueprint]
    recorded = run(f"blueprint-{blueprint}")
    slurm_conf = recorded["slurm.conf"].splitlines()
    for key, value in facts["slurm_conf"].items():
        assert f"{key}={value}" in slurm_conf, key
    if "prolog_flags" in facts:
        assert f"PrologFlags={facts['prolog_flags']}" in recorded["cloud.conf"].splitlines()
    graph = build_graph(with_config(**translation(blueprint)))
    document = yaml.safe_load(content(objects(graph)[f"{CLUSTER}-files/config.yaml"]))

    def stems(kind: str, prefix: str = "") -> list[str]:
        names = [n for n in document[f"{kind}_scripts"] if n.startswith(prefix)]
        return [n.removeprefix(prefix).rsplit("_", 1)[0] for n in names]

    for kind in ("prolog", "epilog"):
        assert [s for s in stems(kind) if not s.startswith("zz-")] == facts[kind], kind
        for name, fact in facts["partitions"].items():
            assert stems(kind, f"zz-{name}-") == fact.get(kind, []), (kind, name)


@pytest.mark.parametrize("blueprint", sorted(FACTS))
def test_the_translation_registers_the_blueprint_s_machines(blueprint: str):
    facts = FACTS[blueprint]
    graph = build_graph(with_config(**translation(blueprint)))
    vms = {r.inputs["name"]: r.inputs for r in graph.of_type("gcp:compute/instance:Instance")}
    assert vms[f"{CLUSTER}-controller"]["machineType"] == facts["controller"]
    assert vms[f"{CLUSTER}-login-0"]["machineType"] == facts["login"]
    image = f"projects/test-project/global/images/family/{facts['image_family']}"
    for vm in (f"{CLUSTER}-controller", f"{CLUSTER}-login-0"):
        assert vms[vm]["bootDisk"]["initializeParams"]["image"] == image, vm
    # Every VM mounts the blueprint's file systems (config.yaml's network_storage).
    document = yaml.safe_load(content(objects(graph)[f"{CLUSTER}-files/config.yaml"]))
    mounts = {m["local_mount"]: m["fs_type"] for m in document["network_storage"]}
    assert mounts == facts["mounts"]
    for name, fact in facts["nodesets"].items():
        template: dict[str, Any] = graph.named(f"slurm-template-{name}").inputs
        assert template["machineType"] == fact["machine_type"], name
        if "gpu_nics" not in fact:
            continue
        boot = template["disks"][0]
        assert boot["diskType"] == fact["disk_type"], name
        assert boot["diskSizeGb"] == facts.get("disk_size_gb", 50), name
        assert boot["sourceImage"] == image, name
        nics = template["networkInterfaces"]
        assert len(nics) == 1 + fact["gpu_nics"], name
        assert nics[0]["nicType"] == "GVNIC"  # bandwidth_tier: gvnic_enabled
        assert (
            f"mount -t ext4 -o discard,defaults,nofail /dev/md/localssd {fact['local_ssd']}"
            in (template["metadata"]["startup-script"])
        )
        assert template["advancedMachineFeatures"] == {"threadsPerCore": 2}
