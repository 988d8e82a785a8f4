"""TPU VM slices through Cloud TPU queued resources (`ai-infra:tpuVms`), for workflows that run
on TPU VMs directly, such as MaxText's `multihost_runner.py`. Each entry is one queued resource
holding `nodeCount` identical slices, with its own least-privilege service account. GKE slices
are `tpuSlices`; queued resource start and end times are not offered yet.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Literal

import pulumi
import pulumi_gcp as gcp
from pydantic import AfterValidator, Field, SkipValidation

from components import tpu_catalog
from components.base import (
    Component,
    ConfigModel,
    DnsLabel,
    IamRole,
    Problem,
    WiringModel,
    duplicate_names,
    matching,
    service_account_email,
)
from components.buckets import ACCESS_ROLES, Bucket, BucketAccess, grant_bucket_access
from components.buckets import unknown_buckets as unknown_bucket_problems
from components.locations import zone_problem
from components.tpu_vm_provider import QueuedResource, node_names
from components.workload_identity import account_id_problems, duplicate_roles, role_key

NODE_ROLES: tuple[str, ...] = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
"""What a TPU VM's own account needs: write its logs and metrics. Storage and other access
come only from an entry's `buckets` and `roles`."""
MAX_NODE_COUNT = 64
"""A guard against a typo ordering a fleet, not an API limit; raise it deliberately."""
STARTUP_SCRIPT_KEY = "startup-script"
"""The metadata key TPU VMs run at boot, as Compute Engine VMs do."""
LABELS_MAX = 64
"""Labels a Google Cloud resource takes (resource-manager/docs/labels-overview)."""
METADATA_BYTES_MAX = 512 * 1024
"""Compute Engine's limit on all metadata of one VM (compute/docs/metadata/overview)."""
DEFAULT_TIMEOUT_MINUTES = 60

Capacity = Literal["on-demand", "reserved", "spot", "best-effort", "flex-start"]
_DEFAULT_COMPUTE_SA = re.compile(r"[0-9]+-compute@developer\.gserviceaccount\.com")
_SERVICE_ACCOUNT = re.compile(
    r"[a-z][-a-z0-9]{4,28}[a-z0-9]@[a-z][-a-z0-9.:]*\.gserviceaccount\.com"
)
_RESERVATION = re.compile(
    r"(?P<name>[a-z]([-a-z0-9]{0,61}[a-z0-9])?)"
    r"|projects/(?P<project>[a-z][-a-z0-9]{4,28}[a-z0-9])/reservations/(?P<shared>[a-z]([-a-z0-9]{0,61}[a-z0-9])?)"
)
_DISK = re.compile(
    r"projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/zones/(?P<zone>[a-z]+-[a-z]+[0-9]+-[a-z])"
    r"/disks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)
_METADATA_KEY = re.compile(r"[a-zA-Z0-9_-]{1,128}")
_LABEL_KEY = re.compile(r"[a-z][-_a-z0-9]{0,62}")
_LABEL_VALUE = re.compile(r"[-_a-z0-9]{0,63}")
_NETWORK_TAG = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_COMPUTE = r"(https://www\.googleapis\.com/compute/v1/)?projects/[a-z][-a-z0-9.:]{4,61}[a-z0-9]/"
_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
_NETWORK = re.compile(_COMPUTE + r"global/networks/" + _NAME)
_SUBNETWORK = re.compile(_COMPUTE + r"regions/(?P<region>[a-z]+-[a-z]+[0-9]+)/subnetworks/" + _NAME)


def _service_account(value: str) -> str:
    if _DEFAULT_COMPUTE_SA.fullmatch(value):
        raise ValueError(
            f"'{value}' is the default compute service account, which is granted the project "
            "Editor role by default; leave serviceAccount unset for a dedicated least-privilege "
            "account"
        )
    if not _SERVICE_ACCOUNT.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a service account email such as "
            "trainer@my-project.iam.gserviceaccount.com"
        )
    return value


