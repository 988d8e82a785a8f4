"""The stack config schema root: every `ai-infra:` key, loaded and validated as a whole before
anything is built.

`parse()` checks shapes with pydantic, then collects the cross-checks each component module
owns, and raises one `ConfigError` listing every problem with its config path and fix.
Nothing may be registered before it returns. Defaults one key inherits from another (a
slice's zone, the cluster's name and location, deletion protection, a bucket's location) are
resolved here, once, as properties of `StackConfig`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any

import pulumi
from pydantic import AfterValidator, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from components import buckets as buckets_module
from components import gke, network, quota, teams, tpu_provisioner, tpu_slices
from components import gpu_clusters as gpu_clusters_module
from components import gpu_pools as gpu_pools_module
from components import workload_identity as workload_identity_module
from components.base import (
    ConfigModel,
    DnsLabel,
    PathPart,
    Problem,
    duplicate_names,
    under,
)
from components.buckets import BucketConfig
from components.gke import ClusterConfig
from components.gpu_clusters import GpuClusterConfig
from components.gpu_pools import GpuPoolConfig
from components.kueue import CHARTS, KueueConfig
from components.network import NetworkConfig
from components.teams import TeamConfig
from components.tpu_provisioner import TpuProvisionerConfig
from components.tpu_slices import TpuSliceConfig
from components.workload_identity import WorkloadIdentityConfig

NAMESPACE = "ai-infra"
GCP_KEYS = {"project": "gcp:project", "region": "gcp:region", "zone": "gcp:zone"}

RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gke-managed-system",
        tpu_provisioner.NAMESPACE,
    }
)
SYSTEM_NAMESPACES = RESERVED_NAMESPACES | {c.namespace for c in CHARTS.values()}
"""Namespaces the platform owns; no team or identity may create them."""
MANAGED_LABELS = ("managed-by", "ai-infra-stack")
"""GCP labels the program puts on every resource beside `ai-infra:labels`."""


def _checked(pattern: str, what: str) -> AfterValidator:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"'{value}' is not {what}")
        return value

    return AfterValidator(check)


ProjectId = Annotated[
    str,
    _checked(
        r"[a-z][-a-z0-9]{4,28}[a-z0-9]", "a GCP project id (6-30 lowercase letters, digits, '-')"
    ),
]
Region = Annotated[str, _checked(r"[a-z]+-[a-z]+[0-9]+", "a GCP region such as us-east5")]
Zone = Annotated[str, _checked(r"[a-z]+-[a-z]+[0-9]+-[a-z]", "a GCP zone such as us-east5-a")]
_LABEL_KEY = re.compile(r"[a-z][-_a-z0-9]{0,62}")
_LABEL_VALUE = re.compile(r"[-_a-z0-9]{0,63}")


def _labels(labels: dict[str, str]) -> dict[str, str]:
    bad = [
        k for k, v in labels.items() if not _LABEL_KEY.fullmatch(k) or not _LABEL_VALUE.fullmatch(v)
    ]
    if bad:
        raise ValueError(
            f"labels {', '.join(bad)} are not GCP labels: keys and values use lowercase "
            "letters, digits, '-' and '_' (keys start with a letter)"
        )
    return labels


class StackConfig(ConfigModel):
    """The whole validated config of one stack."""

    project: ProjectId
    """Project id."""
    region: Region
    """Region of the cluster, subnet, NAT and workload policies."""
    zone: Zone
    """Default zone of TPU slices and GPU pools; the cluster's zone when not regional."""
    prefix: DnsLabel = Field(max_length=20)
    """Prefix of every cloud resource name (a DNS label of at most 20 characters); defaults to
    `ai-<stack>`."""
    protect: bool = True
    """Pulumi `protect` on the cluster and buckets, GKE deletion protection, and refusal of
    bucket `forceDestroy`. Set `false` only for throwaway stacks."""
    labels: Annotated[dict[str, str], AfterValidator(_labels)] = Field(default_factory=dict)
    """Labels on every cloud resource that takes them (beside `managed-by` and
    `ai-infra-stack`), e.g. cost-center."""
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    """Address plan and control-plane access."""
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    """The GKE cluster and its CPU pool."""
    tpu_slices: list[TpuSliceConfig] = Field(default_factory=list)
    """TPU slices, each one or more GKE node pools."""
    gpu_pools: list[GpuPoolConfig] = Field(default_factory=list)
    """GPU node pools."""
    gpu_clusters: list[GpuClusterConfig] = Field(default_factory=list)
    """GPU clusters as managed instance groups, as Google's cluster provisioning tool made."""
    buckets: list[BucketConfig] = Field(default_factory=list)
    """GCS buckets."""
    workload_identities: list[WorkloadIdentityConfig] = Field(default_factory=list)
    """Google service accounts for Kubernetes workloads."""
    tpu_provisioner: TpuProvisionerConfig = Field(default_factory=TpuProvisionerConfig)
    """GKE's open-source TPU provisioner."""
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    """Cluster-wide queueing policy."""
    teams: list[TeamConfig] = Field(default_factory=list)
    """Teams onboarded onto the cluster."""

    # Inherited defaults, resolved here and nowhere else.

    @property
    def cluster_name(self) -> str:
        return self.cluster.name or f"{self.prefix}-gke"

    @property
    def cluster_location(self) -> str:
        return self.region if self.cluster.regional else self.zone

    @property
    def deletion_protection(self) -> bool:
        if self.cluster.deletion_protection is None:
            return self.protect
        return self.cluster.deletion_protection

    @property
    def resource_labels(self) -> dict[str, str]:
        """GCP labels of every resource that takes them."""
        return {"managed-by": "pulumi", "ai-infra-stack": self.prefix, **self.labels}

    def zone_of(self, entry: TpuSliceConfig | GpuPoolConfig | GpuClusterConfig) -> str:
        return entry.zone or self.zone

    def bucket_location(self, bucket: BucketConfig) -> str:
        return bucket.location or self.region

    @property
    def tpu_chips(self) -> int:
        return sum(s.chips for s in self.tpu_slices)


