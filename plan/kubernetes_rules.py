"""How pulumi-kubernetes decides a change (provider/pkg/provider/diff.go `forceNew`, helm_release.go
and provider.go DiffConfig; sources in `plan/replacements.py`): an object replaces on its name,
namespace and each kind's immutable fields; a Helm release on its name or namespace; a
provider on its cluster.
"""

from __future__ import annotations

from typing import Any

import yaml

from graph.model import unwrap
from plan.verdicts import (
    UPDATE,
    Context,
    Effect,
    InputPath,
    Rules,
    Verdict,
    covers,
    field_of,
    value_at,
)

_SELECTOR = ("spec.selector",)
_KIND_FORCE_NEW: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): _SELECTOR,
    ("apps", "DaemonSet"): _SELECTOR,
    ("apps", "StatefulSet"): (
        *_SELECTOR,
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("roleRef",),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("roleRef",),
    ("batch", "Job"): ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    ("storage.k8s.io", "StorageClass"): ("parameters", "provisioner"),
    ("core", "Service"): ("spec.clusterIP",),
    ("core", "Secret"): ("type",),
    ("core", "PersistentVolumeClaim"): (
        "spec.accessModes",
        "spec.selector",
        "spec.storageClassName",
        "spec.volumeName",
    ),
    ("core", "ResourceQuota"): ("spec.scopes",),
}
"""pulumi-kubernetes diff.go `forceNew`, for the kinds a platform stack plausibly has."""


_PV_SOURCES = ("spec.csi", "spec.nfs", "spec.hostPath", "spec.local", "spec.gcePersistentDisk")
_REFUSED_UPDATES: dict[tuple[str, str], tuple[str, ...]] = {
    # apis/core/validation ValidatePersistentVolumeUpdate: "spec.persistentvolumesource is
    # immutable after creation", and so is volumeMode.
    ("core", "PersistentVolume"): (*_PV_SOURCES, "spec.volumeMode"),
}
"""Storage objects whose update pulumi-kubernetes sends (no forceNew) and the API server
refuses: `pulumi up` stops at them."""
_REFUSED = (
    "cannot complete: the API server refuses this update ({why}); replace the object and what "
    "binds to it (pulumi up --replace <urn>, the claim's too)"
)


def _refused_update(group: str, kind: str, field_path: tuple[str, ...], ctx: Context) -> str:
    """Why Kubernetes refuses this storage change in place, or ''."""
    if (hit := covers(_REFUSED_UPDATES.get((group, kind), ()), field_path)) is not None:
        return _REFUSED.format(why=f"a PersistentVolume's {hit} is immutable")
    if (group, kind) == ("core", "PersistentVolumeClaim") and covers(
        ("spec.resources.requests",), field_path
    ):
        spec = unwrap(ctx.news.get("spec")) or {}
        if isinstance(spec, dict) and unwrap(spec.get("storageClassName")) == "":
            # plugin/pkg/admission/storage/persistentvolume/resize: only a claim of a
            # StorageClass that allows expansion may grow; none shrinks (core validation).
            return _REFUSED.format(
                why="a claim without a StorageClass cannot be resized; the volume's "
                "PersistentVolume capacity is what grows"
            )
    return ""