class DataDisk(ConfigModel):
    """A disk attached to every TPU VM of the entry."""

    source_disk: Annotated[
        str, matching(_DISK, "is not a disk path such as projects/P/zones/Z/disks/D")
    ]
    """An existing Persistent Disk or Hyperdisk, `projects/P/zones/ZONE/disks/NAME`, in the
    entry's zone."""
    mode: Literal["READ_WRITE", "READ_ONLY"] = "READ_ONLY"
    """`READ_WRITE` only where one VM holds the disk: a single-host slice, `nodeCount: 1`."""


class TpuVmNetworkConfig(ConfigModel):
    """A network other than the stack's; the stack's NAT does not serve it."""

    network: Annotated[
        str, matching(_NETWORK, "is not a network path projects/P/global/networks/N")
    ]
    """`projects/P/global/networks/N` (or its full self link)."""
    subnetwork: Annotated[
        str, matching(_SUBNETWORK, "is not a subnetwork path projects/P/regions/R/subnetworks/S")
    ]
    """`projects/P/regions/R/subnetworks/S` (or its full self link), in the entry's region."""


def _labels(labels: dict[str, str]) -> dict[str, str]:
    bad = [
        k for k, v in labels.items() if not _LABEL_KEY.fullmatch(k) or not _LABEL_VALUE.fullmatch(v)
    ]
    if bad:
        raise ValueError(
            f"labels {', '.join(sorted(bad))} are not GCP labels: keys and values use lowercase "
            "letters, digits, '-' and '_' (keys start with a letter, at most 63 characters)"
        )
    return labels


def _metadata(metadata: dict[str, str]) -> dict[str, str]:
    bad = sorted(k for k in metadata if not _METADATA_KEY.fullmatch(k))
    if bad:
        raise ValueError(
            f"metadata keys {', '.join(repr(k) for k in bad)} are not valid: use letters, "
            "digits, '-' and '_' (at most 128 characters)"
        )
    return metadata


