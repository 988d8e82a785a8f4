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
import yaml
from pydantic import AfterValidator, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from components import buckets as buckets_module
from components import (
    gke,
    locations,
    network,
    quota,
    slurm,
    teams,
    tpu_provisioner,
    tpu_slices,
    tpu_vms,
)
from components import gpu_clusters as gpu_clusters_module
from components import gpu_pools as gpu_pools_module
from components import workload_identity as workload_identity_module
from components.base import (
    ConfigModel,
    DnsLabel,
    PathPart,
    Problem,
    duplicate_names,
    matching,
    service_account_email,
    under,
)
from components.buckets import BucketConfig
from components.gke import ClusterConfig
from components.gpu_clusters import GpuClusterConfig
from components.gpu_pools import GpuPoolConfig
from components.kueue import CHARTS, KueueConfig
from components.network import NetworkConfig
from components.slurm import SlurmConfig
from components.teams import TeamConfig
from components.tpu_provisioner import TpuProvisionerConfig
from components.tpu_slices import TpuSliceConfig
from components.tpu_vms import TpuVmConfig
from components.workload_identity import WorkloadIdentityConfig, ownership_problems

NAMESPACE = "ai-infra"
GCP_KEYS = {"project": "gcp:project", "region": "gcp:region", "zone": "gcp:zone"}

OTHER_NAMESPACES = frozenset({"gcp", "pulumi", "kubernetes"})
"""Config namespaces that belong to Pulumi and its providers; any other is a typo."""

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
GKE_NAMESPACES = frozenset(
    {
        "gmp-system",
        "gmp-public",
        "config-management-system",
        "gatekeeper-system",
        "istio-system",
        "knative-serving",
    }
)
"""Namespaces GKE creates for managed Prometheus, Config Sync, Policy Controller and service
mesh; its own `gke-*` namespaces are covered by prefix (no complete list is published)."""
MANAGED_LABELS = ("managed-by", "ai-infra-stack")
"""GCP labels the program puts on every resource beside `ai-infra:labels`."""
PROVIDER_LABELS = ("goog-pulumi-provisioned",)
"""Labels pulumi-gcp adds to every labelled resource (`addPulumiAttributionLabel`)."""
MAX_LABELS = 64
"""GCP's limit of labels per resource ("Create and manage cluster and node pool labels")."""


def namespace_owner(name: str) -> str | None:
    """Who creates namespace `name`, when it is not for a team or identity to create."""
    if name.startswith("kube-") or name == "default":
        return "Kubernetes"  # "kube-" is reserved for Kubernetes system namespaces
    if name in SYSTEM_NAMESPACES:
        return "the platform (JobSet, Kueue, the TPU provisioner)"
    if name.startswith("gke-") or name in GKE_NAMESPACES:
        return "GKE"
    return None


def _no_google(value: str) -> str:
    # "Creating and managing projects": ids cannot contain restricted strings such as google.
    if "google" in value:
        raise ValueError(f"'{value}' contains 'google', which GCP project ids may not")
    return value


ProjectId = Annotated[
    str,
    matching(
        r"[a-z][-a-z0-9]{4,28}[a-z0-9]",
        "is not a GCP project id (6-30 lowercase letters, digits, '-')",
    ),
    AfterValidator(_no_google),
]
Region = Annotated[
    str, matching(r"[a-z]+-[a-z]+[0-9]{1,2}", "is not a GCP region such as us-east5")
]
Zone = Annotated[
    str,
    matching(r"[a-z]+-[a-z]+[0-9]{1,2}-[a-z][a-z0-9]{0,4}", "is not a GCP zone such as us-east5-a"),
]
_LABEL_KEY = re.compile(r"[a-z][-_a-z0-9]{0,62}")
_LABEL_VALUE = re.compile(r"[-_a-z0-9]{0,63}")


