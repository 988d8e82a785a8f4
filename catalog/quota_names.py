"""Which quota governs what a plan creates: for each kind of capacity, the quota names to look
for, most reliable first. A `Metric` is a Compute Engine quota that `regions.get` (or
`projects.get`, for global ones) lists with its usage; a `CloudQuota` is one the Cloud Quotas
API lists, with limits but no usage. At run time the first name the project actually has
decides; when it has none of them, preflight says "cannot check" and lists what it has, rather
than guess.

Sources, read 2026-11:
- Compute Engine metric strings: the `Quota.metric` enum of the Compute API (discovery revision
  20261106, google-cloud-compute 1.57.0 `compute_v1.types.Quota.Metric`): `TPU_PODSLICE_V4`,
  `TPU_LITE_PODSLICE_V5`, their `PREEMPTIBLE_` twins, `NVIDIA_*_GPUS`, `<SERIES>_CPUS`, `CPUS`,
  `CPUS_ALL_REGIONS`, `GPUS_ALL_REGIONS`, `IN_USE_ADDRESSES`. The enum stopped growing before
  v5p, v6e, tpu7x and H100 on demand; the service did not, hence the other candidates.
- Cloud Quotas ids in Google's docs: `CPUS-per-project-region` and
  `GPUS-PER-GPU-FAMILY-per-project-region` (Cloud Quotas API overview, 2026-04-10),
  `CPUS-PER-VM-FAMILY-per-project-region` (Cloud Quotas terminology), dimension `gpu_family`
  ("Configure Cloud Quotas dimensions").
- Cloud TPU API quota names (display names), per project per zone, in TensorCores: Cloud TPU
  "Quotas" (docs.cloud.google.com/tpu/docs/quota, 2026-04-09). GKE's TPU node pools use Compute
  Engine quota instead, and pools on a reservation need none (GKE "Troubleshoot TPUs in GKE").
- Unconfirmed in Google's docs, seen in quota errors and runbooks: the v5p/v6e/tpu7x Compute
  Engine quota ids and names, `tpu_family` values, the Cloud TPU API quota ids, the `gpu_family`
  values and the Filestore quota ids (except Enterprise, whose limit name
  `EnterpriseStorageGiBPerRegion` is on Filestore's own page). A wrong guess here only means
  "cannot check", never a wrong figure.
- Cloud TPU API quota ids per zone and per region, as Google's quota errors spell them:
  `TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI` and `TPUV5sPreemptibleLitepodPer...`
  (marin-community/marin#87), `TPUV6EPreemptiblePerProjectPerRegionForTPUAPI` "Limit: 0 in
  region us-east5" where the zone had quota, so both limits hold (marin-community/marin#1612),
  `TPUV2sPodPerProjectPerRegionForTPUAPI,TPUV2sPodPerProjectPerZoneForTPUAPI` (a gcloud log in
  BioMedBERT/biomedbert); `TPUV5PPerProjectPerRegionForTPUAPI` from public notes only.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPUTE = "compute.googleapis.com"
TPU_API = "tpu.googleapis.com"
FILESTORE = "file.googleapis.com"


@dataclass(frozen=True)
class Metric:
    """A Compute Engine quota metric, listed with limit and usage by region or project."""

    name: str


@dataclass(frozen=True)
class CloudQuota:
    """A quota of `service` in the Cloud Quotas API, found by id or display name. Its
    service-specific `dimensions` (`tpu_family=CT6E`) must be listed explicitly for it to
    count as found: a default for unlisted values is no answer about this one."""

    service: str
    ids: tuple[str, ...] = ()
    display_names: tuple[str, ...] = ()
    dimensions: tuple[tuple[str, str], ...] = ()


QuotaName = Metric | CloudQuota

IN_USE_ADDRESSES = Metric("IN_USE_ADDRESSES")
GPUS_ALL_REGIONS = Metric("GPUS_ALL_REGIONS")
CPUS_ALL_REGIONS = Metric("CPUS_ALL_REGIONS")
PREEMPTIBLE_CPUS = Metric("PREEMPTIBLE_CPUS")
"""Preemptible vCPUs in a region, every machine series together: Spot VMs draw on it where it
has been granted, and on the series' own quota where not (Compute Engine "Create and use Spot
VMs": "to prevent Spot VMs from consuming your quotas for standard VMs' CPUs, GPUs, and
disks, consider requesting preemptible quota")."""