class TpuVmConfig(ConfigModel):
    """One entry of `ai-infra:tpuVms`: a queued resource of `nodeCount` identical slices."""

    name: DnsLabel
    """The queued resource id; also names its service account `<prefix>-<name>`."""
    accelerator: str
    """Cloud TPU accelerator type of each slice, e.g. `v4-8`, `v5litepod-16`, `v5p-32`,
    `v6e-8`, `v2-8`, `v3-32`. tpu7x has no TPU VMs (use `tpuSlices`)."""
    runtime_version: str | None = None
    """TPU software version; defaults to the family's documented one: `tpu-ubuntu2204-base`
    for v2, v3 and v4, `v2-alpha-tpuv5-lite` for v5e, `v2-alpha-tpuv5` for v5p and
    `v2-alpha-tpuv6e` for v6e. Must suit the family: v2 to v4 take `tpu-ubuntu2204-base` and
    `tpu-vm-*`, v5 and later their `v2-alpha-*` version or `tpu-vm-tf-*-pjrt`."""
    node_count: int = Field(default=1, ge=1, le=MAX_NODE_COUNT)
    """Slices (TPU VMs, each of one or more hosts) in the queued resource; more than one makes a
    multislice request, for v4 and later."""
    node_prefix: DnsLabel | None = None
    """TPU VM names: `<nodePrefix>` for one slice, `<nodePrefix>-0` ... for several; the value
    to pass MaxText as `--TPU_PREFIX`. Defaults to `name`."""
    provisioning: Capacity = "on-demand"
    """`on-demand`, `reserved` (a reservation: any matching one, or `reservation`), `spot`, or
    `best-effort` (preemptible, the v2alpha1 API's BestEffort tier). `flex-start` is refused:
    google-cloud-tpu has no provisioning model or run duration for queued resources."""
    reservation: str | None = None
    """With `provisioning: reserved`: a reservation name in the project, or
    `projects/P/reservations/R` for one shared from project P. Must be in the entry's zone."""
    zone: str | None = None
    """Defaults to `gcp:zone`; must be in `gcp:region` and a zone Cloud TPU documents for the
    family."""
    allow_unlisted_zone: bool = False
    """Accept a zone the catalog does not list for the family (one Google added since)."""
    network: TpuVmNetworkConfig | None = None
    """Defaults to the stack's VPC and subnet, whose Cloud NAT gives the VMs egress without
    public IPs."""
    service_account: Annotated[str, AfterValidator(_service_account)] | None = None
    """Email of an existing account for the TPU VMs. Unset: a dedicated account
    `<prefix>-<name>` with only log and metric writing, plus `roles` and `buckets`. The default
    compute service account is refused."""
    roles: list[IamRole] = Field(default_factory=list)
    """Extra project roles for the dedicated account; basic roles are refused."""
    buckets: dict[str, BucketAccess] = Field(default_factory=dict)
    """`ai-infra:buckets` names -> read | write | admin, for the dedicated account."""
    enable_public_ips: bool = False
    """Give each TPU VM an external IP. Off: reach the VMs from inside the VPC (`--internal-ip`)
    and let them egress through the stack's NAT."""
    secure_boot: bool = False
    """Shielded VM Secure Boot. Off by default because the Cloud TPU docs do not say which
    families and software versions boot with it; turn on where yours do."""
    metadata: Annotated[dict[str, str], AfterValidator(_metadata)] = Field(default_factory=dict)
    """Metadata on every TPU VM; at most 512 KiB with `startupScript`."""
    startup_script: str | None = None
    """Shell run as root at every boot of every TPU VM (metadata `startup-script`)."""
    labels: Annotated[dict[str, str], AfterValidator(_labels)] = Field(default_factory=dict)
    """Labels on the TPU VMs, beside `ai-infra:labels`, `managed-by` and `ai-infra-stack`."""
    tags: list[Annotated[str, matching(_NETWORK_TAG, "is not a network tag (a DNS label)")]] = (
        Field(default_factory=list)
    )
    """Network tags, for firewall rules that target them."""
    data_disks: list[DataDisk] = Field(default_factory=list)
    """Existing disks to attach to every TPU VM."""
    timeout_minutes: int = Field(default=DEFAULT_TIMEOUT_MINUTES, ge=1, le=24 * 60)
    """How long `pulumi up` waits for ACTIVE. A request not ACTIVE by then, FAILED or
    SUSPENDED is deleted and the update fails, so nothing runs outside the stack's state."""

    @property
    def shape(self) -> tpu_catalog.TpuShape:
        return tpu_catalog.resolve(self.accelerator)

    @property
    def prefix(self) -> str:
        return self.node_prefix or self.name

    @property
    def runtime(self) -> str:
        return self.runtime_version or self.shape.family.tpu_vm_runtimes[0]

    @property
    def node_names(self) -> list[str]:
        return node_names(self.prefix, self.node_count)

    @property
    def chips(self) -> int:
        return self.shape.chips * self.node_count


def _accelerator_problems(config: TpuVmConfig) -> list[Problem]:
    try:
        shape = config.shape
    except tpu_catalog.CatalogError as error:
        return [Problem(("accelerator",), str(error))]
    family = shape.family
    if not family.tpu_vm_runtimes:
        return [
            Problem(
                ("accelerator",),
                f"the Cloud TPU API creates no {family.prefix} TPU VMs "
                "(tpu/docs/configure-networking-access); use ai-infra:tpuSlices",
            )
        ]
    found = []
    if config.runtime_version is not None:
        why = tpu_catalog.runtime_problem(family, config.runtime_version)
        if why:
            found.append(Problem(("runtimeVersion",), why))
    if config.node_count > 1 and family.prefix in ("v2", "v3"):
        # tpu/docs/multislice-introduction: slices of a multislice are v4 or later.
        found.append(
            Problem(
                ("nodeCount",),
                f"multislice needs TPU v4 or later, not {family.prefix}; set nodeCount: 1 or "
                "use a larger slice",
            )
        )
    return found