def problems(config: StackConfig) -> list[Problem]:
    """Every cross-check of a config whose shapes are valid, from the module that owns it."""
    found: list[Problem] = []
    if not config.zone.startswith(config.region + "-"):
        found.append(Problem(("zone",), f"{config.zone} is not in gcp:region {config.region}"))
    found += under("network", network.problems(config.network))
    found += under("cluster", gke.problems(config.cluster))
    slice_problems = under(
        "tpuSlices",
        duplicate_names([s.name for s in config.tpu_slices], "tpuSlices")
        + tpu_slices.problems(config.tpu_slices),
    )
    pool_problems = under(
        "gpuPools",
        duplicate_names([g.name for g in config.gpu_pools], "gpuPools")
        + gpu_pools_module.problems(config.gpu_pools),
    )
    found += slice_problems + pool_problems
    for key, entries in (("tpuSlices", config.tpu_slices), ("gpuPools", config.gpu_pools)):
        for i, entry in enumerate(entries):
            if entry.zone is not None:
                found += under(
                    (key, i),
                    gke.pool_zone_problems(
                        entry.zone, region=config.region, cluster_location=config.cluster_location
                    ),
                )
    bucket_names = [b.name for b in config.buckets]
    found += under(
        "gpuClusters",
        gpu_clusters_module.problems(
            config.gpu_clusters,
            prefix=config.prefix,
            region=config.region,
            default_zone=config.zone,
            buckets=bucket_names,
            reserved_labels=MANAGED_LABELS,
        ),
    )
    found += under(
        "buckets",
        buckets_module.problems(
            config.buckets, project=config.project, prefix=config.prefix, protect=config.protect
        ),
    )
    found += under(
        "workloadIdentities",
        workload_identity_module.problems(
            config.workload_identities,
            prefix=config.prefix,
            buckets=bucket_names,
            teams=[t.name for t in config.teams],
            reserved_namespaces=SYSTEM_NAMESPACES,
        ),
    )
    found += under(
        "tpuProvisioner",
        tpu_provisioner.problems(config.tpu_provisioner, config.cluster.release_channel),
    )
    if slice_problems or pool_problems:
        # What follows adds up the slices' nodes and chips, which needs valid entries.
        return found
    found += gke.pool_name_problems(
        {("tpuSlices", i): s.pool_names for i, s in enumerate(config.tpu_slices)}
        | {("gpuPools", i): [g.name] for i, g in enumerate(config.gpu_pools)}
    )
    zones = 3 if config.cluster.regional else 1
    nodes = config.cluster.cpu_pool.max_nodes * zones
    nodes += sum(s.nodes for s in config.tpu_slices) + sum(g.max_nodes for g in config.gpu_pools)
    found += under(
        "network",
        network.capacity_problems(config.network, config.cluster.max_pods_per_node, nodes),
    )
    sources = {s.name: s.chips for s in config.tpu_slices} | {
        g.name: g.gpus for g in config.gpu_pools
    }
    found += under(
        "teams",
        teams.problems(
            config.teams,
            prefix=config.prefix,
            sources=sources,
            buckets=bucket_names,
            reserved_namespaces=SYSTEM_NAMESPACES,
            rbac_security_group=config.cluster.rbac_security_group,
        ),
    )
    found += quota.flavor_problems(quota.derive_flavors(config.tpu_slices, config.gpu_pools))
    return found


