"""What the user writes for `ai-infra:tpuVms`: one entry per Cloud TPU queued resource of
`nodeCount` identical slices, with its network, identity, metadata and capacity type.
"""

from __future__ import annotations

import datetime
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from catalog import tpu as tpu_catalog
from components.base import (
    MAX_ENTRIES,
    MAX_METADATA_ENTRIES,
    MAX_ROLES,
    ConfigModel,
    anchored,
    at_most,
    described,
    matching,
)
from components.buckets import BucketAccess
from components.logins import MAX_LOGINS, Login
from components.network import MAX_NODE_NETWORKS
from components.startup import ScriptText
from components.storage import StorageMount
from components.tpu_vms.request import V2, V2ALPHA1, node_names
from components.types import (
    GCE_NAME,
    PROJECT_ID,
    REGION,
    DiskPath,
    DnsLabel,
    IamRole,
    Labels,
    MetadataKey,
    NetworkTag,
    Reservation,
    ServiceAccountEmail,
    Zone,
)

MAX_TAGS = 63
"""A VM takes at most 64 network tags (Compute Engine, "Add network tags"), one of which is the
program's own."""
MAX_DATA_DISKS = 127
"""A VM attaches at most 128 disks, its boot disk among them (Compute Engine, "About
Persistent Disk": per-VM disk limits)."""
MAX_MOUNTS = 64
"""A guard, not an API limit, on `storage`: each mount is a step of the startup script, run
one after another; raise it deliberately."""
MAX_NODE_COUNT = 64
"""A guard against a typo ordering a fleet, not an API limit; raise it deliberately."""
DEFAULT_TIMEOUT_MINUTES = 60

Capacity = Literal["on-demand", "reserved", "spot", "best-effort", "flex-start"]
_COMPUTE = r"(https://www\.googleapis\.com/compute/v1/)?projects/[a-z][-a-z0-9.:]{4,61}[a-z0-9]/"
"""A project in a resource path; it may be domain-scoped (`example.com:proj`)."""
NETWORK_PATH = re.compile(_COMPUTE + rf"global/networks/{GCE_NAME}")
SUBNETWORK_PATH = re.compile(_COMPUTE + rf"regions/(?P<region>{REGION})/subnetworks/{GCE_NAME}")
KMS_KEY = re.compile(
    rf"projects/{PROJECT_ID}/locations/[a-z0-9-]{{1,63}}/keyRings/[A-Za-z0-9_-]{{1,63}}"
    r"/cryptoKeys/[A-Za-z0-9_-]{1,63}"
)
MAX_QUEUE_COUNT = 64
"""A guard, not an API limit: Cloud TPU documents no range for NetworkConfig.queue_count, and
the API refuses a count the VM cannot take."""

_DURATION = re.compile(
    r"(?=[0-9])(?:([0-9]{1,4})d)?(?:([0-9]{1,6})h)?(?:([0-9]{1,6})m)?(?:([0-9]{1,7})s)?"
)


@described("duration such as 90m, 2h or 1d12h", {"pattern": anchored(_DURATION)})
def _duration(value: str) -> str:
    if not _DURATION.fullmatch(value) or duration_seconds(value) == 0:
        raise ValueError(
            f"'{value}' is not a duration; write days, hours, minutes and seconds as gcloud "
            "does, e.g. 90m, 2h or 1d12h"
        )
    return value


def duration_seconds(value: str) -> int:
    """Seconds of a valid `Duration`."""
    match = _DURATION.fullmatch(value)
    if match is None:
        raise ValueError(f"'{value}' is not a duration")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


Duration = Annotated[str, AfterValidator(_duration)]
"""A length of time as gcloud writes one (`--valid-until-duration=6h`)."""

_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})"
)


@described("RFC 3339 time such as 2026-12-01T02:00:00Z", {"pattern": anchored(_TIMESTAMP)})
def _timestamp(value: str) -> str:
    try:
        datetime.datetime.fromisoformat(value)
    except ValueError:
        valid = False
    else:
        valid = bool(_TIMESTAMP.fullmatch(value))
    if not valid:
        raise ValueError(
            f"'{value}' is not an RFC 3339 time with a zone, such as 2026-12-01T02:00:00Z; "
            "quote it in YAML"
        )
    return value


