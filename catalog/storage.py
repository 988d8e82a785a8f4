"""Facts about the storage services the stack creates or mounts, each read once: Filestore tiers
(capacity ranges and steps), Managed Lustre performance tiers (capacity ranges and steps) and
the zones that offer it, and the Cloud Storage FUSE settings of the training and checkpoint
profiles. Checks, resources, mounts and the plan all read them here.

Parallelstore is not offered: Google sells it by invitation only ("Parallelstore is available
by invitation only", Parallelstore overview, last updated 2025-09-10), in no region openly;
Managed Lustre is its generally available successor for the same workloads.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.locations import region_of


@dataclass(frozen=True)
class CapacityBand:
    """Capacities from `low` to `high` GiB that are a multiple of `step` GiB."""

    low: int
    high: int
    step: int

    def holds(self, gib: int) -> bool:
        return self.low <= gib <= self.high and gib % self.step == 0

    def describe(self) -> str:
        if self.step == 1:
            return f"{self.low:,} to {self.high:,} GiB"
        return f"{self.low:,} to {self.high:,} GiB in steps of {self.step:,}"


@dataclass(frozen=True)
class Tier:
    """A service tier's capacities: one band, or two where the step grows with the size."""

    name: str
    bands: tuple[CapacityBand, ...]

    @property
    def low(self) -> int:
        return self.bands[0].low

    @property
    def high(self) -> int:
        return self.bands[-1].high

    def capacity_problem(self, gib: int) -> str | None:
        """Why `gib` is not a capacity of the tier, with the nearest ones that are; None if
        it is."""
        if any(band.holds(gib) for band in self.bands):
            return None
        allowed = "; ".join(band.describe() for band in self.bands)
        nearest = sorted(
            {
                value
                for band in self.bands
                for value in (
                    max(band.low, min(band.high, gib - gib % band.step)),
                    max(band.low, min(band.high, gib - gib % band.step + band.step)),
                )
            },
            key=lambda value: (abs(value - gib), value),
        )[:2]
        shown = " and ".join(f"{v:,}" for v in sorted(nearest))
        verb = "are" if len(nearest) > 1 else "is"
        return f"{gib:,} GiB is not a {self.name} capacity ({allowed}); the nearest {verb} {shown}"


FILESTORE_TIERS: dict[str, Tier] = {
    "BASIC_HDD": Tier("BASIC_HDD", (CapacityBand(1024, 65433, 1),)),
    "BASIC_SSD": Tier("BASIC_SSD", (CapacityBand(2560, 65433, 1),)),
    "ZONAL": Tier("ZONAL", (CapacityBand(1024, 9984, 256), CapacityBand(10240, 102400, 2560))),
    "HIGH_SCALE_SSD": Tier("HIGH_SCALE_SSD", (CapacityBand(10240, 102400, 2560),)),
    "ENTERPRISE": Tier("ENTERPRISE", (CapacityBand(1024, 10240, 256),)),
}
"""Filestore "Service tiers" (read 2026-11): Basic HDD 1 TiB and Basic SSD 2.5 TiB to 63.9 TiB;
Zonal 1 to 9.75 TiB in 256 GiB units and 10 to 100 TiB in 2.5 TiB units ("The Zonal tier
replaces the high scale SSD", whose 10 to 100 TiB range it keeps); Enterprise 1 to 10 TiB. The
Basic tiers document no step. Each system offers the tiers it takes."""
STORAGE_FILESTORE_TIERS = ("BASIC_HDD", "BASIC_SSD", "ZONAL")
"""The tiers `ai-infra:storage` creates; Regional is left out because its lower band's step
could not be confirmed, Enterprise and High Scale because Zonal replaces them."""
FILESTORE_SHARE = "share"
"""The one file share of each Filestore instance `ai-infra:storage` creates (Basic tiers take
at most 16 characters)."""
FILESTORE_BLOCK_PREFIX = {"BASIC_HDD": 29, "BASIC_SSD": 29, "ZONAL": 26}
"""The block a Filestore instance takes of the range it is given: a /29 for the Basic tiers, a
/26 for the others (Filestore "Configure a reserved IP address range")."""

