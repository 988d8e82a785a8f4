"""The Cluster Toolkit blueprint keys people set, as this program takes them: each on the
resource or file Slurm-GCP reads it from, refused at its path where upstream's scripts or the
Compute Engine API would refuse it (tests/slurm/test_upstream.py shows what upstream's own
loader, conf generator and resume make of each)."""

from __future__ import annotations

from typing import Any

import yaml

from plan.diff import Op, diff
from tests.conftest import build_graph
from tests.slurm.test_cluster import content, objects
from tests.slurm.test_config import stack

CUSTOM = {"project": "my-images", "family": "slurm-hpc-custom"}
CUSTOM_PATH = "projects/my-images/global/images/family/slurm-hpc-custom"


def cpu_stack(**fields: Any) -> dict[str, Any]:
    return stack(
        cpuNodesets=[{"name": "cpu", "machineType": "n2-standard-32", **fields}],
        partitions=[
            {"name": "tpu", "nodesets": ["v4"], "default": True},
            {"name": "cpu", "nodesets": ["cpu"]},
        ],
    )


def template(graph: Any, nodeset: str = "cpu") -> dict[str, Any]:
    return graph.named(f"slurm-template-{nodeset}").inputs


def nodeset_yaml(graph: Any, nodeset: str = "cpu") -> dict[str, Any]:
    return yaml.safe_load(content(objects(graph)[f"tpu-files/nodeset_configs/{nodeset}.yaml"]))


def test_automatic_updates_stay_on_unless_a_vm_kind_turns_them_off():
    key = "google_disable_automatic_updates"
    default = build_graph(cpu_stack())
    for resource in ("slurm-controller", "slurm-login-login-0"):
        assert key not in default.named(resource).inputs["metadata"]
    assert key not in template(default)["metadata"]
    off_stack = cpu_stack(allowAutomaticUpdates=False)
    off_stack["ai-infra:slurm"] |= {
        "controller": {"allowAutomaticUpdates": False},
        "loginGroups": [{"name": "login", "allowAutomaticUpdates": False}],
    }
    off = build_graph(off_stack)
    for resource in ("slurm-controller", "slurm-login-login-0"):
        assert off.named(resource).inputs["metadata"][key] == "TRUE", resource
    assert template(off)["metadata"][key] == "TRUE"
    # The template's properties changed, so it is a new template under a new name.
    assert template(off)["name"] != template(default)["name"]


def test_controller_and_login_boot_from_their_own_images():
    graph = build_graph(
        stack(
            controller={"image": CUSTOM},
            loginGroups=[{"name": "login"}, {"name": "big", "image": {"name": "login-v3"}}],
        )
    )
    image = lambda r: graph.named(r).inputs["bootDisk"]["initializeParams"]["image"]  # noqa: E731
    assert image("slurm-controller") == CUSTOM_PATH
    assert image("slurm-login-login-0") == (
        "projects/schedmd-slurm-public/global/images/family/slurm-gcp-6-12-hpc-rocky-linux-8"
    )
    assert image("slurm-login-big-0") == "projects/schedmd-slurm-public/global/images/login-v3"


def test_a_new_controller_image_replaces_the_controller_and_the_login_vms():
    base = build_graph(stack())
    edited = build_graph(stack(controller={"image": CUSTOM}))
    changes = {c.resource.name: c.op for c in diff(base, edited) if not c.is_component}
    assert changes == {"slurm-controller": Op.REPLACE, "slurm-login-login-0": Op.REPLACE}


def test_bandwidth_tiers_set_the_nic_and_tier_1_the_egress_bandwidth():
    default = template(build_graph(cpu_stack()))
    [nic] = default["networkInterfaces"]
    assert "nicType" not in nic and "networkPerformanceConfig" not in default
    for tier, nic_type in (("virtio_enabled", "VIRTIO_NET"), ("gvnic_enabled", "GVNIC")):
        t = template(build_graph(cpu_stack(bandwidthTier=tier)))
        assert t["networkInterfaces"][0]["nicType"] == nic_type, tier
        assert "networkPerformanceConfig" not in t
        assert t["name"] != default["name"]
    tier_1 = template(
        build_graph(cpu_stack(machineType="c2-standard-60", bandwidthTier="tier_1_enabled"))
    )
    assert tier_1["networkInterfaces"][0]["nicType"] == "GVNIC"
    assert tier_1["networkPerformanceConfig"] == {"totalEgressBandwidthTier": "TIER_1"}
