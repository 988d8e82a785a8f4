"""The cluster side of the command, through the official Kubernetes client and the user's
kubeconfig (`pulumi stack output kubeconfig --show-secrets`): whether the user may create
JobSets in a namespace (a SelfSubjectAccessReview, what `kubectl auth can-i` asks), creating,
listing and deleting JobSets, their Kueue Workloads, and the leader pod's logs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import urllib3
from kubernetes import client
from kubernetes import config as kubeconfig
from kubernetes.config.config_exception import ConfigException

JOBSET_GROUP, JOBSET_VERSION, JOBSETS = "jobset.x-k8s.io", "v1alpha2", "jobsets"
KUEUE_GROUP, KUEUE_VERSION, WORKLOADS = "kueue.x-k8s.io", "v1beta2", "workloads"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


class ClusterError(Exception):
    """What the API server refused, in words, with the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class KubeconfigError(Exception):
    """A kubeconfig that cannot be used: missing, unreadable, or without the context asked."""


KUBECONFIG_HINT = (
    "write the stack's with `pulumi stack output kubeconfig --show-secrets > FILE` and pass "
    "--kubeconfig FILE (and --context NAME if it holds several)"
)
RETRIES = 1
"""Connection attempts beyond the first: an unreachable API server is reported in seconds."""


def _refused(error: client.ApiException, what: str) -> ClusterError:
    reason = error.reason or "error"
    return ClusterError(error.status or 0, f"{what}: {error.status} {reason}")


@dataclass
class Cluster:
    api: client.ApiClient

    @classmethod
    def connect(cls, path: str | None = None, context: str | None = None) -> Cluster:
        """The cluster of a kubeconfig file (default `$KUBECONFIG` or ~/.kube/config)."""
        where = path or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
        if path is not None and not Path(path).is_file():
            raise KubeconfigError(f"--kubeconfig: {path} is not a file; {KUBECONFIG_HINT}")
        try:
            api = kubeconfig.new_client_from_config(config_file=path, context=context)
        except (ConfigException, OSError, ValueError) as error:
            what = f"context {context!r} of {where}" if context else where
            raise KubeconfigError(
                f"--kubeconfig: cannot use {what} ({error}); {KUBECONFIG_HINT}"
            ) from None
        api.configuration.retries = RETRIES
        return cls(api)

    @contextmanager
    def _asking(self, what: str) -> Iterator[None]:
        """Turn what the server refused, and a server that does not answer, into a
        `ClusterError` that says what to check."""
        try:
            yield
        except client.ApiException as error:
            raise _refused(error, what) from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            host = self.api.configuration.host
            raise ClusterError(
                0,
                f"{what}: the API server at {host} does not answer ({type(error).__name__}); "
                "check that the cluster exists, that you are on a network that reaches its "
                "endpoint, and that --context names this stack's cluster",
            ) from None

    def may_create_jobsets(self, namespace: str) -> tuple[bool, str]:
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb="create", group=JOBSET_GROUP, resource=JOBSETS, namespace=namespace
                )
            )
        )
        with self._asking("asking whether you may create JobSets"):
            answer = client.AuthorizationV1Api(self.api).create_self_subject_access_review(review)
        status = answer.status
        allowed = bool(status and status.allowed)
        return allowed, (status.reason or "") if status else ""

    def create(self, jobset: dict[str, Any]) -> dict[str, Any]:
        meta = jobset["metadata"]
        with self._asking(f"creating JobSet {meta['namespace']}/{meta['name']}"):
            created = client.CustomObjectsApi(self.api).create_namespaced_custom_object(
                JOBSET_GROUP, JOBSET_VERSION, meta["namespace"], JOBSETS, jobset
            )
        return cast(dict[str, Any], created)

    def jobsets(self, namespace: str) -> list[dict[str, Any]]:
        return self._list(JOBSET_GROUP, JOBSET_VERSION, JOBSETS, namespace)

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        return self._list(KUEUE_GROUP, KUEUE_VERSION, WORKLOADS, namespace)

    def _list(self, group: str, version: str, plural: str, namespace: str) -> list[dict[str, Any]]:
        with self._asking(f"listing {plural} in {namespace}"):
            found = client.CustomObjectsApi(self.api).list_namespaced_custom_object(
                group, version, namespace, plural
            )
        return list(cast(dict[str, Any], found).get("items", []))

    def delete(self, namespace: str, name: str) -> None:
        """Delete a JobSet and, in the foreground, its Jobs and pods."""
        with self._asking(f"deleting JobSet {namespace}/{name}"):
            client.CustomObjectsApi(self.api).delete_namespaced_custom_object(
                JOBSET_GROUP,
                JOBSET_VERSION,
                namespace,
                JOBSETS,
                name,
                body=client.V1DeleteOptions(propagation_policy="Foreground"),
            )

    def leader(self, namespace: str, name: str) -> str | None:
        """The pod of the first replicated job's first Job at completion index 0, which holds
        the JAX coordinator; the newest when the JobSet has restarted."""
        with self._asking(f"listing the pods of JobSet {namespace}/{name}"):
            pods = client.CoreV1Api(self.api).list_namespaced_pod(
                namespace, label_selector=f"{JOBSET_NAME_LABEL}={name}"
            )
        leaders = []
        for pod in pods.items:
            meta = pod.metadata or client.V1ObjectMeta()
            annotations = meta.annotations or {}
            if annotations.get(JOB_INDEX) == annotations.get(COMPLETION_INDEX) == "0":
                leaders.append((str(meta.creation_timestamp or ""), meta.name or ""))
        return max(leaders)[1] if leaders else None

    def logs(self, namespace: str, pod: str, container: str, tail: int | None) -> str:
        with self._asking(f"reading the logs of {namespace}/{pod}"):
            return client.CoreV1Api(self.api).read_namespaced_pod_log(
                pod, namespace, container=container, tail_lines=tail
            )