class ConfigError(pulumi.RunError):
    """Every problem in a stack's config, each rendered as `path: message`."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        self.rendered = [(render_path(p.path), p.message) for p in problems]
        lines = "\n".join(f"  {path}: {message}" for path, message in self.rendered)
        super().__init__(f"invalid stack config ({len(problems)} problem(s)):\n{lines}")


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def render_path(path: tuple[PathPart, ...]) -> str:
    """`("tpuSlices", 2, "zone")` -> `ai-infra:tpuSlices[2].zone`; `("zone",)` -> `gcp:zone`.
    A key that is not a plain word is quoted, so a key holding '.', '@' or '[' cannot pass
    for a path."""
    if not path:
        return NAMESPACE
    head, *rest = path
    head = str(head)
    text = head if ":" in head else GCP_KEYS.get(head, f"{NAMESPACE}:{head}")
    for part in rest:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}"
        else:
            text += f"[{json.dumps(part)}]"
    return text


def _alias(field: str, info: FieldInfo) -> str:
    return info.alias or field


_PYDANTIC_TAG = re.compile(r"\[|^(function-(after|before|wrap|plain)|lax-or-strict|json-or-python)")
"""Location parts pydantic adds for validators and unions; they are not config keys."""


def _problem_of(error: ErrorDetails) -> Problem:
    loc = tuple(
        part for part in error["loc"] if isinstance(part, int) or not _PYDANTIC_TAG.search(part)
    )
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        parent = _model_at(loc[:-1])
        valid = ", ".join(sorted(_aliases(parent))) if parent else ""
        return Problem(loc, f"unknown field; valid fields here are {valid}")
    if error["type"] == "missing":
        return Problem(loc, "is required")
    if "[key]" in error["loc"]:
        message = f"key: {message}"
    return Problem(loc, message)


def _aliases(model: type[ConfigModel]) -> list[str]:
    return [_alias(name, info) for name, info in model.model_fields.items()]


def _model_at(loc: tuple[PathPart, ...]) -> type[ConfigModel] | None:
    """The config model class at a validation location, to list its valid keys."""
    model: Any = StackConfig
    for part in loc:
        if isinstance(part, int):
            continue
        fields = {_alias(n, i): i for n, i in model.model_fields.items()} | model.model_fields
        info = fields.get(part)
        if info is None:
            return None
        model = config_model_in(info.annotation)
        if model is None:
            return None
    return model if isinstance(model, type) and issubclass(model, ConfigModel) else None


def config_model_in(annotation: Any) -> type[ConfigModel] | None:
    """The config model a field holds, directly or in a list, dict or optional."""
    if isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = config_model_in(arg)
        if found is not None:
            return found
    return None


def stack_keys() -> list[str]:
    """The `ai-infra:` keys a stack file may set, as written there."""
    return [_alias(n, i) for n, i in StackConfig.model_fields.items() if n not in GCP_KEYS]


def parse(raw: Mapping[str, Any], stack: str) -> StackConfig:
    """Validate a stack's config map (`gcp:project`, `ai-infra:network`, ...).

    Values may be strings holding JSON, as the Pulumi engine passes them, or parsed values.
    """
    data: dict[str, Any] = {"prefix": f"ai-{stack}"}
    found: list[Problem] = []
    valid_keys = stack_keys()
    for field, key in GCP_KEYS.items():
        if raw.get(key) is not None:
            data[field] = raw[key]
    for key, value in raw.items():
        namespace, _, name = key.partition(":")
        if namespace != NAMESPACE:
            continue
        if name not in valid_keys:
            found.append(
                Problem(
                    (name,),
                    f"unknown config key; valid keys are {', '.join(sorted(valid_keys))}",
                )
            )
            continue
        data[name] = _decode(value)
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(found + [_problem_of(detail) for detail in error.errors()]) from None
    found += problems(config)
    if found:
        raise ConfigError(found)
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
