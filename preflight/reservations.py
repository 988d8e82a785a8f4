"""Reservations the stack names exist where its VMs are, hold their machine type (or TPU family)
and enough free capacity, and are shared with the stack's project when another project owns
them. GKE pools consume Compute Engine reservations; TPU VMs and Slurm nodesets with
`reserved` capacity consume Cloud TPU API reservations (v2alpha1 `list_reservations`; the API
has no get).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.cloud import compute_v1, tpu_v2alpha1

from components.types import reservation_parts
from graph.capacity import Machines
from preflight.live import CannotCheck, Live
from preflight.needs import Needs, tpu_reservation_parts, tpu_slices
from preflight.report import Finding, fail, ok, warn

NAME = "reservations"
MEANING = (
    "each reservation the stack names is in the right zone and project, READY, holds the "
    "machine type or TPU family with enough free capacity, and is shared with this project"
)


@dataclass
class ReservationNeed:
    """What the plan's VMs take of one Compute Engine reservation."""

    owner: str
    name: str
    zone: str
    machine_type: str
    chips_per_vm: int
    count: int = 0
    sources: list[str] = field(default_factory=list)

    @property
    def subject(self) -> str:
        where = self.zone or "(no zone)"
        return f"reservation {self.owner}/{where}/{self.name}"


def reservation_needs(needs: Needs) -> list[ReservationNeed]:
    found: dict[tuple[str, str, str, str], ReservationNeed] = {}
    for vm in needs.vms:
        if vm.capacity != "reservation" or vm.reservation is None:
            continue
        owner, name = reservation_parts(vm.reservation, needs.project)
        zone = vm.zones[0] if len(vm.zones) == 1 else ""
        key = (owner, name, zone, vm.machine_type)
        chips = vm.tpu.chips if vm.tpu else 0
        need = found.setdefault(key, ReservationNeed(owner, name, zone, vm.machine_type, chips))
        need.count += vm.full
        need.sources.append(vm.source)
    return list(found.values())


def _vm_family(machine_type: str) -> str:
    """`ct5p-hightpu-4t` -> the aggregate reservation family suffix `CT5P`
    (`AllocationAggregateReservation.VmFamily`: VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P)."""
    return machine_type.split("-", 1)[0].upper()


def _shared(reservation: compute_v1.Reservation, project: str) -> bool:
    settings = reservation.share_settings
    if settings.share_type == "ORGANIZATION":
        return True
    projects = set(settings.project_map) | {c.project_id for c in settings.project_map.values()}
    return settings.share_type == "SPECIFIC_PROJECTS" and project in projects


def judge(
    need: ReservationNeed,
    reservation: compute_v1.Reservation | None,
    zones_with_it: list[str],
    project: str,
) -> Finding:
    subject = need.subject
    wanted = f"{need.count} x {need.machine_type} for {', '.join(need.sources)}"
    if reservation is None:
        if zones_with_it:
            return fail(
                NAME,
                subject,
                f"not in {need.zone or 'its zone'}; {need.owner} has it in "
                f"{', '.join(zones_with_it)}",
                f"set the entry's zone to {zones_with_it[0]}, or reserve in {need.zone}",
            )
        return fail(
            NAME,
            subject,
            f"{need.owner} has no reservation {need.name}",
            "create it, or fix the entry's reservation name",
        )
    if reservation.status not in ("READY", ""):
        status = warn if reservation.status in ("CREATING", "UPDATING") else fail
        return status(NAME, subject, f"status {reservation.status}", "wait until it is READY")
    if need.owner != project and not _shared(reservation, project):
        return fail(
            NAME,
            subject,
            f"owned by {need.owner} and not shared with {project} "
            f"(share type {reservation.share_settings.share_type or 'LOCAL'})",
            f"gcloud compute reservations update {need.name} --project={need.owner} "
            f"--zone={need.zone} --add-share-with={project}",
        )
    specific = reservation.specific_reservation
    if specific.instance_properties.machine_type:
        held = specific.instance_properties.machine_type.rsplit("/", 1)[-1]
        if held != need.machine_type:
            return fail(
                NAME,
                subject,
                f"holds {held}, the plan needs {wanted}",
                "point the entry at a reservation of its machine type",
            )
        free = specific.count - specific.in_use_count
        figure = f"{specific.count} x {held}, {specific.in_use_count} in use; need {need.count}"
        return _by_count(subject, figure, need.count, free, specific.count)
    aggregate = reservation.aggregate_reservation
    if aggregate.vm_family and need.chips_per_vm:
        family = _vm_family(need.machine_type)
        if not aggregate.vm_family.endswith(f"_{family}"):
            return fail(
                NAME,
                subject,
                f"reserves {aggregate.vm_family}, the plan needs {family} ({wanted})",
                "point the entry at a reservation of its TPU family",
            )
        total = sum(r.accelerator.accelerator_count for r in aggregate.reserved_resources)
        used = sum(r.accelerator.accelerator_count for r in aggregate.in_use_resources)
        chips = need.count * need.chips_per_vm
        figure = f"{total} {family} chips, {used} in use; need {chips}"
        return _by_count(subject, figure, chips, total - used, total)
    return warn(
        NAME,
        subject,
        "neither a specific nor a TPU aggregate reservation; preflight cannot read its shape",
    )


