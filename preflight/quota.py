"""Quota per region (and per zone and region for the Cloud TPU API) against the plan at its
largest: TPU chips per family and capacity type for GKE slices and the provisioner, Cloud TPU
API chips or TensorCores (as each quota counts) for TPU VMs and Slurm nodesets, GPUs per type
and capacity type, vCPUs per machine series, external addresses and Filestore capacity, each
minus what is in use where the quota system reports it.

Spot VMs draw on preemptible quota where the region has been granted one and on standard quota
where not, as Compute Engine charges them (GPUs and vCPUs). A Compute Engine reservation needs
no quota of its VMs: creating it consumed it (GKE "Troubleshoot TPUs in GKE"), so those VMs are
left to the reservations check; Cloud TPU API reservations draw on on-demand quota. On a stack
that is already up, "in use" includes its own VMs; read the figures as for a first deploy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from google.cloud import cloudquotas_v1, compute_v1

from catalog import quota_names as names
from catalog.quota_names import CloudQuota, Metric, QuotaName
from components.locations import region_of
from graph.capacity import Machines
from preflight.live import CannotCheck, Live
from preflight.needs import Needs, tpu_slices
from preflight.report import QUOTAS_PAGE, Finding, fail, ok, warn

NAME = "quota"
MEANING = (
    "regional quota (TPU chips, Cloud TPU cores, GPUs, vCPUs, addresses, Filestore, Managed "
    "Lustre) covers "
    "the plan at its largest, less what is in use"
)
GLOBAL = "global"


@dataclass
class QuotaNeed:
    """How much of one quota the plan takes at one location."""

    subject: str
    location: str
    """A region, a zone (Cloud TPU API quotas) or `global`."""
    unit: str
    names: tuple[QuotaName, ...]
    amount: int = 0
    sources: list[str] = field(default_factory=list)
    standard: tuple[QuotaName, ...] = ()
    """For Spot VMs' preemptible quota: the standard quota they draw on where the preemptible
    one has not been granted."""
    chips: int = 0
    """For Cloud TPU API quota, which counts chips or TensorCores: `amount` is TensorCores,
    this the same in chips."""

    @property
    def keys(self) -> str:
        """The config keys behind it: `tpuSlices[0], tpuSlices[2]`."""
        return ", ".join(dict.fromkeys(s.split(" ", 1)[0] for s in self.sources))

    @property
    def title(self) -> str:
        where = "all regions" if self.location == GLOBAL else self.location
        return f"{self.subject} in {where}"


@dataclass(frozen=True)
class Quota:
    """A quota the project has: its limit, and its usage where the quota system reports it."""

    name: str
    limit: float
    usage: float | None
    link: str
    shown: str = ""
    """Its display names, where the quota system gives them."""


def _series(machine_type: str) -> str:
    head = machine_type.split("-", 1)[0]
    return "N1" if head == "custom" else head.upper()


class _Needs:
    """The quota needs of one plan as they are added up, one per (subject, location)."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, str], QuotaNeed] = {}

    def add(
        self,
        subject: str,
        location: str,
        unit: str,
        quota: tuple[QuotaName, ...],
        n: int,
        src: str,
        standard: tuple[QuotaName, ...] = (),
        chips: int = 0,
    ) -> None:
        if n <= 0:
            return
        need = self.found.setdefault(
            (subject, location), QuotaNeed(subject, location, unit, quota, standard=standard)
        )
        need.amount += n
        need.chips += chips
        if src not in need.sources:
            need.sources.append(src)

    def vms(self, vm: Machines, vcpus: Mapping[str, int]) -> None:
        """Compute Engine VMs: TPU chips, GPUs, vCPUs and addresses. Spot VMs fall back to
        standard quota; flex-start VMs draw on preemptible quota only (Compute Engine
        "Provisioning models")."""
        preemptible = vm.capacity != "on-demand"
        spot = vm.capacity == "spot"
        kind = "Preemptible " if preemptible else ""
        if vm.tpu is not None:
            family = vm.tpu.family.prefix
            chips = vm.full * vm.tpu.chips
            quota = names.gke_tpu(family, preemptible)
            self.add(f"{kind}TPU {family} chips", vm.region, "chips", quota, chips, vm.source)
        for accelerator, per_vm in vm.gpus:
            total = vm.full * per_vm
            standard = names.gpu(accelerator, False) if spot else ()
            quota = names.gpu(accelerator, preemptible)
            subject = f"{kind}{accelerator} GPUs"
            self.add(subject, vm.region, "GPUs", quota, total, vm.source, standard)
            self.add("GPUs", GLOBAL, "GPUs", (names.GPUS_ALL_REGIONS,), total, vm.source)
        if vm.tpu is None and vm.machine_type in vcpus:
            self.vcpus(vm, vcpus[vm.machine_type], preemptible, spot)
        addresses = vm.full * vm.external_ips
        quota = (names.IN_USE_ADDRESSES,)
        self.add("external IP addresses", vm.region, "addresses", quota, addresses, vm.source)

    def vcpus(self, vm: Machines, per_vm: int, preemptible: bool, spot: bool) -> None:
        series = _series(vm.machine_type)
        total = vm.full * per_vm
        if preemptible:
            standard = names.cpus(series) if spot else ()
            quota = (names.PREEMPTIBLE_CPUS,)
            subject = f"Preemptible {series} vCPUs"
            self.add(subject, vm.region, "vCPUs", quota, total, vm.source, standard)
        else:
            self.add(f"{series} vCPUs", vm.region, "vCPUs", names.cpus(series), total, vm.source)
        self.add("vCPUs", GLOBAL, "vCPUs", (names.CPUS_ALL_REGIONS,), total, vm.source)

    def tpu_nodes(self, nodes: Machines) -> None:
        """Cloud TPU API VMs, per zone and per region; reserved ones draw on on-demand quota
        (Cloud TPU "Quotas" has no reserved type)."""
        if nodes.tpu is None:
            return
        slices = tpu_slices(nodes)
        preemptible = nodes.capacity == "spot"
        kind = "Preemptible " if preemptible else ""
        family = nodes.tpu.family.prefix
        for per, where in (("zone", nodes.zone), ("region", nodes.region)):
            self.add(
                f"{kind}TPU {family} TensorCores (Cloud TPU API, per {per})",
                where,
                "TensorCores",
                names.tpu_api(family, preemptible, slices.accelerator, per),
                slices.count * slices.cores,
                nodes.source,
                chips=nodes.chips,
            )
        hosts = slices.count * slices.hosts if nodes.external_ips else 0
        quota = (names.IN_USE_ADDRESSES,)
        self.add("external IP addresses", nodes.region, "addresses", quota, hosts, nodes.source)