def _names(config: TpuVmConfig) -> list[Problem]:
    longest = config.node_names[-1]
    if len(longest) <= 63:
        return []
    return [
        Problem(
            ("nodePrefix" if config.node_prefix else "name",),
            f"TPU VM name '{longest}' is longer than 63 characters; shorten it",
        )
    ]


def _capacity_problems(config: TpuVmConfig) -> list[Problem]:
    if config.provisioning == "flex-start":
        return [
            Problem(
                ("provisioning",),
                "flex-start TPU VMs need a provisioning model and run duration that "
                "google-cloud-tpu's queued resource API (v2alpha1) does not have; use "
                "on-demand, reserved, spot or best-effort, or a flex-start ai-infra:tpuSlices",
            )
        ]
    if config.reservation is None:
        return []
    if config.provisioning != "reserved":
        return [
            Problem(
                ("reservation",),
                f"only used with provisioning 'reserved', not '{config.provisioning}'; remove "
                "it or set provisioning: reserved",
            )
        ]
    if _RESERVATION.fullmatch(config.reservation) is None:
        return [
            Problem(
                ("reservation",),
                f"'{config.reservation}' is not a reservation name or projects/P/reservations/R",
            )
        ]
    return []


def reservation_name(reservation: str, project: str, zone: str) -> str | None:
    """The API's `projects/P/locations/ZONE/reservations/R` for a name or shared path."""
    match = _RESERVATION.fullmatch(reservation)
    if match is None:
        return None
    if match["name"]:
        return f"projects/{project}/locations/{zone}/reservations/{match['name']}"
    return f"projects/{match['project']}/locations/{zone}/reservations/{match['shared']}"


def _disk_and_metadata_problems(config: TpuVmConfig, zone: str) -> list[Problem]:
    found = []
    for d, disk in enumerate(config.data_disks):
        match = _DISK.fullmatch(disk.source_disk)
        if match and match["zone"] != zone:
            found.append(
                Problem(
                    ("dataDisks", d, "sourceDisk"),
                    f"the disk is in {match['zone']}, the TPU VMs in {zone}; a disk attaches "
                    "only in its own zone",
                )
            )
        if disk.mode == "READ_WRITE" and (config.node_count > 1 or config.shape.multi_host):
            found.append(
                Problem(
                    ("dataDisks", d, "mode"),
                    "a READ_WRITE disk attaches to one VM only, and this entry has "
                    f"{config.node_count * config.shape.hosts}; use READ_ONLY",
                )
            )
    if config.startup_script is not None and STARTUP_SCRIPT_KEY in config.metadata:
        found.append(
            Problem(
                ("metadata", STARTUP_SCRIPT_KEY),
                "set the startup script in startupScript or in metadata, not both",
            )
        )
    size = sum(len(k) + len(v.encode()) for k, v in node_metadata(config).items())
    if size > METADATA_BYTES_MAX:
        found.append(
            Problem(
                ("metadata",),
                f"metadata and startupScript take {size} bytes, over Compute Engine's "
                f"{METADATA_BYTES_MAX // 1024} KiB; fetch large scripts from a bucket instead",
            )
        )
    return found


def node_metadata(config: TpuVmConfig) -> dict[str, str]:
    if config.startup_script is None:
        return dict(config.metadata)
    return {**config.metadata, STARTUP_SCRIPT_KEY: config.startup_script}


def _overlapping_prefixes(entries: list[TpuVmConfig]) -> list[Problem]:
    """MaxText's multihost_runner takes the VM named `--TPU_PREFIX`, or else every VM matching
    `<prefix>-[0-9]+`: no entry's VMs may answer another entry's prefix."""
    found = []
    for i, entry in enumerate(entries):
        pattern = re.compile(re.escape(entry.prefix) + r"(-[0-9]+)?")
        for j, other in enumerate(entries):
            if i == j:
                continue
            clash = [n for n in other.node_names if pattern.fullmatch(n)]
            if clash:
                found.append(
                    Problem(
                        (i, "nodePrefix" if entry.node_prefix else "name"),
                        f"TPU VM {clash[0]} of tpuVms[{j}] would also answer "
                        f"--TPU_PREFIX={entry.prefix}; give the entries distinct prefixes",
                    )
                )
                break
    return found


