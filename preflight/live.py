"""The live project, read through Google's official clients: each read retried on transient
errors by a policy of our own (several methods have no default retry, and a fake client has
none), its answer cached, and its failure turned into `CannotCheck` with what could not be read
and why. Checks receive library types (`compute_v1.Region`, `cloudquotas_v1.QuotaInfo`) and
never see a transport.

Read-only: nothing here creates, changes or deletes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from google.api_core import exceptions
from google.api_core.retry import Retry, if_exception_type
from google.auth import exceptions as auth_exceptions
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

T = TypeVar("T")

TRANSIENT = if_exception_type(
    exceptions.InternalServerError,
    exceptions.BadGateway,
    exceptions.ServiceUnavailable,
    exceptions.GatewayTimeout,
    exceptions.TooManyRequests,
    exceptions.DeadlineExceeded,
    auth_exceptions.TransportError,
)
"""What is worth asking again: 5xx, 429, timeouts and a dropped connection. Google's own
defaults differ per method and some have none (resourcemanager `test_iam_permissions`, Service
Usage, Cloud TPU `list_*`), so every call here runs with `retry=None` inside this policy."""
BATCH_SERVICES = 30
"""`BatchGetServicesRequest.names`: "A single request can get a maximum of 30 services"."""
BATCH_PERMISSIONS = 100
"""testIamPermissions batches; the API documents no maximum, so stay well under any."""


def retry_policy(initial: float = 1.0, maximum: float = 10.0, deadline: float = 60.0) -> Retry:
    return Retry(
        predicate=TRANSIENT, initial=initial, maximum=maximum, multiplier=2.0, timeout=deadline
    )


class CannotCheck(Exception):
    """A read that failed for a reason other than the answer (permission denied, API disabled,
    errors that outlasted the retries); the message says what and how to fix it."""


class InvalidRequest(CannotCheck):
    """The API refused the request itself (400): a fault of preflight's, not of the project."""


class CredentialsError(Exception):
    """The Application Default Credentials were refused mid-run."""


# What each check calls on each client; the official clients fit, and tests pass fakes.


class ProjectsApi(Protocol):
    def get_project(
        self, *, name: str, retry: Any, timeout: float
    ) -> resourcemanager_v3.Project: ...

    def test_iam_permissions(
        self, *, resource: str, permissions: list[str], retry: Any, timeout: float
    ) -> iam_policy_pb2.TestIamPermissionsResponse: ...


class BillingApi(Protocol):
    def get_project_billing_info(
        self, *, name: str, retry: Any, timeout: float
    ) -> billing_v1.ProjectBillingInfo: ...


class ServiceUsageApi(Protocol):
    def batch_get_services(
        self, *, request: service_usage_v1.BatchGetServicesRequest, retry: Any, timeout: float
    ) -> service_usage_v1.BatchGetServicesResponse: ...


class RegionsApi(Protocol):
    def get(
        self, *, project: str, region: str, retry: Any, timeout: float
    ) -> compute_v1.Region: ...


class ComputeProjectsApi(Protocol):
    def get(self, *, project: str, retry: Any, timeout: float) -> compute_v1.Project: ...


class ReservationsApi(Protocol):
    def get(
        self, *, project: str, zone: str, reservation: str, retry: Any, timeout: float
    ) -> compute_v1.Reservation: ...

    def aggregated_list(
        self,
        *,
        request: compute_v1.AggregatedListReservationsRequest,
        retry: Any,
        timeout: float,
    ) -> Iterable[tuple[str, compute_v1.ReservationsScopedList]]: ...


class MachineTypesApi(Protocol):
    def get(
        self, *, project: str, zone: str, machine_type: str, retry: Any, timeout: float
    ) -> compute_v1.MachineType: ...

    def aggregated_list(
        self,
        *,
        request: compute_v1.AggregatedListMachineTypesRequest,
        retry: Any,
        timeout: float,
    ) -> Iterable[tuple[str, compute_v1.MachineTypesScopedList]]: ...