def _family_quota(family: str) -> CloudQuota:
    return CloudQuota(
        COMPUTE,
        ids=("TPUS-PER-TPU-FAMILY-per-project-region",),
        display_names=("TPUs per TPU family",),
        dimensions=(("tpu_family", family),),
    )


_GKE_TPU: dict[str, tuple[tuple[QuotaName, ...], tuple[QuotaName, ...]]] = {
    "v4": (
        (Metric("TPU_PODSLICE_V4"),),
        (Metric("PREEMPTIBLE_TPU_PODSLICE_V4"),),
    ),
    "v5litepod": (
        (Metric("TPU_LITE_PODSLICE_V5"),),
        (Metric("PREEMPTIBLE_TPU_LITE_PODSLICE_V5"),),
    ),
    "v5p": (
        (
            CloudQuota(
                COMPUTE, ids=("TPU-V5P-per-project-region",), display_names=("TPU v5p chips",)
            ),
            _family_quota("CT5P"),
        ),
        (
            CloudQuota(
                COMPUTE,
                ids=("PREEMPTIBLE-TPU-V5P-per-project-region",),
                display_names=("Preemptible TPU v5p chips",),
            ),
        ),
    ),
    "v6e": (
        (_family_quota("CT6E"),),
        (
            CloudQuota(
                COMPUTE,
                ids=("PREEMPTIBLE-TPU-V6E-per-project-region",),
                display_names=("Preemptible TPU slices v6e",),
            ),
        ),
    ),
    "tpu7x": (
        (_family_quota("TPU7X"),),
        (
            CloudQuota(
                COMPUTE,
                ids=("PREEMPTIBLE-TPU-TPU7X-per-project-region",),
                display_names=("Preemptible TPU slices tpu7x",),
            ),
        ),
    ),
}
"""GKE TPU family -> (on-demand, preemptible) Compute Engine chip quotas, per region."""


def gke_tpu(family: str, preemptible: bool) -> tuple[QuotaName, ...]:
    """Chips per region for GKE TPU node pools of `family`. Spot and flex-start pools draw on
    preemptible quota (Compute Engine "Provisioning models": flex-start VMs use preemptible
    quota; third-party reading, not confirmed here)."""
    on_demand, spot = _GKE_TPU.get(family, ((), ()))
    return spot if preemptible else on_demand


_TPU_API: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "v6e": ("TPU v6e cores", (("TPUV6E", ""),)),
    "v5p": ("TPU v5p cores", (("TPUV5P", ""),)),
    "v5litepod": ("TPU v5 lite pod cores", (("TPUV5s", "Litepod"),)),
    "v4": ("TPU v4 pod cores", (("TPUV4s", "Pod"), ("TPUV4", "Pod"))),
    "v3": ("TPU v3 pod cores", (("TPUV3s", "Pod"), ("TPUV3", "Pod"))),
    "v2": ("TPU v2 pod cores", (("TPUV2s", "Pod"),)),
}
"""Family -> (display name stem from Cloud TPU "Quotas", the quota id's (version, kind) parts).
A preemptible id puts `Preemptible` between the two (`TPUV4sPreemptiblePodPerProjectPerRegion
ForTPUAPI`, `TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI`, `TPUV6EPreemptible...`: see
the sources above); v4 and v3 on demand list the `TPUV2sPod`-like spelling first and the older
guess after it, no quoted error spelling either."""
_TPU_API_DEVICES = {
    "v2": ("TPU v2 cores", (("TPUV2", ""),)),
    "v3": ("TPU v3 cores", (("TPUV3", ""),)),
}
"""v2-8 and v3-8 are single devices, with quotas of their own apart from pods (Cloud TPU
"Quotas": a v2 or v3 Pod quota cannot be used for v2-8 or v3-8)."""
SMALL = frozenset({"v2-8", "v3-8", "v5litepod-1", "v5litepod-4", "v5litepod-8"})
"""Accelerator types with quotas apart from their family's pods: v2-8 and v3-8 devices, and
v5e's serving sizes ("Creating a v5e instance for inference (v5litepod-1, v5litepod-4,
v5litepod-8) requires serving quota types", Cloud TPU "Quotas", earlier revision)."""


