"""A Pulumi dynamic provider for Cloud TPU queued resources, on Google's `google-cloud-tpu` client.

The provider's own `gcp.tpu.V2QueuedResource` (pulumi-gcp 10.2) takes only a node id, runtime,
accelerator and network per node spec: no multislice node count or prefix, no spot, reserved or
best-effort tier, no reservation, and no node service account, labels, metadata or data disks.
The Cloud TPU API's `v2alpha1` surface has all of them (`QueuedResource.best_effort`,
`guaranteed.reserved`, `spot`, `reservation_name`, `Tpu.NodeSpec.multi_node_params`); `v2` lacks
`best_effort`, `guaranteed.reserved` and the multislice workload type, so this module uses
`tpu_v2alpha1`. The API has no update call for a queued resource: every input replaces it.

Create asks for the queued resource, then waits, within a bound, for ACTIVE. A request that
ends FAILED or SUSPENDED, or is not ACTIVE in time, is deleted before the error is raised:
Pulumi records nothing of a failed create, and a queued resource it does not know of would
later start billing unseen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import pulumi
import pulumi.dynamic
from google.api_core import exceptions as api_exceptions
from google.cloud import tpu_v2alpha1 as tpu

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
WAITING_STATES = frozenset({"CREATING", "ACCEPTED", "WAITING_FOR_RESOURCES", "PROVISIONING"})
"""States on the way to ACTIVE; tpu/docs/queued-resources: WAITING_FOR_RESOURCES replaced
ACCEPTED, so both are waited through."""
DEAD_STATES = frozenset({"FAILED", "SUSPENDING", "SUSPENDED"})
"""A queued resource in these states never becomes ACTIVE again; it stays until deleted."""
CAPACITY = ("on-demand", "reserved", "spot", "best-effort")
REPLACE_KEYS = (
    "project",
    "zone",
    "queuedResourceId",
    "acceleratorType",
    "runtimeVersion",
    "nodeCount",
    "nodePrefix",
    "capacity",
    "reservationName",
    "serviceAccount",
    "network",
    "subnetwork",
    "enableExternalIps",
    "secureBoot",
    "metadata",
    "labels",
    "tags",
    "dataDisks",
)
"""Every input the API takes: none can change on a queued resource in place."""


class TpuClient(Protocol):
    """What the provider calls on `tpu_v2alpha1.TpuClient`; tests pass a fake."""

    def create_queued_resource(self, request: tpu.CreateQueuedResourceRequest) -> Any: ...

    def get_queued_resource(self, *, name: str) -> tpu.QueuedResource: ...

    def delete_queued_resource(self, request: tpu.DeleteQueuedResourceRequest) -> Any: ...


class QueuedResourceError(Exception):
    """A queued resource that did not become ACTIVE; the message says why and what to do."""


def _default_client() -> TpuClient:
    return tpu.TpuClient()


def qualified_name(props: Mapping[str, Any]) -> str:
    return (
        f"projects/{props['project']}/locations/{props['zone']}"
        f"/queuedResources/{props['queuedResourceId']}"
    )


def node_names(prefix: str, node_count: int) -> list[str]:
    """The TPU VMs a queued resource creates: one node named `prefix`, or for a multislice
    request `prefix-0` ... `prefix-(n-1)` (MultiNodeParams.node_id_prefix in the v2alpha1 API).
    MaxText's multihost_runner.py finds exactly these with `--TPU_PREFIX=<prefix>`."""
    if node_count == 1:
        return [prefix]
    return [f"{prefix}-{i}" for i in range(node_count)]


def build_request(props: Mapping[str, Any]) -> tpu.QueuedResource:
    """The v2alpha1 QueuedResource for the provider's inputs."""
    node = tpu.Node(
        accelerator_type=props["acceleratorType"],
        runtime_version=props["runtimeVersion"],
        network_config=tpu.NetworkConfig(
            network=props["network"],
            subnetwork=props["subnetwork"],
            enable_external_ips=bool(props["enableExternalIps"]),
        ),
        service_account=tpu.ServiceAccount(
            email=props["serviceAccount"], scope=[CLOUD_PLATFORM_SCOPE]
        ),
        shielded_instance_config=tpu.ShieldedInstanceConfig(
            enable_secure_boot=bool(props["secureBoot"])
        ),
        labels=dict(props["labels"]),
        metadata=dict(props["metadata"]),
        tags=list(props["tags"]),
        data_disks=[
            tpu.AttachedDisk(source_disk=d["sourceDisk"], mode=d["mode"])
            for d in props["dataDisks"]
        ],
    )
    spec = tpu.QueuedResource.Tpu.NodeSpec(
        parent=f"projects/{props['project']}/locations/{props['zone']}", node=node
    )
    count = int(props["nodeCount"])
    if count == 1:
        spec.node_id = props["nodePrefix"]
    else:
        # MultiNodeParams: "node_count ... needs to be > 1"; node_id and it are exclusive.
        spec.multi_node_params = tpu.QueuedResource.Tpu.NodeSpec.MultiNodeParams(
            node_count=count, node_id_prefix=props["nodePrefix"]
        )
    request = tpu.QueuedResource(tpu=tpu.QueuedResource.Tpu(node_spec=[spec]))
    capacity = props["capacity"]
    if capacity == "reserved":
        request.guaranteed = tpu.QueuedResource.Guaranteed(reserved=True)
        if props["reservationName"]:
            request.reservation_name = props["reservationName"]
    elif capacity == "spot":
        request.spot = tpu.QueuedResource.Spot()
    elif capacity == "best-effort":
        request.best_effort = tpu.QueuedResource.BestEffort()
    elif capacity != "on-demand":
        raise ValueError(f"capacity '{capacity}' is not one of {', '.join(CAPACITY)}")
    return request


