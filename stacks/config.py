"""The stack config schema: every `ai-infra:` key, validated as a whole before anything is built.

`load()` reads the Pulumi config, validates it, and raises one `ConfigError` listing every
problem with its config path and fix. Nothing may be registered before it returns.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from components.base import ConfigModel, DnsLabel
from components.buckets import BucketConfig
from components.gke import ClusterConfig, pods_per_node_prefix
from components.gpu_pools import GpuPoolConfig
from components.kueue import CHARTS, KueueConfig
from components.network import NetworkConfig
from components.quota import derive_flavors, explicit_units
from components.teams import TeamConfig
from components.tpu_slices import TpuSliceConfig
from components.workload_identity import WorkloadIdentityConfig, account_id_problem

NAMESPACE = "ai-infra"
GCP_KEYS = {"project": "gcp:project", "region": "gcp:region", "zone": "gcp:zone"}
TPU_PROVISIONER_NAMESPACE = "tpu-provisioner-system"
TPU_PROVISIONER_KSA = "tpu-provisioner-controller-manager"

RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gke-managed-system",
        TPU_PROVISIONER_NAMESPACE,
    }
)
SYSTEM_NAMESPACES = RESERVED_NAMESPACES | {c.namespace for c in CHARTS.values()}
"""Namespaces the platform owns; no team or identity may create them."""
MAX_FLAVORS_PER_GROUP = 64
"""Kueue's limit of flavors in one ClusterQueue resource group."""

_PROJECT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
_ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")


class TpuProvisionerConfig(ConfigModel):
    """`ai-infra:tpuProvisioner`: the identity for GKE's open-source TPU provisioner, which
    creates slice node pools on demand. It manages node pools itself, so the cluster must not
    be on a release channel."""

    enabled: bool = False


