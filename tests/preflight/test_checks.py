"""Every check through fake clients built on the libraries' own types: the passing project, then
one failing project per check."""

from __future__ import annotations

import dataclasses
from types import ModuleType

from google.cloud import (
    compute_v1,
    orgpolicy_v2,
    resourcemanager_v3,
    service_usage_v1,
    tpu_v2alpha1,
)

import preflight
from graph.capacity import Machines
from preflight import (
    apis,
    billing,
    buckets,
    gke,
    org_policy,
    permissions,
    project,
    quota,
    reservations,
    zones,
)
from preflight.needs import Needs
from preflight.report import Finding
from tests.preflight.conftest import PROJECT, live
from tests.preflight.fakes import FORBIDDEN, World, bucket, quota_info
from tests.preflight.fakes import quota as quota_

Rule = orgpolicy_v2.PolicySpec.PolicyRule


def run(check: ModuleType, needs: Needs, world: World) -> list[Finding]:
    return check.check(needs, live(world))


def with_status(findings: list[Finding], status: str) -> list[Finding]:
    return [f for f in findings if f.status == status]


def one(findings: list[Finding], status: str, fragment: str) -> Finding:
    found = [f for f in findings if f.status == status and fragment in f.line]
    assert len(found) == 1, f"expected one {status} with {fragment!r} in:\n" + "\n".join(
        f"{f.status} {f.line}" for f in findings
    )
    return found[0]


def policy(*rules: Rule) -> orgpolicy_v2.Policy:
    return orgpolicy_v2.Policy(spec=orgpolicy_v2.PolicySpec(rules=list(rules)))


def values(allowed: tuple[str, ...] = (), denied: tuple[str, ...] = ()) -> Rule:
    return Rule(values=Rule.StringValues(allowed_values=list(allowed), denied_values=list(denied)))


# The passing project


def test_a_project_with_room_for_the_plan_passes(needs: Needs, world: World) -> None:
    findings = preflight.run(needs, live(world))
    assert with_status(findings, "fail") == []
    # Warnings are only what cannot be known: usage of quotas the Cloud Quotas API lists.
    for f in with_status(findings, "warn"):
        assert f.check == "quota" and "in use not reported" in f.detail, f.line
    assert {f.check for f in findings} == {c.NAME for c in preflight.CHECKS}
    # Every read ran under preflight's own retry, never Google's (the fake asserts it).
    assert world.calls


def test_quota_figures_are_the_plan_s_maximum_less_usage(needs: Needs, world: World) -> None:
    found = run(quota, needs, world)
    l4 = one(found, "ok", "nvidia-l4 GPUs in us-central1")
    assert "need 6 (gpuPools[0]), quota 8 (NVIDIA_L4_GPUS), in use 0" in l4.detail
    # E2 nodes of the CPU and system pools draw on CPUS (the region lists no E2_CPUS):
    # 9 x 8 vCPUs and 3 x 4.
    assert "need 84 (cluster), quota 400 (CPUS), in use 20" in one(found, "ok", "E2").detail
    # G2 has a family quota in Cloud Quotas; its usage is not reported.
    g2 = one(found, "warn", "G2 vCPUs")
    assert "need 72" in g2.detail and "CPUS-PER-VM-FAMILY-per-project-region" in g2.detail
    everywhere = one(found, "ok", "vCPUs in all regions")
    # 84 E2 + 72 G2 + 24 A2 + 4 C2 + 2 N2; TPU hosts are left out.
    assert "need 186" in everywhere.detail
    v5p = one(found, "warn", "need 32 (tpuProvisioner.quota.v5p-32)")
    assert v5p.subject == "TPU v5p chips in us-central1"
    assert "need 16 (tpuSlices[0])" in one(found, "warn", "Preemptible TPU v5p chips in").detail
    # The reserved slice takes no quota.
    assert not [f for f in found if "tpuSlices[1]" in f.detail]
    # Cloud TPU API quota per zone and per region, each in the unit it counts.
    api = one(
        found, "warn", "Preemptible TPU v5p TensorCores (Cloud TPU API, per zone) in us-central1-a"
    )
    assert "need 16 (tpuVms[0])" in api.detail
    regional = one(found, "warn", "Preemptible TPU v5p chips (Cloud TPU API, per region)")
    assert "need 8 (tpuVms[0]), quota 32" in regional.detail
    assert (
        "need 32 (slurm"
        in one(found, "warn", "TPU v2 TensorCores (Cloud TPU API, per zone)").detail
    )
    assert (
        "need 32 (slurm"
        in one(found, "warn", "TPU v2 TensorCores (Cloud TPU API, per region)").detail
    )
    assert "need 2560" in one(found, "warn", "Filestore BASIC_SSD GiB").detail