class KubernetesObjectRules(Rules):
    """One Kubernetes object (`kubernetes:<group>/<version>:<Kind>`), custom resources too."""

    def __init__(self, token: str) -> None:
        group_version, kind = token.removeprefix("kubernetes:").rsplit(":", 1)
        group = group_version.rsplit("/", 1)[0] if "/" in group_version else "core"
        self.group, self.kind = group, kind
        self.paths = (
            "metadata.name",
            "metadata.namespace",
            *_KIND_FORCE_NEW.get((group, kind), ()),
        )
        self.source = "pulumi-kubernetes diff.go forceNew"

    def _data_replaces(self, ctx: Context) -> bool:
        immutable = bool(unwrap(ctx.news.get("immutable")))
        if self.group == "core" and self.kind == "ConfigMap":
            return immutable or not bool(unwrap(ctx.provider.get("enableConfigMapMutable")))
        if self.group == "core" and self.kind == "Secret":
            return immutable or not bool(unwrap(ctx.provider.get("enableSecretMutable")))
        return False

    def decide(self, path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict:
        field_path = field_of(path)
        if (hit := covers(self.paths, field_path)) is not None:
            return Verdict(Effect.REPLACE, f"{hit} replaces the object")
        if refused := _refused_update(self.group, self.kind, field_path, ctx):
            return Verdict(Effect.FAILS, refused)
        if self._data_replaces(ctx) and covers(("data", "binaryData", "stringData"), field_path):
            return Verdict(
                Effect.REPLACE,
                f"{self.kind} data replaces the object unless the Kubernetes provider sets "
                f"enable{self.kind}Mutable",
            )
        return UPDATE

    def delete_before_replace(self, ctx: Context) -> bool:
        # provider.go: a named object whose name and namespace stay is deleted first.
        meta_old, meta_new = ctx.olds.get("metadata") or {}, ctx.news.get("metadata") or {}
        named = bool(meta_new.get("name"))
        return named and all(meta_old.get(k) == meta_new.get(k) for k in ("name", "namespace"))


class HelmReleaseRules(Rules):
    source = "pulumi-kubernetes helm_release.go Diff"

    def decide(self, path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict:
        if field_of(path)[:1] in (("name",), ("namespace",)):
            return Verdict(Effect.REPLACE, "a release's name or namespace replaces it")
        return Verdict(Effect.UPDATE, "helm upgrade in place")


class ConfigFileRules(Rules):
    """yaml/v2 ConfigFile: a component the provider expands from a file or URL; a new `file`
    is read at `pulumi up` and its objects updated, created or deleted one by one, which the
    offline diff cannot see (the URL's content is not fetched here)."""

    source = "pulumi-kubernetes yaml/v2 configfile.go"

    def decide(self, path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict:
        return Verdict(Effect.UPDATE, "the provider applies the objects of the new manifest")


class ConfigGroupRules(Rules):
    """yaml/v2 ConfigGroup: a component the provider expands; each object is a child."""

    source = "pulumi-kubernetes yaml/v2 configgroup.go"

    def decide(self, path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict:
        if len(path) >= 2 and path[0] == "objs" and isinstance(path[1], int):
            rest = field_of(path[2:])
            if rest in (
                ("apiVersion",),
                ("kind",),
                ("metadata", "name"),
                ("metadata", "namespace"),
            ):
                return Verdict(
                    Effect.UPDATE,
                    "the object's URN changes: the old object is deleted and a new one created",
                )
            obj = unwrap(value_at(ctx.news, path[:2]))
            if isinstance(obj, dict) and isinstance(obj.get("kind"), str):
                version = str(obj.get("apiVersion", "v1"))
                token = (
                    f"kubernetes:{version if '/' in version else 'core/' + version}:{obj['kind']}"
                )
                child = KubernetesObjectRules(token).decide(path[2:], old, new, ctx)
                if child.effect is Effect.REPLACE:
                    return Verdict(
                        Effect.UPDATE, f"the object {obj['kind']} is replaced: {child.note}"
                    )
        return UPDATE


def _active_cluster(kubeconfig: Any) -> tuple[Any, Any]:
    try:
        config = yaml.safe_load(str(unwrap(kubeconfig)))
    except yaml.YAMLError:
        return None, None
    if not isinstance(config, dict):
        return None, None
    contexts = {c.get("name"): c.get("context", {}) for c in config.get("contexts") or []}
    cluster_name = (contexts.get(config.get("current-context")) or {}).get("cluster")
    clusters = {c.get("name"): c.get("cluster", {}) for c in config.get("clusters") or []}
    return cluster_name, (clusters.get(cluster_name) or {}).get("server")


class KubernetesProviderRules(Rules):
    """`pulumi:providers:kubernetes`: provider.go DiffConfig."""

    source = "pulumi-kubernetes provider.go DiffConfig"

    def decide(self, path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict:
        key = field_of(path)[:1]
        identifier = unwrap(ctx.news.get("clusterIdentifier"))
        if key == ("clusterIdentifier",):
            return Verdict(Effect.REPLACE, "a new cluster identifier replaces the provider")
        if key == ("renderYamlToDirectory",):
            return Verdict(Effect.REPLACE, "rendering elsewhere replaces the provider")
        targets = key in (("kubeconfig",), ("context",), ("cluster",)) and not identifier
        if targets and (key != ("kubeconfig",) or _active_cluster(old) != _active_cluster(new)):
            return Verdict(
                Effect.REPLACE,
                "the provider now points at another cluster: it and every object it "
                "manages are replaced",
            )
        return UPDATE