def _labels(labels: dict[str, str]) -> dict[str, str]:
    bad = [
        k for k, v in labels.items() if not _LABEL_KEY.fullmatch(k) or not _LABEL_VALUE.fullmatch(v)
    ]
    if bad:
        raise ValueError(
            f"labels {', '.join(bad)} are not GCP labels: keys and values use lowercase "
            "letters, digits, '-' and '_' (keys start with a letter), at most 63 characters"
        )
    taken = [k for k in labels if k in MANAGED_LABELS or k in PROVIDER_LABELS]
    if taken:
        raise ValueError(
            f"{', '.join(taken)} are set by the program itself; choose other label keys"
        )
    room = MAX_LABELS - len(MANAGED_LABELS) - len(PROVIDER_LABELS)
    if len(labels) > room:
        raise ValueError(
            f"{len(labels)} labels, but GCP allows {MAX_LABELS} per resource and the program "
            f"and provider add {MAX_LABELS - room}; keep at most {room}"
        )
    return labels


class StackConfig(ConfigModel):
    """The whole validated config of one stack."""

    project: ProjectId
    """The Google Cloud project every resource is created in."""
    region: Region
    """Region of the cluster, subnet, NAT and workload policies."""
    zone: Zone
    """Default zone of TPU slices and GPU pools; the cluster's zone when `cluster.regional` is
    false."""
    prefix: DnsLabel = Field(max_length=20)
    """Prefix of every cloud resource name (a DNS label of at most 20 characters)."""
    protect: bool = True
    """Pulumi `protect` on the cluster and buckets, GKE deletion protection, and refusal of
    bucket `forceDestroy`. Set `false` only for throwaway stacks."""
    labels: Annotated[dict[str, str], AfterValidator(_labels)] = Field(default_factory=dict)
    """Labels on every cloud resource that takes them, e.g. cost-center. The program adds
    `managed-by` and `ai-infra-stack`, and pulumi-gcp `goog-pulumi-provisioned`, so at most
    61 are yours (GCP allows 64)."""
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    """Address plan and control-plane access. The subnet, pods, services and control-plane
    ranges must be disjoint."""
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    """The GKE cluster and its CPU pool."""
    tpu_slices: list[TpuSliceConfig] = Field(default_factory=list)
    """TPU slices, each one or more GKE node pools."""
    gpu_pools: list[GpuPoolConfig] = Field(default_factory=list)
    """GPU node pools."""
    gpu_clusters: list[GpuClusterConfig] = Field(default_factory=list)
    """GPU clusters as managed instance groups, as Google's cluster provisioning tool made."""
    buckets: list[BucketConfig] = Field(default_factory=list)
    """GCS buckets. Uniform bucket-level access and public access prevention are always on."""
    workload_identities: list[WorkloadIdentityConfig] = Field(default_factory=list)
    """Google service accounts for Kubernetes workloads. Each one's Kubernetes service account
    is created in the cluster and annotated with the Google service account."""
    tpu_provisioner: TpuProvisionerConfig = Field(default_factory=TpuProvisionerConfig)
    """The identity of GKE's open-source TPU provisioner, which creates slice node pools on
    demand."""
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    """Cluster-wide queueing policy."""
    teams: list[TeamConfig] = Field(default_factory=list)
    """Teams onboarded onto the cluster: each gets a namespace, a ClusterQueue and LocalQueue
    with its share of the slices, a Google service account and the access it lists."""
    tpu_vms: list[TpuVmConfig] = Field(default_factory=list)
    """TPU VM slices outside GKE, each a Cloud TPU queued resource of one or more slices."""
    slurm: SlurmConfig | None = None
    """A Slurm-GCP v6 cluster with Cloud TPU nodesets, beside the GKE cluster."""

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

    def zone_of(
        self, entry: TpuSliceConfig | GpuPoolConfig | TpuVmConfig | GpuClusterConfig
    ) -> str:
        return entry.zone or self.zone

    def bucket_location(self, bucket: BucketConfig) -> str:
        return bucket.location or self.region

    @property
    def provisioner_zone(self) -> str:
        return self.tpu_provisioner.zone or self.zone

    @property
    def provisioner_node_service_account(self) -> str:
        """The account of the nodes the TPU provisioner creates."""
        return self.tpu_provisioner.node_service_account or service_account_email(
            gke.node_account_id(self.prefix), self.project
        )

    @property
    def tpu_chips(self) -> int:
        return sum(s.chips for s in self.tpu_slices)


