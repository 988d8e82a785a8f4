"""What each registered resource provides, read once: the plan's numbers, preflight's needs, the
cost and the stack output `tpuChips` count the same nodes, chips and GPUs for every shipped
stack and docs example, and the reader's rules hold where the three once disagreed."""

from __future__ import annotations

from typing import Any

import pytest

from graph import capacity, types
from graph.model import Graph, Registration
from plan import summary
from preflight.needs import derive
from prices import stack_cost
from stacks import registry
from tests.graph.conftest import Built


def _counts(machines: list[capacity.Machines]) -> tuple[int, int, int]:
    return (
        sum(m.full for m in machines),
        sum(m.chips for m in machines),
        sum(m.gpu_count for m in machines),
    )


def test_plan_preflight_cost_and_the_stack_output_count_alike(every_stack) -> None:
    disagree = {}
    for name, built in every_stack.items():
        numbers = summary.summarize(built.graph)
        plan = (numbers.nodes, numbers.chips, numbers.gpus)
        needs = derive(built.config, built.graph)
        preflight = _counts([*needs.vms, *needs.tpu_nodes])
        report = stack_cost(built.config, built.graph)
        machines = [line for line in report.lines if line.vms != (0, 0) or line.chips]
        machines = [line for line in machines if not line.label.startswith("RouterNat")]
        cost = (
            sum(line.vms[1] for line in machines),
            sum(line.chips for line in machines),
            sum(line.gpus for line in machines),
        )
        assert built.graph.outputs is not None
        output = built.graph.outputs["tpuChips"]
        chips = registry.tpu_chips(built.config)
        if not (plan == preflight == cost and output == plan[1] == chips):
            disagree[name] = {"plan": plan, "preflight": preflight, "cost": cost, "out": output}
    assert not disagree, disagree


def test_every_system_and_capacity_is_read_somewhere(every_stack) -> None:
    """The stacks and examples hold each kind of machines, so the agreement above covers
    them all."""
    found = {
        (m.system, m.capacity)
        for built in every_stack.values()
        for m in capacity.read(built.graph).machines
    }
    systems = {system for system, _ in found}
    assert systems == set(capacity.System)
    assert {c for _, c in found} == {"on-demand", "spot", "flex-start", "reservation"}


def _registration(type_: str, inputs: dict[str, Any], **fields: Any) -> Registration:
    return Registration(
        urn=f"urn:pulumi:test::ai-infra::{type_}::{fields.get('name', 'r')}",
        type=type_,
        name=fields.pop("name", "r"),
        parent="",
        custom=True,
        remote=False,
        inputs=inputs,
        protect=False,
        dependencies=fields.pop("dependencies", ()),
        aliases=(),
        ignore_changes=(),
        delete_before_replace=False,
        retain_on_delete=False,
        provider="",
        **fields,
    )


def _pool(**inputs: Any) -> capacity.Machines:
    node_config = {"machineType": "e2-standard-4"}
    (machines,) = capacity.read(
        Graph([_registration(types.NODE_POOL, {"nodeConfig": node_config, **inputs})])
    ).machines
    return machines


@pytest.mark.parametrize(
    ("inputs", "nodes", "autoscaled"),
    [
        ({"location": "us-east5-a", "nodeCount": 4}, (4, 4), False),
        # A regional pool without node locations: GKE's three zones.
        ({"location": "us-east5", "nodeCount": 2}, (6, 6), False),
        ({"location": "us-east5", "nodeLocations": ["us-east5-a"], "nodeCount": 2}, (2, 2), False),
        (
            {"location": "us-east5", "autoscaling": {"minNodeCount": 1, "maxNodeCount": 3}},
            (3, 9),
            True,
        ),
        (
            {
                "location": "us-east5",
                "autoscaling": {"totalMinNodeCount": 1, "totalMaxNodeCount": 5},
            },
            (1, 5),
            True,
        ),
        # Queued provisioning (flex-start) rests at zero whatever its minimum.
        (
            {
                "location": "us-east5-a",
                "autoscaling": {"minNodeCount": 0, "maxNodeCount": 4},
                "queuedProvisioning": {"enabled": True},
            },
            (0, 4),
            True,
        ),
    ],
)
def test_a_pool_counts_per_zone_or_in_total(inputs, nodes, autoscaled) -> None:
    pool = _pool(**inputs)
    assert (pool.idle, pool.full) == nodes and pool.autoscaled is autoscaled


