"""The cluster side of the command, through the official Kubernetes client and the user's
kubeconfig (`pulumi stack output kubeconfig --show-secrets`): whether the user may create
JobSets in a namespace (a SelfSubjectAccessReview, what `kubectl auth can-i` asks), creating,
listing and deleting JobSets, their Kueue Workloads, and the leader pod's logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from kubernetes import client
from kubernetes import config as kubeconfig

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


def _refused(error: client.ApiException, what: str) -> ClusterError:
    reason = error.reason or "error"
    return ClusterError(error.status or 0, f"{what}: {error.status} {reason}")


@dataclass
class Cluster:
    api: client.ApiClient

    @classmethod
    def connect(cls, path: str | None = None, context: str | None = None) -> Cluster:
        """The cluster of a kubeconfig file (default `$KUBECONFIG` or ~/.kube/config)."""
        return cls(kubeconfig.new_client_from_config(config_file=path, context=context))

    def may_create_jobsets(self, namespace: str) -> tuple[bool, str]:
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb="create", group=JOBSET_GROUP, resource=JOBSETS, namespace=namespace
                )
            )
        )
        try:
            answer = client.AuthorizationV1Api(self.api).create_self_subject_access_review(review)
        except client.ApiException as error:
            raise _refused(error, "asking whether you may create JobSets") from None
        status = answer.status
        allowed = bool(status and status.allowed)
        return allowed, (status.reason or "") if status else ""

    def create(self, jobset: dict[str, Any]) -> dict[str, Any]:
        meta = jobset["metadata"]
        try:
            created = client.CustomObjectsApi(self.api).create_namespaced_custom_object(
                JOBSET_GROUP, JOBSET_VERSION, meta["namespace"], JOBSETS, jobset
            )
        except client.ApiException as error:
            raise _refused(error, f"creating JobSet {meta['namespace']}/{meta['name']}") from None
        return cast(dict[str, Any], created)

    def jobsets(self, namespace: str) -> list[dict[str, Any]]:
        return self._list(JOBSET_GROUP, JOBSET_VERSION, JOBSETS, namespace)

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        return self._list(KUEUE_GROUP, KUEUE_VERSION, WORKLOADS, namespace)

    def _list(self, group: str, version: str, plural: str, namespace: str) -> list[dict[str, Any]]:
        try:
            found = client.CustomObjectsApi(self.api).list_namespaced_custom_object(
                group, version, namespace, plural
            )
        except client.ApiException as error:
            raise _refused(error, f"listing {plural} in {namespace}") from None
        return list(cast(dict[str, Any], found).get("items", []))

    def delete(self, namespace: str, name: str) -> None:
        """Delete a JobSet and, in the foreground, its Jobs and pods."""
        try:
            client.CustomObjectsApi(self.api).delete_namespaced_custom_object(
                JOBSET_GROUP,
                JOBSET_VERSION,
                namespace,
                JOBSETS,
                name,
                body=client.V1DeleteOptions(propagation_policy="Foreground"),
            )
        except client.ApiException as error:
            raise _refused(error, f"deleting JobSet {namespace}/{name}") from None

    def leader(self, namespace: str, name: str) -> str | None:
        """The pod of the first replicated job's first Job at completion index 0, which holds
        the JAX coordinator; the newest when the JobSet has restarted."""
        try:
            pods = client.CoreV1Api(self.api).list_namespaced_pod(
                namespace, label_selector=f"{JOBSET_NAME_LABEL}={name}"
            )
        except client.ApiException as error:
            raise _refused(error, f"listing the pods of JobSet {namespace}/{name}") from None
        leaders = []
        for pod in pods.items:
            meta = pod.metadata or client.V1ObjectMeta()
            annotations = meta.annotations or {}
            if annotations.get(JOB_INDEX) == annotations.get(COMPLETION_INDEX) == "0":
                leaders.append((str(meta.creation_timestamp or ""), meta.name or ""))
        return max(leaders)[1] if leaders else None

    def logs(self, namespace: str, pod: str, container: str, tail: int | None) -> str:
        try:
            return client.CoreV1Api(self.api).read_namespaced_pod_log(
                pod, namespace, container=container, tail_lines=tail
            )
        except client.ApiException as error:
            raise _refused(error, f"reading the logs of {namespace}/{pod}") from None