def problems(config: StackConfig) -> list[Problem]:
    """Every cross-check of a config whose shapes are valid, from the module that owns it."""
    found: list[Problem] = []
    if problem := locations.zone_problem(config.zone, config.region):
        found.append(Problem(("zone",), problem))
    network_problems = under("network", network.problems(config.network))
    found += network_problems
    found += under("cluster", gke.problems(config.cluster))
    slice_problems = under(
        "tpuSlices",
        duplicate_names([s.name for s in config.tpu_slices], "tpuSlices")
        + tpu_slices.problems(config.tpu_slices, [config.zone_of(s) for s in config.tpu_slices])
        + tpu_slices.version_problems(
            config.tpu_slices, config.cluster.version, gke.version_at_least
        ),
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
            namespace_owner=namespace_owner,
        ),
    )
    vm_problems = under(
        "tpuVms",
        tpu_vms.problems(
            config.tpu_vms,
            region=config.region,
            prefix=config.prefix,
            default_zone=config.zone,
            buckets=bucket_names,
            stack_labels=config.resource_labels,
        ),
    )
    found += vm_problems
    if config.slurm is not None:
        found += under(
            "slurm",
            slurm.problems(
                config.slurm,
                project=config.project,
                zone=config.zone,
                region=config.region,
                prefix=config.prefix,
                buckets=bucket_names,
            ),
        )
    found += _ownership_problems(config)
    provisioner_problems = under(
        "tpuProvisioner",
        tpu_provisioner.problems(
            config.tpu_provisioner,
            release_channel=config.cluster.release_channel,
            region=config.region,
            cluster_location=config.cluster_location,
            default_zone=config.zone,
        ),
    )
    found += provisioner_problems
    if slice_problems or pool_problems:
        # What follows adds up the slices' nodes and chips, which needs valid entries.
        return found
    found += gke.pool_name_problems(
        {("tpuSlices", i): s.pool_names for i, s in enumerate(config.tpu_slices)}
        | {("gpuPools", i): [g.name] for i, g in enumerate(config.gpu_pools)}
    )
    # A regional cluster's CPU pool has nodes in each of the region's three zones.
    zones = 3 if config.cluster.regional else 1
    pools = [
        (gke.CPU_POOL, config.cluster.cpu_pool.max_nodes * zones, config.cluster.max_pods_per_node)
    ]
    pools += [(s.name, s.nodes, s.max_pods_per_node) for s in config.tpu_slices]
    pools += [(g.name, g.max_nodes, g.max_pods_per_node) for g in config.gpu_pools]
    # The provisioner's capacity counts once its quota's shapes resolve; the pools it creates
    # take the cluster's default pod density.
    quota_problems = [p for p in provisioner_problems if p.path[1:2] == ("quota",)]
    provisioner = TpuProvisionerConfig() if quota_problems else config.tpu_provisioner
    pools.append(
        (
            "the TPU provisioner's pools",
            tpu_provisioner.max_nodes(provisioner),
            config.cluster.max_pods_per_node,
        )
    )
    if not network_problems:
        found += under("network", network.capacity_problems(config.network, pools))
    provisioned = tpu_provisioner.capacity(provisioner)
    sources = (
        {s.name: s.chips for s in config.tpu_slices}
        | {g.name: g.gpus for g in config.gpu_pools}
        | {name: chips for name, (_, chips) in provisioned.items()}
    )
    if not vm_problems and not network_problems:
        found += under(
            "network",
            tpu_vms.subnet_problems(
                config.tpu_vms,
                subnet_cidr=config.network.subnet_cidr,
                gke_nodes=sum(nodes for _, nodes, _ in pools),
            ),
        )
    found += under(
        "teams",
        teams.problems(
            config.teams,
            prefix=config.prefix,
            sources=sources,
            buckets=bucket_names,
            namespace_owner=namespace_owner,
            rbac_security_group=config.cluster.rbac_security_group,
        ),
    )
    found += quota.flavor_problems(
        quota.derive_flavors(config.tpu_slices, config.gpu_pools, provisioned)
    )
    return found


