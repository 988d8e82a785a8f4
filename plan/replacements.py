"""Which input changes make a provider replace a resource, update it, or do nothing at all.

Every resource type the program registers has rules here (`rules_for`); a test enumerates the
types of every shipped stack and docs example and fails on one without. The decision for one
changed input is a `Verdict`: update in place, replace, no diff at all (`KEPT`), or an update
the provider accepts but never applies (`NO_OP`), with a note where `pulumi up` will surprise.

Sources, and what could not be confirmed:
- gcp: pulumi-gcp bridges terraform-provider-google-beta, not terraform-provider-google
  (pulumi/pulumi-gcp provider/go.mod requires terraform-provider-google-beta, replaced by
  ../upstream; the registry says "based on the google-beta Terraform Provider"). Each 9.x
  minor is titled "Upgrade terraform-provider-google-beta to v7.x"; 10.x bridges google-beta
  8.x. The exact 8.x behind the locked pulumi-gcp 10.2.0 is NOT confirmed: the readable
  mirrors end at pulumi-gcp v9.35.0 (google-beta v7.45.0) and google-beta 93c65b2 (the 8.0.0
  merge, untagged), and the wheel carries no upstream version. The 10.2.0 SDK has inputs that
  93c65b2 lacks (NodePool.bestEffortProvisioning, NIC enableVpcScopedDns), so it is built from a
  later 8.x. `forcenew.json` holds every `ForceNew: true` input of the 30 types this program can
  register, read at 93c65b2 (google-beta/services/...; the dashboard's, alert policy's and
  notification channel's one, project, read in resource_monitoring_*.go; storage's global
  address, service networking connection and Lustre instance in compute/,
  servicenetworking/ and lustre/; the Artifact Registry repository IAM member's from the
  generated IAM schema, every field of which is ForceNew, as the other IAM members' are), in
  Pulumi's camelCase,
  each path checked against the 10.2.0 SDK's `_pulumi_name`s (tests/plan/test_replacements.py);
  computed outputs the schema also flags (fingerprints, self links) are left out, as no
  program sets them. Between v7.45.0 and 93c65b2 only one ForceNew flag changed for these
  types (a new host maintenance block).
  A test fails when uv.lock's pulumi-gcp version moves, so the table is re-read then: for each
  type, every `ForceNew: true` field of its google-beta resource schema (with the shared
  schemaNodeConfig and IAM member schemas), its kind (scalar, list, set, map, block) and
  whether it is Optional+Computed, named as the SDK's getters name it; the test above checks
  each name against the installed SDK.
- How ForceNew becomes a replace (terraform-plugin-sdk v2.40.1 helper/schema/schema.go): a
  scalar on any change; a list, set or map of scalars on any element or key; a block only when
  it, or one of its elements, is added or removed, and otherwise through its own ForceNew
  fields; removing an Optional+Computed input is no diff (the old value is kept); a set
  element is replaced whole, so any change inside one that holds a ForceNew field replaces.
  CustomizeDiff rules are predicates below (`_CUSTOM`); pulumi-terraform-bridge v3.136.0
  passes the decision through (pkg/tfbridge/provider.go) and deletes first when the program
  sets an autonamed `name` (every gcp type with a `name` input: SetAutonaming) or the type
  says so (projects IAMMember).
- kubernetes: pulumi-kubernetes provider/pkg/provider/diff.go (`forceNew`: metadata name and
  namespace of every object, Deployment and DaemonSet `spec.selector`, RBAC bindings'
  `roleRef`, Service `spec.clusterIP`, ConfigMap `data` unless the provider sets
  enableConfigMapMutable, ...), helm_release.go (a Release replaces on name or namespace only)
  and provider.go DiffConfig, read at 94977969 (after v4.32.0, which it does not change); the
  locked 4.34.2 is assumed to keep them.
- pulumi-python dynamic providers answer with their own `diff()` (`dynamic_decision`).
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.storage import LUSTRE_TIERS
from graph import types
from graph.model import unwrap
from plan.kubernetes_rules import (
    ConfigFileRules,
    ConfigGroupRules,
    HelmReleaseRules,
    KubernetesObjectRules,
    KubernetesProviderRules,
)
from plan.verdicts import (
    ABSENT,
    UPDATE,
    Absent,
    Context,
    Effect,
    InputPath,
    PathPart,
    Rules,
    Verdict,
    covers,
    empty,
    field_of,
    value_at,
    values_at,
)

__all__ = [
    "ABSENT",
    "FORCENEW_TABLE",
    "PULUMI_GCP_VERSION",
    "UPDATE",
    "Absent",
    "Context",
    "DynamicRules",
    "Effect",
    "ForceNew",
    "InputPath",
    "KubernetesProviderRules",
    "PathPart",
    "Rules",
    "TerraformRules",
    "Verdict",
    "dynamic_decision",
    "field_of",
    "missing_provider_modules",
    "pickled_modules",
    "property_path",
    "replace_on_changes",
    "rules_for",
    "value_at",
    "values_at",
]

FORCENEW_TABLE = Path(__file__).with_name("forcenew.json")
PULUMI_GCP_VERSION = "10.2.0"
"""The pulumi-gcp release `forcenew.json` was checked against (uv.lock pins it)."""


# --- pulumi-gcp (terraform-provider-google-beta) ---------------------------------------------


@dataclass(frozen=True)
class ForceNew:
    path: tuple[str, ...]
    kind: str
    """scalar, list-of-scalars, set-of-scalars, map, block-list or block-set."""
    computed: bool
    """Optional+Computed: removing it from the program is no diff."""

    @property
    def block(self) -> bool:
        return self.kind.startswith("block")


Custom = Callable[[InputPath, Any, Any, Context], Verdict | None]


@dataclass(frozen=True)
class Notes:
    """Non-ForceNew inputs whose update does not do what a `~` suggests, by path prefix."""

    no_update: tuple[str, ...] = ()
    """No update path: `pulumi up` reports success and changes nothing."""
    fails: tuple[str, ...] = ()
    """The update is sent but cannot succeed."""
    stops: tuple[str, ...] = ()
    """The update stops a running VM."""


_NO_UPDATE_PATH = (
    "no update path: the provider sets this only when it creates the resource, so `pulumi up` "
    "reports success, changes nothing, and the difference shows again on the next preview; "
    "replace the resource to apply it (pulumi up --replace <urn>)"
)


class TerraformRules(Rules):
    """A bridged terraform-provider-google-beta resource."""

    def __init__(
        self,
        token: str,
        force_new: Sequence[ForceNew],
        custom: Mapping[str, Custom] | None = None,
        notes: Notes = Notes(),
        always_dbr: bool = False,
        immutable_but: tuple[str, ...] | None = None,
    ) -> None:
        self.token = token
        # The most specific rule first, so a field's own flag wins over its block's.
        self.force_new = sorted(force_new, key=lambda r: -len(r.path))
        self.custom = dict(custom or {})
        self.notes = notes
        self.always_dbr = always_dbr
        self.immutable_but = immutable_but
        self.source = f"terraform-provider-google-beta ForceNew ({token})"

    def is_set(self, field_path: tuple[str, ...]) -> bool:
        return any(r.path == field_path and r.kind.startswith("set") for r in self.force_new)

    def delete_before_replace(self, ctx: Context) -> bool:
        # The bridge deletes first when the program names an autonamed resource itself.
        field = AUTONAMED.get(self.token, "name")
        return self.always_dbr or isinstance(ctx.news.get(field), str)

    def decide(self, path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict:
        field_path = field_of(path)
        for prefix, predicate in self.custom.items():
            if field_path[: len(prefix.split("."))] == tuple(prefix.split(".")):
                verdict = predicate(path, old, new, ctx)
                if verdict is not None:
                    return verdict
        verdict = self._force_new(path, field_path, old, new, ctx)
        if verdict is not None:
            return verdict
        return self._update(field_path, ctx)

    def _force_new(
        self, path: InputPath, field_path: tuple[str, ...], old: Any, new: Any, ctx: Context
    ) -> Verdict | None:
        removed = new is ABSENT or new is None
        for rule in self.force_new:
            n = len(rule.path)
            if field_path[:n] != rule.path:
                continue
            rest = field_path[n:]
            whole = not isinstance(path[-1], int)
            if not rest:
                # The input itself, a whole block, or one element of a list.
                if rule.computed and removed and whole:
                    return Verdict(Effect.KEPT, "Optional+Computed: removing it keeps the value")
                what = "block added or removed" if rule.block else "ForceNew"
                return Verdict(Effect.REPLACE, what)
            if rule.kind == "map" and len(rest) == 1:
                return Verdict(Effect.REPLACE, "ForceNew map key")
            if rule.kind == "block-set" and self._set_element_forces(path, n, rule, ctx):
                return Verdict(
                    Effect.REPLACE,
                    "a set element changes as a whole, and it holds a ForceNew field",
                )
        # A whole subtree added or removed under a block that is not ForceNew itself: it
        # replaces when it sets or clears a ForceNew field.
        if isinstance(old, dict | list) or isinstance(new, dict | list):
            for rule in self.force_new:
                n = len(field_path)
                if rule.path[:n] != field_path or len(rule.path) == n:
                    continue
                rel = rule.path[n:]
                before, after = list(values_at(old, rel)), list(values_at(new, rel))
                if before != after and not (rule.computed and not after):
                    return Verdict(Effect.REPLACE, f"sets ForceNew {'.'.join(rule.path)}")
        return None

    def _set_element_forces(
        self, path: InputPath, depth: int, rule: ForceNew, ctx: Context
    ) -> bool:
        """Whether the set element `path` lies in holds a non-empty ForceNew field."""
        keys = 0
        for i, part in enumerate(path):
            if isinstance(part, str):
                keys += 1
            if keys == depth:
                element = (
                    path[: i + 2]
                    if i + 1 < len(path) and isinstance(path[i + 1], int)
                    else path[: i + 1]
                )
                break
        else:
            return False
        inner = [r for r in self.force_new if r.path[:depth] == rule.path and len(r.path) > depth]
        return any(
            list(values_at(value_at(side, element), r.path[depth:]))
            for side in (ctx.olds, ctx.news)
            for r in inner
        )

    def _update(self, field_path: tuple[str, ...], ctx: Context) -> Verdict:
        def under(prefixes: tuple[str, ...]) -> bool:
            return covers(prefixes, field_path) is not None

        if self.immutable_but is not None and not under(self.immutable_but):
            return Verdict(
                Effect.NO_OP,
                "instance templates are immutable: the provider's update only re-reads, so "
                "this change is never applied",
            )
        if under(self.notes.no_update):
            return Verdict(Effect.NO_OP, _NO_UPDATE_PATH)
        if under(self.notes.fails):
            return Verdict(
                Effect.FAILS,
                "not ForceNew, but the provider updates the resource under its new name, "
                "which does not exist yet: the update will fail; rename by replacing "
                "(pulumi up --replace <urn>)",
            )
        if under(self.notes.stops):
            stopping = bool(unwrap(ctx.news.get("allowStoppingForUpdate")))
            return Verdict(
                Effect.UPDATE,
                "the VM is stopped for this update (allowStoppingForUpdate)"
                if stopping
                else "needs a stopped VM: the update fails at apply unless "
                "allowStoppingForUpdate is true",
            )
        return UPDATE


def _cidr_grows(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    # resource_compute_subnetwork.go: ForceNewIfChange("ip_cidr_range", IsShrinkageIpCidr).
    try:
        before, after = ipaddress.ip_network(str(old)), ipaddress.ip_network(str(new))
    except ValueError:
        return None
    if before.version == after.version and after.supernet_of(before):  # type: ignore[arg-type]
        return Verdict(Effect.UPDATE, "the range grows: expanded in place")
    return Verdict(Effect.REPLACE, "the range shrinks or moves (only growing is in place)")


def _disk_size(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    # resource_compute_disk.go: ForceNewIfChange("size", IsDiskShrinkage).
    if isinstance(old, int | float) and isinstance(new, int | float) and new < old:
        return Verdict(Effect.REPLACE, "a disk cannot shrink")
    return None


def _disk_iops(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    # resource_compute_disk.go hyperDiskIopsUpdateDiffSuppress: in place only on Hyperdisk.
    if "hyperdisk" in str(unwrap(ctx.news.get("type", ""))):
        return None
    return Verdict(Effect.REPLACE, "provisioned IOPS change in place only on Hyperdisk")


def _became_false(note: str) -> Custom:
    # customdiff.ForceNewIfChange(key, isBeenEnabled): true -> false replaces.
    def check(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
        if old is True and new is not True:
            return Verdict(Effect.REPLACE, note)
        return None

    return check


def _beta_api_removed(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    before = set(unwrap(value_at(ctx.olds, ("enableK8sBetaApis", "enabledApis"))) or [])
    after = set(unwrap(value_at(ctx.news, ("enableK8sBetaApis", "enabledApis"))) or [])
    if before - after:
        return Verdict(Effect.REPLACE, "a Kubernetes beta API is removed")
    return None


def _workload_policy_removed(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    # resource_compute_instance_group_manager.go: ForceNewIfChange(..., IfNewIsEmpty).
    if empty(value_at(ctx.news, ("resourcePolicies", "workloadPolicy"))):
        return Verdict(Effect.REPLACE, "removing the workload policy replaces the group")
    return None


def _startup_script(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    # resource_compute_instance.go isGracefulMetadataStartupSwitch: any change replaces,
    # except moving the same text to or from metadata["startup-script"].
    moved = unwrap(value_at(ctx.news, ("metadata", "startup-script")))
    if new in (ABSENT, None) and moved == unwrap(old):
        return Verdict(Effect.UPDATE, "the same script moves to metadata: in place")
    if old in (ABSENT, None) and unwrap(value_at(ctx.olds, ("metadata", "startup-script"))) == new:
        return Verdict(Effect.UPDATE, "the same script moves from metadata: in place")
    return Verdict(Effect.REPLACE, "metadataStartupScript replaces the VM on any change")


def _network_ip(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    # resource_compute_instance.go forceNewIfNetworkIPNotUpdatable.
    nic = path[: path.index("networkIp")]
    same = all(
        value_at(ctx.olds, (*nic, key)) == value_at(ctx.news, (*nic, key))
        for key in ("network", "subnetwork", "subnetworkProject")
    )
    if same and not empty(new):
        return Verdict(Effect.REPLACE, "a new internal IP on the same subnet replaces the VM")
    return None


def _number(value: Any) -> float | None:
    try:
        return float(unwrap(value))
    except (TypeError, ValueError):
        return None


def _lustre_capacity(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    """Managed Lustre "Increase the capacity": no instance shrinks, and one at or below its
    tier's threshold grows only up to it (catalog.storage.LUSTRE_TIERS); the API refuses
    both, and the provider sends them as updates."""
    before, after = _number(old), _number(new)
    throughput = _number(ctx.news.get("perUnitStorageThroughput"))
    if before is None or after is None:
        return None
    if after < before:
        return Verdict(Effect.FAILS, _STORAGE_REFUSED.format(why="a Lustre instance never shrinks"))
    tier = LUSTRE_TIERS.get(int(throughput)) if throughput is not None else None
    threshold = tier.bands[0].high if tier is not None else None
    if threshold is not None and before <= threshold < after:
        return Verdict(
            Effect.FAILS,
            _STORAGE_REFUSED.format(
                why=f"an instance of {before:,.0f} GiB grows only up to {threshold:,} GiB, its "
                "tier's threshold"
            ),
        )
    return None


_BASIC_TIERS = frozenset({"BASIC_HDD", "BASIC_SSD", "STANDARD", "PREMIUM"})
"""Filestore's Basic tiers (STANDARD and PREMIUM are their API aliases)."""