class AcceleratorTypesApi(Protocol):
    def get(
        self, *, project: str, zone: str, accelerator_type: str, retry: Any, timeout: float
    ) -> compute_v1.AcceleratorType: ...


class ImagesApi(Protocol):
    def get(self, *, project: str, image: str, retry: Any, timeout: float) -> compute_v1.Image: ...

    def get_from_family(
        self, *, project: str, family: str, retry: Any, timeout: float
    ) -> compute_v1.Image: ...


class TpuApi(Protocol):
    def get_accelerator_type(
        self, *, name: str, retry: Any, timeout: float
    ) -> tpu_v2alpha1.AcceleratorType: ...

    def list_runtime_versions(
        self, *, parent: str, retry: Any, timeout: float
    ) -> Iterable[tpu_v2alpha1.RuntimeVersion]: ...

    def list_reservations(
        self, *, request: tpu_v2alpha1.ListReservationsRequest, retry: Any, timeout: float
    ) -> Iterable[tpu_v2alpha1.Reservation]: ...


class ClusterManagerApi(Protocol):
    def get_server_config(
        self, *, name: str, retry: Any, timeout: float
    ) -> container_v1.ServerConfig: ...


class QuotasApi(Protocol):
    def list_quota_infos(
        self, *, parent: str, retry: Any, timeout: float
    ) -> Iterable[cloudquotas_v1.QuotaInfo]: ...


class OrgPolicyApi(Protocol):
    def get_effective_policy(
        self, *, name: str, retry: Any, timeout: float
    ) -> orgpolicy_v2.Policy: ...


class StorageApi(Protocol):
    def lookup_bucket(
        self, bucket_name: str, *, timeout: Any, retry: Any
    ) -> storage.Bucket | None: ...


@dataclass(frozen=True)
class Clients:
    """One client per Google API preflight reads."""

    projects: ProjectsApi
    billing: BillingApi
    service_usage: ServiceUsageApi
    regions: RegionsApi
    compute_projects: ComputeProjectsApi
    reservations: ReservationsApi
    machine_types: MachineTypesApi
    accelerator_types: AcceleratorTypesApi
    images: ImagesApi
    tpu: TpuApi
    clusters: ClusterManagerApi
    quotas: QuotasApi
    org_policy: OrgPolicyApi
    storage: StorageApi

    @classmethod
    def connect(cls, credentials: Any, project: str) -> Clients:
        """The official clients on one set of credentials, billing quota to `project`."""
        options = {"quota_project_id": project}
        common: dict[str, Any] = {"credentials": credentials, "client_options": options}
        return cls(
            projects=resourcemanager_v3.ProjectsClient(**common),
            billing=billing_v1.CloudBillingClient(**common),
            service_usage=service_usage_v1.ServiceUsageClient(**common),
            regions=compute_v1.RegionsClient(**common),
            compute_projects=compute_v1.ProjectsClient(**common),
            reservations=compute_v1.ReservationsClient(**common),
            machine_types=compute_v1.MachineTypesClient(**common),
            accelerator_types=compute_v1.AcceleratorTypesClient(**common),
            images=compute_v1.ImagesClient(**common),
            tpu=tpu_v2alpha1.TpuClient(**common),
            clusters=container_v1.ClusterManagerClient(**common),
            quotas=cloudquotas_v1.CloudQuotasClient(**common),
            org_policy=orgpolicy_v2.OrgPolicyClient(**common),
            storage=storage.Client(project=project, credentials=credentials),
        )


def service_disabled(error: exceptions.GoogleAPICallError) -> bool:
    """A 403 whose google.rpc.ErrorInfo says the API is off in the calling project."""
    return error.reason == "SERVICE_DISABLED"