def test_a_pool_takes_its_cluster_s_node_locations() -> None:
    cluster = _registration(
        types.CLUSTER,
        {"name": "c", "location": "us-east5", "nodeLocations": ["us-east5-a", "us-east5-b"]},
        name="c",
    )
    pool = _registration(
        types.NODE_POOL,
        {"cluster": "c", "location": "us-east5", "nodeCount": 2, "nodeConfig": {}},
        name="p",
    )
    (machines,) = capacity.read(Graph([cluster, pool])).machines
    assert machines.zones == ("us-east5-a", "us-east5-b") and machines.full == 4


@pytest.mark.parametrize(
    ("node_config", "queued", "expected"),
    [
        (
            {
                "reservationAffinity": {
                    "consumeReservationType": "SPECIFIC_RESERVATION",
                    "values": ["r1"],
                }
            },
            False,
            ("reservation", "reservation r1"),
        ),
        ({"flexStart": True}, True, ("flex-start", "flex-start")),
        ({}, True, ("flex-start", "flex-start")),
        ({"spot": True}, False, ("spot", "spot")),
        ({"preemptible": True}, False, ("spot", "spot")),
        ({}, False, ("on-demand", "on-demand")),
    ],
)
def test_a_pool_s_capacity_is_read_in_one_order(node_config, queued, expected) -> None:
    pool = _pool(
        location="us-east5-a",
        nodeCount=1,
        nodeConfig={"machineType": "ct5p-hightpu-4t", **node_config},
        queuedProvisioning={"enabled": queued},
    )
    assert (pool.capacity, pool.provisioning) == expected
    assert pool.tpu is not None and pool.chips == 4


def test_built_in_gpus_count_as_gpus() -> None:
    pool = _pool(location="us-east5-a", nodeCount=2, nodeConfig={"machineType": "a3-highgpu-8g"})
    assert pool.gpus == (("nvidia-h100-80gb", 8),) and pool.gpu_count == 16


def test_a_group_whose_template_is_not_one_is_said_unread() -> None:
    group = _registration(types.INSTANCE_GROUP_MANAGER, {"zone": "us-east5-a", "targetSize": 2})
    inventory = capacity.read(Graph([group]))
    assert inventory.machines == ()
    (unread,) = inventory.unread
    assert "0 instance templates" in unread.why


def _slurm_example(built: dict[str, Built], name: str) -> list[capacity.Machines]:
    machines = capacity.read(built[f"example {name}"].graph).machines
    return [m for m in machines if m.system is capacity.System.SLURM]


def test_slurm_nodesets_are_read_from_the_files_the_controller_reads(every_stack) -> None:
    tpu, debug = _slurm_example(every_stack, "slurm-multihost")
    # The debug partition's nodeset, which the config does not list, is in the count.
    assert (debug.config_key, debug.machine_type, debug.full) == (
        "slurm.debugPartition",
        "n2-standard-2",
        4,
    )
    # Four dynamic v4-16 nodes: one per host, two slices of two hosts, 16 chips.
    assert tpu.config_key == "slurm.tpuNodesets[0]" and tpu.slices is not None
    assert (tpu.idle, tpu.full, tpu.chips) == (0, 4, 16)
    assert (tpu.slices.accelerator, tpu.slices.count, tpu.slices.hosts) == ("v4-16", 2, 2)
    assert tpu.later and tpu.tpu_api and tpu.zone == "us-central2-b"


def test_the_provisioner_is_read_where_the_graph_registers_it(every_stack) -> None:
    built = every_stack["example provisioner"]
    later = [m for m in capacity.read(built.graph).machines if m.later]
    assert later and all(m.system is capacity.System.PROVISIONER for m in later)
    expected = sum(chips for _, chips in built.config.gke.provisioned().values())
    assert sum(m.chips for m in later) == expected and all(m.idle == 0 for m in later)
    # Without the component (its config alone), there is nothing to count.
    bare = Graph(
        [r for r in built.graph if r.type != types.TPU_PROVISIONER],
        config=built.graph.config,
    )
    assert not [m for m in capacity.read(bare).machines if m.later]
