"""What the user writes under `ai-infra:tpuProvisioner`, and the controller's own fixed
facts: its pods per node, how it sizes a pool, its account and workload policy names.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from catalog import tpu as tpu_catalog
from components.base import (
    MAX_KUEUE_FLAVORS,
    MAX_LABELS,
    MAX_NETWORK_TAGS,
    ConfigModel,
    at_most,
    matching,
)
from components.gke.config.cluster import MAX_PROVISIONED_SLICES_PER_SHAPE
from components.network import MAX_NODE_NETWORKS
from components.types import (
    DiskImage,
    GceName,
    ImageReference,
    KmsCryptoKey,
    NetworkTag,
    ServiceAccountEmail,
    Zone,
)

_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
KubernetesLabelKey = Annotated[
    str,
    matching(
        rf"([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}",
        "is not a Kubernetes label key such as team or example.com/run",
    ),
]


_GO_UNIT_NS = {"ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_GO_DURATION = re.compile(r"([0-9]+)(ms|s|m|h)")
GO_DURATION_MAX_NS = 2**63 - 1
"""Go's time.Duration is an int64 of nanoseconds, about 2562047h: time.ParseDuration refuses
more, and envconfig's MustProcess then panics, so the controller never starts."""


def _duration_ns(value: str) -> int:
    return sum(int(n) * _GO_UNIT_NS[unit] for n, unit in _GO_DURATION.findall(value))


def _fits_go(value: str) -> str:
    if _duration_ns(value) > GO_DURATION_MAX_NS:
        raise ValueError(
            f"'{value}' is longer than Go's longest duration (about 2562047h), so the "
            "controller could not parse it and would not start; use at most a few hours"
        )
    return value


def _nonzero(value: str) -> str:
    if not _duration_ns(value):
        raise ValueError(
            f"'{value}' is zero, and the controller refuses to start with a zero "
            "NODE_MIN_LIFESPAN; use at least 1s (upstream default 10s)"
        )
    return value


GoDuration = Annotated[
    str,
    Field(max_length=32),
    matching(
        r"([0-9]+(ms|s|m|h))+", "is not a duration; write it as Go does, e.g. 30s, 5m or 1m30s"
    ),
    AfterValidator(_fits_go),
]
"""A duration as Go's time.ParseDuration reads it, in the units the controller uses. Empty
is refused too: envconfig passes a set-but-empty variable to the parser, which fails."""


class AdditionalNodeNetwork(ConfigModel):
    """One extra network interface on the nodes the provisioner creates."""

    network: GceName
    """The VPC's name; each interface needs a VPC of its own, not the cluster's."""
    subnetwork: GceName
    """The subnet's name in that VPC, in the cluster's region."""


SliceCount = Annotated[int, Field(strict=True, ge=1, le=MAX_PROVISIONED_SLICES_PER_SHAPE)]


