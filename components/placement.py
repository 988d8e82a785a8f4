"""Compute Engine resource policies that keep a group of VMs close together: a compact group
placement policy, or a HIGH_THROUGHPUT workload policy (with an accelerator topology for TPU
slices). TPU slices, the TPU provisioner and GPU clusters all build theirs here.
"""

from __future__ import annotations

import pulumi_gcp as gcp

from components.base import Component


def workload_policy(
    parent: Component,
    resource_name: str,
    *,
    project: str,
    region: str,
    name: str,
    topology: str | None = None,
    max_topology_distance: str | None = None,
) -> gcp.compute.ResourcePolicy:
    """A HIGH_THROUGHPUT workload policy; `topology` is a TPU slice's or A4X's accelerator
    topology, `max_topology_distance` (SUBBLOCK, BLOCK or CLUSTER) the strict boundary of
    the GPU series that take one instead (the API takes one or the other, never both)."""
    if topology and max_topology_distance:
        raise ValueError("a workload policy takes an accelerator topology or a max distance")
    return gcp.compute.ResourcePolicy(
        resource_name,
        project=project,
        region=region,
        name=name,
        workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
            type="HIGH_THROUGHPUT",
            accelerator_topology=topology,
            max_topology_distance=max_topology_distance,
        ),
        opts=parent.child_opts(),
    )


def compact_policy(
    parent: Component,
    resource_name: str,
    *,
    project: str,
    region: str,
    name: str,
    max_distance: int | None = None,
) -> gcp.compute.ResourcePolicy:
    """A group placement policy that collocates its VMs; `max_distance` (1 to 3) makes a
    level of compactness a requirement instead of a best effort."""
    return gcp.compute.ResourcePolicy(
        resource_name,
        project=project,
        region=region,
        name=name,
        group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
            collocation="COLLOCATED", max_distance=max_distance
        ),
        opts=parent.child_opts(),
    )
