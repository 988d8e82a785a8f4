"""Problems of `ai-infra:tpuProvisioner`: its node account, its quota's shapes, networks
and settings, flex-start slices beside it, and the capacity no team's queue takes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from catalog import tpu as tpu_catalog
from components import network
from components.base import PathPart, Problem, relative_path
from components.gke.checks.cluster import pool_zone_problems
from components.gke.config import (
    PROVISIONER_CHIPS_PER_NODE,
    PROVISIONER_SOURCE,
    WORKLOAD_POLICY_PREFIX,
    GkeConfig,
    TpuProvisionerConfig,
)
from components.identity import service_account_email
from components.types import is_digest_pinned

_ACCELERATOR = re.compile(r"[a-z0-9]{1,16}-[0-9]{1,5}")
"""An accelerator type's form, checked before the catalog reads it as a quota key, so a key
with whitespace or a newline cannot reach a flavor name."""


def node_account_problems(
    config: GkeConfig, accounts: Sequence[tuple[tuple[PathPart, ...], str]]
) -> list[Problem]:
    """A `tpuProvisioner.nodeServiceAccount` problem when its nodes would run as an account
    the program creates for something else (`accounts`: every system's claimed account ids):
    the provisioner's own would let any pod on them create and delete node pools, a team's or
    a VM's would hand its grants to every pod on those nodes. The cluster's node account is
    the default and fine."""
    node_account = config.tpu_provisioner.node_service_account
    if not config.tpu_provisioner.enabled or node_account is None:
        return []
    for path, account_id in accounts:
        if path == ("cluster",):
            continue
        if service_account_email(account_id, config.context.project) == node_account:
            owner = (
                "the provisioner's own account"
                if path == ("tpuProvisioner",)
                else (f"the account of {relative_path(path)}")
            )
            return [
                Problem(
                    ("tpuProvisioner", "nodeServiceAccount"),
                    f"'{node_account}' is {owner}; nodes must not run as it. Leave "
                    "nodeServiceAccount unset (the cluster's node account) or name an account "
                    "made for nodes",
                )
            ]
    return []


def flex_start_conflicts(config: GkeConfig) -> list[Problem]:
    """`tpuSlices[i].provisioning` problems for flex-start TPU slices beside the provisioner:
    it acts on any pending JobSet pod that selects a TPU topology, copies the pod's own node
    selectors (such as `ai-infra/capacity: flex-start`) onto a new on-demand pool, and keeps
    that pool until the JobSet ends (creation_controller.go and gke.go at 6789e2a), so
    flex-start work would run on on-demand capacity. Only a label on the pod stops it, and
    Kueue's ProvisioningRequestConfig can add node selectors, not labels."""
    if not config.tpu_provisioner.enabled:
        return []
    return [
        Problem(
            ("tpuSlices", i, "provisioning"),
            "flex-start TPU slices cannot share a cluster with the TPU provisioner, which "
            "would create an on-demand pool for their pending pods; use spot, on-demand or a "
            "reservation here, or turn tpuProvisioner off",
        )
        for i, entry in enumerate(config.tpu_slices)
        if entry.provisioning == "flex-start"
    ]


def provisioner_problems(
    config: GkeConfig, network_config: network.NetworkConfig | None = None
) -> list[Problem]:
    """Cross-checks of `ai-infra:tpuProvisioner`; the stack root checks that its account id
    and Kubernetes service account have no other owner, and that its nodes' account is not
    another's."""
    provisioner = config.tpu_provisioner
    found: list[Problem] = []
    if not provisioner.enabled:
        if provisioner.quota:
            found.append(
                Problem(
                    ("quota",),
                    "quota for provisioner-created slices needs enabled: true; without the "
                    "controller Kueue would admit jobs onto capacity nobody creates",
                )
            )
        return found
    channel = config.cluster.release_channel
    if channel != "NONE":
        found.append(
            Problem(
                ("enabled",),
                "the TPU provisioner manages node pools itself and requires a cluster without "
                f"a release channel; set ai-infra:cluster.releaseChannel: NONE (now {channel})",
            )
        )
    if provisioner.image is None:
        found.append(
            Problem(
                ("image",),
                "is required when enabled: build and push the controller image (upstream "
                "tpu-provisioner README) and give its reference, pinned by digest "
                "(REGISTRY/PATH@sha256:...)",
            )
        )
    zone_problems = []
    if provisioner.zone is not None:
        zone_problems = pool_zone_problems(config, provisioner.zone)
        found += zone_problems
    quota_problems = _provisioner_quota_problems(config, zone_ok=not zone_problems)
    found += quota_problems
    if network_config is not None:
        vpc = network_config.vpc_name(config.context.prefix)
        found += _network_problems(provisioner, vpc)
        found += _stack_network_problems(config)
    if provisioner.additional_node_networks and not config.cluster.dataplane_v2:
        # GKE multi-networking, which additional node networks need, runs on Dataplane V2
        # only (GKE "Set up multi-network support for Pods", requirements).
        found.append(
            Problem(
                ("additionalNodeNetworks",),
                "additional node networks need GKE multi-networking, which needs Dataplane "
                "V2; set ai-infra:cluster.dataplaneV2: true",
            )
        )
    if provisioner.confidential_storage and not provisioner.boot_disk_kms_key:
        found.append(
            Problem(
                ("confidentialStorage",),
                "confidential boot disks need bootDiskKmsKey (GKE NodeConfig: "
                "boot_disk_kms_key is required with enable_confidential_storage)",
            )
        )
    if not quota_problems:
        found += _shape_setting_problems(config)
    return found


def _network_problems(provisioner: TpuProvisionerConfig, cluster_vpc: str) -> list[Problem]:
    """Each additional interface in a VPC of its own, none the cluster's (Compute Engine
    "Multiple network interfaces": every interface of a VM is in a different VPC)."""
    found = []
    seen: dict[str, int] = {}
    for i, extra in enumerate(provisioner.additional_node_networks):
        path = ("additionalNodeNetworks", i, "network")
        if extra.network in seen:
            found.append(
                Problem(
                    path,
                    f"'{extra.network}' is also additionalNodeNetworks[{seen[extra.network]}]; "
                    "a VM has one interface per VPC",
                )
            )
        elif extra.network == cluster_vpc:
            found.append(
                Problem(
                    path,
                    f"'{extra.network}' is the cluster's own VPC, which the node's first "
                    "interface is in; use another VPC",
                )
            )
        seen.setdefault(extra.network, i)
    return found


def _stack_network_problems(config: GkeConfig) -> list[Problem]:
    """`additionalNodeNetworks` entries that name the stack's own node networks are checked as
    the stack's networks are when the provisioner attaches to them by default: the quota's
    families must take a second NIC (the controller gives every pool the same ones), and an
    entry naming one of the stack's VPCs must name its subnet (the subnets' capacity is
    checked with the slices')."""
    provisioner = config.tpu_provisioner
    stack = {n.vpc: n for n in config.network.node_networks(config.context.prefix).values()}
    found = []
    for i, extra in enumerate(provisioner.additional_node_networks):
        own = stack.get(extra.network)
        if own is None:
            continue
        if extra.subnetwork != own.subnet:
            found.append(
                Problem(
                    ("additionalNodeNetworks", i, "subnetwork"),
                    f"'{extra.network}' is the VPC of network.additionalNodeNetworks "
                    f"{own.name}, whose only subnet is '{own.subnet}'; name that subnet",
                )
            )
            continue
        for accelerator, shape in provisioner.shapes().items():
            if problem := tpu_catalog.node_network_problem(shape.family):
                found.append(
                    Problem(
                        ("additionalNodeNetworks", i),
                        f"the controller gives every pool it creates this NIC, and "
                        f"{accelerator} pools take none: {problem}",
                    )
                )
                break
    return found


def _shape_setting_problems(config: GkeConfig) -> list[Problem]:
    """Settings that every pool the provisioner creates takes, against the quota's shapes."""
    provisioner = config.tpu_provisioner
    found = []
    if provisioner.confidential_storage:
        pd = sorted(
            a
            for a, s in provisioner.shapes().items()
            if s.family.boot_disk_type != ("hyperdisk-balanced")
        )
        if pd:
            found.append(
                Problem(
                    ("confidentialStorage",),
                    f"confidential mode is for Hyperdisk boot disks, but {', '.join(pd)} boot "
                    "from pd-balanced; drop those shapes or confidentialStorage",
                )
            )
    taken = {
        config.context.name(s.name): i
        for i, s in enumerate(config.tpu_slices)
        if s.shape.needs_workload_policy
    }
    for accelerator, shape in provisioner.shapes().items():
        policy = f"{WORKLOAD_POLICY_PREFIX}{shape.topology}"
        if shape.family.workload_policy_for_multi_host and policy in taken:
            found.append(
                Problem(
                    ("quota", accelerator),
                    f"the provisioner places {accelerator} by workload policy '{policy}', "
                    f"which is also tpuSlices[{taken[policy]}]'s own policy name; rename "
                    "that slice",
                )
            )
    return found


def _provisioner_quota_problems(config: GkeConfig, *, zone_ok: bool) -> list[Problem]:
    provisioner = config.tpu_provisioner
    zone = config.provisioner_zone
    found = []
    disks: dict[str, list[str]] = {}
    for accelerator in provisioner.quota:
        path = ("quota", accelerator)
        if not _ACCELERATOR.fullmatch(accelerator):
            found.append(
                Problem(
                    path, "is not an accelerator type; write it as the catalog does, e.g. v5p-32"
                )
            )
            continue
        try:
            shape = tpu_catalog.resolve(accelerator)
        except tpu_catalog.CatalogError as error:
            found.append(Problem(path, str(error)))
            continue
        if not shape.family.gke:
            found.append(
                Problem(
                    path,
                    f"GKE has no {shape.family.prefix} node pools here; request it as TPU VMs "
                    "(ai-infra:tpuVms)",
                )
            )
            continue
        nodes = math.ceil(shape.chips / PROVISIONER_CHIPS_PER_NODE)
        if nodes * shape.chips_per_host != shape.chips:
            found.append(
                Problem(
                    path,
                    f"the provisioner sizes a pool as ceil(chips / {PROVISIONER_CHIPS_PER_NODE}) "
                    f"= {nodes} nodes of the requested machine type, so {accelerator} "
                    f"({shape.chips} chips on {shape.machine_type}) would bill "
                    f"{nodes * shape.chips_per_host} chips; give it a fixed tpuSlices entry, "
                    "or use a shape of 1 chip, 4 chips or 4-chip hosts",
                )
            )
            continue
        if zone_ok and (problem := tpu_catalog.zone_problem(shape.family, zone)):
            where = (
                "" if provisioner.zone else f"the provisioner creates pools in gcp:zone {zone}: "
            )
            found.append(Problem(path, where + problem.split("; pick")[0]))
        disks.setdefault(shape.family.boot_disk_type, []).append(accelerator)
    if len(disks) > 1:
        kinds = "; ".join(f"{disk} for {', '.join(names)}" for disk, names in disks.items())
        found.append(
            Problem(
                ("quota",),
                f"the controller gives every pool it creates one boot disk type "
                f"(GCP_NODE_DISK_TYPE), but these shapes need different ones ({kinds}); "
                "provision the other family as fixed tpuSlices",
            )
        )
    return found


def provisioned_warnings(config: GkeConfig) -> list[Problem]:
    """Provisioner capacity that no team's quota takes stays with the cohort, which no team's
    provisioner queue borrows from: the provisioner never creates it. An image named by a tag
    runs whatever the tag points at when a pod next starts."""
    found = []
    image = config.tpu_provisioner.image
    if config.tpu_provisioner.enabled and image is not None and not is_digest_pinned(image):
        found.append(
            Problem(
                ("tpuProvisioner", "image"),
                f"'{image}' is a mutable tag: a push changes what the next pod runs; pin it by "
                "digest (...@sha256:<digest>)",
            )
        )
    for flavor in config.provisioned_flavors:
        held = config.allocation.cohort[flavor.name]
        if not held:
            continue
        (source,) = flavor.sources
        accelerator = source.name.removeprefix(PROVISIONER_SOURCE)
        found.append(
            Problem(
                ("tpuProvisioner", "quota", accelerator),
                f"{held} of its {source.units} chips go to no team (whole slices do not divide "
                "among the teams that name no share of it) and stay with the cohort, from which "
                "provisioner queues never borrow, so no job can use them; give them to a team "
                f"(quota: {{{source.name}: ...}}) or lower this count",
            )
        )
    return found