def _denied(what: str, permission: str, error: exceptions.GoogleAPICallError) -> str:
    if service_disabled(error):
        metadata = error.metadata or {}
        service = metadata.get("service", "the API")
        where = metadata.get("consumer", "the quota project")
        how = metadata.get("activationUrl") or f"gcloud services enable {service}"
        return f"cannot read {what}: {service} is disabled in {where}; enable it ({how})"
    needs = f"; the identity needs {permission}" if permission else ""
    return f"cannot read {what}: permission denied{needs} ({error.message})"


class Live:
    """Reads of one project, each at most once."""

    def __init__(
        self,
        project: str,
        clients: Clients,
        retry: Retry | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.project = project
        self.clients = clients
        self._retry = retry or retry_policy()
        self._timeout = timeout
        self._cache: dict[tuple[Any, ...], Any] = {}
        self._held: dict[str, bool] = {}
        """Each permission testIamPermissions was asked about: whether the caller holds it."""

    def _call(
        self,
        what: str,
        permission: str,
        call: Callable[..., T],
        *,
        forbidden_answers: bool = False,
        **kwargs: Any,
    ) -> T:
        """`call(**kwargs)` under our retry policy. NotFound passes through for the caller to
        read as an answer, and so does Forbidden where it is one (`forbidden_answers`, unless
        the API is disabled); every other failure becomes `CannotCheck`."""
        wrapped = self._retry(lambda: call(**kwargs, retry=None, timeout=self._timeout))
        try:
            return wrapped()
        except exceptions.NotFound:
            raise
        except (exceptions.Unauthenticated, auth_exceptions.RefreshError) as error:
            raise CredentialsError(str(error)) from None
        except exceptions.Forbidden as error:
            if forbidden_answers and not service_disabled(error):
                raise
            raise CannotCheck(_denied(what, permission, error)) from None
        except exceptions.RetryError as error:
            raise CannotCheck(
                f"cannot read {what}: {error.cause} (still failing after retries)"
            ) from None
        except exceptions.BadRequest as error:
            raise InvalidRequest(f"{what}: {error.message}") from None
        except exceptions.GoogleAPICallError as error:
            raise CannotCheck(f"cannot read {what}: {error.code} {error.message}") from None

    def _read(
        self,
        key: tuple[Any, ...],
        what: str,
        permission: str,
        call: Callable[..., T],
        **kwargs: Any,
    ) -> T:
        """`_call(...)`, once per key: a `CannotCheck` or NotFound is kept too and raised
        again, so a failed read is reported wherever it was needed, never asked twice."""
        if key not in self._cache:
            try:
                self._cache[key] = self._call(what, permission, call, **kwargs)
            except (CannotCheck, exceptions.NotFound) as error:
                self._cache[key] = error
        value = self._cache[key]
        if isinstance(value, (CannotCheck, exceptions.NotFound)):
            raise value
        return value

    def _find(
        self,
        key: tuple[Any, ...],
        what: str,
        permission: str,
        call: Callable[..., T],
        **kwargs: Any,
    ) -> T | None:
        """`_read(...)`, with NotFound as None."""
        try:
            return self._read(key, what, permission, call, **kwargs)
        except exceptions.NotFound:
            return None

    @staticmethod
    def _all(method: Callable[..., Iterable[T]]) -> Callable[..., list[T]]:
        """A list method whose pages are all read inside the retried call."""
        return lambda **kwargs: list(method(**kwargs))

    # Resource Manager and billing

    def project_info(self) -> resourcemanager_v3.Project:
        """The project; one that does not exist answers 403, which is `CannotCheck`."""
        return self._read(
            ("project",),
            f"project {self.project}",
            "resourcemanager.projects.get",
            self.clients.projects.get_project,
            name=f"projects/{self.project}",
        )

    @property
    def number(self) -> str:
        """The project number (`Project.name` is `projects/NUMBER`)."""
        return self.project_info().name.removeprefix("projects/")

    def billing(self) -> billing_v1.ProjectBillingInfo:
        return self._read(
            ("billing",),
            "the project's billing info",
            "resourcemanager.projects.get",
            self.clients.billing.get_project_billing_info,
            name=f"projects/{self.project}",
        )

    def granted(self, permissions: Iterable[str]) -> set[str]:
        """Which of `permissions` the caller holds on the project (testIamPermissions)."""
        wanted = sorted(set(permissions))
        # Only what no earlier call asked: checks ask overlapping sets (the API check asks for
        # serviceusage.services.enable, the permission check for it among the rest).
        unasked = [p for p in wanted if p not in self._held]
        for start in range(0, len(unasked), BATCH_PERMISSIONS):
            batch = unasked[start : start + BATCH_PERMISSIONS]
            answer = self._read(
                ("granted", *batch),
                "the caller's permissions on the project",
                "",
                self.clients.projects.test_iam_permissions,
                resource=f"projects/{self.project}",
                permissions=batch,
            )
            held = set(answer.permissions)
            self._held.update({p: p in held for p in batch})
        return {p for p in wanted if self._held[p]}

    # Service Usage

    def service_states(self, services: Iterable[str]) -> dict[str, service_usage_v1.State]:
        """API name (`tpu.googleapis.com`) -> its state in the project."""
        parent = f"projects/{self.number}"
        wanted = sorted(set(services))
        states: dict[str, service_usage_v1.State] = {}
        for start in range(0, len(wanted), BATCH_SERVICES):
            batch = wanted[start : start + BATCH_SERVICES]
            answer = self._read(
                ("services", *batch),
                "the project's services",
                "serviceusage.services.get",
                self.clients.service_usage.batch_get_services,
                request=service_usage_v1.BatchGetServicesRequest(
                    parent=parent, names=[f"{parent}/services/{s}" for s in batch]
                ),
            )
            for service in answer.services:
                states[service.name.rsplit("/", 1)[-1]] = service_usage_v1.State(service.state)
        return states

    # Compute Engine

    def region(self, region: str) -> compute_v1.Region:
        return self._read(
            ("region", region),
            f"region {region}",
            "compute.regions.get",
            self.clients.regions.get,
            project=self.project,
            region=region,
        )

    def compute_project(self) -> compute_v1.Project:
        return self._read(
            ("compute-project",),
            "the project's Compute Engine quotas",
            "compute.projects.get",
            self.clients.compute_projects.get,
            project=self.project,
        )

    def reservation(self, owner: str, zone: str, name: str) -> compute_v1.Reservation | None:
        return self._find(
            ("reservation", owner, zone, name),
            f"reservation {name} in {owner}/{zone}",
            "compute.reservations.get",
            self.clients.reservations.get,
            project=owner,
            zone=zone,
            reservation=name,
        )

    def reservation_zones(self, owner: str, name: str) -> list[str]:
        """Zones of `owner` holding a reservation called `name`."""
        scopes = self._read(
            ("reservation-zones", owner, name),
            f"reservations in {owner}",
            "compute.reservations.list",
            self._all(self.clients.reservations.aggregated_list),
            request=compute_v1.AggregatedListReservationsRequest(
                project=owner, filter=f"name = {name}"
            ),
        )
        return sorted(
            scope.removeprefix("zones/")
            for scope, listed in scopes
            if any(r.name == name for r in listed.reservations)
        )

    def machine_type(self, zone: str, name: str) -> compute_v1.MachineType | None:
        return self._find(
            ("machine-type", zone, name),
            f"machine type {name} in {zone}",
            "compute.machineTypes.get",
            self.clients.machine_types.get,
            project=self.project,
            zone=zone,
            machine_type=name,
        )

    def machine_type_zones(self, name: str) -> list[str]:
        """Every zone that offers machine type `name`."""
        scopes = self._read(
            ("machine-type-zones", name),
            f"the zones offering {name}",
            "compute.machineTypes.list",
            self._all(self.clients.machine_types.aggregated_list),
            request=compute_v1.AggregatedListMachineTypesRequest(
                project=self.project, filter=f"name = {name}"
            ),
        )
        return sorted(
            scope.removeprefix("zones/")
            for scope, listed in scopes
            if any(m.name == name for m in listed.machine_types)
        )

    def accelerator_type(self, zone: str, name: str) -> compute_v1.AcceleratorType | None:
        return self._find(
            ("accelerator-type", zone, name),
            f"accelerator type {name} in {zone}",
            "compute.acceleratorTypes.get",
            self.clients.accelerator_types.get,
            project=self.project,
            zone=zone,
            accelerator_type=name,
        )

    def image(self, project: str, name: str) -> compute_v1.Image | None:
        return self._find(
            ("image", project, name),
            f"image {name} in {project}",
            "compute.images.get",
            self.clients.images.get,
            project=project,
            image=name,
        )

    def image_from_family(self, project: str, family: str) -> compute_v1.Image | None:
        return self._find(
            ("image-family", project, family),
            f"image family {family} in {project}",
            "compute.images.getFromFamily",
            self.clients.images.get_from_family,
            project=project,
            family=family,
        )

    # Cloud TPU API

    def tpu_accelerator_type(self, zone: str, name: str) -> tpu_v2alpha1.AcceleratorType | None:
        return self._find(
            ("tpu-accelerator-type", zone, name),
            f"Cloud TPU accelerator type {name} in {zone}",
            "tpu.acceleratortypes.get",
            self.clients.tpu.get_accelerator_type,
            name=f"projects/{self.project}/locations/{zone}/acceleratorTypes/{name}",
        )

    def tpu_runtime_versions(self, zone: str) -> list[str]:
        versions = self._read(
            ("tpu-runtimes", zone),
            f"Cloud TPU runtime versions in {zone}",
            "tpu.runtimeversions.list",
            self._all(self.clients.tpu.list_runtime_versions),
            parent=f"projects/{self.project}/locations/{zone}",
        )
        return sorted(v.version for v in versions)

    def tpu_reservations(self, owner: str, zone: str) -> list[tpu_v2alpha1.Reservation]:
        # No predefined role holds a tpu.reservations.* permission (darkbitio/gcp-iam-role-
        # permissions @8ab2a6f), so none is named.
        return self._read(
            ("tpu-reservations", owner, zone),
            f"Cloud TPU reservations of {owner} in {zone}",
            "",
            self._all(self.clients.tpu.list_reservations),
            request=tpu_v2alpha1.ListReservationsRequest(
                parent=f"projects/{owner}/locations/{zone}"
            ),
        )

    # GKE, Cloud Quotas, Org Policy, Cloud Storage

    def server_config(self, location: str) -> container_v1.ServerConfig:
        return self._read(
            ("server-config", location),
            f"GKE's versions in {location}",
            "container.clusters.list",
            self.clients.clusters.get_server_config,
            name=f"projects/{self.project}/locations/{location}",
        )

    def quota_infos(self, service: str) -> list[cloudquotas_v1.QuotaInfo]:
        """Every quota of `service` the project has, with its values per dimension."""
        return self._read(
            ("quota-infos", service),
            f"the project's {service} quotas",
            "cloudquotas.quotas.get",
            self._all(self.clients.quotas.list_quota_infos),
            parent=f"projects/{self.number}/locations/global/services/{service}",
        )

    def effective_policy(self, constraint: str) -> orgpolicy_v2.Policy:
        return self._read(
            ("policy", constraint),
            f"org policy {constraint}",
            "orgpolicy.policy.get",
            self.clients.org_policy.get_effective_policy,
            name=f"projects/{self.project}/policies/{constraint}",
        )

    def bucket(self, name: str) -> storage.Bucket | None:
        """The bucket, or None when the name is free. `exceptions.Forbidden` passes through:
        the bucket exists and the caller may not read it."""
        return self._call(
            f"bucket {name}",
            "storage.buckets.get",
            lambda **kw: self.clients.storage.lookup_bucket(name, **kw),
            forbidden_answers=True,
        )