def _by_count(subject: str, figure: str, need: int, free: int, total: int) -> Finding:
    if need <= free:
        return ok(NAME, subject, figure)
    if need <= total:
        return warn(NAME, subject, figure, "other VMs hold part of it; free them first")
    return fail(NAME, subject, figure, f"grow the reservation by {need - total}")


def judge_tpu(nodes: Machines, reservations: list[tpu_v2alpha1.Reservation]) -> Finding:
    """A Cloud TPU API reservation for TPU VMs or a Slurm nodeset."""
    parts = tpu_reservation_parts(nodes)
    where = f"Cloud TPU reservation in {nodes.zone}"
    if parts is not None:
        where = f"Cloud TPU reservation {parts[0]}/{nodes.zone}/{parts[1]}"
        reservations = [r for r in reservations if r.name.rsplit("/", 1)[-1] == parts[1]]
        if not reservations:
            return fail(
                NAME,
                where,
                f"not found (for {nodes.source})",
                "fix the entry's reservation, or its zone",
            )
    if not reservations:
        return fail(
            NAME,
            where,
            f"the project has none in {nodes.zone} (for {nodes.source}, capacity reserved)",
            "use on-demand or spot capacity, or get a reservation in this zone",
        )
    active = [r for r in reservations if r.state == tpu_v2alpha1.Reservation.State.ACTIVE]
    if not active:
        states = ", ".join(
            sorted({tpu_v2alpha1.Reservation.State(r.state).name for r in reservations})
        )
        return warn(NAME, where, f"none ACTIVE ({states})", "wait until it is ACTIVE")
    best = max(active, key=lambda r: r.standard.size - r.standard.usage.total)
    unit = tpu_v2alpha1.Reservation.Standard.CapacityUnits(best.standard.capacity_units)
    slices = tpu_slices(nodes)
    per_slice = slices.cores
    if unit == tpu_v2alpha1.Reservation.Standard.CapacityUnits.CHIPS:
        per_slice = slices.hosts * nodes.chips_per_node
    need = slices.count * per_slice
    free = best.standard.size - best.standard.usage.total
    units = unit.name.lower() if unit.name != "CAPACITY_UNITS_UNSPECIFIED" else "units"
    figure = f"{best.standard.size} {units}, {best.standard.usage.total} in use; need {need}"
    return _by_count(where, figure, need, free, best.standard.size)


def check(needs: Needs, live: Live) -> list[Finding]:
    findings = []
    for need in reservation_needs(needs):
        try:
            reservation = live.reservation(need.owner, need.zone, need.name) if need.zone else None
            zones = [] if reservation else live.reservation_zones(need.owner, need.name)
        except CannotCheck as error:
            findings.append(warn(NAME, need.subject, str(error)))
            continue
        findings.append(judge(need, reservation, zones, needs.project))
    for nodes in needs.tpu_nodes:
        if nodes.capacity != "reservation":
            continue
        parts = tpu_reservation_parts(nodes)
        owner = parts[0] if parts else needs.project
        try:
            listed = live.tpu_reservations(owner, nodes.zone)
        except CannotCheck as error:
            findings.append(warn(NAME, f"Cloud TPU reservations in {nodes.zone}", str(error)))
            continue
        findings.append(judge_tpu(nodes, listed))
    return findings
