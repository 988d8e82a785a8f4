"""What every GKE node pool shares: the node settings (dedicated service account, GKE metadata
server, shielded VM, gVNIC), how a pool is sized, and the upgrade hold of accelerator pools.
The CPU pool, TPU slices and GPU pools are each built from these.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.gke.config import HostMaintenanceInterval, Provisioning

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def hold_upgrades(auto_upgrade: bool) -> list[gcp.container.NodePoolMaintenancePolicyArgs] | None:
    """On a release channel GKE must auto-upgrade nodes, and upgrading any node of a
    multi-host slice recreates the whole slice. A node-pool exclusion holds the pool's
    upgrades until its version's end of support, so GKE never recreates a running slice on
    its own before then (GKE API `NodePool.NodePoolMaintenancePolicy`)."""
    if not auto_upgrade:
        return None
    return [
        gcp.container.NodePoolMaintenancePolicyArgs(
            exclusion_until_end_of_supports=[
                gcp.container.NodePoolMaintenancePolicyExclusionUntilEndOfSupportArgs(enabled=True)
            ]
        )
    ]


HOLD_REPLACES = ("maintenancePolicies",)
"""The provider sends a pool's maintenance policy only when it creates the pool: its update
path has no branch for it (terraform-provider-google 8.0 and google-beta 93c65b2,
resource_container_node_pool.go: `maintenance_policy` is read in expandNodePool, never in
nodePoolUpdate). An update would report the hold added and leave the pool without it, so a
change to it (a switch from releaseChannel NONE to a channel, or back) replaces the pool,
which then gets it at creation."""


@dataclass(frozen=True)
class PoolSizing:
    """The sizing inputs of a `gcp.container.NodePool`; unset ones stay None."""

    node_count: int | None = None
    initial_node_count: int | None = None
    autoscaling: gcp.container.NodePoolAutoscalingArgs | None = None
    queued_provisioning: gcp.container.NodePoolQueuedProvisioningArgs | None = None


def pool_sizing(
    max_nodes: int,
    *,
    min_nodes: int | None = None,
    flex_start: bool = False,
    per_zone: bool = False,
) -> PoolSizing:
    """How a pool is sized: `max_nodes` fixed nodes; with `min_nodes`, autoscaled between the
    two; flex-start pools rest at zero and grow by queued provisioning requests.

    `per_zone` bounds count nodes in each of the pool's zones (the CPU pool spans the
    cluster's zones); otherwise the bounds are totals across its zones.
    """
    if min_nodes is None and not flex_start:
        return PoolSizing(node_count=max_nodes)
    low = 0 if min_nodes is None else min_nodes
    if per_zone:
        autoscaling = gcp.container.NodePoolAutoscalingArgs(
            min_node_count=low, max_node_count=max_nodes
        )
    else:
        autoscaling = gcp.container.NodePoolAutoscalingArgs(
            total_min_node_count=low, total_max_node_count=max_nodes, location_policy="ANY"
        )
    return PoolSizing(
        initial_node_count=0 if flex_start else low,
        autoscaling=autoscaling,
        queued_provisioning=(
            gcp.container.NodePoolQueuedProvisioningArgs(enabled=True) if flex_start else None
        ),
    )


def node_config(
    *,
    service_account: pulumi.Input[str],
    machine_type: str,
    disk_size_gb: int,
    disk_type: str,
    labels: dict[str, str],
    resource_labels: dict[str, str],
    tags: list[str],
    image_streaming: bool,
    provisioning: Provisioning = "on-demand",
    reservation: str | None = None,
    taints: list[gcp.container.NodePoolNodeConfigTaintArgs] | None = None,
    guest_accelerators: list[gcp.container.NodePoolNodeConfigGuestAcceleratorArgs] | None = None,
    host_maintenance_interval: HostMaintenanceInterval | None = None,
) -> gcp.container.NodePoolNodeConfigArgs:
    """Node settings every pool shares: dedicated SA, GKE metadata server, shielded VM, gVNIC.

    `labels` are Kubernetes node labels; `resource_labels` are GCP labels on the VMs (no '/');
    `tags` the network tags the stack's firewall rules name GKE nodes by.
    `host_maintenance_interval` is set on TPU pools only; unset leaves GKE's default.
    """
    reservation_affinity = None
    if provisioning == "reservation":
        reservation_affinity = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION",
            key="compute.googleapis.com/reservation-name",
            values=[reservation or ""],
        )
    elif provisioning == "flex-start":
        reservation_affinity = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="NO_RESERVATION"
        )
    return gcp.container.NodePoolNodeConfigArgs(
        machine_type=machine_type,
        disk_size_gb=disk_size_gb,
        disk_type=disk_type,
        image_type="COS_CONTAINERD",
        service_account=service_account,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],
        labels=labels,
        resource_labels=resource_labels,
        tags=tags,
        taints=taints,
        guest_accelerators=guest_accelerators,
        spot=True if provisioning == "spot" else None,
        flex_start=True if provisioning == "flex-start" else None,
        reservation_affinity=reservation_affinity,
        host_maintenance_policy=(
            gcp.container.NodePoolNodeConfigHostMaintenancePolicyArgs(
                maintenance_interval=host_maintenance_interval
            )
            if host_maintenance_interval is not None
            else None
        ),
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
            mode="GKE_METADATA"
        ),
        shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
        gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
        gcfs_config=gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=image_streaming),
        metadata={"disable-legacy-endpoints": "true"},
    )