# One failing project per check


def test_project_missing_fails_and_skips_the_rest(needs: Needs, world: World) -> None:
    from google.api_core import exceptions

    world.fail("get_project", exceptions.PermissionDenied("The caller does not have permission"))
    findings = preflight.run(needs, live(world))
    failed = one(findings, "fail", f"project {PROJECT}")
    assert "does not exist, or this identity may not read it" in failed.detail
    assert "resourcemanager.projects.get" in failed.detail
    assert len(with_status(findings, "warn")) == len(preflight.CHECKS) - 1
    assert [name for name, _ in world.calls] == ["get_project"]


def test_project_being_deleted_fails(needs: Needs, world: World) -> None:
    world.state = resourcemanager_v3.Project.State.DELETE_REQUESTED
    assert "is DELETE_REQUESTED" in one(run(project, needs, world), "fail", PROJECT).detail


def test_billing_disabled_fails(needs: Needs, world: World) -> None:
    world.billing_enabled = False
    found = one(run(billing, needs, world), "fail", "billing")
    assert "gcloud billing projects link ml-preflight" in found.fix


def test_api_that_cannot_be_enabled_fails(needs: Needs, world: World) -> None:
    world.services["tpu.googleapis.com"] = service_usage_v1.State.DISABLED
    world.granted = set()
    found = one(run(apis, needs, world), "fail", "tpu.googleapis.com")
    assert "lacks serviceusage.services.enable" in found.detail
    assert "gcloud services enable tpu.googleapis.com" in found.fix


def test_api_an_org_policy_denies_fails(needs: Needs, world: World) -> None:
    world.services["tpu.googleapis.com"] = service_usage_v1.State.DISABLED
    world.policies["serviceuser.services"] = policy(values(denied=("tpu.googleapis.com",)))
    found = one(run(apis, needs, world), "fail", "tpu.googleapis.com")
    assert "serviceuser.services denies enabling it" in found.detail


def test_api_service_usage_does_not_know_fails(needs: Needs, world: World) -> None:
    world.services["file.googleapis.com"] = service_usage_v1.State.STATE_UNSPECIFIED
    assert "does not know it" in one(run(apis, needs, world), "fail", "file.googleapis").detail


def test_missing_permission_fails_with_the_role_that_grants_it(needs: Needs, world: World) -> None:
    required, unknown = permissions.required(needs)
    assert unknown == []
    world.granted = set(required) - {"compute.networks.create", "storage.buckets.setIamPolicy"}
    found = run(permissions, needs, world)
    compute = one(found, "fail", "compute.networks.create")
    assert compute.fix == "grant roles/compute.admin" and "Network" in compute.detail
    # Owner lacks bucket IAM on the project yet reaches it through legacy bucket roles.
    storage = one(found, "warn", "storage.buckets.setIamPolicy")
    assert "roles/storage.admin" in storage.fix
    asked = {p for call in world.called("test_iam_permissions") for p in call["permissions"]}
    assert asked == set(required)
    assert all(len(call["permissions"]) <= 100 for call in world.called("test_iam_permissions"))