LUSTRE_TIERS: dict[int, Tier] = {
    1000: Tier(
        "1000 MBps per TiB",
        (CapacityBand(9000, 1530000, 9000), CapacityBand(1584000, 10008000, 72000)),
    ),
    500: Tier(
        "500 MBps per TiB",
        (CapacityBand(18000, 3060000, 18000), CapacityBand(3168000, 20016000, 144000)),
    ),
    250: Tier(
        "250 MBps per TiB",
        (CapacityBand(36000, 6120000, 36000), CapacityBand(6336000, 40032000, 288000)),
    ),
    125: Tier("125 MBps per TiB", (CapacityBand(72000, 12240000, 72000),)),
}
"""Managed Lustre "Performance tiers" (read 2026-11): throughput per TiB -> capacities. Each
tier steps by its smaller unit up to a threshold (1,530,000, 3,060,000 and 6,120,000 GiB) and
by a unit eight times larger above it, up to its maximum; the larger band starts at the first
multiple of its unit past the threshold. An instance created at or below the threshold can
grow only up to it, and no instance shrinks ("Increase the capacity")."""
LUSTRE_BLOCK_PREFIX = 23
"""Each Managed Lustre instance takes a contiguous block of at least a /23 of the private
services access range ("Configure a VPC network", read 2026-11; earlier versions said /24)."""
LUSTRE_PORT = 988
"""LNet's port. Lustre servers connect back to clients on it, so clients admit it from the
private services range ("Configure a VPC network"). Instances made with `gkeSupportEnabled`
use 6988 instead; this program never sets it, and GKE's driver uses 988 unless its legacy
port is enabled (lustre-csi-driver kmod_installer.go, legacyLNetPort)."""
LUSTRE_FILESYSTEM_MAX = 8
"""A Lustre file system name is at most eight letters and digits (lustre.Instance
`filesystem`)."""

LUSTRE_ZONES: dict[str, tuple[str, ...]] = {
    "africa-south1": ("a", "b", "c"),
    "asia-east1": ("a", "c"),
    "asia-east2": ("a", "c"),
    "asia-northeast1": ("b", "c"),
    "asia-northeast2": ("a", "c"),
    "asia-northeast3": ("a", "b", "c"),
    "asia-south1": ("a", "b", "c"),
    "asia-south2": ("a", "b", "c"),
    "asia-southeast1": ("a", "b", "c"),
    "asia-southeast2": ("a", "b", "c"),
    "australia-southeast1": ("a", "b", "c"),
    "australia-southeast2": ("a", "b", "c"),
    "europe-central2": ("a", "c"),
    "europe-west1": ("b", "c", "d"),
    "europe-west2": ("a", "b", "c"),
    "europe-west3": ("a", "b", "c"),
    "europe-west4": ("a", "b", "c"),
    "europe-west9": ("a", "b"),
    "me-central2": ("a", "c"),
    "me-west1": ("b", "c"),
    "northamerica-northeast1": ("a", "b"),
    "southamerica-east1": ("a", "b"),
    "us-central1": ("a", "b", "c", "f"),
}
"""Managed Lustre "Supported regions and zones" (managed-lustre/docs/locations, read 2026-11):
the rows that could be read, africa-south1 to europe-central2 of the current table and
europe-west1 to us-central1 of an earlier one. Google lists more regions than these (further
United States and European rows could not be read); a zone not here is refused unless its
entry sets `allowUnlistedZone`."""


def lustre_zone_problem(zone: str) -> str | None:
    """Why the catalog does not list `zone` for Managed Lustre, or None."""
    region = region_of(zone)
    letters = LUSTRE_ZONES.get(region)
    if letters is None:
        return (
            f"Managed Lustre is not listed in {region} (listed: "
            f"{', '.join(sorted(LUSTRE_ZONES))}); choose a listed region's zone, or set "
            "allowUnlistedZone if Google offers it there now (managed-lustre/docs/locations)"
        )
    if zone.removeprefix(region + "-") in letters:
        return None
    zones = ", ".join(f"{region}-{letter}" for letter in letters)
    return (
        f"Managed Lustre is offered in {zones}, not {zone}; choose one of them, or set "
        "allowUnlistedZone if Google offers it there now"
    )


