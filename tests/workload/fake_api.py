"""A Kubernetes API server in memory, behind the official client: the real API classes build
each request and parse each answer with the client's own models; only the transport is
replaced. It keeps JobSets, Workloads, pods and their logs by namespace, answers a
SelfSubjectAccessReview from a set of namespaces the caller may write, and refuses as the API
server does: 409 for a name that exists, 403 where the caller may not, 404 for what is gone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlparse

from kubernetes import client

from workload.cluster import Cluster

SERIALIZER = client.ApiClient()


@dataclass
class Response:
    status: int
    reason: str
    data: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})

    def read(self) -> bytes:
        return self.data


def _answer(status: int, obj: Any, reason: str = "OK") -> Response:
    body = SERIALIZER.sanitize_for_serialization(obj)
    return Response(status, reason, json.dumps(body).encode())


def _status(code: int, reason: str, message: str) -> Response:
    status = client.V1Status(
        api_version="v1", kind="Status", status="Failure", reason=reason, code=code, message=message
    )
    return _answer(code, status, reason)


@dataclass
class FakeApi:
    writable: set[str] = field(default_factory=set)
    """Namespaces where the caller may create and delete JobSets."""
    jobsets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    workloads: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, list[client.V1Pod]] = field(default_factory=dict)
    logs: dict[tuple[str, str], str] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    def connect(self, path: str | None = None, context: str | None = None) -> Cluster:
        api = client.ApiClient(client.Configuration(host="https://fake.invalid"))
        api.rest_client = self  # type: ignore[assignment]
        return Cluster(api)

    def request(
        self,
        method: str,
        url: str,
        headers: Any = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Response:
        parsed = urlparse(url)
        self.calls.append((method, parsed.path))
        parts = parsed.path.strip("/").split("/")
        query = parse_qs(parsed.query)
        if parts[-1] == "selfsubjectaccessreviews":
            attributes = body["spec"]["resourceAttributes"]
            allowed = attributes["namespace"] in self.writable
            reason = "" if allowed else "no RBAC binding grants it"
            return _answer(201, {**body, "status": {"allowed": allowed, "reason": reason}})
        namespace = parts[parts.index("namespaces") + 1]
        if "jobsets" in parts:
            return self._jobsets(method, namespace, parts, body)
        if "workloads" in parts:
            items = [w for (ns, _), w in self.workloads.items() if ns == namespace]
            return _answer(200, {"apiVersion": "kueue.x-k8s.io/v1beta2", "items": items})
        if parts[-1] == "log":
            pod = parts[-2]
            tail = int(query["tailLines"][0]) if "tailLines" in query else None
            text = self.logs.get((namespace, pod))
            if text is None:
                return _status(404, "NotFound", f'pods "{pod}" not found')
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-tail:] if tail else lines)
            return Response(200, "OK", text.encode(), {"content-type": "text/plain"})
        if parts[-1] == "pods":
            wanted = dict(
                s.split("=", 1) for s in query.get("labelSelector", [""])[0].split(",") if s
            )
            items = [
                p
                for p in self.pods.get(namespace, [])
                if all(
                    ((p.metadata and p.metadata.labels) or {}).get(k) == v
                    for k, v in wanted.items()
                )
            ]
            return _answer(200, client.V1PodList(items=items))
        return _status(404, "NotFound", parsed.path)

    def _jobsets(self, method: str, namespace: str, parts: list[str], body: Any) -> Response:
        if method == "GET":
            items = [j for (ns, _), j in self.jobsets.items() if ns == namespace]
            return _answer(200, {"apiVersion": "jobset.x-k8s.io/v1alpha2", "items": items})
        if namespace not in self.writable:
            return _status(403, "Forbidden", f"jobsets is forbidden in namespace {namespace}")
        if method == "POST":
            name = body["metadata"]["name"]
            if (namespace, name) in self.jobsets:
                return _status(409, "AlreadyExists", f'jobsets "{name}" already exists')
            self.jobsets[(namespace, name)] = body
            return _answer(201, body, "Created")
        if method == "DELETE":
            name = parts[-1]
            if self.jobsets.pop((namespace, name), None) is None:
                return _status(404, "NotFound", f'jobsets "{name}" not found')
            return _answer(200, client.V1Status(kind="Status", status="Success"))
        return _status(405, "MethodNotAllowed", method)