def test_permission_the_api_refuses_is_a_preflight_fault(needs: Needs, world: World) -> None:
    from google.api_core import exceptions

    world.fail(
        "test_iam_permissions",
        exceptions.InvalidArgument("Permission resourcemanager.projects.list is not valid"),
    )
    found = one(run(permissions, needs, world), "fail", "testIamPermissions")
    assert "preflight/permissions.py" in found.fix


def test_permission_map_only_holds_real_permissions() -> None:
    """One unknown name fails testIamPermissions for all; each is service.resource.verb."""
    for type_, listed in permissions.PERMISSIONS.items():
        for permission in listed:
            service, resource, verb = permission.split(".")
            assert service and resource and verb, f"{type_}: {permission}"
            assert permissions.role_for(permission).startswith("roles/"), permission


def test_location_outside_the_allowed_fails(needs: Needs, world: World) -> None:
    world.policies["gcp.resourceLocations"] = policy(values(allowed=("in:us-east5-locations",)))
    found = run(org_policy, needs, world)
    failed = with_status(found, "fail")
    assert {f.subject for f in failed} == {
        f"gcp.resourceLocations for {p}" for p in ("us-central1", "us-central1-a", "us-central1-b")
    }
    assert "allowed values are in:us-east5-locations" in failed[0].detail


def test_location_group_preflight_cannot_expand_warns(needs: Needs, world: World) -> None:
    world.policies["gcp.resourceLocations"] = policy(values(allowed=("in:northamerica-locations",)))
    found = run(org_policy, needs, world)
    assert not with_status(found, "fail")
    assert "cannot expand" in one(found, "warn", "for us-central1-a").detail


def test_required_shielded_vm_blocks_gpu_clusters(needs: Needs, world: World) -> None:
    world.policies["compute.requireShieldedVm"] = policy(Rule(enforce=True))
    found = run(org_policy, needs, world)
    blocked = one(found, "fail", "InstanceGroupManager gpucluster-demo-mig")
    assert "without Secure Boot" in blocked.detail and "NVIDIA" in blocked.detail
    # GKE pools and the Slurm VMs keep Secure Boot on; TPU VMs may be held to it too.
    assert not [f for f in found if "NodePool" in f.subject]
    one(found, "warn", "tpuVms[0]")


def test_external_ips_denied_fail_the_vms_that_ask_for_them(needs: Needs, world: World) -> None:
    world.policies["compute.vmExternalIpAccess"] = policy(Rule(deny_all=True))
    assert not with_status(run(org_policy, needs, world), "fail"), "the plan uses none"
    public = [dataclasses.replace(n, external_ips=1) for n in needs.tpu_nodes]
    found = one(
        run(org_policy, dataclasses.replace(needs, tpu_nodes=tuple(public)), world),
        "fail",
        "tpuVms[0]",
    )
    assert "enablePublicIps: false" in found.fix


def test_os_login_turned_off_fails_where_enforced(needs: Needs, world: World) -> None:
    world.policies["compute.requireOsLogin"] = policy(Rule(enforce=True))
    assert "keeps OS Login on" in one(run(org_policy, needs, world), "ok", "requireOsLogin").line
    vms = [
        dataclasses.replace(v, metadata={"enable-oslogin": "FALSE"})
        if "slurm-login-login-0" in v.source
        else v
        for v in needs.vms
    ]
    found = run(org_policy, dataclasses.replace(needs, vms=tuple(vms)), world)
    assert "turns OS Login off" in one(found, "fail", "slurm-login-login-0").detail


def test_domain_restricted_sharing_names_the_members_granted(needs: Needs, world: World) -> None:
    world.policies["iam.allowedPolicyMemberDomains"] = policy(values(allowed=("C0abc123",)))
    found = one(run(org_policy, needs, world), "warn", "group:ml-research@example.com")
    assert "C0abc123" in found.detail


