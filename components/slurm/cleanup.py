"""Deletes the TPU VMs a Slurm controller created at run time, which Pulumi never registered:
on `pulumi destroy` all of the cluster's, and on an update those of nodesets the config dropped
(after Toolkit's controller `cleanup_tpu` module). Without it their VMs would outlive the
cluster and hold the subnet.

A TPU VM is the cluster's when its name is `<cluster>-<nodeset>-<index>` (the controller names
nodes so: util.py `nodelist`) and its `slurm_cluster_name` metadata names the cluster (tpu.py
`create_node`), so another cluster whose name shares a prefix is never touched.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import pulumi
from google.api_core import exceptions as api_exceptions
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
CALL_TIMEOUT_SECONDS = 60


class TpuApi(Protocol):
    """What cleanup calls on `google.cloud.tpu_v2.TpuClient`; tests pass a fake."""

    def list_nodes(self, *, parent: str, timeout: float) -> Iterable[tpu.Node]:
        """Every node of `projects/P/locations/ZONE`, across pages."""
        ...

    def delete_node(self, *, name: str, timeout: float) -> Any: ...


def _default_client() -> TpuApi:
    return tpu.TpuClient()


def owned(nodes: Iterable[tpu.Node], cluster: str, nodeset: str) -> list[str]:
    """Full names of the nodes the cluster's controller made for the nodeset."""
    pattern = re.compile(rf"{re.escape(cluster)}-{re.escape(nodeset)}-[0-9]+")
    return sorted(
        node.name
        for node in nodes
        if pattern.fullmatch(node.name.rsplit("/", 1)[-1])
        and node.metadata.get("slurm_cluster_name") == cluster
    )


def _list(api: TpuApi, project: str, zone: str) -> list[tpu.Node]:
    try:
        return list(
            api.list_nodes(
                parent=f"projects/{project}/locations/{zone}", timeout=CALL_TIMEOUT_SECONDS
            )
        )
    except api_exceptions.NotFound:
        return []


class TpuCleanupProvider(ResourceProvider):
    """Holds nothing while the cluster lives; deletes its runtime TPU VMs when it goes."""

    def __init__(
        self,
        client_factory: Callable[[], TpuApi] = _default_client,
        sleep: Callable[[float], None] = time.sleep,
        wait_seconds: int = WAIT_SECONDS,
    ) -> None:
        # A factory, not a client: the provider is pickled into the stack's state, and a
        # client holds a gRPC channel.
        super().__init__()
        self._client_factory = client_factory
        self._sleep = sleep
        self.wait_seconds = wait_seconds

    def _clean(self, project: str, cluster: str, nodesets: list[dict[str, str]]) -> None:
        api, sleep = self._client_factory(), self._sleep

        def left() -> list[str]:
            return [
                name
                for nodeset in nodesets
                for name in owned(_list(api, project, nodeset["zone"]), cluster, nodeset["name"])
            ]

        for name in left():
            # The operation is not awaited: the loop below watches the nodes go.
            with contextlib.suppress(api_exceptions.NotFound):
                api.delete_node(name=name, timeout=CALL_TIMEOUT_SECONDS)
        waited = 0.0
        while True:
            remaining = left()
            if not remaining:
                return
            if waited >= self.wait_seconds:
                raise TimeoutError(
                    f"TPU VMs still being deleted after {self.wait_seconds}s: "
                    f"{', '.join(remaining)}"
                )
            sleep(POLL_SECONDS)
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

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        kept = {(n["name"], n["zone"]) for n in news["nodesets"]}
        dropped = [n for n in olds["nodesets"] if (n["name"], n["zone"]) not in kept]
        self._clean(olds["project"], olds["cluster"], dropped)
        return UpdateResult(outs=news)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        self._clean(props["project"], props["cluster"], props["nodesets"])


class TpuCleanup(Resource, module="slurm", name="TpuCleanup"):
    """Deleted after the controller and before the subnet: see SlurmCluster."""

    def __init__(
        self,
        name: str,
        *,
        project: str,
        cluster: str,
        nodesets: list[dict[str, str]],
        opts: pulumi.ResourceOptions | None = None,
        provider: TpuCleanupProvider | None = None,
    ) -> None:
        super().__init__(
            provider or TpuCleanupProvider(),
            name,
            {"project": project, "cluster": cluster, "nodesets": nodesets},
            opts,
        )
