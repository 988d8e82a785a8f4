"""What a stack costs: a known slice, pool and VM price exactly as the catalog says; totals are
the sums of their lines; idle never exceeds full scale; what the catalog cannot price stays
out of the totals, named."""

from __future__ import annotations

import pytest

from graph.engine import list_stacks, load_stack_config
from prices.catalog import HOURS_PER_MONTH, Kind, load
from prices.cost import COHORT, OUTSIDE, CostReport, nat_ips, total
from tests.prices.conftest import Cost, cost_of, line
from tests.test_docs import examples

CATALOG = load()


def usd(kind: Kind, item: str, region: str, capacity: str) -> float:
    """The catalog's own figure, per hour (a GB-month price over 730 hours)."""
    row = CATALOG.get((kind.value, item, region, capacity))
    assert row is not None and row.usd is not None, (kind, item, region, capacity)
    return row.usd / HOURS_PER_MONTH if row.unit.endswith("month") else row.usd


def test_a_v5p_slice_costs_its_chips_at_the_catalog_price_plus_its_boot_disks(cost: Cost):
    report = cost(tpuSlices=[{"name": "train", "accelerator": "v5p-32"}])
    train = line(report, "NodePool tpu-train-0")
    chips, hosts = 16, 4
    expected = chips * usd(Kind.TPU, "v5p", "us-east5", "on-demand") + hosts * 100 * usd(
        Kind.DISK, "pd-balanced", "us-east5", "any"
    )
    assert train.full.usd == pytest.approx(expected, rel=1e-12)
    assert train.idle == train.full  # a fixed pool bills as it stands
    assert (train.capacity, train.config_key, train.quota_source) == (
        "on-demand",
        "tpuSlices[0]",
        "train",
    )
    assert train.units == "4 x ct5p-hightpu-4t, 16 v5p chips"


def test_spot_and_reservation_slices_take_their_capacity_price(cost: Cost):
    report = cost(
        tpuSlices=[
            {"name": "cheap", "accelerator": "v5p-8", "provisioning": "spot"},
            {
                "name": "held",
                "accelerator": "v5p-8",
                "provisioning": "reservation",
                "reservation": "r1",
            },
        ]
    )
    disk = 100 * usd(Kind.DISK, "pd-balanced", "us-east5", "any")
    cheap, held = line(report, "NodePool tpu-cheap-pool"), line(report, "NodePool tpu-held-pool")
    assert cheap.full.usd == pytest.approx(4 * usd(Kind.TPU, "v5p", "us-east5", "spot") + disk)
    # A reservation is shown at the on-demand list price, with the committed-use note.
    assert held.full.usd == pytest.approx(4 * usd(Kind.TPU, "v5p", "us-east5", "on-demand") + disk)
    notes = {n for part in held.parts for n in part.quote.notes}
    assert any("committed-use" in n for n in notes)
    assert cheap.full.usd < held.full.usd


def test_the_cpu_pool_of_a_regional_cluster_counts_three_zones(cost: Cost):
    report = cost(
        cluster={"cpuPool": {"machineType": "n2-standard-8", "minNodes": 1, "maxNodes": 4}}
    )
    pool = line(report, "NodePool gke-cpu")
    per_node = 8 * usd(Kind.VCPU, "n2", "us-east5", "on-demand") + 32 * usd(
        Kind.RAM, "n2", "us-east5", "on-demand"
    )
    per_node += 100 * usd(Kind.DISK, "pd-balanced", "us-east5", "any")
    assert pool.idle.usd == pytest.approx(3 * per_node)
    assert pool.full.usd == pytest.approx(12 * per_node)
    assert pool.units == "3..12 x n2-standard-8"


def test_a_gpu_pool_of_an_accelerator_optimized_machine_does_not_count_its_gpus_twice(
    cost: Cost,
):
    report = cost(
        gpuPools=[
            {
                "name": "l4",
                "machineType": "g2-standard-24",
                "acceleratorType": "nvidia-l4",
                "acceleratorCount": 2,
                "maxNodes": 3,
            }
        ]
    )
    pool = line(report, "NodePool gpu-l4-pool")
    node = usd(Kind.MACHINE, "g2-standard-24", "us-east5", "on-demand") + 200 * usd(
        Kind.DISK, "pd-balanced", "us-east5", "any"
    )
    assert (pool.idle.usd, pool.full.usd) == (0, pytest.approx(3 * node))