def test_not_enough_quota_fails_with_how_much_to_request(needs: Needs, world: World) -> None:
    (l4,) = [q for q in world.regions["us-central1"].quotas if q.metric == "NVIDIA_L4_GPUS"]
    l4.limit, l4.usage = 4, 2
    found = one(run(quota, needs, world), "fail", "nvidia-l4 GPUs in us-central1")
    assert found.line == (
        "nvidia-l4 GPUs in us-central1: need 6 (gpuPools[0]), quota 4 (NVIDIA_L4_GPUS), in use 2: "
        "request 4 more at https://console.cloud.google.com/iam-admin/quotas?project=ml-preflight"
    )


def _family_quota_instead_of_v5p(
    world: World, values: dict[tuple[tuple[str, str], ...], int]
) -> None:
    """The project has the per-family TPU quota, not the v5p one."""
    infos = world.quota_infos["compute.googleapis.com"]
    infos[:] = [i for i in infos if i.quota_id != "TPU-V5P-per-project-region"]
    family = "TPUS-PER-TPU-FAMILY-per-project-region"
    infos.append(quota_info("compute.googleapis.com", family, values))


def test_cloud_quota_below_the_plan_fails_without_usage(needs: Needs, world: World) -> None:
    region = ("region", "us-central1")
    _family_quota_instead_of_v5p(world, {(region, ("tpu_family", "CT5P")): 8, (region,): 0})
    found = one(run(quota, needs, world), "fail", "TPU v5p chips in us-central1")
    assert "need 32 (tpuProvisioner.quota.v5p-32), quota 8" in found.detail
    assert "request at least 24 more" in found.fix
    assert "quotas?id=TPUS-PER-TPU-FAMILY" in found.fix, "the quota's own request page"


def test_quota_the_project_does_not_have_cannot_be_checked(needs: Needs, world: World) -> None:
    infos = world.quota_infos["compute.googleapis.com"]
    infos[:] = [i for i in infos if "V6E" not in i.quota_id]
    infos.append(quota_info("compute.googleapis.com", "TPU-V6E-SLICES-per-project-region", {}))
    found = one(run(quota, needs, world), "warn", "Preemptible TPU v6e chips")
    assert found.detail.startswith("cannot check: the project has none of the quotas")
    assert "TPU-V6E-SLICES-per-project-region" in found.detail, "what the project has instead"


def test_gpu_preflight_knows_no_quota_for_is_said_so(needs: Needs, world: World) -> None:
    vms = [
        dataclasses.replace(v, gpus=(("nvidia-rtx-pro-6000", 1),)) if v.gpus else v
        for v in needs.vms
    ]
    found = run(quota, dataclasses.replace(needs, vms=tuple(vms)), world)
    unknown = one(found, "warn", "nvidia-rtx-pro-6000 GPUs in us-central1")
    assert "preflight knows no quota that governs it" in unknown.detail
    # The total still counts them against GPUS_ALL_REGIONS.
    assert "need 4 (gpuPools[0], gpuClusters[0])" in one(found, "ok", "GPUs in all").detail


def test_family_quota_without_an_entry_for_the_family_is_not_guessed(
    needs: Needs, world: World
) -> None:
    _family_quota_instead_of_v5p(world, {(("region", "us-central1"),): 0})
    one(run(quota, needs, world), "warn", "TPU v5p chips in us-central1: cannot check")


def _reservation(world: World) -> compute_v1.Reservation:
    return world.reservations[("capacity-pool", "us-central1-a", "v5p-held")]


def test_reservation_in_the_wrong_zone_fails(needs: Needs, world: World) -> None:
    moved = world.reservations.pop(("capacity-pool", "us-central1-a", "v5p-held"))
    world.reservations[("capacity-pool", "us-central1-b", "v5p-held")] = moved
    found = one(run(reservations, needs, world), "fail", "v5p-held")
    assert "not in us-central1-a; capacity-pool has it in us-central1-b" in found.detail
    assert "us-central1-b" in found.fix


def test_reservation_not_shared_fails(needs: Needs, world: World) -> None:
    _reservation(world).share_settings = compute_v1.ShareSettings(share_type="LOCAL")
    found = one(run(reservations, needs, world), "fail", "v5p-held")
    assert "not shared with ml-preflight" in found.detail
    assert "--add-share-with=ml-preflight" in found.fix