def _ownership_problems(config: StackConfig) -> list[Problem]:
    """Each Google service account id and each Kubernetes service account has one owner: the
    node pools, the TPU provisioner, a team, a workload identity, a TPU VM entry, a GPU
    cluster or the Slurm cluster."""
    accounts: list[tuple[tuple[str | int, ...], str]] = [
        (("cluster",), gke.node_account_id(config.prefix)),
        (("tpuProvisioner",), tpu_provisioner.account_id(config.prefix)),
    ]
    if config.slurm is not None:
        accounts += [(("slurm",), slurm.account_id(config.prefix, r)) for r in slurm.ACCOUNT_ROLES]
    accounts += [(("teams", i), f"{config.prefix}-{t.name}") for i, t in enumerate(config.teams)]
    accounts += [
        (("workloadIdentities", i), f"{config.prefix}-{w.name}")
        for i, w in enumerate(config.workload_identities)
    ]
    accounts += [
        (("tpuVms", i), f"{config.prefix}-{v.name}")
        for i, v in enumerate(config.tpu_vms)
        if v.service_account is None
    ]
    accounts += [
        (("gpuClusters", i), gpu_clusters_module.account_id(config.prefix, c.name))
        for i, c in enumerate(config.gpu_clusters)
    ]
    if config.slurm is not None:
        accounts += [(("slurm",), slurm.account_id(config.prefix, r)) for r in slurm.ACCOUNT_ROLES]
    ksas: list[tuple[tuple[str | int, ...], str]] = [
        (
            ("tpuProvisioner",),
            f"{tpu_provisioner.NAMESPACE}/{tpu_provisioner.KUBERNETES_SERVICE_ACCOUNT}",
        )
    ]
    ksas += [(("teams", i), f"{t.name}/{t.service_account}") for i, t in enumerate(config.teams)]
    ksas += [
        (("workloadIdentities", i), f"{w.namespace}/{w.service_account}")
        for i, w in enumerate(config.workload_identities)
    ]
    # Two entries of one list with one account id have one name, which duplicate_names
    # already reports.
    return ownership_problems(
        accounts, "service account id", "name", within_a_key=False
    ) + ownership_problems(ksas, "Kubernetes service account", "serviceAccount")


def _printable(text: str) -> str:
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


class ConfigError(pulumi.RunError):
    """Every problem in a stack's config, each rendered as `path: message`."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        # Values are quoted into messages as written; a newline in one must not split a line.
        self.rendered = [(_printable(render_path(p.path)), _printable(p.message)) for p in problems]
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
    verbatim = ":" in head or head.startswith("(")
    text = head if verbatim else GCP_KEYS.get(head, f"{NAMESPACE}:{head}")
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


_EXPECTED = {
    "string_type": "expected text{example}; quote values YAML would read as numbers or booleans",
    "int_type": "expected a whole number{example}, written without quotes",
    "float_type": "expected a number{example}",
    "bool_type": "expected true or false, written without quotes",
    "list_type": "expected a list{example}: one '- ' item per line",
    "dict_type": "expected a mapping of keys to values{example}",
    "model_type": "expected a mapping of fields{example}",
    "model_attributes_type": "expected a mapping of fields{example}",
}
"""Pydantic's error types, as sentences that name the expected shape."""
_EXAMPLES = {
    "string_type": ", e.g. name: train",
    "int_type": ", e.g. count: 2",
    "float_type": ", e.g. 0.5",
    "list_type": ", e.g. tpuSlices: [{name: train, accelerator: v5p-32}]",
    "dict_type": ", e.g. quota: {train: 16}",
    "model_type": ", e.g. cpuPool: {machineType: e2-standard-8}",
    "model_attributes_type": ", e.g. cpuPool: {machineType: e2-standard-8}",
}


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    got = error.get("input")
    shown = f"; got {got!r}" if isinstance(got, str | int | float | bool) else ""
    if kind in _EXPECTED:
        return _EXPECTED[kind].format(example=_EXAMPLES.get(kind, "")) + shown
    if kind == "literal_error":
        expected = (error.get("ctx") or {}).get("expected", "")
        return f"must be one of {expected}{shown}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        ctx = error.get("ctx") or {}
        bound = {
            "greater_than_equal": f"at least {ctx.get('ge')}",
            "less_than_equal": f"at most {ctx.get('le')}",
            "greater_than": f"more than {ctx.get('gt')}",
            "less_than": f"less than {ctx.get('lt')}",
        }[kind]
        return f"must be {bound}{shown}"
    if kind == "string_too_long":
        return f"must be at most {(error.get('ctx') or {}).get('max_length')} characters{shown}"
    return error["msg"].removeprefix("Value error, ")