class StackConfig(ConfigModel):
    """The whole validated config of one stack."""

    project: str
    region: str
    zone: str
    """Default zone for TPU slices and GPU pools; the cluster's zone when not regional."""
    prefix: DnsLabel = Field(max_length=20)
    """Prefix of every cloud resource name; defaults to `ai-<stack>`."""
    protect: bool = True
    """Protect the cluster and buckets from deletion (Pulumi `protect`, GKE deletion
    protection) and refuse bucket `forceDestroy`. Turn off only for throwaway stacks."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Labels on every cloud resource that takes them, e.g. cost-center."""
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    tpu_slices: list[TpuSliceConfig] = Field(default_factory=list)
    gpu_pools: list[GpuPoolConfig] = Field(default_factory=list)
    buckets: list[BucketConfig] = Field(default_factory=list)
    workload_identities: list[WorkloadIdentityConfig] = Field(default_factory=list)
    tpu_provisioner: TpuProvisionerConfig = Field(default_factory=TpuProvisionerConfig)
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    teams: list[TeamConfig] = Field(default_factory=list)

    @field_validator("project")
    @classmethod
    def _project_id(cls, value: str) -> str:
        if not _PROJECT_ID.match(value):
            raise ValueError(
                f"'{value}' is not a GCP project id (6-30 lowercase letters, digits, '-')"
            )
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not _REGION.match(value):
            raise ValueError(f"'{value}' is not a GCP region such as us-east5")
        return value

    @field_validator("zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        if not _ZONE.match(value):
            raise ValueError(f"'{value}' is not a GCP zone such as us-east5-a")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str]) -> dict[str, str]:
        pattern = re.compile(r"^[a-z][-_a-z0-9]{0,62}$")
        bad = [
            k
            for k, v in labels.items()
            if not pattern.match(k) or not re.match(r"^[-_a-z0-9]{0,63}$", v)
        ]
        if bad:
            raise ValueError(
                f"labels {', '.join(bad)} are not GCP labels: keys and values use lowercase "
                "letters, digits, '-' and '_' (keys start with a letter)"
            )
        return labels

    @model_validator(mode="after")
    def _cross_checks(self) -> StackConfig:
        problems = list(self._problems())
        if problems:
            raise ValueError("\n".join(f"@@{path}@@{message}" for path, message in problems))
        return self

    def slice_zone(self, slice_: TpuSliceConfig | GpuPoolConfig) -> str:
        return slice_.zone or self.zone

    def _problems(self) -> Iterable[tuple[str, str]]:
        if not self.zone.startswith(self.region + "-"):
            yield "gcp:zone", f"{self.zone} is not in gcp:region {self.region}"
        for kind, entries in (
            ("tpuSlices", self.tpu_slices),
            ("gpuPools", self.gpu_pools),
            ("buckets", self.buckets),
            ("workloadIdentities", self.workload_identities),
            ("teams", self.teams),
        ):
            yield from _duplicates(kind, [e.name for e in entries])
        pool_names = ["cpu"] + [name for s in self.tpu_slices for name in s.pool_names]
        pool_names += [g.name for g in self.gpu_pools]
        for name, seen in Counter(pool_names).items():
            if seen > 1:
                yield (
                    f"{NAMESPACE}:tpuSlices",
                    (
                        f"node pool name '{name}' would be used {seen} times (multi-host "
                        "slices make pools <name>-0, <name>-1, ...; single-host slices and GPU "
                        "pools use their name; the CPU pool is 'cpu'); rename one"
                    ),
                )

        for kind, pools in (("tpuSlices", self.tpu_slices), ("gpuPools", self.gpu_pools)):
            for i, pool in enumerate(pools):
                zone = self.slice_zone(pool)
                if not zone.startswith(self.region + "-"):
                    yield (
                        f"{NAMESPACE}:{kind}[{i}].zone",
                        (
                            f"{zone} is not in gcp:region {self.region}; node pools must be in the "
                            "cluster's region"
                        ),
                    )
                elif not self.cluster.regional and zone != self.zone:
                    yield (
                        f"{NAMESPACE}:{kind}[{i}].zone",
                        (
                            f"the cluster is zonal in {self.zone}, so its node pools cannot be in "
                            f"{zone}; drop the zone or set cluster.regional: true"
                        ),
                    )

        yield from self._capacity_problems()

        buckets = {b.name for b in self.buckets}
        for i, bucket in enumerate(self.buckets):
            full_name = bucket.bucket_name(self.project, self.prefix)
            if len(full_name) > 63:
                yield (
                    f"{NAMESPACE}:buckets[{i}].name",
                    (f"bucket name '{full_name}' is longer than 63 characters; shorten the name"),
                )
            if bucket.force_destroy and self.protect:
                yield (
                    f"{NAMESPACE}:buckets[{i}].forceDestroy",
                    (
                        "this stack sets ai-infra:protect, so its buckets must not be "
                        "force-destroyed; remove forceDestroy (or set ai-infra:protect: false "
                        "for a throwaway stack)"
                    ),
                )
        for i, identity in enumerate(self.workload_identities):
            problem = account_id_problem(f"{self.prefix}-{identity.name}")
            if problem:
                yield f"{NAMESPACE}:workloadIdentities[{i}].name", problem
            yield from _unknown_buckets(
                f"{NAMESPACE}:workloadIdentities[{i}]", identity.buckets, buckets
            )
        yield from self._identity_namespace_problems()
        yield from self._team_problems()
        if self.tpu_provisioner.enabled and self.cluster.release_channel != "NONE":
            yield (
                f"{NAMESPACE}:tpuProvisioner.enabled",
                (
                    "the TPU provisioner manages node pools itself and requires a cluster without "
                    f"a release channel; set ai-infra:cluster.releaseChannel: NONE (now "
                    f"{self.cluster.release_channel})"
                ),
            )

    def _identity_namespace_problems(self) -> Iterable[tuple[str, str]]:
        teams = {t.name for t in self.teams}
        created: dict[str, int] = {}
        for i, identity in enumerate(self.workload_identities):
            path = f"{NAMESPACE}:workloadIdentities[{i}]"
            if identity.name in teams:
                yield (
                    f"{path}.name",
                    (
                        f"'{identity.name}' is also a team, whose service account has the same id; "
                        "rename the identity"
                    ),
                )
            if not identity.create_namespace:
                continue
            if identity.namespace in teams or identity.namespace in SYSTEM_NAMESPACES:
                owner = "a team" if identity.namespace in teams else "the platform"
                yield (
                    f"{path}.createNamespace",
                    (
                        f"namespace '{identity.namespace}' is created by {owner}; set "
                        "createNamespace: false"
                    ),
                )
            elif identity.namespace in created:
                yield (
                    f"{path}.createNamespace",
                    (
                        f"namespace '{identity.namespace}' is already created by "
                        f"workloadIdentities[{created[identity.namespace]}]; "
                        "set createNamespace: false"
                    ),
                )
            else:
                created[identity.namespace] = i

    def _team_problems(self) -> Iterable[tuple[str, str]]:
        sources = {s.name: s.chips for s in self.tpu_slices}
        sources |= {g.name: g.gpus for g in self.gpu_pools}
        claimed: dict[str, int] = {}
        buckets = {b.name for b in self.buckets}
        for i, team in enumerate(self.teams):
            path = f"{NAMESPACE}:teams[{i}]"
            if team.name in SYSTEM_NAMESPACES:
                yield f"{path}.name", f"'{team.name}' is a system namespace; choose another name"
            problem = account_id_problem(f"{self.prefix}-{team.name}")
            if problem:
                yield f"{path}.name", problem
            for key, share in team.quota.items():
                if key not in sources:
                    yield (
                        f"{path}.quota.{key}",
                        (
                            f"no TPU slice or GPU pool named '{key}'; known: "
                            f"{', '.join(sources) or 'none'}"
                        ),
                    )
                    continue
                claimed[key] = claimed.get(key, 0) + explicit_units(share, sources[key])
                if claimed[key] > sources[key]:
                    yield (
                        f"{path}.quota.{key}",
                        (
                            f"teams' shares of '{key}' add up to {claimed[key]}, but it provides "
                            f"{sources[key]}; lower the shares or add capacity"
                        ),
                    )
            yield from _unknown_buckets(path, team.buckets, buckets)
            if team.groups and not self.cluster.rbac_security_group:
                yield (
                    f"{path}.groups",
                    (
                        "Google groups in RBAC need ai-infra:cluster.rbacSecurityGroup "
                        "(gke-security-groups@<your domain>) with these groups as members"
                    ),
                )
        flavors = derive_flavors(self.tpu_slices, self.gpu_pools)
        for resource in {f.resource for f in flavors}:
            count = sum(f.resource == resource for f in flavors)
            if count > MAX_FLAVORS_PER_GROUP:
                yield (
                    f"{NAMESPACE}:tpuSlices",
                    (
                        f"{count} distinct {resource} flavors exceed Kueue's "
                        f"{MAX_FLAVORS_PER_GROUP} per resource group; use fewer distinct shapes"
                    ),
                )

    def _capacity_problems(self) -> Iterable[tuple[str, str]]:
        """The pods range must hold a per-node block for every node the pools can reach."""
        per_node = pods_per_node_prefix(self.cluster.max_pods_per_node)
        pods = ipaddress.IPv4Network(self.network.pods_cidr)
        capacity = 2 ** max(per_node - pods.prefixlen, 0) if per_node >= pods.prefixlen else 0
        zones = 3 if self.cluster.regional else 1
        nodes = self.cluster.cpu_pool.max_nodes * zones
        nodes += sum(s.nodes for s in self.tpu_slices)
        nodes += sum(g.max_nodes for g in self.gpu_pools)
        if nodes > capacity:
            yield (
                f"{NAMESPACE}:network.podsCidr",
                (
                    f"{self.network.pods_cidr} holds {capacity} nodes at cluster.maxPodsPerNode "
                    f"{self.cluster.max_pods_per_node} (a /{per_node} each), but the pools can "
                    f"grow to {nodes} nodes; widen podsCidr or lower cluster.maxPodsPerNode"
                ),
            )
        if self.cluster.cpu_pool.max_nodes < self.cluster.cpu_pool.min_nodes:
            yield (
                f"{NAMESPACE}:cluster.cpuPool.maxNodes",
                (
                    f"{self.cluster.cpu_pool.max_nodes} is below minNodes "
                    f"{self.cluster.cpu_pool.min_nodes}"
                ),
            )

    @property
    def tpu_chips(self) -> int:
        return sum(s.chips for s in self.tpu_slices)