Timestamp = Annotated[str, AfterValidator(_timestamp)]
"""An instant with its UTC offset, as the API's Timestamp takes it."""


class DataDisk(ConfigModel):
    """A disk attached to every TPU VM of the entry."""

    source_disk: DiskPath
    """An existing Persistent Disk or Hyperdisk, `projects/P/zones/ZONE/disks/NAME`, in the
    entry's zone."""
    mode: Literal["READ_WRITE", "READ_ONLY"] = "READ_ONLY"
    """`READ_WRITE` only where one VM holds the disk: a single-host slice, `nodeCount: 1`."""


class TpuVmNetworkConfig(ConfigModel):
    """A network other than the stack's; the stack's NAT does not serve it."""

    network: Annotated[
        str, matching(NETWORK_PATH, "is not a network path projects/P/global/networks/N")
    ]
    """`projects/P/global/networks/N` (or its full self link)."""
    subnetwork: Annotated[
        str,
        matching(SUBNETWORK_PATH, "is not a subnetwork path projects/P/regions/R/subnetworks/S"),
    ]
    """`projects/P/regions/R/subnetworks/S` (or its full self link), in the entry's region."""


class AdditionalNetwork(TpuVmNetworkConfig):
    """One more network interface on every TPU VM, in a VPC of its own."""

    queue_count: int | None = Field(default=None, ge=1, le=MAX_QUEUE_COUNT)
    """Networking queues of this interface (NetworkConfig.queue_count); unset, the API
    chooses."""


class Queueing(ConfigModel):
    """When the request may start (the API's QueueingPolicy; gcloud's `--valid-after-*` and
    `--valid-until-*`). Durations count from when `pulumi up` sends the request."""

    valid_after_duration: Duration | None = None
    """Do not start before this much time has passed, e.g. `2h`."""
    valid_after_time: Timestamp | None = None
    """Do not start before this time, e.g. `"2026-12-01T02:00:00Z"` (quoted)."""
    valid_until_duration: Duration | None = None
    """Fail the request if it has not started within this time. Unset: it expires when
    `pulumi up` stops waiting (`timeoutMinutes`)."""
    valid_until_time: Timestamp | None = None
    """Fail the request if it has not started by this time."""


