"""Fake Google clients for preflight, answering with the libraries' own types from a `World`: a
project as its APIs would describe it. `World.fail(method, *errors)` makes a method raise those
errors, one per call, before it answers again. Nothing here reaches a network."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from google.api_core import exceptions
from google.cloud import (
    billing_v1,
    cloudquotas_v1,
    compute_v1,
    container_v1,
    orgpolicy_v2,
    resourcemanager_v3,
    service_usage_v1,
    storage,
    tpu_v2alpha1,
)
from google.iam.v1 import iam_policy_pb2
from google.rpc import error_details_pb2

from preflight.live import Clients

FORBIDDEN = "forbidden"
"""A bucket that exists and that the caller may not read."""


def service_disabled(service: str, number: str) -> exceptions.PermissionDenied:
    """The 403 a call into a disabled API answers, with its google.rpc.ErrorInfo."""
    return exceptions.PermissionDenied(
        f"{service} has not been used in project {number} before or it is disabled.",
        error_info=error_details_pb2.ErrorInfo(
            reason="SERVICE_DISABLED",
            domain="googleapis.com",
            metadata={
                "service": service,
                "consumer": f"projects/{number}",
                "activationUrl": f"https://console.developers.google.com/apis/api/{service}/overview?project={number}",
            },
        ),
    )


def quota(metric: str, limit: float, usage: float = 0.0) -> compute_v1.Quota:
    return compute_v1.Quota(metric=metric, limit=limit, usage=usage)


def quota_info(
    service: str,
    quota_id: str,
    values: dict[tuple[tuple[str, str], ...], int],
    display_name: str = "",
) -> cloudquotas_v1.QuotaInfo:
    """A Cloud Quotas QuotaInfo with one DimensionsInfo per key (dimension pairs), most
    specific first as the API orders them."""
    ordered = sorted(values.items(), key=lambda item: -len(item[0]))
    return cloudquotas_v1.QuotaInfo(
        name=f"projects/1/locations/global/services/{service}/quotaInfos/{quota_id}",
        quota_id=quota_id,
        service=service,
        quota_display_name=display_name,
        service_request_quota_uri=f"https://console.cloud.google.com/quotas?id={quota_id}",
        dimensions_infos=[
            cloudquotas_v1.DimensionsInfo(
                dimensions=dict(dims),
                details=cloudquotas_v1.QuotaDetails(value=value),
                applicable_locations=[v for k, v in dims if k in ("region", "zone")],
            )
            for dims, value in ordered
        ],
    )


@dataclass
class World:
    """One project, as its Google APIs would describe it."""

    project: str
    number: str = "123456789012"
    state: resourcemanager_v3.Project.State = resourcemanager_v3.Project.State.ACTIVE
    billing_enabled: bool = True
    services: dict[str, service_usage_v1.State] = field(default_factory=dict)
    granted: set[str] | None = None
    """Permissions the caller holds; None: every one asked about."""
    regions: dict[str, compute_v1.Region] = field(default_factory=dict)
    global_quotas: list[compute_v1.Quota] = field(default_factory=list)
    reservations: dict[tuple[str, str, str], compute_v1.Reservation] = field(default_factory=dict)
    machine_types: dict[str, dict[str, int]] = field(default_factory=dict)
    """Zone -> machine type -> vCPUs."""
    accelerator_types: dict[str, dict[str, int]] = field(default_factory=dict)
    """Zone -> GPU type -> most per VM."""
    images: dict[tuple[str, str], compute_v1.Image] = field(default_factory=dict)
    families: dict[tuple[str, str], compute_v1.Image] = field(default_factory=dict)
    tpu_types: dict[str, set[str]] = field(default_factory=dict)
    runtimes: dict[str, list[str]] = field(default_factory=dict)
    tpu_reservations: dict[tuple[str, str], list[tpu_v2alpha1.Reservation]] = field(
        default_factory=dict
    )
    server_configs: dict[str, container_v1.ServerConfig] = field(default_factory=dict)
    quota_infos: dict[str, list[cloudquotas_v1.QuotaInfo]] = field(default_factory=dict)
    policies: dict[str, orgpolicy_v2.Policy] = field(default_factory=dict)
    buckets: dict[str, storage.Bucket | str] = field(default_factory=dict)
    errors: dict[str, list[Exception]] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def fail(self, method: str, *errors: Exception) -> None:
        self.errors.setdefault(method, []).extend(errors)

    def called(self, method: str) -> list[dict[str, Any]]:
        return [kwargs for name, kwargs in self.calls if name == method]

    def answer(self, method: str, kwargs: dict[str, Any]) -> None:
        """Record the call; raise the next scheduled error of the method, if any."""
        assert kwargs.get("retry", "unset") is None, f"{method} ran with Google's own retry"
        self.calls.append((method, kwargs))
        pending = self.errors.get(method)
        if pending:
            raise pending.pop(0)

    def clients(self) -> Clients:
        return Clients(
            projects=_Projects(self),
            billing=_Billing(self),
            service_usage=_ServiceUsage(self),
            regions=_Regions(self),
            compute_projects=_ComputeProjects(self),
            reservations=_Reservations(self),
            machine_types=_MachineTypes(self),
            accelerator_types=_AcceleratorTypes(self),
            images=_Images(self),
            tpu=_Tpu(self),
            clusters=_Clusters(self),
            quotas=_Quotas(self),
            org_policy=_OrgPolicy(self),
            storage=_Storage(self),
        )


def _not_found(what: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"The resource '{what}' was not found")


@dataclass
class _Fake:
    world: World


class _Projects(_Fake):
    def get_project(self, *, name: str, retry: Any, timeout: float) -> resourcemanager_v3.Project:
        self.world.answer("get_project", {"name": name, "retry": retry})
        return resourcemanager_v3.Project(
            name=f"projects/{self.world.number}",
            project_id=self.world.project,
            state=self.world.state,
        )

    def test_iam_permissions(
        self, *, resource: str, permissions: list[str], retry: Any, timeout: float
    ) -> iam_policy_pb2.TestIamPermissionsResponse:
        self.world.answer(
            "test_iam_permissions",
            {"resource": resource, "permissions": permissions, "retry": retry},
        )
        held = self.world.granted
        return iam_policy_pb2.TestIamPermissionsResponse(
            permissions=[p for p in permissions if held is None or p in held]
        )


class _Billing(_Fake):
    def get_project_billing_info(
        self, *, name: str, retry: Any, timeout: float
    ) -> billing_v1.ProjectBillingInfo:
        self.world.answer("get_project_billing_info", {"name": name, "retry": retry})
        return billing_v1.ProjectBillingInfo(
            name=f"{name}/billingInfo",
            project_id=self.world.project,
            billing_account_name="billingAccounts/0X0X0X-0X0X0X-0X0X0X"
            if self.world.billing_enabled
            else "",
            billing_enabled=self.world.billing_enabled,
        )


class _ServiceUsage(_Fake):
    def batch_get_services(
        self, *, request: service_usage_v1.BatchGetServicesRequest, retry: Any, timeout: float
    ) -> service_usage_v1.BatchGetServicesResponse:
        self.world.answer("batch_get_services", {"request": request, "retry": retry})
        assert len(request.names) <= 30, "Service Usage takes at most 30 names per request"
        services = []
        for name in request.names:
            short = name.rsplit("/", 1)[-1]
            state = self.world.services.get(short, service_usage_v1.State.ENABLED)
            if state != service_usage_v1.State.STATE_UNSPECIFIED:
                services.append(service_usage_v1.Service(name=name, state=state))
        return service_usage_v1.BatchGetServicesResponse(services=services)


class _Regions(_Fake):
    def get(self, *, project: str, region: str, retry: Any, timeout: float) -> compute_v1.Region:
        self.world.answer("regions.get", {"project": project, "region": region, "retry": retry})
        if region not in self.world.regions:
            raise _not_found(f"projects/{project}/regions/{region}")
        return self.world.regions[region]


class _ComputeProjects(_Fake):
    def get(self, *, project: str, retry: Any, timeout: float) -> compute_v1.Project:
        self.world.answer("compute_projects.get", {"project": project, "retry": retry})
        return compute_v1.Project(name=project, quotas=self.world.global_quotas)


class _Reservations(_Fake):
    def get(
        self, *, project: str, zone: str, reservation: str, retry: Any, timeout: float
    ) -> compute_v1.Reservation:
        self.world.answer("reservations.get", {"project": project, "zone": zone, "retry": retry})
        found = self.world.reservations.get((project, zone, reservation))
        if found is None:
            raise _not_found(f"projects/{project}/zones/{zone}/reservations/{reservation}")
        return found

    def aggregated_list(
        self, *, request: compute_v1.AggregatedListReservationsRequest, retry: Any, timeout: float
    ) -> Iterable[tuple[str, compute_v1.ReservationsScopedList]]:
        self.world.answer("reservations.aggregated_list", {"request": request, "retry": retry})
        scopes: dict[str, list[compute_v1.Reservation]] = {}
        for (project, zone, _), reservation in self.world.reservations.items():
            if project == request.project:
                scopes.setdefault(f"zones/{zone}", []).append(reservation)
        return [
            (scope, compute_v1.ReservationsScopedList(reservations=found))
            for scope, found in scopes.items()
        ]


class _MachineTypes(_Fake):
    def get(
        self, *, project: str, zone: str, machine_type: str, retry: Any, timeout: float
    ) -> compute_v1.MachineType:
        self.world.answer("machine_types.get", {"zone": zone, "name": machine_type, "retry": retry})
        cpus = self.world.machine_types.get(zone, {}).get(machine_type)
        if cpus is None:
            raise _not_found(f"projects/{project}/zones/{zone}/machineTypes/{machine_type}")
        return compute_v1.MachineType(name=machine_type, zone=zone, guest_cpus=cpus)

    def aggregated_list(
        self, *, request: compute_v1.AggregatedListMachineTypesRequest, retry: Any, timeout: float
    ) -> Iterable[tuple[str, compute_v1.MachineTypesScopedList]]:
        self.world.answer("machine_types.aggregated_list", {"request": request, "retry": retry})
        return [
            (
                f"zones/{zone}",
                compute_v1.MachineTypesScopedList(
                    machine_types=[
                        compute_v1.MachineType(name=name, guest_cpus=cpus)
                        for name, cpus in types.items()
                    ]
                ),
            )
            for zone, types in self.world.machine_types.items()
        ]


class _AcceleratorTypes(_Fake):
    def get(
        self, *, project: str, zone: str, accelerator_type: str, retry: Any, timeout: float
    ) -> compute_v1.AcceleratorType:
        self.world.answer("accelerator_types.get", {"zone": zone, "retry": retry})
        most = self.world.accelerator_types.get(zone, {}).get(accelerator_type)
        if most is None:
            raise _not_found(f"projects/{project}/zones/{zone}/acceleratorTypes/{accelerator_type}")
        return compute_v1.AcceleratorType(
            name=accelerator_type, maximum_cards_per_instance=most, zone=zone
        )


class _Images(_Fake):
    def get(self, *, project: str, image: str, retry: Any, timeout: float) -> compute_v1.Image:
        self.world.answer("images.get", {"project": project, "image": image, "retry": retry})
        if (project, image) not in self.world.images:
            raise _not_found(f"projects/{project}/global/images/{image}")
        return self.world.images[(project, image)]

    def get_from_family(
        self, *, project: str, family: str, retry: Any, timeout: float
    ) -> compute_v1.Image:
        self.world.answer("images.get_from_family", {"family": family, "retry": retry})
        if (project, family) not in self.world.families:
            raise _not_found(f"projects/{project}/global/images/family/{family}")
        return self.world.families[(project, family)]


class _Tpu(_Fake):
    def get_accelerator_type(
        self, *, name: str, retry: Any, timeout: float
    ) -> tpu_v2alpha1.AcceleratorType:
        self.world.answer("tpu.get_accelerator_type", {"name": name, "retry": retry})
        zone, accelerator = name.split("/")[3], name.rsplit("/", 1)[-1]
        if accelerator not in self.world.tpu_types.get(zone, set()):
            raise _not_found(name)
        return tpu_v2alpha1.AcceleratorType(name=name, type_=accelerator)

    def list_runtime_versions(
        self, *, parent: str, retry: Any, timeout: float
    ) -> Iterable[tpu_v2alpha1.RuntimeVersion]:
        self.world.answer("tpu.list_runtime_versions", {"parent": parent, "retry": retry})
        zone = parent.rsplit("/", 1)[-1]
        return [
            tpu_v2alpha1.RuntimeVersion(name=f"{parent}/runtimeVersions/{v}", version=v)
            for v in self.world.runtimes.get(zone, [])
        ]

    def list_reservations(
        self, *, request: tpu_v2alpha1.ListReservationsRequest, retry: Any, timeout: float
    ) -> Iterable[tpu_v2alpha1.Reservation]:
        self.world.answer("tpu.list_reservations", {"request": request, "retry": retry})
        _, owner, _, zone = request.parent.split("/")
        return list(self.world.tpu_reservations.get((owner, zone), []))


class _Clusters(_Fake):
    def get_server_config(
        self, *, name: str, retry: Any, timeout: float
    ) -> container_v1.ServerConfig:
        self.world.answer("get_server_config", {"name": name, "retry": retry})
        location = name.rsplit("/", 1)[-1]
        if location not in self.world.server_configs:
            raise exceptions.InvalidArgument(f"Location {location} is not found or invalid.")
        return self.world.server_configs[location]


class _Quotas(_Fake):
    def list_quota_infos(
        self, *, parent: str, retry: Any, timeout: float
    ) -> Iterable[cloudquotas_v1.QuotaInfo]:
        self.world.answer("list_quota_infos", {"parent": parent, "retry": retry})
        assert parent.startswith(f"projects/{self.world.number}/"), parent
        return list(self.world.quota_infos.get(parent.rsplit("/", 1)[-1], []))


class _OrgPolicy(_Fake):
    def get_effective_policy(self, *, name: str, retry: Any, timeout: float) -> orgpolicy_v2.Policy:
        self.world.answer("get_effective_policy", {"name": name, "retry": retry})
        constraint = name.rsplit("/", 1)[-1]
        return self.world.policies.get(constraint, orgpolicy_v2.Policy(name=name))


class _Storage(_Fake):
    def lookup_bucket(self, bucket_name: str, *, timeout: Any, retry: Any) -> storage.Bucket | None:
        self.world.answer("lookup_bucket", {"name": bucket_name, "retry": retry})
        found = self.world.buckets.get(bucket_name)
        if found == FORBIDDEN:
            raise exceptions.Forbidden(
                f"caller does not have storage.buckets.get access to the bucket {bucket_name}"
            )
        assert not isinstance(found, str)
        return found


def bucket(name: str, project_number: str) -> storage.Bucket:
    """A bucket as `lookup_bucket` returns it, with its owning project's number."""
    found = storage.Bucket(client=None, name=name)  # type: ignore[arg-type]
    found._set_properties({"name": name, "projectNumber": project_number})
    return found