def test_reservation_of_another_shape_or_too_small_fails(needs: Needs, world: World) -> None:
    held = _reservation(world).specific_reservation
    held.instance_properties.machine_type = "ct6e-standard-4t"
    assert "holds ct6e-standard-4t" in one(run(reservations, needs, world), "fail", "v5p").detail
    held.instance_properties.machine_type = "ct5p-hightpu-4t"
    held.count = 1
    found = one(run(reservations, needs, world), "fail", "v5p-held")
    assert "1 x ct5p-hightpu-4t, 0 in use; need 2" in found.detail
    held.count, held.in_use_count = 3, 2
    assert "free them" in one(run(reservations, needs, world), "warn", "v5p-held").fix


def test_tpu_aggregate_reservation_is_read_by_family_and_chips(needs: Needs, world: World) -> None:
    info = compute_v1.AllocationAggregateReservationReservedResourceInfo
    accelerator = compute_v1.AllocationAggregateReservationReservedResourceInfoAccelerator
    reservation = _reservation(world)
    reservation.specific_reservation = compute_v1.AllocationSpecificSKUReservation()
    reservation.aggregate_reservation = compute_v1.AllocationAggregateReservation(
        vm_family="VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P",
        reserved_resources=[info(accelerator=accelerator(accelerator_count=8))],
    )
    assert (
        "8 CT5P chips, 0 in use; need 8" in one(run(reservations, needs, world), "ok", "v5p").line
    )
    reservation.aggregate_reservation.vm_family = "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E"
    one(run(reservations, needs, world), "fail", "reserves VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E")


def test_cloud_tpu_reservation_for_reserved_tpu_vms(needs: Needs, world: World) -> None:
    (queued, nodeset) = needs.tpu_nodes
    reserved = dataclasses.replace(
        queued,
        capacity="reservation",
        reservation=f"projects/{PROJECT}/locations/us-central1-a/reservations/tpu-r",
    )
    variant = dataclasses.replace(needs, tpu_nodes=(reserved, nodeset))
    assert "not found" in one(run(reservations, variant, world), "fail", "tpu-r").detail
    standard = tpu_v2alpha1.Reservation.Standard
    world.tpu_reservations[(PROJECT, "us-central1-a")] = [
        tpu_v2alpha1.Reservation(
            name=f"projects/{PROJECT}/locations/us-central1-a/reservations/tpu-r",
            state=tpu_v2alpha1.Reservation.State.ACTIVE,
            standard=standard(
                size=8, capacity_units=standard.CapacityUnits.CORES, usage=standard.Usage(total=0)
            ),
        )
    ]
    # Two v5p-8 slices are 16 cores; the reservation holds 8.
    found = one(run(reservations, variant, world), "fail", "tpu-r")
    assert "8 cores, 0 in use; need 16" in found.detail


def test_machine_not_offered_in_the_zone_fails(needs: Needs, world: World) -> None:
    del world.machine_types["us-central1-a"]["g2-standard-24"]
    world.machine_types["us-central1-c"]["g2-standard-24"] = 24
    found = one(run(zones, needs, world), "fail", "machine type g2-standard-24")
    assert "not offered in us-central1-a" in found.detail
    assert found.fix == "pick a zone that offers it: us-central1-c"
    # Its vCPUs cannot be counted for quota, and that is said rather than left out.
    one(run(quota, needs, world), "warn", "g2-standard-24 vCPUs: cannot count them")


def test_machine_missing_in_one_of_a_regional_pool_s_zones_warns(
    needs: Needs, world: World
) -> None:
    del world.machine_types["us-central1-f"]["e2-standard-8"]
    found = one(run(zones, needs, world), "warn", "e2-standard-8 in the zones of us-central1")
    assert "not offered in us-central1-f" in found.detail