def test_an_n1_gpu_pool_pays_for_its_machine_and_each_attached_gpu():
    config = {
        "gcp:project": "test-project",
        "gcp:region": "us-central1",
        "gcp:zone": "us-central1-a",
        "ai-infra:protect": False,
        "ai-infra:gpuPools": [
            {
                "name": "t4",
                "machineType": "n1-standard-8",
                "acceleratorType": "nvidia-tesla-t4",
                "acceleratorCount": 2,
                "minNodes": 1,
                "maxNodes": 2,
            }
        ],
    }
    pool = line(cost_of(config), "NodePool gpu-t4-pool")
    machine = 8 * usd(Kind.VCPU, "n1", "us-central1", "on-demand") + 30 * usd(
        Kind.RAM, "n1", "us-central1", "on-demand"
    )
    node = (
        machine
        + 2 * usd(Kind.GPU, "nvidia-tesla-t4", "us-central1", "on-demand")
        + 200 * usd(Kind.DISK, "pd-balanced", "us-central1", "any")
    )
    assert (pool.idle.usd, pool.full.usd) == (pytest.approx(node), pytest.approx(2 * node))


def test_a_gpu_cluster_vm_prices_as_its_machine_and_boot_disk():
    config = examples()["gpu-cluster"].config
    report = cost_of(config, "gpu-cluster")
    group = line(report, "InstanceGroupManager gpucluster-demo-mig")
    expected = usd(Kind.MACHINE, "a2-highgpu-2g", "us-central1", "on-demand") + 2000 * usd(
        Kind.DISK, "pd-ssd", "us-central1", "any"
    )
    assert group.full.usd == pytest.approx(expected, rel=1e-12)
    assert group.system == "gpu-clusters"


def test_slurm_controller_login_state_disk_and_nodesets():
    config = {
        "gcp:project": "test-project",
        "gcp:region": "us-central1",
        "gcp:zone": "us-central1-b",
        "ai-infra:protect": False,
        "ai-infra:slurm": {
            "clusterName": "tpu",
            "tpuNodesets": [
                {"name": "v2", "nodeType": "v2-8", "nodeCountStatic": 1, "nodeCountDynamicMax": 3}
            ],
            "partitions": [
                {"name": "tpu", "nodesets": ["v2"], "default": True, "exclusive": False}
            ],
        },
    }
    report = cost_of(config)
    controller = line(report, "Instance slurm-controller")
    assert controller.full.usd == pytest.approx(
        usd(Kind.MACHINE, "c2-standard-4", "us-central1", "on-demand")
        + 50 * usd(Kind.DISK, "pd-ssd", "us-central1", "any")
    )
    state = line(report, "Disk slurm-state")
    assert state.full.usd == pytest.approx(50 * usd(Kind.DISK, "pd-ssd", "us-central1", "any"))
    nodes = line(report, "Slurm nodeset v2")
    chip = usd(Kind.TPU, "v2-device", "us-central1", "on-demand")
    # One static node (a v2-8 of 4 chips) idle; with the three dynamic ones at full scale.
    assert (nodes.idle.usd, nodes.full.usd) == (pytest.approx(4 * chip), pytest.approx(16 * chip))
    assert {x.system for x in report.lines if "slurm" in x.label.lower()} == {"slurm"}


def test_a_tpu_vm_queued_resource_prices_its_chips_by_capacity():
    config = {
        "gcp:project": "test-project",
        "gcp:region": "us-central2",
        "gcp:zone": "us-central2-b",
        "ai-infra:protect": False,
        "ai-infra:tpuVms": [
            {"name": "a", "accelerator": "v4-32", "nodeCount": 2},
            {"name": "b", "accelerator": "v4-8", "provisioning": "best-effort"},
        ],
    }
    report = cost_of(config)
    a, b = line(report, "QueuedResource tpuvm-a-qr"), line(report, "QueuedResource tpuvm-b-qr")
    assert a.full.usd == pytest.approx(32 * usd(Kind.TPU, "v4", "us-central2", "on-demand"))
    # Best-effort (preemptible) TPUs bill at the family's one preemptible SKU.
    assert b.full.usd == pytest.approx(4 * usd(Kind.TPU, "v4", "us-central2", "spot"))
    assert a.units == "2 x v4-32, 32 v4 chips on 8 TPU VMs"


