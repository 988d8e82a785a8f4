"""Deletes the TPU VMs a Slurm controller created at run time, which Pulumi never registered:
on `pulumi destroy` all of the cluster's, and on an update those of nodesets the config dropped
(after Toolkit's controller `cleanup_tpu` module). Without it their VMs would outlive the
cluster and hold the subnet.

A TPU VM is the cluster's when its name is `<cluster>-<nodeset>-<index>` (the controller names
nodes so: util.py `nodelist`) and its `slurm_cluster_name` metadata names the cluster (tpu.py
`create_node`), so another cluster whose name shares a prefix is never touched.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import pulumi
from pulumi.dynamic import (
    CreateResult,
    DiffResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

TPU_API = "https://tpu.googleapis.com/v2"
WAIT_SECONDS = 1800
POLL_SECONDS = 10


class TpuApi(Protocol):
    """What cleanup needs of the Cloud TPU API."""

    def list_nodes(self, project: str, zone: str) -> list[dict[str, Any]]:
        """Nodes of the zone as the API returns them (`name`, `metadata`, `state`)."""
        ...

    def delete_node(self, name: str) -> None: ...


class RestTpuApi:
    """The Cloud TPU v2 REST API through google-auth, with the deployer's credentials."""

    def _session(self) -> Any:
        import google.auth
        from google.auth.transport.requests import AuthorizedSession

        credentials, _ = google.auth.default(
            scopes=["https://www.googleapis.com/auth/cloud-platform"]
        )
        return AuthorizedSession(credentials)

    def list_nodes(self, project: str, zone: str) -> list[dict[str, Any]]:
        session = self._session()
        nodes: list[dict[str, Any]] = []
        token = ""
        while True:
            response = session.get(
                f"{TPU_API}/projects/{project}/locations/{zone}/nodes",
                params={"pageToken": token} if token else None,
                timeout=60,
            )
            if response.status_code == 404:
                return nodes
            response.raise_for_status()
            body = response.json()
            nodes += body.get("nodes", [])
            token = body.get("nextPageToken", "")
            if not token:
                return nodes

    def delete_node(self, name: str) -> None:
        response = self._session().delete(f"{TPU_API}/{name}", timeout=60)
        if response.status_code != 404:
            response.raise_for_status()


def owned(nodes: Iterable[dict[str, Any]], cluster: str, nodeset: str) -> list[str]:
    """Full names of the nodes the cluster's controller made for the nodeset."""
    pattern = re.compile(rf"{re.escape(cluster)}-{re.escape(nodeset)}-[0-9]+")
    return sorted(
        node["name"]
        for node in nodes
        if pattern.fullmatch(node["name"].rsplit("/", 1)[-1])
        and (node.get("metadata") or {}).get("slurm_cluster_name") == cluster
    )


class TpuCleanupProvider(ResourceProvider):
    """Holds nothing while the cluster lives; deletes its runtime TPU VMs when it goes."""

    def __init__(
        self,
        api: TpuApi | None = None,
        sleep: Callable[[float], None] | None = None,
        wait_seconds: int = WAIT_SECONDS,
    ) -> None:
        super().__init__()
        self._api = api
        self._sleep = sleep
        self.wait_seconds = wait_seconds

    @property
    def api(self) -> TpuApi:
        return self._api or RestTpuApi()

    def _clean(self, project: str, cluster: str, nodesets: list[dict[str, str]]) -> None:
        api, sleep = self.api, self._sleep or time.sleep
        for nodeset in nodesets:
            for name in owned(api.list_nodes(project, nodeset["zone"]), cluster, nodeset["name"]):
                api.delete_node(name)
        waited = 0.0
        while True:
            left = [
                name
                for nodeset in nodesets
                for name in owned(
                    api.list_nodes(project, nodeset["zone"]), cluster, nodeset["name"]
                )
            ]
            if not left:
                return
            if waited >= self.wait_seconds:
                raise TimeoutError(
                    f"TPU VMs still being deleted after {self.wait_seconds}s: {', '.join(left)}"
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


class TpuCleanup(Resource):
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
