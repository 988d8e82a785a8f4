"""The zones offer what the plan places in them: the machine types of GKE pools (TPU and GPU
hosts included), instance groups and VMs, with their GPU accelerator types (Compute Engine
`machineTypes.get`, `acceleratorTypes.get`); the Cloud TPU API's accelerator types and runtime
versions for TPU VMs and Slurm nodesets; and the images and image families the VMs boot.
This is the live form of the static zone tables the offline checks hold for TPUs; for GPUs it
is the only one.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from google.cloud import compute_v1

from graph.capacity import Machines
from preflight.live import CannotCheck, Live
from preflight.needs import Needs, tpu_slices
from preflight.report import Finding, fail, ok, warn

NAME = "zones"
MEANING = (
    "each zone offers the machine types, GPUs, Cloud TPU accelerator types and runtime "
    "versions placed in it, and the images the VMs boot exist and are not deprecated"
)
_IMAGE = re.compile(
    r"(?:https://www\.googleapis\.com/compute/v1/)?projects/(?P<project>[^/]+)/global/images/"
    r"(?:family/(?P<family>[^/]+)|(?P<image>[^/]+))"
)
SHOWN = 6


def _short(zones: list[str]) -> str:
    more = f" and {len(zones) - SHOWN} more" if len(zones) > SHOWN else ""
    return ", ".join(zones[:SHOWN]) + more


def _guarded(subject: str, judge: Callable[[], Finding]) -> Finding:
    """`judge()`, or a warning when a read it needs fails."""
    try:
        return judge()
    except CannotCheck as error:
        return warn(NAME, subject, str(error))


def _zones_of(live: Live, region: str) -> list[str]:
    return sorted(z.rsplit("/", 1)[-1] for z in live.region(region).zones)


def _offered(
    what: str,
    zones: list[str],
    sources: list[str],
    lookup: Callable[[str], object | None],
    elsewhere: Callable[[], list[str]],
    regional: bool,
) -> Finding:
    """Whether `lookup` finds `what` in each zone; for a pool GKE spreads over a region's
    zones (`regional`), some is a warning and none a failure."""
    missing = [z for z in zones if lookup(z) is None]
    where = ", ".join(zones) if not regional else f"the zones of {zones[0].rsplit('-', 1)[0]}"
    subject = f"{what} in {where}"
    users = f"for {', '.join(sources)}"
    if not missing:
        return ok(NAME, subject, f"offered ({users})")
    if regional and len(missing) < len(zones):
        return warn(
            NAME,
            subject,
            f"not offered in {', '.join(missing)} ({users})",
            "set the entry's zone to one that offers it",
        )
    others = elsewhere()
    fix = f"pick a zone that offers it: {_short(others)}" if others else "no zone offers it"
    return fail(NAME, subject, f"not offered in {', '.join(missing)} ({users})", fix)


def _machine_findings(needs: Needs, live: Live) -> list[Finding]:
    placed: dict[tuple[str, tuple[str, ...], bool], list[str]] = {}
    findings = []
    for vm in needs.vms:
        regional = not vm.zones
        try:
            zones = tuple(vm.zones) if vm.zones else tuple(_zones_of(live, vm.region))
        except CannotCheck as error:
            findings.append(warn(NAME, f"{vm.machine_type} in {vm.region}", str(error)))
            continue
        placed.setdefault((vm.machine_type, zones, regional), []).append(vm.source)
        for accelerator, per_vm in vm.gpus:
            key = (f"gpu:{accelerator}:{per_vm}", zones, regional)
            placed.setdefault(key, []).append(vm.source)
    for (what, zones, regional), sources in placed.items():
        if what.startswith("gpu:"):
            _, accelerator, per_vm = what.split(":")
            findings.append(
                _guarded(
                    f"GPU {accelerator} in {', '.join(zones)}",
                    lambda a=accelerator, n=int(per_vm), z=list(zones), s=sources: _gpu_finding(
                        live, a, n, z, s
                    ),
                )
            )
            continue
        findings.append(
            _guarded(
                f"machine type {what} in {', '.join(zones)}",
                lambda what=what, zones=zones, sources=sources, regional=regional: _offered(
                    f"machine type {what}",
                    list(zones),
                    sources,
                    lambda zone: live.machine_type(zone, what),
                    lambda: live.machine_type_zones(what),
                    regional,
                ),
            )
        )
    return findings


def _gpu_finding(
    live: Live, accelerator: str, per_vm: int, zones: list[str], sources: list[str]
) -> Finding:
    found: dict[str, compute_v1.AcceleratorType | None] = {
        z: live.accelerator_type(z, accelerator) for z in zones
    }
    short = [
        z
        for z, a in found.items()
        if a is not None and a.maximum_cards_per_instance and a.maximum_cards_per_instance < per_vm
    ]
    subject = f"GPU {accelerator} in {', '.join(zones)}"
    if short:
        most = min(found[z].maximum_cards_per_instance for z in short)  # type: ignore[union-attr]
        return fail(
            NAME,
            subject,
            f"at most {most} per VM in {', '.join(short)}, the plan attaches {per_vm}",
            "attach fewer, or pick the machine type that carries that many",
        )
    return _offered(
        f"GPU {accelerator}",
        zones,
        sources,
        lambda zone: found[zone],
        lambda: [],
        False,
    )


def _tpu_finding(nodes: Machines, live: Live) -> Finding:
    accelerator, runtime = tpu_slices(nodes).accelerator, tpu_slices(nodes).runtime
    subject = f"Cloud TPU {accelerator} in {nodes.zone}"
    if live.tpu_accelerator_type(nodes.zone, accelerator) is None:
        return fail(
            NAME,
            subject,
            f"the Cloud TPU API offers no {accelerator} there ({nodes.source})",
            "pick a zone that offers it (gcloud compute tpus accelerator-types list --zone=Z)",
        )
    versions = live.tpu_runtime_versions(nodes.zone)
    if runtime in versions:
        return ok(NAME, subject, f"offered, with runtime {runtime} ({nodes.source})")
    family = [v for v in versions if v.split("-")[:2] == runtime.split("-")[:2]]
    return fail(
        NAME,
        f"Cloud TPU runtime {runtime} in {nodes.zone}",
        f"not offered ({nodes.source})",
        f"use one it offers: {_short(family or versions)}",
    )


def _tpu_findings(needs: Needs, live: Live) -> list[Finding]:
    return [
        _guarded(
            f"Cloud TPU {tpu_slices(n).accelerator} in {n.zone}",
            lambda n=n: _tpu_finding(n, live),
        )
        for n in needs.tpu_nodes
    ]


def _image(live: Live, reference: str) -> compute_v1.Image | str | None:
    match = _IMAGE.fullmatch(reference)
    if match is None:
        return "not a projects/P/global/images path preflight can read"
    if match["family"]:
        return live.image_from_family(match["project"], match["family"])
    return live.image(match["project"], match["image"])


def _image_finding(reference: str, sources: list[str], live: Live) -> Finding:
    subject = f"image {reference}"
    image = _image(live, reference)
    if isinstance(image, str):
        return warn(NAME, subject, image)
    if image is None:
        return fail(NAME, subject, f"does not exist ({', '.join(sources)})", "fix the image")
    state = image.deprecated.state
    successor = image.deprecated.replacement
    if state in ("OBSOLETE", "DELETED"):
        return fail(
            NAME, subject, f"{image.name} is {state}", f"use {successor or 'a current image'}"
        )
    if state == "DEPRECATED":
        return warn(
            NAME,
            subject,
            f"{image.name} is deprecated",
            f"move to {successor or 'a current image'}",
        )
    if image.status not in ("READY", ""):
        return warn(NAME, subject, f"{image.name} is {image.status}")
    return ok(NAME, subject, f"{image.name}, READY")


def _image_findings(needs: Needs, live: Live) -> list[Finding]:
    users: dict[str, list[str]] = {}
    for vm in needs.vms:
        for image in vm.images:
            users.setdefault(image, []).append(vm.source)
    return [
        _guarded(f"image {ref}", lambda ref=ref, s=sources: _image_finding(ref, s, live))
        for ref, sources in users.items()
    ]


def check(needs: Needs, live: Live) -> list[Finding]:
    return [
        *_machine_findings(needs, live),
        *_tpu_findings(needs, live),
        *_image_findings(needs, live),
    ]