def problems(
    entries: list[TpuVmConfig],
    *,
    region: str,
    prefix: str,
    default_zone: str,
    buckets: Iterable[str],
    stack_labels: Mapping[str, str],
) -> list[Problem]:
    """Checks of `ai-infra:tpuVms` that need the stack: zones, buckets, names. The stack root
    checks that each entry's service account id has no other owner."""
    found = duplicate_names([e.name for e in entries], "tpuVms")
    known_buckets = list(buckets)
    for i, entry in enumerate(entries):
        zone = entry.zone or default_zone
        own: list[Problem] = []
        if entry.zone is not None and (problem := zone_problem(entry.zone, region)):
            own.append(Problem(("zone",), problem))
        subnet = _SUBNETWORK.fullmatch(entry.network.subnetwork) if entry.network else None
        if subnet and subnet["region"] != region:
            own.append(
                Problem(
                    ("network", "subnetwork"),
                    f"the subnetwork is in {subnet['region']}, the TPU VMs in {region}; use a "
                    "subnetwork of the entry's region",
                )
            )
        accelerator = _accelerator_problems(entry)
        own += accelerator
        zone_ok = not any(p.path == ("zone",) for p in own)
        if not accelerator and zone_ok and not entry.allow_unlisted_zone:
            family = tpu_catalog.resolve(entry.accelerator).family
            if problem := tpu_catalog.zone_problem(family, zone):
                inherited = "" if entry.zone else f"the entry inherits gcp:zone {zone}: "
                own.append(Problem(("zone",), inherited + problem))
        own += _capacity_problems(entry)
        if not accelerator:
            own += _names(entry)
            own += _disk_and_metadata_problems(entry, zone)
        if entry.service_account is None:
            account_id = f"{prefix}-{entry.name}"
            own += account_id_problems(account_id)
        elif entry.roles or entry.buckets:
            own.append(
                Problem(
                    ("roles" if entry.roles else "buckets",),
                    "grants go to the dedicated account only; grant them to "
                    f"{entry.service_account} yourself, or unset serviceAccount",
                )
            )
        labels = {**stack_labels, **entry.labels}
        if len(labels) > LABELS_MAX:
            own.append(
                Problem(
                    ("labels",),
                    f"with the stack's labels the TPU VMs would carry {len(labels)} labels, "
                    f"over the {LABELS_MAX} a resource takes; drop some",
                )
            )
        # The account already holds NODE_ROLES; listing one again would grant it twice
        # under one resource name.
        shift = len(NODE_ROLES)
        own += [
            Problem(("roles", p.path[1] - shift), p.message)
            for p in duplicate_roles([*NODE_ROLES, *entry.roles])
            if isinstance(p.path[1], int)
        ]
        own += unknown_bucket_problems(entry.buckets, known_buckets)
        found += [p.under(i) for p in own]
    if not found:
        found += _overlapping_prefixes(entries)
    return found


def subnet_problems(
    entries: list[TpuVmConfig], *, subnet_cidr: str, gke_nodes: int
) -> list[Problem]:
    """TPU VMs in the stack's subnet take one address per host beside the GKE nodes'."""
    hosts = sum(e.shape.hosts * e.node_count for e in entries if e.network is None)
    # Google Cloud reserves four addresses of every subnet's primary range (vpc/docs/subnets).
    usable = ipaddress.IPv4Network(subnet_cidr).num_addresses - 4
    if hosts == 0 or hosts + gke_nodes <= usable:
        return []
    return [
        Problem(
            ("subnetCidr",),
            f"{subnet_cidr} has {usable} usable addresses, but the GKE nodes can reach "
            f"{gke_nodes} and the TPU VMs have {hosts} hosts; widen subnetCidr or give large "
            "tpuVms entries their own network",
        )
    ]