def _state(resource: tpu.QueuedResource) -> str:
    return tpu.QueuedResourceState.State(resource.state.state).name


def _failure_reason(resource: tpu.QueuedResource) -> str:
    state = resource.state
    error = state.failed_data.error if "failed_data" in state else None
    if error is not None and error.message:
        return error.message
    initiator = tpu.QueuedResourceState.StateInitiator(state.state_initiator).name
    if initiator == "SERVICE":
        return "the Cloud TPU service ended it (for spot or best-effort capacity: preemption)"
    if initiator == "USER":
        return "a user ended it"
    return "no reason given"


class QueuedResourceProvider(pulumi.dynamic.ResourceProvider):
    """Create, read, diff and delete of one queued resource and the TPU VMs it holds."""

    def __init__(
        self,
        client_factory: Callable[[], TpuClient] = _default_client,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        poll_seconds: float = 30.0,
    ) -> None:
        # A factory, not a client: the provider is pickled into the stack's state, and a
        # client holds a gRPC channel.
        self._client_factory = client_factory
        self._sleep = sleep
        self._clock = clock
        self._poll_seconds = poll_seconds

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        client = self._client_factory()
        name = qualified_name(props)
        try:
            client.create_queued_resource(
                tpu.CreateQueuedResourceRequest(
                    parent=f"projects/{props['project']}/locations/{props['zone']}",
                    queued_resource_id=props["queuedResourceId"],
                    queued_resource=build_request(props),
                )
            )
        except api_exceptions.Conflict:
            raise QueuedResourceError(
                f"queued resource {name} already exists and this stack does not own it; "
                "delete it (gcloud alpha compute tpus queued-resources delete "
                f"{props['queuedResourceId']} --zone={props['zone']} --force) or adopt it with "
                "`pulumi import`, or rename the tpuVms entry"
            ) from None
        resource = self._wait_until_active(client, name, float(props["timeoutSeconds"]))
        return pulumi.dynamic.CreateResult(name, self._outputs(props, resource))

    def _wait_until_active(
        self, client: TpuClient, name: str, timeout: float
    ) -> tpu.QueuedResource:
        deadline = self._clock() + timeout
        while True:
            resource = client.get_queued_resource(name=name)
            state = _state(resource)
            if state == "ACTIVE":
                return resource
            if state in DEAD_STATES:
                reason = _failure_reason(resource)
                self._delete(client, name)
                raise QueuedResourceError(
                    f"queued resource {name} is {state}: {reason}. It was deleted so that "
                    "`pulumi up` can ask again; for capacity that is not taken back, use "
                    "provisioning: reserved"
                )
            if self._clock() >= deadline:
                self._delete(client, name)
                raise QueuedResourceError(
                    f"queued resource {name} was still {state} after {timeout:.0f} s and was "
                    "deleted, so nothing runs outside the stack's state; raise "
                    "timeoutMinutes or use reserved capacity"
                )
            self._sleep(self._poll_seconds)

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        try:
            resource = self._client_factory().get_queued_resource(name=id_)
        except api_exceptions.NotFound:
            # An empty id tells the engine the resource is gone, so `pulumi refresh` drops it.
            return pulumi.dynamic.ReadResult("", {})
        return pulumi.dynamic.ReadResult(id_, self._outputs(props, resource))

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        replaces = [key for key in REPLACE_KEYS if olds.get(key) != news.get(key)]
        changed = bool(replaces) or olds.get("timeoutSeconds") != news.get("timeoutSeconds")
        # The id is fixed by config, so the old queued resource must go first or the new one
        # would meet a 409.
        return pulumi.dynamic.DiffResult(
            changes=changed, replaces=replaces, delete_before_replace=True
        )

    def update(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        # Only provider settings (the wait bound) reach here; diff replaces for the rest.
        return pulumi.dynamic.UpdateResult({**olds, "timeoutSeconds": news["timeoutSeconds"]})

    def delete(self, id_: str, _props: dict[str, Any]) -> None:
        self._delete(self._client_factory(), id_)

    @staticmethod
    def _delete(client: TpuClient, name: str) -> None:
        # force: delete the TPU VMs with it, as `queued-resources delete --force` does.
        try:
            operation = client.delete_queued_resource(
                tpu.DeleteQueuedResourceRequest(name=name, force=True)
            )
        except api_exceptions.NotFound:
            return
        operation.result()

    @staticmethod
    def _outputs(props: Mapping[str, Any], resource: tpu.QueuedResource) -> dict[str, Any]:
        return {
            **props,
            "name": resource.name,
            "state": _state(resource),
            "nodeNames": node_names(props["nodePrefix"], int(props["nodeCount"])),
        }


class QueuedResource(pulumi.dynamic.Resource, module="tpu", name="QueuedResource"):
    """A Cloud TPU queued resource: one or more TPU VM slices, requested and kept together."""

    def __init__(
        self,
        name: str,
        props: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
        provider: pulumi.dynamic.ResourceProvider | None = None,
    ) -> None:
        super().__init__(
            provider or QueuedResourceProvider(),
            name,
            dict(props),
            opts,
        )