def test_gpu_not_attachable_in_the_zone_fails(needs: Needs, world: World) -> None:
    world.accelerator_types["us-central1-a"]["nvidia-l4"] = 1
    found = one(run(zones, needs, world), "fail", "GPU nvidia-l4")
    assert "at most 1 per VM" in found.detail
    del world.accelerator_types["us-central1-a"]["nvidia-l4"]
    one(run(zones, needs, world), "fail", "GPU nvidia-l4 in us-central1-a: not offered")


def test_cloud_tpu_type_or_runtime_not_offered_fails(needs: Needs, world: World) -> None:
    world.runtimes["us-central1-b"] = ["tpu-ubuntu2204-base", "tpu-vm-tf-2.13.0"]
    found = one(run(zones, needs, world), "fail", "runtime tpu-vm-tf-2.14.0")
    assert found.fix == "use one it offers: tpu-vm-tf-2.13.0"
    world.tpu_types["us-central1-a"] = set()
    assert "offers no v5p-8" in one(run(zones, needs, world), "fail", "v5p-8").detail


def test_image_missing_or_deprecated(needs: Needs, world: World) -> None:
    dlvm = next(k for k in world.families if k[0] == "deeplearning-platform-release")
    world.families[dlvm].deprecated = compute_v1.DeprecationStatus(
        state="DEPRECATED", replacement="pytorch-2-10"
    )
    assert "move to pytorch-2-10" in one(run(zones, needs, world), "warn", "pytorch").fix
    del world.families[dlvm]
    assert "does not exist" in one(run(zones, needs, world), "fail", "pytorch").detail


def _channel(needs: Needs, channel: str, floor: str | None = None) -> Needs:
    (cluster,) = needs.clusters
    return dataclasses.replace(
        needs, clusters=(dataclasses.replace(cluster, channel=channel, floor=floor),)
    )


def test_gke_version_below_a_family_minimum_fails(needs: Needs, world: World) -> None:
    config = world.server_configs["us-central1"]
    config.default_cluster_version = "1.32.9-gke.100"
    # The stack's v6e pool as flex-start (which the stack itself cannot have beside the TPU
    # provisioner): flex-start TPU pools need a newer GKE than v6e itself.
    flexed = dataclasses.replace(
        needs,
        vms=tuple(
            dataclasses.replace(v, capacity="flex-start") if "tpu-v6e-0" in v.source else v
            for v in needs.vms
        ),
    )
    assert flexed.flex_start_tpus
    found = one(run(gke, flexed, world), "fail", "flex-start TPU pools need 1.33.0-gke.1712000")
    assert "the cluster would get 1.32.9-gke.100" in found.detail
    assert 'cluster.version: "1.33.0"' in found.fix


def test_gke_channel_and_floor_must_be_offered(needs: Needs, world: World) -> None:
    assert "1.34.1-gke.1000" in one(run(gke, _channel(needs, "REGULAR"), world), "ok", "GKE").line
    one(run(gke, _channel(needs, "RAPID"), world), "fail", "no RAPID channel in us-central1")
    found = one(run(gke, _channel(needs, "REGULAR", "1.35"), world), "fail", "offers no 1.35")
    assert "1.34.1-gke.1000" in found.detail
    floor = one(run(gke, _channel(needs, "REGULAR", "1.33"), world), "ok", "GKE")
    assert "1.33.5-gke.1200 (the newest 1.33 on REGULAR)" in floor.detail


def test_gke_image_type_not_offered_fails(needs: Needs, world: World) -> None:
    world.server_configs["us-central1"].valid_image_types[:] = ["UBUNTU_CONTAINERD"]
    one(run(gke, needs, world), "fail", "node image type COS_CONTAINERD")


def test_bucket_name_taken_fails(needs: Needs, world: World) -> None:
    data, slurm = (name for _, name in needs.buckets)
    world.buckets[data] = bucket(data, "999")
    world.buckets[slurm] = FORBIDDEN
    found = run(buckets, needs, world)
    assert "taken by project number 999" in one(found, "fail", data).detail
    assert "may not read it" in one(found, "fail", slurm).detail
    world.buckets[data] = bucket(data, world.number)
    assert "already this project's" in one(run(buckets, needs, world), "ok", data).detail