class TpuVmsArgs(WiringModel):
    project: str
    prefix: str
    zone: str
    """The entry's zone, resolved from the entry or `gcp:zone`."""
    protect: bool
    """Any change replaces a queued resource, killing what runs on it: in protected stacks
    Pulumi refuses that, and `pulumi destroy`, until protection is lifted."""
    labels: dict[str, str]
    """The stack's resource labels."""
    network: SkipValidation[pulumi.Output[str]] | str
    subnetwork: SkipValidation[pulumi.Output[str]] | str
    buckets: dict[str, SkipValidation[Bucket]] = Field(default_factory=dict)
    network_ready: list[SkipValidation[pulumi.Resource]] = Field(default_factory=list)
    """What the VMs need before they boot: their subnet, and the NAT they egress through."""
    config: TpuVmConfig


class TpuVms(Component):
    """One queued resource, its dedicated service account and that account's grants."""

    queued_resource: QueuedResource
    service_account_email: str
    node_names: list[str]
    ssh_commands: dict[str, str]
    """TPU VM name -> the gcloud command that opens a shell on its worker 0."""

    def __init__(self, name: str, args: TpuVmsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:tpu_vms:TpuVms", name, opts)
        config = args.config
        shape = config.shape
        waits_for: list[pulumi.Resource] = []
        if config.service_account is None:
            account_id = f"{args.prefix}-{config.name}"
            account = gcp.serviceaccount.Account(
                f"{name}-sa",
                project=args.project,
                account_id=account_id,
                display_name=f"TPU VMs {config.name}",
                opts=self.child_opts(),
            )
            self.service_account_email = service_account_email(account_id, args.project)
            member = f"serviceAccount:{self.service_account_email}"
            after_account = self.child_opts(depends_on=[account])
            grants: list[pulumi.Resource] = [
                gcp.projects.IAMMember(
                    f"{name}-{role_key(role)}",
                    project=args.project,
                    role=role,
                    member=member,
                    opts=after_account,
                )
                for role in (*NODE_ROLES, *config.roles)
            ]
            grants += [
                grant_bucket_access(
                    f"{name}-bucket-{bucket}",
                    args.buckets[bucket],
                    role=ACCESS_ROLES[access],
                    member=member,
                    opts=after_account,
                )
                for bucket, access in config.buckets.items()
            ]
            # The VMs log from their first boot, and startup scripts may read buckets at once.
            waits_for = [account, *grants]
        else:
            self.service_account_email = config.service_account

        props = {
            "project": args.project,
            "zone": args.zone,
            "queuedResourceId": config.name,
            "acceleratorType": shape.accelerator,
            "runtimeVersion": config.runtime,
            "nodeCount": config.node_count,
            "nodePrefix": config.prefix,
            "capacity": config.provisioning,
            "reservationName": (
                reservation_name(config.reservation, args.project, args.zone)
                if config.reservation
                else ""
            ),
            "serviceAccount": self.service_account_email,
            "network": args.network,
            "subnetwork": args.subnetwork,
            "enableExternalIps": config.enable_public_ips,
            "secureBoot": config.secure_boot,
            "metadata": node_metadata(config),
            "labels": {**args.labels, **config.labels},
            "tags": list(config.tags),
            "dataDisks": [{"sourceDisk": d.source_disk, "mode": d.mode} for d in config.data_disks],
            "timeoutSeconds": config.timeout_minutes * 60,
        }
        self.queued_resource = QueuedResource(
            f"{name}-qr",
            props,
            self.child_opts(
                depends_on=[*waits_for, *args.network_ready],
                delete_before_replace=True,
                protect=args.protect,
            ),
        )
        self.node_names = config.node_names
        internal = "" if config.enable_public_ips else " --internal-ip"
        self.ssh_commands = {
            node: (
                f"gcloud compute tpus tpu-vm ssh {node} --zone={args.zone} "
                f"--project={args.project} --worker=0{internal}"
            )
            for node in self.node_names
        }
        self.register_outputs(
            {
                "accelerator": shape.accelerator,
                "chips": config.chips,
                "nodeNames": self.node_names,
                "sshCommands": self.ssh_commands,
            }
        )
