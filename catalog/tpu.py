"""The Cloud TPU accelerator catalog: the one place that maps an accelerator type to hardware.

Node pools, Kueue flavors, quotas and the offline plan all read `resolve()`; no other module
restates a machine type, topology or chip count. Sources: Cloud TPU docs (tpu/docs/v4, v5e,
v5p, v6e, tpu7x, types-topologies) and GKE docs (concepts/tpus, concepts/tpu-ironwood).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cache

TPU_RESOURCE = "google.com/tpu"
"""Extended resource GKE advertises for TPU chips; pods request it, Kueue quotas count it."""
ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
TPU_TAINT_KEY = "google.com/tpu"
"""GKE taints TPU nodes `google.com/tpu=present:NoSchedule`; TPU workloads tolerate it."""


@dataclass(frozen=True)
class TpuFamily:
    """Facts shared by every size of one Cloud TPU generation."""

    prefix: str
    """Accelerator type prefix, e.g. `v5p` in `v5p-32`."""
    gke_accelerator: str
    """Value of the `cloud.google.com/gke-tpu-accelerator` node label."""
    suffix_counts: str
    """What the number after the prefix counts: `TensorCores` or `chips`."""
    cores_per_chip: int
    multi_host_machine_type: str
    chips_per_multi_host_vm: int
    single_host: dict[str, tuple[str, int]]
    """Single-host topology -> (machine type, chips on that one VM)."""
    multi_host_topologies: tuple[str, ...]
    """Multi-host topologies in order of chip count; the first per chip count is the default."""
    zones: tuple[str, ...]
    """Zones Cloud TPU documents for the family ("TPU regions and zones", read 2026-11;
    only the North America and Europe rows could be confirmed)."""
    boot_disk_type: str
    """v4, v5e and v5p boot from Balanced Persistent Disk; v6e and tpu7x from Hyperdisk
    Balanced only (Cloud TPU "Attach durable block storage": v6e lists Hyperdisk only)."""
    min_gke_version: str | None = None
    """The oldest GKE version with node pools of this family, where GKE documents one that
    a supported version could still be below."""
    flex_start_zones: tuple[str, ...] = ()
    """Zones where GKE offers the family's node pools with flex-start (Dynamic Workload
    Scheduler). GKE "About flex-start provisioning mode" (read 2026-11): v6e in
    asia-northeast1-b, us-east5-a and us-east5-b, v5e in us-west4-a, v5p in us-east5-a; "TPU v3
    and v4 are not supported". tpu7x is not in that page's table, but Google's Cluster Toolkit
    v1.95.0 ships tpu7x flex-start and queued-provisioning blueprints
    (examples/gke-consumption-options/dws-flex-start/gke-tpu-7x, zone us-central1-c). A zone
    listed nowhere takes `allowUnlistedZone`. The Cloud TPU API's own flex-start list (queued
    resources) differs and is not this one."""
    flex_start_unsupported: bool = False
    """GKE says the family has no flex-start (v4), which no escape hatch overrides."""
    workload_policy_for_multi_host: bool = False
    """tpu7x places multi-host slices with a HIGH_THROUGHPUT workload policy, not COMPACT."""
    gke: bool = True
    """GKE node pools of this family are built here. False for v2, which GKE never offered, and
    v3, whose GKE machine types (ct3-hightpu-4t, ct3p-hightpu-4t; GKE release notes 2024-10-31)
    this catalog does not hold: both are TPU VMs (`ai-infra:tpuVms`) only. Where false, the GKE
    fields above are empty."""
    tpu_vm_runtimes: tuple[str, ...] = ()
    """TPU software versions (runtime versions) the family's TPU VMs take, as full-match
    patterns; the first is the documented default (tpu/docs/runtimes). Empty where the Cloud TPU
    API creates no TPU VMs of the family: it does not support tpu7x
    (tpu/docs/configure-networking-access)."""
    dcn_gbps_per_chip: int | None = None
    """Data-center network (DCN) bandwidth per chip, Gb/s, where Cloud TPU publishes it: the
    specification table of tpu/docs/tpu7x (v5p 50, v6e 100, TPU7x 100)."""
    host_nics: str | None = None
    """The per-host NIC configuration Cloud TPU publishes (tpu/docs/v6e, whose hosts are 8
    chips: v5e 2 x 100 Gbps, v6e 4 x 200 Gbps)."""
    additional_node_networks: str | None = None
    """Why GKE node pools of this family take additional node networks (a second NIC in a VPC
    of its own), where there is evidence; None where there is none, and the program refuses
    them. No GKE page lists the TPU machine types that support them."""
    tpu_vm_zones_by_size: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Where Cloud TPU offers TPU VMs of one size only in some of `zones` (v2 and v3, whose
    regions page lists zones per accelerator type): size -> zones. Sizes not listed take
    `zones`."""

    @property
    def flex_start(self) -> bool:
        """Whether GKE offers flex-start for the family in a zone the catalog lists."""
        return bool(self.flex_start_zones)

    def size_of(self, chips: int) -> int:
        return chips * self.cores_per_chip

    def accelerator_of(self, topology: str) -> str:
        return f"{self.prefix}-{self.size_of(_chips(topology))}"