def quota_needs(needs: Needs, vcpus: Mapping[str, int]) -> list[QuotaNeed]:
    """Every quota the plan draws on, with what it takes of each; `vcpus` maps a machine
    type to its vCPUs (machine types missing from it are left out)."""
    found = _Needs()
    for vm in needs.vms:
        if vm.capacity != "reservation":
            found.vms(vm, vcpus)
    for nodes in needs.tpu_nodes:
        found.tpu_nodes(nodes)
    for share in needs.shares:
        what, quota_names = names.STORAGE_QUOTAS[share.kind]
        subject = f"{what} {share.tier} GiB"
        found.add(subject, share.region, "GiB", quota_names(share.tier), share.gib, share.source)
    return list(found.found.values())


def _dimensions_value(
    info: cloudquotas_v1.QuotaInfo, location: str, wanted: tuple[tuple[str, str], ...]
) -> int | None:
    """The quota's value for `location` and the wanted service-specific dimensions: the most
    specific `DimensionsInfo` that fits (the API orders them so), where every wanted dimension
    is named explicitly."""
    place = "region" if location in (GLOBAL, region_of(location)) else "zone"
    want = {key: value.casefold() for key, value in wanted}
    for entry in info.dimensions_infos:
        dims = {k: v.casefold() for k, v in entry.dimensions.items()}
        if any(k not in dims for k in want):
            continue
        if any(dims[k] != v for k, v in want.items()):
            continue
        if place in dims and dims[place] != location.casefold():
            continue
        if location != GLOBAL and entry.applicable_locations:
            applies = {a.casefold() for a in entry.applicable_locations}
            if location.casefold() not in applies and GLOBAL not in applies:
                continue
        return entry.details.value
    return None