def tpu_api(
    family: str, preemptible: bool, accelerator: str, per: str = "zone"
) -> tuple[QuotaName, ...]:
    """Quota per zone (`per="zone"`) or per region (`per="region"`) for Cloud TPU API nodes
    (TPU VMs, Slurm nodesets) of `family`. Cloud TPU "Quotas": "TPU cores per project per
    region" and per zone both hold; reserved capacity draws on on-demand quota, there being no
    reserved quota type any more. The unit, chips or TensorCores, is read off the quota's own
    name (`counts_chips`)."""
    spot = "Preemptible" if preemptible else ""
    scope = "Zone" if per == "zone" else "Region"
    found: list[QuotaName] = []
    if accelerator in SMALL and family == "v5litepod":
        serving = (("TPUV5sLitepodServing", spot), (f"TPUV5s{spot}LitepodServing", ""))
        # Cloud TPU "Run inference on Cloud TPU" (tpu/docs/tpu-inference) names v5e's serving
        # quotas "TPU v5 lite pod cores for serving per project per zone" and "Preemptible
        # TPU v5 lite pod cores for serving per project per zone"; some translations of the
        # page write "TPUv5". The ids below are from quota errors only.
        prefix = "Preemptible " if preemptible else ""
        shown = (f"TPU v5 lite pod cores for serving per project per {per}",)
        shown += (shown[0].replace("TPU v5", "TPUv5"),)
        found.append(
            CloudQuota(
                TPU_API,
                ids=tuple(
                    dict.fromkeys(f"{a}{b}PerProjectPer{scope}ForTPUAPI" for a, b in serving)
                ),
                display_names=tuple(f"{prefix}{name}" for name in shown),
            )
        )
    small = accelerator in SMALL and family in _TPU_API_DEVICES
    table = _TPU_API_DEVICES if small else _TPU_API
    if family in table:
        display, stems = table[family]
        prefix = "Preemptible " if preemptible else ""
        found.append(
            CloudQuota(
                TPU_API,
                ids=tuple(f"{v}{spot}{k}PerProjectPer{scope}ForTPUAPI" for v, k in stems),
                display_names=(f"{prefix}{display} per project per {per}",),
            )
        )
    return tuple(found)


def counts_chips(quota_id: str, shown: str) -> bool:
    """Whether a Cloud TPU quota counts chips rather than TensorCores: Cloud TPU "Quotas" lets
    v4 and later be granted in either, and the quota's name says which ("TPU v5p chips ...",
    "TPU v5p cores ..."); v2 and v3 count TensorCores."""
    return "chip" in f"{quota_id} {shown}".casefold()