class BootDisk(ConfigModel):
    """The boot disk of every TPU VM (the v2alpha1 API's BootDiskConfig, the only boot disk
    settings google-cloud-tpu 1.28.0 has: no size, type or image)."""

    kms_key: (
        Annotated[
            str,
            matching(
                KMS_KEY,
                "is not a Cloud KMS key projects/P/locations/L/keyRings/R/cryptoKeys/K",
            ),
        ]
        | None
    ) = None
    """Encrypt the boot disk with this Cloud KMS key (CMEK); the project's Compute Engine
    service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it."""
    confidential_compute: bool = False
    """Create the boot disk in Confidential mode (gcloud alpha's `--boot-disk
    confidential-compute=true`)."""


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
    `v2-alpha-tpuv6e` for v6e. Must be one the catalog lists for the family: v2 to v4 take
    `tpu-ubuntu2204-base`, `tpu-vm-base`, `tpu-vm-tf-2.x.y[-pod][-pjrt|-se]` and
    `tpu-vm-pt-*` (v4 also `v2-alpha-tpuv4[-pod]` and TF 2.10 and older as `...-v4`), v5 and
    later their `v2-alpha-*` version or `tpu-vm-tf-2.x.y[-pod]-pjrt` from TF 2.15."""
    allow_unlisted_runtime: bool = False
    """Accept a `runtimeVersion` the catalog does not list for the family (one Google added
    since; `gcloud compute tpus tpu-vm versions list --zone=ZONE` lists a zone's)."""
    node_count: int = Field(default=1, ge=1, le=MAX_NODE_COUNT)
    """Slices (TPU VMs, each of one or more hosts) in the queued resource; more than one makes a
    multislice request, for v4 and later."""
    node_prefix: DnsLabel | None = None
    """TPU VM names: `<nodePrefix>` for one slice, `<nodePrefix>-0` ... for several; the value
    to pass MaxText as `--TPU_PREFIX`. Defaults to `name`."""
    provisioning: Capacity = "on-demand"
    """`on-demand`, `reserved` (a reservation: any matching one, or `reservation`), `spot`, or
    `best-effort` (preemptible, the v2alpha1 API's BestEffort tier). A preempted request is
    asked again by the next `pulumi up`. `flex-start` is refused: only the v2alpha1 REST API
    has its provisioning model and run duration, and google-cloud-tpu (1.28.0, the newest
    release) has neither."""
    reservation: Reservation | None = None
    """With `provisioning: reserved`: a reservation name in the project, or
    `projects/P/reservations/R` for one shared from project P. Must be in the entry's zone."""
    zone: Zone | None = None
    """Defaults to `gcp:zone`; must be in `gcp:region` and a zone Cloud TPU documents for the
    family."""
    allow_unlisted_zone: bool = False
    """Accept a zone the catalog does not list for the family (one Google added since)."""
    network: TpuVmNetworkConfig | None = None
    """Defaults to the stack's VPC and subnet, whose Cloud NAT gives the VMs egress without
    public IPs and whose firewall lets SSH in from IAP."""
    queue_count: int | None = Field(default=None, ge=1, le=MAX_QUEUE_COUNT)
    """Networking queues of the first network interface (NetworkConfig.queue_count); unset,
    the API chooses."""
    additional_networks: list[AdditionalNetwork] = Field(
        default_factory=list, max_length=MAX_NODE_NETWORKS
    )
    """More network interfaces, each in a VPC of its own (Node.network_configs). Cloud TPU
    does not document which families take more than one; the API refuses those that do not.
    Neither the stack's NAT nor its firewall serves them."""
    service_account: ServiceAccountEmail | None = None
    """Email of an existing account for the TPU VMs. Unset: a dedicated account
    `<prefix>-<name>` with only log and metric writing, plus `roles` and `buckets`. The default
    compute service account is refused."""
    roles: list[IamRole] = Field(default_factory=list, max_length=MAX_ROLES)
    """Extra project roles for the dedicated account; basic roles are refused."""
    buckets: Annotated[
        dict[str, BucketAccess], at_most(MAX_ENTRIES, "one per ai-infra:buckets entry")
    ] = Field(default_factory=dict)
    """`ai-infra:buckets` names -> read | write | admin, for the dedicated account."""
    logins: list[Login] = Field(default_factory=list, max_length=MAX_LOGINS)
    """Who may log in to these TPU VMs: each member gets OS Login (`roles/compute.osAdminLogin`
    with `sudo: true`, else `roles/compute.osLogin`) on TPU VM hosts and no Compute Engine VM,
    `roles/iam.serviceAccountUser` on the VMs' account only, IAP tunnels to port 22, and
    reading TPU nodes (what gcloud's `tpu-vm ssh` and `python -m hosts` read); sudo members
    also write TPU nodes' metadata, where gcloud's `tpu-vm ssh` puts their key. Cloud TPU has
    no per-slice IAM, so these hold on the project (docs/tpu-vms.md)."""
    enable_public_ips: bool = False
    """Give each TPU VM an external IP. Off: reach the VMs from inside the VPC (`--internal-ip`)
    and let them egress through the stack's NAT."""
    secure_boot: bool = False
    """Shielded VM Secure Boot. Off by default because the Cloud TPU docs do not say which
    families and software versions boot with it; turn on where yours do."""
    boot_disk: BootDisk | None = None
    """Boot disk encryption and Confidential mode; setting it sends the request through the
    v2alpha1 API."""
    metadata: Annotated[
        dict[MetadataKey, ScriptText],
        at_most(MAX_METADATA_ENTRIES, "a bound of this program's, not Compute Engine's"),
    ] = Field(default_factory=dict)
    """Metadata on every TPU VM; at most 512 KiB with `startupScript`. The program sets
    `enable-oslogin` and `block-project-ssh-keys` to TRUE, so SSH goes through OS Login;
    those keys, SSH keys, `serial-port-enable`, `startup-script` (use `startupScript`), script
    URLs and cloud-init `user-data` are refused here (`components.startup`)."""
    startup_script: ScriptText | None = None
    """Run as root at every boot of every TPU VM, as a step of the startup script the program
    renders (metadata `startup-script`); it keeps its own `#!` line, and runs under bash
    without one. Its failure fails `pulumi up` (`startupTimeoutMinutes`)."""
    storage: list[StorageMount] = Field(default_factory=list, max_length=MAX_MOUNTS)
    """Buckets of `ai-infra:storage` mounted on every TPU VM by name, through gcsfuse with the
    volume's profile, before `startupScript` runs (the dedicated account gets objectViewer, or
    objectUser where the mount writes, unless `buckets` grants that bucket already), so it
    needs the dedicated account (no `serviceAccount`). Filestore and Lustre volumes are not
    mounted on TPU VMs yet."""
    labels: Labels = Field(default_factory=dict)
    """Labels on the TPU VMs, beside `ai-infra:labels`, `managed-by` and `ai-infra-stack`."""
    tags: list[NetworkTag] = Field(default_factory=list, max_length=MAX_TAGS)
    """Network tags, for firewall rules that target them."""
    data_disks: list[DataDisk] = Field(default_factory=list, max_length=MAX_DATA_DISKS)
    """Existing disks to attach to every TPU VM."""
    timeout_minutes: int = Field(default=DEFAULT_TIMEOUT_MINUTES, ge=1, le=24 * 60)
    """How long `pulumi up` waits for ACTIVE, and, unless `queueing` says otherwise, when the
    request expires in the queue. A request not ACTIVE by then, FAILED or SUSPENDED is deleted
    and the update fails, so nothing runs outside the stack's state. Changing it replaces
    nothing."""
    startup_timeout_minutes: int = Field(default=30, ge=0, le=360)
    """How long `pulumi up` waits, once the request is ACTIVE, for the startup script on every
    worker of every TPU VM to report done (guest attribute `ai-infra/startup`); a failed step
    (`startupScript` among them) fails `pulumi up` naming the TPU VM, the worker and the step,
    and leaves the queued resource recorded in the stack, so nothing bills unseen. 0 skips the
    wait."""
    queueing: Queueing | None = None
    """When the request may start. Changing it replaces nothing running: it shapes the next
    request (after a preemption, or a change that replaces the TPU VMs)."""

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
    def api_version(self) -> str:
        """The Cloud TPU API surface of the request: GA `v2`, or `v2alpha1` for what only it
        has (the best-effort tier, the boot disk config)."""
        return V2ALPHA1 if self.provisioning == "best-effort" or self.boot_disk_config else V2

    @property
    def boot_disk_config(self) -> dict[str, str | bool]:
        """The boot disk settings the entry sets, as the provider takes them; empty for none."""
        boot = self.boot_disk or BootDisk()
        config: dict[str, str | bool] = {}
        if boot.kms_key:
            config["kmsKeyName"] = boot.kms_key
        if boot.confidential_compute:
            config["confidentialCompute"] = True
        return config

    @property
    def queueing_policy(self) -> dict[str, str | int]:
        """`queueing` as the provider takes it: durations in seconds, times as written."""
        q = self.queueing or Queueing()
        bounds = {
            "validAfter": (q.valid_after_duration, q.valid_after_time),
            "validUntil": (q.valid_until_duration, q.valid_until_time),
        }
        policy: dict[str, str | int] = {}
        for bound, (duration, time) in bounds.items():
            if duration is not None:
                policy[f"{bound}Seconds"] = duration_seconds(duration)
            if time is not None:
                policy[f"{bound}Time"] = time
        return policy

    @property
    def node_names(self) -> list[str]:
        return node_names(self.prefix, self.node_count)

    @property
    def chips(self) -> int:
        return self.shape.chips * self.node_count