def test_flex_start_costs_nothing_idle_and_an_unknown_at_full_scale(cost: Cost):
    report = cost(
        tpuSlices=[{"name": "flex", "accelerator": "v5p-32", "provisioning": "flex-start"}]
    )
    flex = line(report, "NodePool tpu-flex-0")
    assert flex.idle.usd == 0 and flex.idle.known
    assert flex.full.usd > 0  # its boot disks have a price
    assert [u for u in flex.full.unknown if "v5p chip" in u] == ["NodePool tpu-flex-0: v5p chip"]
    assert "NodePool tpu-flex-0: v5p chip" in report.full.unknown
    reason = next(p.quote.reason for p in flex.parts if not p.quote.known)
    assert "flex-start" in reason and "as of" in reason


def test_an_unpriced_tpu7x_slice_is_named_never_counted_as_zero(cost: Cost):
    report = cost(
        tpuSlices=[{"name": "iron", "accelerator": "tpu7x-8", "zone": "us-central1-c"}],
        **{"gcp:region": "us-central1", "gcp:zone": "us-central1-a"},
    )
    iron = line(report, "NodePool tpu-iron-pool")
    assert not iron.full.known
    assert any("tpu7x chip" in u for u in report.idle.unknown)
    reason = next(p.quote.reason for p in iron.parts if p.quote.what == "tpu7x chip")
    assert "contact your account team" in reason


def test_the_tpu_provisioner_pools_are_absent_idle_and_its_quota_at_full_scale(cost: Cost):
    report = cost(
        cluster={"releaseChannel": "NONE"},
        network={"podsCidr": "10.64.0.0/14"},
        tpuProvisioner={
            "enabled": True,
            "image": "us-docker.pkg.dev/p/r/tpu-provisioner@sha256:" + "a" * 64,
            "quota": {"v5p-32": 2},
        },
    )
    pools = line(report, "TPU provisioner v5p-32 pools")
    assert pools.idle.usd == 0
    assert pools.full.usd == pytest.approx(32 * usd(Kind.TPU, "v5p", "us-east5", "on-demand"))
    assert pools.system == "tpu-provisioner"


def test_nat_bills_each_vm_it_serves_up_to_32(cost: Cost):
    small = cost()
    nat = line(small, "RouterNat network-nat")
    rate = usd(Kind.NAT_GATEWAY, "cloud-nat", "us-east5", "any")
    ip = usd(Kind.NAT_IP, "cloud-nat", "us-east5", "any")
    # The CPU pool's 3 nodes and the system pool's 3 (one per zone), at 3 per zone for the
    # CPU pool at full scale; one address serves up to 1,008 VMs at 64 ports each.
    assert nat.idle.usd == pytest.approx(6 * rate + ip)
    assert nat.full.usd == pytest.approx(12 * rate + ip)
    big = cost(
        tpuSlices=[{"name": "t", "accelerator": "v5p-512"}],
        network={"podsCidr": "10.64.0.0/14"},
    )
    assert line(big, "RouterNat network-nat").full.usd == pytest.approx(32 * rate + ip)


def test_nat_addresses_follow_the_vms_at_the_default_ports():
    assert [nat_ips(n) for n in (0, 1, 1008, 1009, 2016, 2017)] == [0, 1, 1, 2, 2, 3]


def _all_reports() -> list[tuple[str, CostReport]]:
    found = [(s, cost_of(load_stack_config(s), s)) for s in list_stacks()]
    found += [(n, cost_of(e.config, n)) for n, e in sorted(examples().items())]
    return found


REPORTS = _all_reports()


@pytest.mark.parametrize(("name", "report"), REPORTS, ids=[n for n, _ in REPORTS])
def test_totals_are_the_sums_of_lines_and_idle_never_exceeds_full_scale(name, report):
    assert report.lines
    assert report.idle.usd == pytest.approx(sum(x.idle.usd for x in report.lines), abs=1e-9)
    assert report.full.usd == pytest.approx(sum(x.full.usd for x in report.lines), abs=1e-9)
    assert set(report.full.unknown) == {u for x in report.lines for u in x.full.unknown}
    systems = report.by_system().values()
    assert total(s.idle for s in systems).usd == pytest.approx(report.idle.usd)
    assert total(s.full for s in systems).usd == pytest.approx(report.full.usd)
    teams = report.teams.values()
    assert total(s.idle for s in teams).usd == pytest.approx(report.idle.usd)
    assert total(s.full for s in teams).usd == pytest.approx(report.full.usd)
    for x in report.lines:
        assert x.idle.usd <= x.full.usd + 1e-9, x.label
        assert set(x.idle.unknown) <= set(x.full.unknown), x.label
    assert report.idle.usd <= report.full.usd
    # Every resource that bills has a rule: none is left out silently.
    assert report.unpriced == (), name