_GPUS: dict[str, tuple[str, str]] = {
    "nvidia-tesla-a100": ("NVIDIA_A100_GPUS", "NVIDIA_A100"),
    "nvidia-a100-80gb": ("NVIDIA_A100_80GB_GPUS", "NVIDIA_A100_80GB"),
    "nvidia-h100-80gb": ("NVIDIA_H100_GPUS", "NVIDIA_H100"),
    "nvidia-h100-mega-80gb": ("NVIDIA_H100_MEGA_GPUS", "NVIDIA_H100_MEGA"),
    "nvidia-h200-141gb": ("NVIDIA_H200_GPUS", "NVIDIA_H200"),
    "nvidia-b200": ("NVIDIA_B200_GPUS", "NVIDIA_B200"),
    "nvidia-gb200": ("NVIDIA_GB200_GPUS", "NVIDIA_GB200"),
    "nvidia-l4": ("NVIDIA_L4_GPUS", "NVIDIA_L4"),
    "nvidia-tesla-t4": ("NVIDIA_T4_GPUS", "NVIDIA_T4"),
    "nvidia-tesla-v100": ("NVIDIA_V100_GPUS", "NVIDIA_V100"),
    "nvidia-tesla-p100": ("NVIDIA_P100_GPUS", "NVIDIA_P100"),
    "nvidia-tesla-p4": ("NVIDIA_P4_GPUS", "NVIDIA_P4"),
}
"""Accelerator type -> (Compute Engine metric, `gpu_family` value)."""


def gpu(accelerator: str, preemptible: bool) -> tuple[QuotaName, ...]:
    """GPUs per region of an accelerator type; `preemptible`: the preemptible quota Spot VMs
    draw on where it has been granted (`gpu(..., False)` where not)."""
    if accelerator not in _GPUS:
        return ()
    metric, family = _GPUS[accelerator]
    if preemptible:
        dashed = metric.replace("_", "-")
        return (
            Metric(f"PREEMPTIBLE_{metric}"),
            CloudQuota(COMPUTE, ids=(f"PREEMPTIBLE-{dashed}-per-project-region",)),
        )
    return (
        Metric(metric),
        CloudQuota(
            COMPUTE,
            ids=("GPUS-PER-GPU-FAMILY-per-project-region",),
            dimensions=(("gpu_family", family),),
        ),
    )


def cpus(series: str) -> tuple[QuotaName, ...]:
    """vCPUs per region of a machine series (`N2`): its own quota where the region lists one,
    else the region's `CPUS`."""
    return (
        Metric(f"{series}_CPUS"),
        CloudQuota(
            COMPUTE,
            ids=("CPUS-PER-VM-FAMILY-per-project-region",),
            dimensions=(("vm_family", series),),
        ),
        Metric("CPUS"),
    )


_FILESTORE: dict[str, tuple[str, ...]] = {
    "BASIC_HDD": ("StandardStorageGbPerRegion",),
    "BASIC_SSD": ("PremiumStorageGbPerRegion",),
    "HIGH_SCALE_SSD": ("HighScaleSSDStorageGibPerRegion",),
    "ENTERPRISE": ("EnterpriseStorageGibPerRegion",),
    # Filestore "Service tiers": Zonal replaces High Scale SSD and Regional replaces
    # Enterprise; where a project has no quota of the new tier's own name (unconfirmed), it
    # is held to the one of the tier it replaced.
    "ZONAL": ("ZonalStorageGibPerRegion", "HighScaleSSDStorageGibPerRegion"),
    "REGIONAL": ("RegionalStorageGibPerRegion", "EnterpriseStorageGibPerRegion"),
}


def filestore(tier: str) -> tuple[QuotaName, ...]:
    """GiB of Filestore capacity per region of a tier."""
    return tuple(CloudQuota(FILESTORE, ids=(i,)) for i in _FILESTORE.get(tier, ()))


LUSTRE = "lustre.googleapis.com"


def lustre(_tier: str) -> tuple[QuotaName, ...]:
    """GiB of Managed Lustre capacity per region, whatever the throughput tier. Unconfirmed:
    no id of it was found in Google's pages, so these are guesses that at worst leave the need
    "cannot check", saying what was looked for."""
    return (CloudQuota(LUSTRE, ids=("StorageCapacityGibPerRegion", "CapacityGibPerRegion")),)


STORAGE_QUOTAS = {"filestore": ("Filestore", filestore), "lustre": ("Managed Lustre", lustre)}
"""graph.capacity Storage kind -> how preflight names it and the quotas per region of a tier
that hold it; a kind not here needs no quota of its own (a disk counts against nothing
preflight reads)."""