class TpuProvisionerConfig(ConfigModel):
    """`ai-infra:tpuProvisioner`: GKE's open-source TPU provisioner, which creates a slice node
    pool for each pending JobSet and deletes it when the JobSet ends. It manages node pools
    itself, so the cluster must not be on a release channel."""

    enabled: bool = False
    """Run the controller in `tpu-provisioner-system`, as `<prefix>-tpu-prov` (with a custom
    role holding only what it calls, container.clusters.get and .update and
    container.operations.get, and `roles/iam.serviceAccountUser` on the node service account)
    through the Kubernetes service account `tpu-provisioner-controller-manager`."""
    image: ImageReference | None = None
    """The controller image you built and pushed (required when enabled); pin it by digest
    (`...@sha256:...`), a tag alone can move under a running cluster."""
    zone: Zone | None = None
    """Zone it creates node pools in (`GCP_ZONE`); defaults to `gcp:zone`. It must offer the
    TPU generations the teams request."""
    node_service_account: ServiceAccountEmail | None = None
    """Service account of the nodes it creates (`GCP_NODE_SERVICE_ACCOUNT`); defaults to the
    cluster's node service account. Another account gets the roles the cluster's node account
    has; it must not be one the program creates for anything else."""
    node_tags: list[NetworkTag] = Field(default_factory=list, max_length=MAX_NETWORK_TAGS)
    """Network tags on the nodes it creates (`GCP_NODE_TAGS`)."""
    # GKE documents no bound on node labels: the GCP label count is this program's.
    pod_to_node_labels: list[KubernetesLabelKey] = Field(
        default_factory=list, max_length=MAX_LABELS
    )
    """Pod label keys copied onto the node pools it creates (`GCP_POD_TO_NODE_LABELS`)."""
    force_on_demand: bool = True
    """Create on-demand pools even when a pod selects Spot or a reservation
    (`GCP_FORCE_ON_DEMAND`). Off, any team member's pod can have it create Spot pools or
    consume any reservation the project can use (`cloud.google.com/reservation-name`)."""
    concurrency: int = Field(default=3, ge=1, le=64)
    """Pods and nodes reconciled at once by each of its controllers (`CONCURRENCY`), 1-64."""
    node_min_lifespan: Annotated[GoDuration, AfterValidator(_nonzero)] = "10s"
    """How old a node must be before its pool may be deleted (`NODE_MIN_LIFESPAN`)."""
    node_pool_deletion_delay: GoDuration = "30s"
    """`NODEPOOL_DELETION_DELAY`, which the controller parses (a bad value stops it) but at
    the pinned commit does not use."""
    secondary_boot_disk: DiskImage | None = None
    """A disk image preloaded on every node it creates as a secondary boot disk in container
    image cache mode (`GCP_NODE_SECONDARY_DISK`), so large images start without a pull; the
    nodes' service account must be able to read the image."""
    additional_node_networks: list[AdditionalNodeNetwork] = Field(
        default_factory=list, max_length=MAX_NODE_NETWORKS
    )
    """Extra network interfaces on the nodes it creates, `{network, subnetwork}` by name
    (`GCP_NODE_ADDITIONAL_NETWORKS`), e.g. for multislice traffic; each in a VPC of its own,
    and the cluster must have GKE multi-networking on."""
    boot_disk_kms_key: KmsCryptoKey | None = None
    """Cloud KMS key that encrypts its nodes' boot disks (`GCP_NODE_BOOT_DISK_KMS_KEY`); the
    project's Compute Engine service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter
    on it."""
    confidential_storage: bool = False
    """Boot disks in confidential mode (`GCP_NODE_CONFIDENTIAL_STORAGE`): Hyperdisk only (v6e
    and tpu7x shapes), with `bootDiskKmsKey`. The controller has no confidential-nodes
    setting."""
    create_workload_policies: bool = True
    """Create the `tpu-provisioner-<topology>` workload policies its tpu7x pools use. The
    controller names them per project and region, not per cluster: of several stacks running
    it in one project and region, exactly one creates them and the others set false and use
    those (which must outlive them)."""
    quota: Annotated[
        dict[str, SliceCount], at_most(MAX_KUEUE_FLAVORS, "one Kueue flavor each, 64 per queue")
    ] = Field(default_factory=dict)
    """Accelerator type -> the most slices of it the provisioner may create, e.g.
    `{v5p-32: 4}`, in the type's default topology. Each becomes Kueue quota on that shape's
    flavor, shared with fixed slices of the shape; teams name it in their quota as
    `tpuProvisioner.<accelerator>`."""

    def shapes(self) -> dict[str, tpu_catalog.TpuShape]:
        """The quota's accelerator types resolved to their default-topology shapes; call only
        on a config whose problems are empty."""
        return {accelerator: tpu_catalog.resolve(accelerator) for accelerator in self.quota}


PROVISIONER_MAX_PODS_PER_NODE = 15
"""The provisioner's pools run at most 15 pods per node, a /27 of the pods range each
(`maxPodsPerNode`, internal/cloud/gke.go at 6789e2a; no setting changes it)."""
PROVISIONER_CHIPS_PER_NODE = 4
"""The provisioner sizes a pool as ceil(chips of the topology / 4) nodes of the machine type
the pod's chip request names (tpuTopologyToNodeCount and tpuMachineType in gke.go)."""
WORKLOAD_POLICY_PREFIX = "tpu-provisioner-"
"""For tpu7x the controller names the workload policy `tpu-provisioner-<topology>` in the
cluster's project and region, and expects it to exist (gke.go; upstream README, Ironwood)."""
PROVISIONER_ACCOUNT = "tpu-prov"
"""The provisioner's Google service account is `<prefix>-tpu-prov`."""
PROVISIONER_SOURCE = "tpuProvisioner."
"""Prefix of a provisioner shape's capacity as a quota source (`tpuProvisioner.v5p-32`); a
slice or pool name (a DNS label) cannot contain the '.'."""