# Spot quota as Compute Engine charges it


def _spot_gpus(needs: Needs) -> Needs:
    """The GPU pool on Spot: its L4s and G2 vCPUs are preemptible."""
    vms = [
        dataclasses.replace(v, capacity="spot") if "gpu-l4-pool" in v.source else v
        for v in needs.vms
    ]
    return dataclasses.replace(needs, vms=tuple(vms))


def test_spot_vms_draw_on_standard_quota_where_no_preemptible_quota_is_granted(
    needs: Needs, world: World
) -> None:
    found = run(quota, _spot_gpus(needs), world)
    # PREEMPTIBLE_NVIDIA_L4_GPUS is not listed: the six Spot L4s count against NVIDIA_L4_GPUS.
    l4 = one(found, "ok", "GPUs in us-central1: need 6 (gpuPools[0]), quota 8")
    assert "no preemptible quota granted, so Spot VMs draw on NVIDIA_L4_GPUS" in l4.detail
    # And the G2 vCPUs, with no PREEMPTIBLE_CPUS, against the G2 family quota.
    g2 = one(found, "warn", "Preemptible G2 vCPUs in us-central1")
    assert "draw on CPUS-PER-VM-FAMILY-per-project-region" in g2.detail


def test_spot_vms_draw_on_preemptible_quota_where_it_is_granted(needs: Needs, world: World) -> None:
    world.regions["us-central1"].quotas.extend(
        [quota_("PREEMPTIBLE_NVIDIA_L4_GPUS", 4), quota_("PREEMPTIBLE_CPUS", 200)]
    )
    found = run(quota, _spot_gpus(needs), world)
    failed = one(found, "fail", "Preemptible nvidia-l4 GPUs in us-central1")
    assert "need 6 (gpuPools[0]), quota 4 (PREEMPTIBLE_NVIDIA_L4_GPUS)" in failed.detail
    ok_ = one(found, "ok", "Preemptible G2 vCPUs in us-central1")
    assert "need 72 (gpuPools[0]), quota 200 (PREEMPTIBLE_CPUS)" in ok_.detail
    # A preemptible quota granted at zero is none: standard quota again.
    for q in world.regions["us-central1"].quotas:
        if q.metric == "PREEMPTIBLE_NVIDIA_L4_GPUS":
            q.limit = 0
    found = run(quota, _spot_gpus(needs), world)
    one(found, "ok", "draw on NVIDIA_L4_GPUS")


def test_reserved_tpu_vms_draw_on_on_demand_cloud_tpu_quota(needs: Needs, world: World) -> None:
    (queued, nodeset) = needs.tpu_nodes
    reserved = dataclasses.replace(queued, capacity="reservation")
    found = run(quota, dataclasses.replace(needs, tpu_nodes=(reserved, nodeset)), world)
    zonal = one(found, "warn", "TPU v5p TensorCores (Cloud TPU API, per zone)")
    assert not zonal.subject.startswith("Preemptible")
    assert zonal.detail.startswith("cannot check: ")
    assert zonal.detail.endswith("need 16 TensorCores (tpuVms[0])")


def test_compute_listing_no_quotas_is_said_as_such(needs: Needs, world: World) -> None:
    del world.regions["us-central1"].quotas[:]
    found = run(quota, needs, world)
    l4 = one(found, "warn", "nvidia-l4 GPUs in us-central1")
    assert "Compute Engine returned no quotas for us-central1 at all" in l4.detail
    assert "the project has none of the quotas" not in l4.detail


# The org policies that commonly block this plan


def test_service_account_creation_disabled_fails(needs: Needs, world: World) -> None:
    world.policies["iam.disableServiceAccountCreation"] = policy(Rule(enforce=True))
    failed = one(run(org_policy, needs, world), "fail", "iam.disableServiceAccountCreation")
    created = dict(needs.types)["gcp:serviceaccount/account:Account"]
    assert f"creates {created} service accounts" in failed.detail