def _unknown_buckets(
    path: str, named: Iterable[str], buckets: set[str]
) -> Iterable[tuple[str, str]]:
    """Bucket access (of an identity or a team) that names no `ai-infra:buckets` entry."""
    for bucket in named:
        if bucket not in buckets:
            yield (
                f"{path}.buckets.{bucket}",
                f"no bucket named '{bucket}' in ai-infra:buckets; known: "
                f"{', '.join(sorted(buckets)) or 'none'}",
            )


def _duplicates(kind: str, names: list[str]) -> Iterable[tuple[str, str]]:
    for name, seen in Counter(names).items():
        if seen > 1:
            index = [i for i, n in enumerate(names) if n == name][1]
            yield (
                f"{NAMESPACE}:{kind}[{index}].name",
                (f"'{name}' is used by {seen} entries of {kind}; names must be unique"),
            )


class ConfigError(pulumi.RunError):
    """Every problem in a stack's config, each as `path: message`."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {path}: {message}" for path, message in problems)
        super().__init__(f"invalid stack config ({len(problems)} problem(s)):\n{lines}")


def _config_key(field: str) -> str:
    if field in GCP_KEYS:
        return GCP_KEYS[field]
    info = StackConfig.model_fields.get(field)
    return f"{NAMESPACE}:{_alias(field, info)}"


def _alias(field: str, info: FieldInfo | None) -> str:
    return (info.alias if info and info.alias else field) if info else field


def _path(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return NAMESPACE
    head, *rest = loc
    path = _config_key(str(head))
    for part in rest:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _problems_of(error: ErrorDetails) -> list[tuple[str, str]]:
    loc = tuple(error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        parent = _model_at(loc[:-1])
        valid = ", ".join(sorted(_aliases(parent))) if parent else ""
        what = "config key" if len(loc) == 1 else "field"
        return [(_path(loc), f"unknown {what}; valid {what}s here are {valid}")]
    if error["type"] == "missing":
        return [(_path(loc), "is required")]
    if message.startswith("@@"):
        problems = []
        for line in message.splitlines():
            _, path, text = line.split("@@", 2)
            problems.append((path, text))
        return problems
    problems = []
    for line in message.splitlines():
        if line.startswith("@"):
            field, _, text = line[1:].partition(": ")
            problems.append((f"{_path(loc)}.{field}", text))
        else:
            problems.append((_path(loc), line))
    return problems


def _aliases(model: type[ConfigModel]) -> list[str]:
    if model is StackConfig:
        return [
            _config_key(name).removeprefix(f"{NAMESPACE}:")
            for name in model.model_fields
            if name not in GCP_KEYS
        ]
    return [_alias(name, info) for name, info in model.model_fields.items()]


def _model_at(loc: tuple[int | str, ...]) -> type[ConfigModel] | None:
    """The config model class at a validation location, to list its valid keys."""
    model: Any = StackConfig
    for part in loc:
        if isinstance(part, int):
            continue
        fields = {(_alias(n, i)): i for n, i in model.model_fields.items()} | model.model_fields
        info = fields.get(part)
        if info is None:
            return None
        model = _unwrap(info.annotation)
        if model is None:
            return None
    return model if isinstance(model, type) and issubclass(model, ConfigModel) else None


def _unwrap(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _unwrap(arg)
        if found is not None:
            return found
    return None


def parse(raw: Mapping[str, Any], stack: str) -> StackConfig:
    """Validate a stack's config map (`gcp:project`, `ai-infra:network`, ...).

    Values may be strings holding JSON, as the Pulumi engine passes them, or parsed values.
    """
    data: dict[str, Any] = {"prefix": f"ai-{stack}"}
    problems: list[tuple[str, str]] = []
    for field, key in GCP_KEYS.items():
        if raw.get(key) is not None:
            data[field] = raw[key]
    for key, value in raw.items():
        namespace, _, name = key.partition(":")
        if namespace != NAMESPACE:
            continue
        data[name] = _decode(value)
    valid_keys = set(_aliases(StackConfig))
    for key in list(data):
        if key not in valid_keys and key not in GCP_KEYS:
            problems.append(
                (
                    f"{NAMESPACE}:{key}",
                    f"unknown config key; valid keys are {', '.join(sorted(valid_keys))}",
                )
            )
            del data[key]
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as error:
        for detail in error.errors():
            problems.extend(_problems_of(detail))
        raise ConfigError(problems) from None
    if problems:
        raise ConfigError(problems)
    return config


def _decode(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def read_pulumi_config() -> dict[str, Any]:
    """Every config value the engine handed this program, keyed `namespace:key`."""
    from pulumi.runtime import config as runtime_config

    values: dict[str, Any] = dict(runtime_config.get_config_env())
    values.update(runtime_config.CONFIG.get())
    return values


def load() -> StackConfig:
    """Validate the running stack's config; raises `ConfigError` before any resource exists."""
    return parse(read_pulumi_config(), pulumi.get_stack())
