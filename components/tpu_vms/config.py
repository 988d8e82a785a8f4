"""What the user writes for `ai-infra:tpuVms`: one entry per Cloud TPU queued resource of
`nodeCount` identical slices, with its network, identity, metadata and capacity type.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from components import tpu_catalog
from components.base import ConfigModel, matching
from components.buckets import BucketAccess
from components.tpu_vms.provider import node_names
from components.types import (
    GCE_NAME,
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

MAX_NODE_COUNT = 64
"""A guard against a typo ordering a fleet, not an API limit; raise it deliberately."""
DEFAULT_TIMEOUT_MINUTES = 60

Capacity = Literal["on-demand", "reserved", "spot", "best-effort", "flex-start"]
_COMPUTE = r"(https://www\.googleapis\.com/compute/v1/)?projects/[a-z][-a-z0-9.:]{4,61}[a-z0-9]/"
"""A project in a resource path; it may be domain-scoped (`example.com:proj`)."""
NETWORK_PATH = re.compile(_COMPUTE + rf"global/networks/{GCE_NAME}")
SUBNETWORK_PATH = re.compile(_COMPUTE + rf"regions/(?P<region>{REGION})/subnetworks/{GCE_NAME}")


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
    public IPs."""
    service_account: ServiceAccountEmail | None = None
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
    metadata: dict[MetadataKey, str] = Field(default_factory=dict)
    """Metadata on every TPU VM; at most 512 KiB with `startupScript`."""
    startup_script: str | None = None
    """Shell run as root at every boot of every TPU VM (metadata `startup-script`)."""
    labels: Labels = Field(default_factory=dict)
    """Labels on the TPU VMs, beside `ai-infra:labels`, `managed-by` and `ai-infra-stack`."""
    tags: list[NetworkTag] = Field(default_factory=list)
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