def test_prod_teams_pay_for_the_share_of_chips_their_quota_holds():
    report = dict(REPORTS)["prod"]
    v5p = sum(x.full.usd for x in report.lines if x.config_key == "tpuSlices[0]")
    v6e = sum(x.full.usd for x in report.lines if x.config_key == "tpuSlices[1]")
    assert report.teams["pretrain"].full.usd == pytest.approx(v5p + 0.25 * v6e)
    assert report.teams["finetune"].full.usd == pytest.approx(0.75 * v6e)
    # Nobody names v6e-flex: its unknown chip price is split three ways, in every team's share.
    assert any("v6e-flex" in u for u in report.teams["research"].full.unknown)
    assert report.teams[COHORT].full.usd == 0
    outside = sum(x.full.usd for x in report.lines if x.quota_source is None)
    assert report.teams[OUTSIDE].full.usd == pytest.approx(outside)


def test_team_shares_follow_the_whole_slices_kueue_gives_them():
    """Dev's one v5e slice does not split two ways in whole slices: Kueue gives it to the
    cohort, and so does the cost."""
    report = dict(REPORTS)["dev"]
    slice_cost = sum(x.full.usd for x in report.lines if x.config_key == "tpuSlices[0]")
    assert slice_cost > 0
    assert report.teams["research"].full.usd == 0
    assert report.teams["applied"].full.usd == 0
    assert report.teams[COHORT].full.usd == pytest.approx(slice_cost)


def test_prod_costs_what_its_reserved_slices_cost_at_list_price():
    report = dict(REPORTS)["prod"]
    chips_v5p, chips_v6e = 512, 1024
    floor = chips_v5p * usd(Kind.TPU, "v5p", "us-east5", "on-demand") + chips_v6e * usd(
        Kind.TPU, "v6e", "us-east5", "on-demand"
    )
    assert floor < report.idle.usd < floor * 1.01


def test_a_gpu_cluster_prices_its_filestore_and_its_own_nat():
    config = {
        "gcp:project": "test-project",
        "gcp:region": "us-central1",
        "gcp:zone": "us-central1-a",
        "ai-infra:protect": False,
        "ai-infra:gpuClusters": [
            {
                "name": "demo",
                "instanceCount": 2,
                "network": "new",
                "nfsShares": [
                    {"mountPath": "/nfs/home", "tier": "BASIC_SSD", "sizeGb": 2560},
                    {"mountPath": "/nfs/big", "tier": "ENTERPRISE", "sizeGb": 1024},
                ],
            }
        ],
    }
    report = cost_of(config)
    filestores = [x for x in report.lines if x.label.startswith("Instance gpucluster-demo-nfs")]
    assert len(filestores) == 2, [x.label for x in report.lines]
    basic = next(x for x in filestores if "BASIC_SSD" in x.units)
    per_gib = usd(Kind.FILESTORE, "BASIC_SSD", "us-central1", "any")
    assert basic.full.usd == pytest.approx(2560 * per_gib)
    enterprise = next(x for x in filestores if "ENTERPRISE" in x.units)
    assert not enterprise.full.known and enterprise.full.usd == 0
    # The cluster's own NAT serves its two VMs; the stack's NAT serves the CPU and system
    # pools only.
    rate = usd(Kind.NAT_GATEWAY, "cloud-nat", "us-central1", "any")
    ip = usd(Kind.NAT_IP, "cloud-nat", "us-central1", "any")
    own = next(x for x in report.lines if x.label.startswith("RouterNat gpucluster-demo"))
    assert own.full.usd == pytest.approx(2 * rate + ip)
    stack = line(report, "RouterNat network-nat")
    assert stack.full.usd == pytest.approx(12 * rate + ip)