@dataclass(frozen=True)
class TpuShape:
    """One slice: an accelerator type resolved to everything GKE and Kueue need to know."""

    accelerator: str
    family: TpuFamily
    topology: str
    machine_type: str
    hosts: int
    chips_per_host: int

    @property
    def chips(self) -> int:
        return self.hosts * self.chips_per_host

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1

    @property
    def gke_accelerator(self) -> str:
        return self.family.gke_accelerator

    @property
    def needs_workload_policy(self) -> bool:
        return self.multi_host and self.family.workload_policy_for_multi_host

    @property
    def node_labels(self) -> dict[str, str]:
        """Labels GKE sets on every node of the slice; Kueue flavors select on them."""
        return {ACCELERATOR_LABEL: self.gke_accelerator, TOPOLOGY_LABEL: self.topology}


def _chips(topology: str) -> int:
    return math.prod(int(d) for d in topology.split("x"))


def _cubic_topologies(max_chips: int) -> tuple[str, ...]:
    """3D topologies A x B x C (A <= B <= C) that the Cloud TPU docs allow for v4, v5p, tpu7x.

    Either every dimension is at most 4 (the sub-cube shapes 2x2x2, 2x2x4, 2x4x4) or every
    dimension is a multiple of 4. For each chip count the shape closest to a cube comes first,
    because that is the default topology Cloud TPU picks for an accelerator type.
    """
    small = [(2, 2, 2), (2, 2, 4), (2, 4, 4)]
    large = [
        (a, b, c)
        for a in range(4, max_chips + 1, 4)
        if a**3 <= max_chips
        for b in range(a, max_chips + 1, 4)
        if a * b * b <= max_chips
        for c in range(b, max_chips // (a * b) + 1, 4)
    ]
    ordered = sorted(small + large, key=lambda d: (math.prod(d), d[2] - d[0], d[2] - d[1]))
    return tuple("x".join(str(n) for n in dims) for dims in ordered)


_PLANAR_MULTI_HOST = ("4x4", "4x8", "8x8", "8x16", "16x16")
"""v5e and v6e multi-host topologies; a pod is 16x16 chips."""

_TF_V2_TO_V4 = r"tpu-vm-tf-2\.([1-9]|1[0-9]|20)\.[0-9]{1,2}(-pod)?(-pjrt|-se)?"
"""tpu/docs/runtimes: TensorFlow on v2, v3 (and v4 from TF 2.10.1) is `tpu-vm-tf-x.y.z[-pod]`
with a `-pjrt` or `-se` device API from TF 2.15. Bounded to TF 2.1 - 2.20: a later release
needs `allowUnlistedRuntime`, and `tpu-vm-tf-9.9.9` is no version at all."""
_V4_AND_OLDER_RUNTIMES = (
    r"tpu-ubuntu2204-base",
    r"tpu-vm-base",
    _TF_V2_TO_V4,
    r"tpu-vm-pt-(1\.1[0-3]|2\.0)",
)
"""tpu/docs/runtimes: `tpu-ubuntu2204-base` for JAX and PyTorch on v4 and older; the older
`tpu-vm-base` and PyTorch `tpu-vm-pt-<version>` images; TensorFlow as above."""
_V4_RUNTIMES = (
    *_V4_AND_OLDER_RUNTIMES,
    # tpu/docs/supported-versions: TF 2.10.0 and older on v4 end in `-v4`.
    r"tpu-vm-tf-2\.([6-9]|10)\.[0-9](-pod)?-v4",
    # gcloud's own queued-resources create example (create.yaml): --runtime-version=v2-alpha-tpuv4.
    r"v2-alpha-tpuv4(-pod)?",
)
_TF_PJRT = r"tpu-vm-tf-2\.(1[5-9]|20)\.[0-9]{1,2}(-pod)?-pjrt"
"""tpu/docs/runtimes: v5e, v5p and v6e run TensorFlow 2.15+ as `tpu-vm-tf-x.y.z[-pod]-pjrt`
(bounded to TF 2.20, as above)."""

FAMILIES: tuple[TpuFamily, ...] = (
    TpuFamily(
        prefix="v4",
        gke_accelerator="tpu-v4-podslice",
        suffix_counts="TensorCores",
        cores_per_chip=2,
        multi_host_machine_type="ct4p-hightpu-4t",
        chips_per_multi_host_vm=4,
        single_host={"2x2x1": ("ct4p-hightpu-4t", 4)},
        multi_host_topologies=_cubic_topologies(max_chips=2048),
        zones=("us-central2-b",),
        boot_disk_type="pd-balanced",
        flex_start_unsupported=True,
        tpu_vm_runtimes=_V4_RUNTIMES,
    ),
    TpuFamily(
        prefix="v5litepod",
        gke_accelerator="tpu-v5-lite-podslice",
        suffix_counts="chips",
        cores_per_chip=1,
        multi_host_machine_type="ct5lp-hightpu-4t",
        chips_per_multi_host_vm=4,
        single_host={
            "1x1": ("ct5lp-hightpu-1t", 1),
            "2x2": ("ct5lp-hightpu-4t", 4),
            "2x4": ("ct5lp-hightpu-8t", 8),
        },
        multi_host_topologies=_PLANAR_MULTI_HOST,
        zones=("us-central1-a", "us-south1-a", "us-west1-c", "us-west4-a"),
        boot_disk_type="pd-balanced",
        flex_start_zones=("us-west4-a",),
        # Google's python-docs-samples (tpu/queued_resources_create_time_bound.py) request
        # v5litepod-4 with `v2-tpuv5-litepod`.
        tpu_vm_runtimes=("v2-alpha-tpuv5-lite", "v2-tpuv5-litepod", _TF_PJRT),
        host_nics="2 x 100 Gbps per 8-chip host",
    ),
    TpuFamily(
        prefix="v5p",
        gke_accelerator="tpu-v5p-slice",
        suffix_counts="TensorCores",
        cores_per_chip=2,
        multi_host_machine_type="ct5p-hightpu-4t",
        chips_per_multi_host_vm=4,
        single_host={"2x2x1": ("ct5p-hightpu-4t", 4)},
        multi_host_topologies=_cubic_topologies(max_chips=6144),
        zones=("us-central1-a", "us-east5-a"),
        boot_disk_type="pd-balanced",
        flex_start_zones=("us-east5-a",),
        tpu_vm_runtimes=("v2-alpha-tpuv5", _TF_PJRT),
        dcn_gbps_per_chip=50,
    ),
    TpuFamily(
        prefix="v6e",
        gke_accelerator="tpu-v6e-slice",
        suffix_counts="chips",
        cores_per_chip=1,
        multi_host_machine_type="ct6e-standard-4t",
        chips_per_multi_host_vm=4,
        single_host={
            "1x1": ("ct6e-standard-1t", 1),
            "2x2": ("ct6e-standard-4t", 4),
            "2x4": ("ct6e-standard-8t", 8),
        },
        multi_host_topologies=_PLANAR_MULTI_HOST,
        # asia-northeast1-b from GKE's flex-start page, which offers v6e there.
        zones=(
            "us-central1-b",
            "us-east1-d",
            "us-east5-a",
            "us-east5-b",
            "europe-west4-a",
            "asia-northeast1-b",
        ),
        boot_disk_type="hyperdisk-balanced",
        flex_start_zones=("asia-northeast1-b", "us-east5-a", "us-east5-b"),
        # Ray's GKE TPU guide quoting GKE; GKE's own table could not be read.
        min_gke_version="1.31.2-gke.1115000",
        tpu_vm_runtimes=("v2-alpha-tpuv6e", _TF_PJRT),
        dcn_gbps_per_chip=100,
        host_nics="4 x 200 Gbps per 8-chip host",
        additional_node_networks=(
            "a ct6e-standard-4t VM sits on two of its host's four physical NICs, and a vNIC per "
            "physical NIC spreads DCN traffic over both (dranet.dev GKE TPU performance guide); "
            "Cluster Toolkit's gke-tpu-v6e-advanced blueprint adds one"
        ),
    ),
    TpuFamily(
        prefix="tpu7x",
        gke_accelerator="tpu7x",
        suffix_counts="TensorCores",
        cores_per_chip=2,
        multi_host_machine_type="tpu7x-standard-4t",
        chips_per_multi_host_vm=4,
        single_host={"2x2x1": ("tpu7x-standard-4t", 4)},
        multi_host_topologies=_cubic_topologies(max_chips=9216),
        zones=("us-central1-ai1a", "us-central1-c"),
        boot_disk_type="hyperdisk-balanced",
        # GKE "About Ironwood (TPU7x) in GKE": Standard clusters at this version and later.
        min_gke_version="1.34.0-gke.2201000",
        flex_start_zones=("us-central1-c",),
        workload_policy_for_multi_host=True,
        dcn_gbps_per_chip=100,
        additional_node_networks=(
            "Cluster Toolkit's gke-tpu-7x-advanced blueprint gives every TPU7x node an additional "
            "network for DCN traffic"
        ),
    ),
    # TPU VMs only. tpu/docs/v2 and v3 list the accelerator types; each host has 4 chips of 2
    # TensorCores, and the chips form a 2D torus (v2-512 is 16x16 chips, v3-2048 32x32).
    TpuFamily(
        prefix="v2",
        gke_accelerator="",
        suffix_counts="TensorCores",
        cores_per_chip=2,
        multi_host_machine_type="",
        chips_per_multi_host_vm=4,
        single_host={"2x2": ("", 4)},
        multi_host_topologies=("4x4", "8x8", "8x16", "16x16"),
        zones=("us-central1-a", "us-central1-b", "us-central1-c", "europe-west4-a", "asia-east1-c"),
        boot_disk_type="",
        gke=False,
        tpu_vm_runtimes=_V4_AND_OLDER_RUNTIMES,
        # tpu/docs/regions-zones lists v2 per type: v2-8 in us-central1-b/-c, europe-west4-a and
        # asia-east1-c; v2-32 to v2-512 in us-central1-a and europe-west4-a.
        tpu_vm_zones_by_size={
            8: ("us-central1-b", "us-central1-c", "europe-west4-a", "asia-east1-c"),
            **{size: ("us-central1-a", "europe-west4-a") for size in (32, 128, 256, 512)},
        },
    ),
    TpuFamily(
        prefix="v3",
        gke_accelerator="",
        suffix_counts="TensorCores",
        cores_per_chip=2,
        multi_host_machine_type="",
        chips_per_multi_host_vm=4,
        single_host={"2x2": ("", 4)},
        multi_host_topologies=("4x4", "4x8", "8x8", "8x16", "16x16", "16x32", "32x32"),
        zones=("us-central1-a", "us-central1-b", "europe-west4-a"),
        boot_disk_type="",
        gke=False,
        tpu_vm_runtimes=_V4_AND_OLDER_RUNTIMES,
        # tpu/docs/regions-zones: v3-8 in us-central1-a/-b and europe-west4-a; v3-32 to
        # v3-2048 in europe-west4-a only.
        tpu_vm_zones_by_size={
            8: ("us-central1-a", "us-central1-b", "europe-west4-a"),
            **{size: ("europe-west4-a",) for size in (32, 64, 128, 256, 512, 1024, 2048)},
        },
    ),
)

_BY_PREFIX = {f.prefix: f for f in FAMILIES}
_ACCELERATOR = re.compile(r"(?P<prefix>[a-z0-9]+?)-(?P<size>[0-9]{1,6})")


class CatalogError(ValueError):
    """An accelerator type or topology the catalog does not know; the message lists valid ones."""


@cache
def _topologies_by_size(prefix: str) -> dict[int, list[str]]:
    family = _BY_PREFIX[prefix]
    sizes: dict[int, list[str]] = {}
    for topology in (*family.single_host, *family.multi_host_topologies):
        sizes.setdefault(family.size_of(_chips(topology)), []).append(topology)
    return sizes


def accelerator_types() -> list[str]:
    """Every accelerator type the catalog resolves, family by family."""
    return [f"{f.prefix}-{size}" for f in FAMILIES for size in valid_sizes(f.prefix)]


def valid_sizes(prefix: str) -> list[int]:
    return sorted(_topologies_by_size(prefix))


def _describe_sizes(family: TpuFamily) -> str:
    sizes = valid_sizes(family.prefix)
    shown = [f"{family.prefix}-{s}" for s in sizes]
    if len(shown) > 12:
        shown = [*shown[:9], "...", shown[-1]]
    return (
        f"{family.prefix} sizes are {', '.join(shown)} (the suffix counts {family.suffix_counts})"
    )


HOST_SHAPES: dict[str, tuple[int, int]] = {
    "ct4p-hightpu-4t": (240, 407),
    "ct5lp-hightpu-1t": (24, 48),
    "ct5lp-hightpu-4t": (112, 192),
    "ct5lp-hightpu-8t": (224, 384),
    "ct5p-hightpu-4t": (208, 448),
    "ct6e-standard-1t": (44, 176),
    "ct6e-standard-4t": (180, 720),
    "ct6e-standard-8t": (180, 1440),
    "tpu7x-standard-4t": (224, 960),
}
"""TPU host machine type -> (vCPUs, GiB of memory): the 4-chip VMs of v5p, v6e and TPU7x as
Cloud TPU's tpu7x page tabulates them (208/448, 180/720, 224/960); v4 from tpu/docs/v4; v5e as
Compute Engine lists its machine types (Cyclenerd machinetypes.csv); v6e's 1- and 8-chip VMs
from tpu/docs/v6e. Compute Engine writes memory in GB of 2^30 bytes."""


@dataclass(frozen=True)
class TpuHost:
    """One TPU host machine type: its family and the chips on one such VM (its vCPUs and
    memory are in `HOST_SHAPES`)."""

    family: TpuFamily
    chips: int


def _hosts() -> dict[str, TpuHost]:
    hosts: dict[str, TpuHost] = {}
    machines = [(f, f.multi_host_machine_type, f.chips_per_multi_host_vm) for f in FAMILIES]
    machines += [(f, m, chips) for f in FAMILIES for m, chips in f.single_host.values()]
    for family, machine, chips in machines:
        if machine:
            hosts[machine] = TpuHost(family, chips)
    return hosts


TPU_HOSTS: dict[str, TpuHost] = _hosts()
"""Every TPU host machine type the catalog names (GKE node pools, the provisioner's pools),
with its family and chips per VM."""


@cache
def resolve(accelerator: str, topology: str | None = None) -> TpuShape:
    """Resolve a Cloud TPU accelerator type (`v5p-32`) and optional topology to a slice shape."""
    match = _ACCELERATOR.fullmatch(accelerator)
    family = _BY_PREFIX.get(match["prefix"]) if match else None
    if match is None or family is None:
        known = ", ".join(f"{f.prefix}-<size>" for f in FAMILIES)
        raise CatalogError(
            f"'{accelerator}' is not a Cloud TPU accelerator type; use one of {known}, "
            "e.g. v5p-32 or v6e-16"
        )
    size = int(match["size"])
    candidates = _topologies_by_size(family.prefix).get(size)
    if candidates is None:
        raise CatalogError(
            f"'{accelerator}' is not a Cloud TPU accelerator type; {_describe_sizes(family)}"
        )
    if topology is None:
        topology = candidates[0]
    elif topology not in candidates:
        raise CatalogError(
            f"topology '{topology}' does not fit {accelerator}; valid topologies for "
            f"{accelerator} are {', '.join(candidates)}"
        )
    if topology in family.single_host:
        machine_type, chips_per_host = family.single_host[topology]
        return TpuShape(accelerator, family, topology, machine_type, 1, chips_per_host)
    chips_per_host = family.chips_per_multi_host_vm
    return TpuShape(
        accelerator=accelerator,
        family=family,
        topology=topology,
        machine_type=family.multi_host_machine_type,
        hosts=_chips(topology) // chips_per_host,
        chips_per_host=chips_per_host,
    )


FLEX_START_MIN_GKE_VERSION = "1.33.0-gke.1712000"
"""GKE "About flex-start": TPUs need GKE 1.33.0-gke.1712000 or later."""


def zone_problem(family: TpuFamily, zone: str) -> str | None:
    """Why `zone` cannot host `family`, or None when Cloud TPU documents it there."""
    if zone in family.zones:
        return None
    return (
        f"Cloud TPU offers {family.prefix} in {', '.join(family.zones)}, not {zone}; pick "
        "one of those zones (or set allowUnlistedZone: true if Google has since added it)"
    )


def tpu_vm_zone_problem(shape: TpuShape, zone: str) -> str | None:
    """Why `zone` has no TPU VMs of this accelerator type, or None when Cloud TPU documents
    it there; per size where the family's zones depend on it (v2, v3)."""
    size = shape.family.size_of(shape.chips)
    zones = shape.family.tpu_vm_zones_by_size.get(size)
    if zones is None:
        return zone_problem(shape.family, zone)
    if zone in zones:
        return None
    return (
        f"Cloud TPU offers {shape.family.prefix}-{size} in {', '.join(zones)}, not {zone}; pick "
        "one of those zones (or set allowUnlistedZone: true if Google has since added it)"
    )


def spelling_problem(accelerator: str) -> str | None:
    """Why an accelerator type the catalog resolves is not spelt as the Cloud TPU API spells
    it (`v4-08` for `v4-8`), or None. The API names types `<prefix>-<size>` with no leading
    zero (`list_accelerator_types`, gcloud's examples)."""
    match = _ACCELERATOR.fullmatch(accelerator)
    if match is None or not match["size"].startswith("0"):
        return None
    canonical = f"{match['prefix']}-{int(match['size'])}"
    return f"'{accelerator}' is spelt '{canonical}' by the Cloud TPU API; write {canonical}"


def flex_start_zone_problem(family: TpuFamily, zone: str) -> str | None:
    """Why GKE cannot give the family flex-start capacity in `zone`, or None when its
    flex-start page lists the zone."""
    if zone in family.flex_start_zones:
        return None
    if not family.flex_start:
        return (
            f"GKE lists no zone with flex-start for {family.prefix}; pick another provisioning "
            "(or set allowUnlistedZone: true if Google offers it in this zone)"
        )
    return (
        f"GKE offers flex-start {family.prefix} in {', '.join(family.flex_start_zones)}, not "
        f"{zone}; pick one of those zones, another provisioning (or set allowUnlistedZone: true "
        "if Google has since added it)"
    )


def _boots(family: TpuFamily, runtime: str) -> bool:
    return any(re.fullmatch(pattern, runtime) for pattern in family.tpu_vm_runtimes)


def runtime_families(runtime: str) -> list[str]:
    """The families whose TPU VMs the catalog knows to run this software version."""
    return [f.prefix for f in FAMILIES if _boots(f, runtime)]


def runtime_problem(family: TpuFamily, runtime: str, *, allow_unlisted: bool = False) -> str | None:
    """Why a TPU software version cannot boot this family's TPU VMs, or None if it can.
    `allow_unlisted` takes a version no family lists (one Google added since); one listed for
    another family is still refused."""
    if not family.tpu_vm_runtimes:
        return f"the Cloud TPU API creates no {family.prefix} TPU VMs; use ai-infra:tpuSlices"
    if _boots(family, runtime):
        return None
    users = runtime_families(runtime)
    if users:
        return (
            f"'{runtime}' is for {', '.join(users)}, not {family.prefix}; {family.prefix} TPU "
            f"VMs run {family.tpu_vm_runtimes[0]} (tpu/docs/runtimes)"
        )
    if allow_unlisted:
        return None
    return (
        f"'{runtime}' is not a TPU software version the catalog knows for {family.prefix}, "
        f"whose TPU VMs run {family.tpu_vm_runtimes[0]} (tpu/docs/runtimes); set "
        "allowUnlistedRuntime: true for one Google added since (`gcloud compute tpus tpu-vm "
        "versions list --zone=ZONE` lists them)"
    )


NODE_NETWORK_FAMILIES = tuple(f.prefix for f in FAMILIES if f.additional_node_networks)
"""Families whose GKE node pools take additional node networks here."""


def node_network_problem(family: TpuFamily) -> str | None:
    """Why a family's node pools take no additional node networks, or None if they do."""
    if family.additional_node_networks:
        return None
    supported = " and ".join(NODE_NETWORK_FAMILIES)
    return (
        f"additional node networks are for {supported} only: nothing Google or its tools "
        f"publish gives {family.prefix} TPU hosts a second NIC (evidence per family in "
        "catalog/tpu.py); remove the list, or write [] to opt the slice out"
    )


def topologies_for(accelerator: str) -> list[str]:
    """Every topology an accelerator type can take; the first is its default."""
    shape = resolve(accelerator)
    return list(_topologies_by_size(shape.family.prefix)[shape.family.size_of(shape.chips)])