def _problem_of(error: ErrorDetails) -> Problem:
    loc = tuple(
        part for part in error["loc"] if isinstance(part, int) or not _PYDANTIC_TAG.search(part)
    )
    if error["type"] == "extra_forbidden":
        parent = _model_at(loc[:-1])
        valid = sorted(_aliases(parent)) if parent else []
        key = str(loc[-1])
        camel = to_camel(key)
        if camel != key and camel in valid:
            return Problem(loc, f"keys are camelCase: write {camel}, not {key}")
        return Problem(loc, f"unknown field; valid fields here are {', '.join(valid)}")
    if error["type"] == "missing":
        return Problem(loc, "is required")
    message = _message(error)
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
        namespace, colon, name = key.partition(":")
        if namespace != NAMESPACE:
            if not colon or namespace not in OTHER_NAMESPACES:
                found.append(
                    Problem(
                        (key if colon else f"(no namespace) {key}",),
                        f"unknown config namespace '{namespace}'; this program's keys are "
                        f"written {NAMESPACE}:<key> (valid namespaces: {NAMESPACE}, "
                        f"{', '.join(sorted(OTHER_NAMESPACES))})",
                    )
                )
            continue
        if name not in valid_keys:
            camel = to_camel(name)
            hint = (
                f"keys are camelCase: write {NAMESPACE}:{camel}"
                if camel != name and camel in valid_keys
                else f"unknown config key; valid keys are {', '.join(sorted(valid_keys))}"
            )
            found.append(Problem((name,), hint))
            continue
        data[name] = _decode(value)
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as error:
        shapes = [_problem_of(detail) for detail in error.errors()]
        if f"{NAMESPACE}:prefix" not in raw:
            shapes = [
                Problem(
                    p.path,
                    f"the prefix ai-{stack} comes from the stack name '{stack}' and {p.message}; "
                    f"set {NAMESPACE}:prefix to a short DNS label, e.g. ai-dev",
                )
                if p.path[:1] == ("prefix",)
                else p
                for p in shapes
            ]
        raise ConfigError(found + shapes) from None
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


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated in one mapping, as the Pulumi CLI's YAML
    parser does; PyYAML would silently keep the last value."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            line = key_node.start_mark.line + 1
            raise ConfigError(
                [Problem((str(key),), f"is written twice (again on line {line}); keep one")]
            )
        seen.add(key)
    return dict(loader.construct_pairs(node, deep=True))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_yaml(text: str) -> Any:
    """Parse a stack file, refusing repeated keys; a syntax error is a `ConfigError`."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" on line {where.line + 1}" if where is not None else ""
        reason = getattr(error, "problem", None) or "it cannot be parsed"
        raise ConfigError(
            [Problem(("(stack file)",), f"is not valid YAML{line}: {reason}; fix the file")]
        ) from None


def stack_config_map(document: Any) -> dict[str, Any]:
    """The `config:` map of a parsed stack file: a mapping of `namespace:key` strings."""
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(
            [Problem(("(stack file)",), "must be a mapping with a config: key, not a list")]
        )
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(
            [Problem(("(stack file)",), "config: must be a mapping of namespace:key to value")]
        )
    bad = [key for key in config if not isinstance(key, str)]
    if bad:
        raise ConfigError(
            [
                Problem(
                    ("(stack file)",),
                    f"config key {key!r} is not text; keys are written namespace:key, "
                    "e.g. ai-infra:tpuSlices",
                )
                for key in bad
            ]
        )
    return dict(config)


def read_pulumi_config() -> dict[str, Any]:
    """Every config value the engine handed this program, keyed `namespace:key`."""
    from pulumi.runtime import config as runtime_config

    values: dict[str, Any] = dict(runtime_config.get_config_env())
    values.update(runtime_config.CONFIG.get())
    return values


def load() -> StackConfig:
    """Validate the running stack's config; raises `ConfigError` before any resource exists."""
    return parse(read_pulumi_config(), pulumi.get_stack())