def _filestore_shrink(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    # capacity_gb is not ForceNew (resource_filestore_instance.go): the provider PATCHes it,
    # and Filestore's Basic tiers scale "Up only" (Filestore "Service tiers"), so the API
    # refuses a smaller share; the other tiers scale up or down.
    tier = str(unwrap(ctx.news.get("tier", "")))
    if tier not in _BASIC_TIERS:
        return None
    if isinstance(old, int | float) and isinstance(new, int | float) and new < old:
        return Verdict(
            Effect.FAILS,
            f"Filestore {tier} scales up only: the provider sends the smaller capacity and the "
            "API refuses it; to shrink, back the share up, create a smaller instance (under "
            "another name) from the backup, and move the mounts to it",
        )
    return None


def _template_labels(path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict | None:
    # resource_compute_instance_template.go (google-beta 93c65b2): `labels` is not ForceNew and
    # the update only re-reads, but CustomizeDiff tpgresource.SetLabelsDiff derives
    # `effective_labels` from it, and that one is ForceNew: a label change replaces.
    return Verdict(
        Effect.REPLACE, "effective_labels, derived from labels, is ForceNew on a template"
    )


_STORAGE_REFUSED = (
    "cannot complete: the API refuses it ({why}); make a new volume and copy the data, or "
    "replace it (pulumi up --replace <urn>), which loses what it holds"
)


_CUSTOM: dict[str, dict[str, Custom]] = {
    types.FILESTORE: {"fileShares.capacityGb": _filestore_shrink},
    types.INSTANCE_TEMPLATE: {"labels": _template_labels},
    types.SUBNETWORK: {"ipCidrRange": _cidr_grows},
    types.DISK: {"size": _disk_size, "provisionedIops": _disk_iops},
    types.CLUSTER: {
        "enableL4IlbSubsetting": _became_false("L4 ILB subsetting cannot be turned off"),
        "enableFqdnNetworkPolicy": _became_false("FQDN network policy cannot be turned off"),
        "enableK8sBetaApis.enabledApis": _beta_api_removed,
    },
    types.INSTANCE_GROUP_MANAGER: {
        "resourcePolicies.workloadPolicy": _workload_policy_removed,
        "resourcePolicies": _workload_policy_removed,
    },
    types.INSTANCE: {
        "metadataStartupScript": _startup_script,
        "networkInterfaces.networkIp": _network_ip,
    },
    # resource_storage_bucket.go: ForceNewIfChange("retention_policy.0.is_locked", ...).
    types.BUCKET: {
        "retentionPolicy.isLocked": _became_false("a locked retention policy cannot be unlocked")
    },
    types.LUSTRE: {"capacityGib": _lustre_capacity},
}
"""CustomizeDiff rules: replaces that depend on the values, not only on the field."""

_NOTES: dict[str, Notes] = {
    types.NODE_POOL: Notes(
        # resource_container_node_pool.go: nodePoolUpdate has no code for these; the
        # maintenance policy is read only by expandNodePool (create).
        no_update=(
            "maintenancePolicies",
            "placementPolicy.type",
            "placementPolicy.tpuTopology",
            "nodeConfig.gpudirectStrategy",
        )
    ),
    # No ForceNew on `name`, and Update builds its URL from the new name.
    types.RESOURCE_POLICY: Notes(fails=("name",)),
    types.FILESTORE: Notes(fails=("name",)),
    types.INSTANCE: Notes(
        # resource_compute_instance.go update: these need a stopped instance.
        stops=(
            "machineType",
            "minCpuPlatform",
            "enableDisplay",
            "serviceAccount",
            "shieldedInstanceConfig",
            "advancedMachineFeatures",
            "networkInterfaces.network",
            "networkInterfaces.subnetwork",
            "networkInterfaces.subnetworkProject",
            "scheduling.nodeAffinities",
            "scheduling.maxRunDuration",
            "scheduling.gracefulShutdown",
            "scheduling.terminationTime",
        )
    ),
}

AUTONAMED: dict[str, str] = {
    types.SERVICE_ACCOUNT: "accountId",
    types.CUSTOM_ROLE: "roleId",
}
"""Types whose autonamed field is not `name` (pulumi-gcp resources.go: `account_id` and
`role_id` carry AutoName; SetAutonaming gives every other type with a `name` its own): the
bridge deletes first when the program sets that field."""

_ASSUMED_FORCE_NEW: dict[str, tuple[ForceNew, ...]] = {
    # In the 10.2.0 SDK but not in google-beta 93c65b2: its flag is unread. Pools are created
    # with their provisioning mode, so it is taken as ForceNew until the source is read.
    types.NODE_POOL: (
        ForceNew(("bestEffortProvisioning",), "block-list", False),
        ForceNew(("bestEffortProvisioning", "enabled"), "scalar", False),
        ForceNew(("bestEffortProvisioning", "minProvisionNodes"), "scalar", False),
    ),
}


@functools.cache
def _forcenew_table() -> dict[str, tuple[ForceNew, ...]]:
    document = json.loads(FORCENEW_TABLE.read_text())
    return {
        token: tuple(
            ForceNew(tuple(path.split(".")), kind, computed)
            for path, kind, computed in entry["forceNew"]
        )
        + _ASSUMED_FORCE_NEW.get(token, ())
        for token, entry in document["types"].items()
    }


# --- Pulumi dynamic providers ----------------------------------------------------------------


class DynamicRules(Rules):
    """A `pulumi-python:dynamic...` resource: its provider's own diff() decides
    (`dynamic_decision`); a path alone says nothing."""

    source = "the resource's own dynamic provider diff()"

    def decide(self, path: InputPath, old: Any, new: Any, ctx: Context) -> Verdict:
        return UPDATE


@dataclass(frozen=True)
class DynamicAnswer:
    """What a dynamic provider's diff() returned, run offline."""

    changes: bool | None
    replaces: tuple[str, ...]
    delete_before_replace: bool
    error: str = ""


def _provider_of(inputs: dict[str, Any]) -> Any:
    """The provider object the engine would run: the new inputs' pickled `__provider`
    (pulumi/dynamic/__main__.py Diff). It was pickled by this very process."""
    import dill  # a pulumi dependency: the format of `__provider`

    return dill.loads(base64.b64decode(unwrap(inputs["__provider"])))


def pickled_modules(inputs: dict[str, Any]) -> tuple[str, ...]:
    """The modules a `__provider` pickle loads classes and functions from, read with
    pickletools: nothing in it runs."""
    import pickletools

    try:
        data = base64.b64decode(str(unwrap(inputs.get("__provider", ""))))
        ops = list(pickletools.genops(data))
    except Exception:
        return ()
    memo: list[Any] = []
    recent: list[Any] = []
    modules: list[str] = []
    for op, arg, _ in ops:
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            recent.append(arg)
        elif op.name == "MEMOIZE" and recent:
            memo.append(recent[-1])
        elif op.name in ("BINGET", "LONG_BINGET") and isinstance(arg, int) and arg < len(memo):
            recent.append(memo[arg])
        elif op.name == "STACK_GLOBAL" and len(recent) >= 2:
            modules.append(str(recent[-2]))
        elif op.name == "GLOBAL":
            modules.append(str(arg).split(" ")[0])
    return tuple(dict.fromkeys(m for m in modules if m and m != "builtins"))


def missing_provider_modules(inputs: dict[str, Any]) -> tuple[str, ...]:
    """Modules of a resource's pickled provider that this code cannot import: `pulumi up`
    deletes and refreshes with the provider in state (pulumi/dynamic/__main__.py), so those
    fail while they are missing."""
    import importlib.util

    missing = []
    for module in pickled_modules(inputs):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return tuple(missing)


def dynamic_decision(olds: dict[str, Any], news: dict[str, Any]) -> DynamicAnswer:
    """Run the resource's provider diff() offline. The engine passes the old OUTPUTS as
    `olds`; offline there are none, so the old inputs stand in for them (this program's
    providers return their inputs as outputs, plus what they read back)."""
    try:
        provider = _provider_of(news)
        result = provider.diff(
            "offline",
            {k: unwrap(v) for k, v in olds.items() if k != "__provider"},
            {k: unwrap(v) for k, v in news.items() if k != "__provider"},
        )
    except Exception as error:
        return DynamicAnswer(None, (), False, f"{type(error).__name__}: {error}")
    return DynamicAnswer(
        result.changes,
        tuple(result.replaces or ()),
        bool(result.delete_before_replace),
    )


# --- lookup ------------------------------------------------------------------------------------


@functools.cache
def rules_for(token: str) -> Rules | None:
    """The rules for a resource type token, or None for a type nothing here knows."""
    table = _forcenew_table()
    if token in table:
        return TerraformRules(
            token,
            table[token],
            custom=_CUSTOM.get(token),
            notes=_NOTES.get(token, Notes()),
            # pulumi-gcp resources.go: project IAM members are always deleted first.
            always_dbr=token == types.PROJECT_IAM_MEMBER,
            # Every other input of a template is ForceNew or never applied (labels: _CUSTOM).
            immutable_but=() if token == types.INSTANCE_TEMPLATE else None,
        )
    if token == types.HELM_RELEASE:
        return HelmReleaseRules()
    if token == types.CONFIG_GROUP:
        return ConfigGroupRules()
    if token == types.CONFIG_FILE:
        return ConfigFileRules()
    if token == types.KUBERNETES_PROVIDER:
        return KubernetesProviderRules()
    if token.startswith("kubernetes:") and not token.startswith(
        ("kubernetes:helm.sh/", "kubernetes:yaml/")
    ):
        return KubernetesObjectRules(token)
    if token.startswith("pulumi-python:dynamic"):
        return DynamicRules()
    return None


def property_path(text: str) -> list[PathPart]:
    """A property path of a resource option (`spec.containers[0].image`, `a.*`) as parts."""
    parts: list[PathPart] = []
    for word in text.replace("[", ".[").split("."):
        if word.startswith("[") and word.endswith("]"):
            inner = word[1:-1].strip('"')
            parts.append(int(inner) if inner.isdigit() else inner)
        elif word:
            parts.append(word)
    return parts


def replace_on_changes(path: Sequence[PathPart], also: Sequence[str]) -> bool:
    """The `replace_on_changes` resource option: pulumi/pulumi PropertyPath.Contains, where
    an entry covers its own path and everything below it, and `*` matches any key or index."""
    for entry in also:
        parts = property_path(entry)
        if len(path) < len(parts):
            continue
        if all(p == "*" or p == q for p, q in zip(parts, path, strict=False)):
            return True
    return False
