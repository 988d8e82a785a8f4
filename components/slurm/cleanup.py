"""Deletes the VMs a Slurm controller created at run time, which Pulumi never registered: the
TPU VMs of TPU nodesets, the Compute Engine VMs of CPU nodesets, and the managed instance
groups it makes for flex-start nodesets. On `pulumi destroy` all of
the cluster's, and on an update those of nodesets the config dropped (after Toolkit's
controller `cleanup_tpu` and `cleanup_compute` modules). Without it their VMs would outlive the
cluster and hold the subnet.

A VM is the cluster's when its name is `<cluster>-<nodeset>-<index>` (the controller names
nodes so: util.py `nodelist`) and it is marked with the cluster's name: a TPU VM by its
`slurm_cluster_name` metadata (tpu.py `create_node`), a Compute Engine VM by its
`slurm_cluster_name` label (the nodeset's instance template, which slurmsync.py lists by). So
another cluster whose name shares a prefix is never touched.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import pulumi
from google.api_core import exceptions as api_exceptions
from google.cloud import compute_v1 as compute
from google.cloud import tpu_v2 as tpu
from pulumi.dynamic import (
    CreateResult,
    DiffResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

WAIT_SECONDS = 1800
POLL_SECONDS = 10
REASK_SECONDS = 120
CALL_TIMEOUT_SECONDS = 60
TRANSIENT = (
    api_exceptions.ServiceUnavailable,
    api_exceptions.InternalServerError,
    api_exceptions.TooManyRequests,
    api_exceptions.DeadlineExceeded,
    api_exceptions.Aborted,
)
"""Errors worth asking again (google.api_core's retryable classes)."""
BUSY = (api_exceptions.Conflict, api_exceptions.FailedPrecondition, api_exceptions.BadRequest)
"""A delete refused while the VM is mid-operation (Compute Engine answers 400
resourceNotReady, the TPU API 409 or FAILED_PRECONDITION); asked again later."""


class TpuApi(Protocol):
    """What cleanup calls on `google.cloud.tpu_v2.TpuClient`; tests pass a fake."""

    def list_nodes(self, *, parent: str, timeout: float) -> Iterable[tpu.Node]:
        """Every node of `projects/P/locations/ZONE`, across pages."""
        ...

    def delete_node(self, *, name: str, timeout: float) -> Any: ...


class ComputeApi(Protocol):
    """What cleanup calls on `google.cloud.compute_v1.InstancesClient`; tests pass a fake."""

    def list(self, *, project: str, zone: str, timeout: float) -> Iterable[compute.Instance]:
        """Every instance of the zone, across pages."""
        ...

    def delete(self, *, project: str, zone: str, instance: str, timeout: float) -> Any: ...


class GroupApi(Protocol):
    """What cleanup calls on `google.cloud.compute_v1.RegionInstanceGroupManagersClient`."""

    def list(
        self, *, project: str, region: str, timeout: float
    ) -> Iterable[compute.InstanceGroupManager]:
        """Every regional managed instance group of the region, across pages."""
        ...

    def delete(
        self, *, project: str, region: str, instance_group_manager: str, timeout: float
    ) -> Any: ...


def _default_client() -> TpuApi:
    return tpu.TpuClient()


def _default_compute_client() -> ComputeApi:
    return compute.InstancesClient()


def _default_group_client() -> GroupApi:
    return compute.RegionInstanceGroupManagersClient()


def _node_pattern(cluster: str, nodeset: str) -> re.Pattern[str]:
    return re.compile(rf"{re.escape(cluster)}-{re.escape(nodeset)}-[0-9]+")


def owned(nodes: Iterable[tpu.Node], cluster: str, nodeset: str) -> list[str]:
    """Full names of the TPU nodes the cluster's controller made for the nodeset."""
    pattern = _node_pattern(cluster, nodeset)
    return sorted(
        node.name
        for node in nodes
        if pattern.fullmatch(node.name.rsplit("/", 1)[-1])
        and node.metadata.get("slurm_cluster_name") == cluster
    )


def owned_instances(instances: Iterable[compute.Instance], cluster: str, nodeset: str) -> list[str]:
    """Names of the Compute Engine VMs the cluster's controller made for the nodeset."""
    pattern = _node_pattern(cluster, nodeset)
    return sorted(
        instance.name
        for instance in instances
        if pattern.fullmatch(instance.name)
        and instance.labels.get("slurm_cluster_name") == cluster
        and instance.labels.get("slurm_instance_role") == "compute"
    )


def owned_groups(
    groups: Iterable[compute.InstanceGroupManager], cluster: str, nodeset: str
) -> list[str]:
    """Names of the flex-start groups the cluster's controller made for the nodeset:
    mig_flex.py names one `<cluster>-<nodeset>-[job-<id>-]<8 hex digits>` and builds it from
    the nodeset's template, `<cluster>-<nodeset>-<hash>` (templates.py)."""
    prefix = f"{cluster}-{nodeset}-"
    pattern = re.compile(rf"{re.escape(prefix)}(job-[0-9]+-)?[0-9a-f]{{8}}")
    return sorted(
        group.name
        for group in groups
        if pattern.fullmatch(group.name)
        and any(
            template.rsplit("/", 1)[-1].startswith(prefix)
            for template in [
                group.instance_template,
                *(v.instance_template for v in group.versions),
            ]
        )
    )


class _CleanupProvider(ResourceProvider):
    """Holds nothing while the cluster lives; deletes its runtime VMs when it goes. A nodeset
    is `{"name": ..., "zone": ...}`; subclasses list and delete one kind of VM."""

    kind = "VMs"
    default_client: Callable[[], Any]

    def __init__(
        self,
        client_factory: Callable[[], Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        wait_seconds: int = WAIT_SECONDS,
    ) -> None:
        # A factory, not a client: the provider is pickled into the stack's state, and a
        # client holds a gRPC channel.
        super().__init__()
        self._client_factory = client_factory or self.default_client
        self._sleep = sleep
        self.wait_seconds = wait_seconds

    def _session(
        self, project: str, cluster: str
    ) -> tuple[Callable[[dict[str, str]], list[str]], Callable[[dict[str, str], str], None]]:
        """(left, delete): the VMs of a nodeset still there, and a delete of one of them."""
        raise NotImplementedError

    def _clean(self, project: str, cluster: str, nodesets: list[dict[str, str]]) -> None:
        """Deletes the nodesets' VMs and watches them go: a listing that fails transiently is
        tried again at the next poll, a delete refused because the VM is busy (still being
        created, already being deleted) is asked again after `REASK_SECONDS`, and a VM that
        appears meanwhile (a resume in flight) is deleted too."""
        if not nodesets:
            return
        left, delete = self._session(project, cluster)
        asked: dict[str, float] = {}
        waited = 0.0
        still: list[tuple[dict[str, str], str]] | None = None
        while True:
            try:
                still = [(nodeset, name) for nodeset in nodesets for name in left(nodeset)]
            except TRANSIENT:
                still = None
            if still == []:
                return
            for nodeset, name in still or []:
                if name in asked and waited - asked[name] < REASK_SECONDS:
                    continue
                try:
                    # The operation is not awaited: the listing watches the VM go.
                    delete(nodeset, name)
                except api_exceptions.NotFound:
                    continue
                except TRANSIENT:
                    continue
                except BUSY:
                    pass
                asked[name] = waited
            if waited >= self.wait_seconds:
                names = ", ".join(n for _, n in still) if still else "(the last listing failed)"
                raise TimeoutError(
                    f"{self.kind} still being deleted after {self.wait_seconds}s: {names}"
                )
            self._sleep(POLL_SECONDS)
            waited += POLL_SECONDS

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['project']}/{props['cluster']}", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in ("project", "cluster", "nodesets") if olds.get(k) != news.get(k)]
        return DiffResult(
            changes=bool(changed),
            replaces=[k for k in changed if k in ("project", "cluster")],
            delete_before_replace=True,
        )

    def dropped(
        self, olds: list[dict[str, str]], news: list[dict[str, str]]
    ) -> list[dict[str, str]]:
        """The entries whose VMs no longer belong to any nodeset the controller manages."""
        return [n for n in olds if n not in news]

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        dropped = self.dropped(olds["nodesets"], news["nodesets"])
        self._clean(olds["project"], olds["cluster"], dropped)
        return UpdateResult(outs=news)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        self._clean(props["project"], props["cluster"], props["nodesets"])


class TpuCleanupProvider(_CleanupProvider):
    """Deletes the cluster's TPU VMs of the nodesets it is told, zone by zone."""

    kind = "TPU VMs"
    default_client = staticmethod(_default_client)

    def _session(
        self, project: str, cluster: str
    ) -> tuple[Callable[[dict[str, str]], list[str]], Callable[[dict[str, str], str], None]]:
        api: TpuApi = self._client_factory()

        def left(nodeset: dict[str, str]) -> list[str]:
            try:
                nodes = list(
                    api.list_nodes(
                        parent=f"projects/{project}/locations/{nodeset['zone']}",
                        timeout=CALL_TIMEOUT_SECONDS,
                    )
                )
            except api_exceptions.NotFound:
                return []
            return owned(nodes, cluster, nodeset["name"])

        def delete(_nodeset: dict[str, str], name: str) -> None:
            api.delete_node(name=name, timeout=CALL_TIMEOUT_SECONDS)

        return left, delete


class ComputeCleanupProvider(_CleanupProvider):
    """Deletes the cluster's Compute Engine VMs of the CPU nodesets it is told, in each zone
    a nodeset may create them in."""

    kind = "Compute Engine VMs"
    default_client = staticmethod(_default_compute_client)

    def dropped(
        self, olds: list[dict[str, str]], news: list[dict[str, str]]
    ) -> list[dict[str, str]]:
        """Only nodesets gone by name: slurmsync and suspend.py act on a node in the zone it
        runs in (util.py `instance().zone`), so a zone dropped from a nodeset leaves its
        running nodes to Slurm."""
        kept = {n["name"] for n in news}
        return [n for n in olds if n["name"] not in kept]

    def _session(
        self, project: str, cluster: str
    ) -> tuple[Callable[[dict[str, str]], list[str]], Callable[[dict[str, str], str], None]]:
        api: ComputeApi = self._client_factory()

        def left(nodeset: dict[str, str]) -> list[str]:
            try:
                instances = list(
                    api.list(project=project, zone=nodeset["zone"], timeout=CALL_TIMEOUT_SECONDS)
                )
            except api_exceptions.NotFound:
                return []
            return owned_instances(instances, cluster, nodeset["name"])

        def delete(nodeset: dict[str, str], name: str) -> None:
            api.delete(
                project=project,
                zone=nodeset["zone"],
                instance=name,
                timeout=CALL_TIMEOUT_SECONDS,
            )

        return left, delete


class FlexCleanupProvider(_CleanupProvider):
    """Deletes the flex-start groups the controller made for the cluster's nodesets, with the
    VMs in them, in each nodeset's region; deleting a group's VMs alone would have the group
    create them again."""

    kind = "flex-start instance groups"
    default_client = staticmethod(_default_group_client)

    def dropped(
        self, olds: list[dict[str, str]], news: list[dict[str, str]]
    ) -> list[dict[str, str]]:
        kept = {n["name"] for n in news}
        return [n for n in olds if n["name"] not in kept]

    def _session(
        self, project: str, cluster: str
    ) -> tuple[Callable[[dict[str, str]], list[str]], Callable[[dict[str, str], str], None]]:
        api: GroupApi = self._client_factory()

        def region(nodeset: dict[str, str]) -> str:
            return nodeset["zone"].rsplit("-", 1)[0]

        def left(nodeset: dict[str, str]) -> list[str]:
            try:
                groups = list(
                    api.list(project=project, region=region(nodeset), timeout=CALL_TIMEOUT_SECONDS)
                )
            except api_exceptions.NotFound:
                return []
            return owned_groups(groups, cluster, nodeset["name"])

        def delete(nodeset: dict[str, str], name: str) -> None:
            api.delete(
                project=project,
                region=region(nodeset),
                instance_group_manager=name,
                timeout=CALL_TIMEOUT_SECONDS,
            )

        return left, delete


class _Cleanup(Resource):
    """Holds the project, the cluster and its nodesets (`{"name", "zone"}` each)."""

    def __init__(
        self,
        name: str,
        provider: _CleanupProvider,
        *,
        project: str,
        cluster: str,
        nodesets: list[dict[str, str]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            provider, name, {"project": project, "cluster": cluster, "nodesets": nodesets}, opts
        )


class TpuCleanup(_Cleanup, module="slurm", name="TpuCleanup"):
    """Deleted after the controller and before the subnet: see SlurmCluster."""

    def __init__(
        self,
        name: str,
        *,
        provider: TpuCleanupProvider | None = None,
        **args: Any,
    ) -> None:
        super().__init__(name, provider or TpuCleanupProvider(), **args)


class ComputeCleanup(_Cleanup, module="slurm", name="ComputeCleanup"):
    """The CPU nodesets' VMs, one entry per nodeset and zone; registered only while the
    cluster has CPU nodesets, so that dropping the last deletes its VMs too."""

    def __init__(
        self,
        name: str,
        *,
        provider: ComputeCleanupProvider | None = None,
        **args: Any,
    ) -> None:
        super().__init__(name, provider or ComputeCleanupProvider(), **args)


class FlexCleanup(_Cleanup, module="slurm", name="FlexCleanup"):
    """The flex-start nodesets' groups, one entry per nodeset in its zone; registered only
    while the cluster has flex-start nodesets, deleted before the CPU cleanup."""

    def __init__(
        self,
        name: str,
        *,
        provider: FlexCleanupProvider | None = None,
        **args: Any,
    ) -> None:
        super().__init__(name, provider or FlexCleanupProvider(), **args)