def _matches(info: cloudquotas_v1.QuotaInfo, name: CloudQuota) -> bool:
    ids = {i.casefold() for i in name.ids}
    shown = {d.casefold() for d in name.display_names}
    return info.quota_id.casefold() in ids or bool(
        shown & {info.quota_display_name.casefold(), info.metric_display_name.casefold()}
    )


def _resolve(need: QuotaNeed, live: Live) -> tuple[Quota, QuotaNeed] | None:
    """The quota the need is held to, with the need as that quota counts it: the first of its
    names the project has; for Spot VMs, their standard quota where the preemptible one is
    absent or zero; for Cloud TPU API quota, the need in chips where the quota counts chips.
    None when the project has none of them."""
    found = _first(need.names, need.location, live)
    if need.standard and (found is None or found.limit == 0):
        standard = _first(need.standard, need.location, live)
        if standard is not None:
            why = "no preemptible quota granted, so Spot VMs draw on"
            return Quota(
                f"{why} {standard.name}", standard.limit, standard.usage, standard.link
            ), need
    if found is not None and need.chips and names.counts_chips(found.name, found.shown):
        subject = need.subject.replace("TensorCores", "chips")
        return found, replace(need, subject=subject, amount=need.chips, unit="chips")
    return (found, need) if found is not None else None


def _first(candidates: tuple[QuotaName, ...], location: str, live: Live) -> Quota | None:
    """The first of `candidates` the project has at `location`, or None."""
    page = QUOTAS_PAGE.format(project=live.project)
    for name in candidates:
        if isinstance(name, Metric):
            listed = _metrics(location, live)
            if listed is None:
                continue
            for quota in listed:
                if quota.metric == name.name:
                    return Quota(name.name, quota.limit, quota.usage, page)
            continue
        for info in live.quota_infos(name.service):
            if not _matches(info, name):
                continue
            value = _dimensions_value(info, location, name.dimensions)
            if value is not None:
                link = info.service_request_quota_uri or page
                shown = f"{info.quota_display_name} {info.metric_display_name}"
                return Quota(info.quota_id, float(value), None, link, shown)
    return None


def _metrics(location: str, live: Live) -> list[compute_v1.Quota] | None:
    """Compute Engine's quotas with usage for a region (`regions.get`) or the project
    (`projects.get`); None for a zone, which has none."""
    if location == GLOBAL:
        return list(live.compute_project().quotas)
    if location == region_of(location):
        return list(live.region(location).quotas)
    return None


def _quota_warning(location: str, live: Live) -> str:
    """The region's own reason for listing no quotas (`Region.quota_status_warning`, "populated
    only if fetching of the quotas field fails"), or empty."""
    if location == GLOBAL or location != region_of(location):
        return ""
    region = live.region(location)
    if "quota_status_warning" not in region:
        return ""
    warning = region.quota_status_warning
    return ": ".join(part for part in (warning.code, warning.message) if part)


def _absent(need: QuotaNeed, live: Live) -> str:
    """What the project has instead, for "cannot check"; or, when Compute Engine listed no
    quotas at all where it lists one for every project, why that is."""
    metrics = any(isinstance(n, Metric) for n in (*need.names, *need.standard))
    listed = _metrics(need.location, live) if metrics else None
    if listed is not None and not listed:
        where = "the project" if need.location == GLOBAL else need.location
        warning = _quota_warning(need.location, live)
        if warning:
            return (
                f"Compute Engine could not list the quotas of {where} ({warning}); run "
                "preflight again later, or read them on the Quotas page"
            )
        return (
            f"Compute Engine returned no quotas for {where} at all, where it lists every "
            "quota for a project whose Compute Engine API is enabled and whose billing is "
            "active: check the apis and billing findings, and run preflight again once "
            "they pass"
        )
    wanted = [
        n.name if isinstance(n, Metric) else "/".join((*n.ids, *n.display_names))
        for n in (*need.names, *need.standard)
    ]
    hint = ""
    words = [w for w in need.subject.replace("(", " ").split() if any(c.isdigit() for c in w)]
    services = {n.service for n in need.names if isinstance(n, CloudQuota)}
    if words and services:
        seen: list[str] = []
        for service in sorted(services):
            try:
                infos = live.quota_infos(service)
            except CannotCheck:
                continue
            seen += [
                i.quota_id
                for i in infos
                if any(w.casefold() in i.quota_id.casefold() for w in words)
            ]
        if seen:
            hint = f"; quotas it has that mention {words[0]}: {', '.join(sorted(seen)[:8])}"
    if not wanted:
        return "preflight knows no quota that governs it; look it up on the Quotas page"
    return f"the project has none of the quotas that govern it ({', '.join(wanted)}){hint}"