def test_untrusted_image_projects_fail_with_who_boots_them(needs: Needs, world: World) -> None:
    world.policies["compute.trustedImageProjects"] = policy(
        values(allowed=("projects/gke-node-images", "projects/schedmd-slurm-public"))
    )
    found = run(org_policy, needs, world)
    failed = one(found, "fail", "compute.trustedImageProjects for projects/deeplearning")
    assert "gpuClusters[0]" in failed.detail
    # GKE's node images and SchedMD's are allowed.
    assert not [f for f in found if "gke-node-images" in f.subject or "schedmd" in f.subject]


def test_cloud_nat_restricted_to_other_subnets_fails(needs: Needs, world: World) -> None:
    other = "projects/ml-preflight/regions/us-central1/subnetworks/other"
    world.policies["compute.restrictCloudNATUsage"] = policy(values(allowed=(other,)))
    failed = one(run(org_policy, needs, world), "fail", "compute.restrictCloudNATUsage for")
    assert failed.subject.endswith("subnetworks/ai-preflight-subnet")
    assert "RouterNat network-nat" in failed.detail
    world.policies["compute.restrictCloudNATUsage"] = policy(
        values(allowed=("under:projects/ml-preflight",))
    )
    one(run(org_policy, needs, world), "ok", "compute.restrictCloudNATUsage")


def test_a_service_the_project_may_not_use_fails(needs: Needs, world: World) -> None:
    world.policies["gcp.restrictServiceUsage"] = policy(values(denied=("tpu.googleapis.com",)))
    failed = one(run(org_policy, needs, world), "fail", "gcp.restrictServiceUsage for")
    assert failed.subject.endswith("tpu.googleapis.com") and "denied by" in failed.detail


def _publishing_nothing(machines: Machines) -> Machines:
    metadata = {k: v for k, v in machines.metadata.items() if k != "enable-guest-attributes"}
    return dataclasses.replace(machines, metadata=metadata)


def test_guest_attributes_disabled_warns_for_tpu_vms_and_fails_the_readiness_waits(
    needs: Needs, world: World
) -> None:
    """The stack's GPU clusters and TPU VMs publish their readiness as guest attributes (issue
    30), so the constraint fails them; Slurm's TPU VMs publish nothing and only warn."""
    world.policies["compute.disableGuestAttributesAccess"] = policy(Rule(enforce=True))
    found = [f for f in run(org_policy, needs, world) if "GuestAttributes" in f.subject]
    by_status = {
        status: sorted(
            f.subject.split(" for ")[1].split(" ")[0] for f in with_status(found, status)
        )
        for status in ("warn", "fail")
    }
    assert by_status == {
        "warn": ["slurm.tpuNodesets[0]"],
        "fail": ["gpuClusters[0]", "tpuVms[0]"],
    }


def test_guest_attributes_disabled_fails_only_vms_that_publish_them(
    needs: Needs, world: World
) -> None:
    """A VM that sets enable-guest-attributes (a readiness signal, issue 30) cannot write them
    under the constraint: that is a refusal of the plan, not a warning; without the key, no
    refusal."""
    world.policies["compute.disableGuestAttributesAccess"] = policy(Rule(enforce=True))
    group = next(vm for vm in needs.vms if vm.config_key.startswith("gpuClusters"))
    found = run(org_policy, needs, world)
    failed = one(found, "fail", f"compute.disableGuestAttributesAccess for {group.source}")
    assert "enable-guest-attributes=TRUE" in failed.detail
    quiet = dataclasses.replace(
        needs,
        vms=tuple(_publishing_nothing(vm) for vm in needs.vms),
        tpu_nodes=tuple(_publishing_nothing(n) for n in needs.tpu_nodes),
    )
    assert not with_status(run(org_policy, quiet, world), "fail")