@dataclass(frozen=True)
class GcsFuseProfile:
    """Cloud Storage FUSE settings, by gcsfuse config path, for one kind of access."""

    name: str
    gcsfuse_profile: str
    """The gcsfuse `--profile` these settings are taken from."""
    settings: tuple[tuple[str, str], ...]
    """(config path, value), as gcsfuse's config file and GKE's mount options spell them."""


_METADATA_CACHE = (
    ("implicit-dirs", "true"),
    ("metadata-cache.ttl-secs", "-1"),
    ("metadata-cache.negative-ttl-secs", "0"),
    ("metadata-cache.stat-cache-max-size-mb", "-1"),
)
GCSFUSE_PROFILES: dict[str, GcsFuseProfile] = {
    "training": GcsFuseProfile("training", "aiml-training", _METADATA_CACHE),
    "checkpoint": GcsFuseProfile(
        "checkpoint",
        "aiml-checkpointing",
        (
            *_METADATA_CACHE,
            ("file-cache.cache-file-for-range-read", "true"),
            ("file-system.rename-dir-limit", "200000"),
        ),
    ),
}
"""The settings gcsfuse v3.11.2 applies for `--profile=aiml-training` and
`--profile=aiml-checkpointing` (cfg/config.go AllFlagOptimizationRules), written out: GKE's
driver passes a `profile:` mount option only behind a feature gate (gcs-fuse-csi-driver
utils.go generateDisallowedFlagsMap), and images may carry an older gcsfuse."""
GCSFUSE_FILE_CACHE = (
    ("file-cache.max-size-mb", "-1"),
    ("file-cache.enable-parallel-downloads", "true"),
)
"""The file cache with parallel downloads, where a cache directory has room: local SSD on a
VM (Cluster Toolkit v1.95.0 a3mega-slurm-gcsfuse-lssd-blueprint), the sidecar's cache volume
on GKE (gcs-fuse-csi-driver sidecar_mounter_config.go: a non-zero `file-cache:max-size-mb`
turns it on)."""
GKE_FILE_CACHE_MIB = 16384
"""The file cache of one bucket mount on GKE, in MiB: a bound this program chooses so a pod's
cache volume can be sized (gcs-fuse-csi-driver docs/troubleshooting.md: the cache volume must
be larger than the mount's cache capacity); GKE mount options replace the VM's `-1` with it."""
GKE_CACHE_MEMORY_SHARE = 8
"""A pod puts its file caches in RAM only when together they take at most 1/8 of the node's
allocatable memory, leaving the rest to training; otherwise on local SSD or the boot disk."""
GCSFUSE_FLAGS = {
    "implicit-dirs": "implicit-dirs",
    "metadata-cache.ttl-secs": "metadata-cache-ttl-secs",
    "metadata-cache.negative-ttl-secs": "metadata-cache-negative-ttl-secs",
    "metadata-cache.stat-cache-max-size-mb": "stat-cache-max-size-mb",
    "file-cache.cache-file-for-range-read": "file-cache-cache-file-for-range-read",
    "file-system.rename-dir-limit": "rename-dir-limit",
    "file-cache.max-size-mb": "file-cache-max-size-mb",
    "file-cache.enable-parallel-downloads": "file-cache-enable-parallel-downloads",
}
"""Config path -> gcsfuse command-line flag (gcsfuse v3.11.2 cfg/params.yaml)."""
GKE_CHECKPOINT_READ_AHEAD_KB = 1024
"""`read_ahead_kb=1024` beside the checkpointing profile (gcs-fuse-csi-driver
deploy/base/setup/storageclass.yaml, `gcsfusecsi-checkpointing`)."""