def judge(need: QuotaNeed, quota: Quota) -> Finding:
    """The verdict on one need against the quota the project has."""
    wanted = f"need {need.amount} ({need.keys})"
    if quota.limit < 0:
        return ok(NAME, need.title, f"{wanted}, quota unlimited ({quota.name})")
    figure = f"{wanted}, quota {quota.limit:g} ({quota.name})"
    if quota.usage is not None:
        figure += f", in use {quota.usage:g}"
        free = quota.limit - quota.usage
        if need.amount <= free:
            return ok(NAME, need.title, figure)
        short = need.amount - free
        return fail(NAME, need.title, figure, f"request {short:g} more at {quota.link}")
    if need.amount > quota.limit:
        short = need.amount - quota.limit
        return fail(NAME, need.title, figure, f"request at least {short:g} more at {quota.link}")
    return warn(
        NAME,
        need.title,
        f"{figure}, in use not reported by Cloud Quotas",
        f"make sure {need.amount} are free at {quota.link}",
    )


def _vcpus(vms: Iterable[Machines], live: Live) -> tuple[dict[str, int], list[Finding]]:
    """vCPUs of each non-TPU machine type the plan creates (Compute API `machineTypes.get` in
    a zone it is placed in), and findings for those that could not be read."""
    counts: dict[str, int] = {}
    findings: list[Finding] = []
    for vm in vms:
        if vm.tpu is not None or vm.capacity == "reservation" or vm.machine_type in counts:
            continue
        try:
            zones = vm.zones or tuple(
                z.rsplit("/", 1)[-1] for z in live.region(vm.region).zones[:1]
            )
            machine = live.machine_type(zones[0], vm.machine_type) if zones else None
        except CannotCheck as error:
            findings.append(warn(NAME, f"{vm.machine_type} vCPUs", str(error)))
            continue
        if machine is not None:
            counts[vm.machine_type] = machine.guest_cpus
        else:
            findings.append(
                warn(
                    NAME,
                    f"{vm.machine_type} vCPUs",
                    f"cannot count them: {vm.machine_type} is not offered in {zones[0]} (see zones)"
                    if zones
                    else f"cannot count them: {vm.region} lists no zones",
                )
            )
    return counts, findings


def _merged(needs: list[QuotaNeed], quota: Quota) -> QuotaNeed:
    """Needs that resolve to one quota (E2 and G2 vCPUs both on `CPUS`) count together."""
    first = needs[0]
    merged = QuotaNeed(
        ", ".join(n.subject for n in needs) if len(needs) > 1 else first.subject,
        first.location,
        first.unit,
        first.names,
        sum(n.amount for n in needs),
        [s for n in needs for s in n.sources],
    )
    if len(needs) > 1:
        merged.subject += f" ({quota.name})"
    return merged


def check(needs: Needs, live: Live) -> list[Finding]:
    vcpus, findings = _vcpus(needs.vms, live)
    resolved: dict[tuple[str, str], tuple[Quota, list[QuotaNeed]]] = {}
    for need in quota_needs(needs, vcpus):
        try:
            found = _resolve(need, live)
        except CannotCheck as error:
            findings.append(warn(NAME, need.title, str(error)))
            continue
        if found is None:
            try:
                why = _absent(need, live)
            except CannotCheck as error:
                why = str(error)
            wanted = f"need {need.amount} {need.unit} ({need.keys})"
            findings.append(warn(NAME, need.title, f"cannot check: {why}; {wanted}"))
            continue
        quota, counted = found
        # Spot VMs without preemptible quota share the standard quota with on-demand ones.
        key = quota.name.rsplit(" ", 1)[-1]
        resolved.setdefault((key, need.location), (quota, []))[1].append(counted)
    for quota, shared in resolved.values():
        findings.append(judge(_merged(shared, quota), quota))
    return findings
