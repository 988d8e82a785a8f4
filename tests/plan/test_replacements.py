"""The replacement rules: every type the program registers has one, every ForceNew path is an
input of the installed pulumi-gcp, and the semantics follow terraform-plugin-sdk and
pulumi-kubernetes (plan/replacements.py names the sources)."""

from __future__ import annotations

import base64
import importlib
import json
import re
import tomllib
from typing import Any

import pytest

from graph.engine import REPO_ROOT, list_stacks, load_stack_config
from plan.replacements import (
    ABSENT,
    FORCENEW_TABLE,
    PULUMI_GCP_VERSION,
    Context,
    Effect,
    ForceNew,
    TerraformRules,
    dynamic_decision,
    missing_provider_modules,
    pickled_modules,
    rules_for,
)
from tests.conftest import build_graph
from tests.test_docs import examples


def _registered_types() -> dict[str, str]:
    """Every resource type a shipped stack or docs example registers -> where it was seen."""
    found: dict[str, str] = {}
    configs = {f"Pulumi.{s}.yaml": load_stack_config(s) for s in list_stacks()}
    configs |= {f"docs example {n}": e.config for n, e in examples().items()}
    for where, config in configs.items():
        for r in build_graph(config, stack="types"):
            if r.custom or r.remote:
                found.setdefault(r.type, where)
    return found


def test_every_registered_type_has_a_replacement_rule():
    types = _registered_types()
    assert len(types) >= 30, sorted(types)  # the enumeration itself works
    missing = {t: where for t, where in types.items() if rules_for(t) is None}
    assert missing == {}


def test_a_type_nothing_knows_has_no_rule():
    assert rules_for("gcp:some/unknown:Type") is None
    assert rules_for("ai-infra:gke:GkeCluster") is None


def _input_names(args: type) -> dict[str, Any]:
    """camelCase input name -> its annotation, from an SDK `...Args` class."""
    names = {}
    for attribute in vars(args).values():
        getter = getattr(attribute, "fget", None)
        name = getattr(getter, "_pulumi_name", None)
        if name:
            names[name] = getter
    return names


def _nested_args(getter: Any, module: Any) -> type | None:
    annotation = str(getter.__annotations__.get("return", ""))
    match = re.search(r"'(\w+Args)'", annotation)
    return getattr(module, match[1], None) if match else None


def _sdk_has(token: str, path: tuple[str, ...]) -> bool:
    """`gcp:container/nodePool:NodePool` -> walk pulumi_gcp.container.NodePoolArgs."""
    _, module_path, resource = token.split(":")
    module = importlib.import_module(f"pulumi_gcp.{module_path.split('/')[0]}")
    args = getattr(module, f"{resource}Args")
    for part in path:
        getters = _input_names(args)
        if part not in getters:
            return False
        nested = _nested_args(getters[part], module)
        if nested is None:
            return part == path[-1]
        args = nested
    return True


def test_every_forcenew_path_is_an_input_of_the_installed_pulumi_gcp():
    """Catches a rename in the SDK (guest_accelerator -> guestAccelerators), which would
    otherwise never match and silently show a replace as an update."""
    unknown = []
    checked = 0
    for token in FORCENEW_TOKENS:
        rules = rules_for(token)
        assert isinstance(rules, TerraformRules)
        unknown += [(token, r.path) for r in rules.force_new if not _sdk_has(token, r.path)]
        checked += len(rules.force_new)
    assert checked > 600 and unknown == []
    assert not _sdk_has(POOL, ("nodeConfig", "guestAccelerator"))  # the check itself bites


def test_the_table_was_read_for_the_locked_pulumi_gcp():
    """pulumi-gcp bridges a new google-beta with every minor: re-read the ForceNew table
    (plan/replacements.py says how) when uv.lock moves."""
    lock = tomllib.loads((REPO_ROOT / "uv.lock").read_text())
    (package,) = [p for p in lock["package"] if p["name"] == "pulumi-gcp"]
    assert package["version"] == PULUMI_GCP_VERSION


FORCENEW_TOKENS = sorted(json.loads(FORCENEW_TABLE.read_text())["types"])
POOL = "gcp:container/nodePool:NodePool"


def verdict(token: str, path: tuple[Any, ...], old: Any, new: Any, **sides: Any) -> Effect:
    rules = rules_for(token)
    assert rules is not None
    ctx = Context(sides.get("olds", {}), sides.get("news", {}), sides.get("provider", {}))
    return rules.decide(path, old, new, ctx).effect


@pytest.mark.parametrize(
    ("token", "path", "old", "new", "effect"),
    [
        # ForceNew scalars, and Optional+Computed ones whose removal keeps the value.
        (POOL, ("maxPodsPerNode",), 16, 32, Effect.REPLACE),
        (POOL, ("maxPodsPerNode",), 16, ABSENT, Effect.KEPT),
        (POOL, ("nodeConfig", "spot"), ABSENT, True, Effect.REPLACE),
        (POOL, ("nodeConfig", "machineType"), "e2-standard-4", "e2-standard-8", Effect.UPDATE),
        (POOL, ("nodeCount",), 1, 2, Effect.UPDATE),
        (POOL, ("management", "autoUpgrade"), True, False, Effect.UPDATE),
        # A map or list of scalars: any key or element.
        (POOL, ("nodeConfig", "metadata", "any-key"), "a", "b", Effect.REPLACE),
        (POOL, ("nodeConfig", "oauthScopes", 1), "a", "b", Effect.REPLACE),
        (POOL, ("nodeConfig", "labels", "team"), "a", "b", Effect.UPDATE),
        # A ForceNew block on add or remove, and through its ForceNew fields only.
        (POOL, ("placementPolicy",), ABSENT, {"type": "COMPACT"}, Effect.REPLACE),
        (POOL, ("placementPolicy", "policyName"), "a", "b", Effect.REPLACE),
        (POOL, ("placementPolicy", "type"), "COMPACT", "SPREAD", Effect.NO_OP),
        (POOL, ("placementPolicy", "tpuTopology"), "2x2x4", "2x4x4", Effect.NO_OP),
        (POOL, ("nodeConfig", "guestAccelerators", 1), ABSENT, {"count": 1}, Effect.REPLACE),
        (POOL, ("nodeConfig", "guestAccelerators", 0, "count"), 1, 2, Effect.REPLACE),
        (
            POOL,
            ("nodeConfig", "secondaryBootDisks", 0, "diskImage"),
            "global/images/a",
            "global/images/b",
            Effect.REPLACE,
        ),
        (
            POOL,
            ("nodeConfig", "secondaryBootDisks", 0),
            ABSENT,
            {"mode": "CONTAINER_IMAGE_CACHE"},
            Effect.REPLACE,
        ),
        # No update path at all.
        (
            POOL,
            ("maintenancePolicies", 0, "exclusionUntilEndOfSupports", 0, "enabled"),
            True,
            False,
            Effect.NO_OP,
        ),
        # A subtree added under a block that is not ForceNew, setting a ForceNew field.
        (POOL, ("networkConfig",), ABSENT, {"podRange": "pods"}, Effect.REPLACE),
        (POOL, ("networkConfig",), ABSENT, {"enablePrivateNodes": True}, Effect.UPDATE),
        ("gcp:compute/network:Network", ("mtu",), 1460, 8896, Effect.UPDATE),
        ("gcp:compute/network:Network", ("autoCreateSubnetworks",), True, False, Effect.REPLACE),
        ("gcp:storage/bucketObject:BucketObject", ("content",), "a\n", "b\n", Effect.UPDATE),
        ("gcp:storage/bucketObject:BucketObject", ("metadata", "k"), "a", "b", Effect.REPLACE),
        (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            ("machineType",),
            "a",
            "b",
            Effect.REPLACE,
        ),
        # labels is updatable, but effective_labels, derived from it, is ForceNew.
        (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            ("labels", "x"),
            "a",
            "b",
            Effect.REPLACE,
        ),
        (
            "gcp:compute/instanceTemplate:InstanceTemplate",
            ("advancedMachineFeatures", "turboMode"),
            "ALL_CORE_MAX",
            ABSENT,
            Effect.NO_OP,
        ),
        (
            "gcp:container/cluster:Cluster",
            ("privateClusterConfig", "masterIpv4CidrBlock"),
            "a",
            "b",
            Effect.REPLACE,
        ),
        ("gcp:container/cluster:Cluster", ("releaseChannel", "channel"), "a", "b", Effect.UPDATE),
        ("gcp:container/cluster:Cluster", ("enableL4IlbSubsetting",), True, False, Effect.REPLACE),
        ("gcp:container/cluster:Cluster", ("enableL4IlbSubsetting",), False, True, Effect.UPDATE),
        (
            "gcp:compute/subnetwork:Subnetwork",
            ("ipCidrRange",),
            "10.0.0.0/20",
            "10.0.0.0/19",
            Effect.UPDATE,
        ),
        (
            "gcp:compute/subnetwork:Subnetwork",
            ("ipCidrRange",),
            "10.0.0.0/20",
            "10.0.0.0/21",
            Effect.REPLACE,
        ),
        (
            "gcp:compute/subnetwork:Subnetwork",
            ("ipCidrRange",),
            "10.0.0.0/20",
            "10.1.0.0/20",
            Effect.REPLACE,
        ),
        ("gcp:compute/disk:Disk", ("size",), 100, 200, Effect.UPDATE),
        ("gcp:compute/disk:Disk", ("size",), 200, 100, Effect.REPLACE),
        ("gcp:storage/bucket:Bucket", ("location",), "US", "EU", Effect.REPLACE),
        ("gcp:storage/bucket:Bucket", ("forceDestroy",), False, True, Effect.UPDATE),
        ("gcp:projects/iAMMember:IAMMember", ("role",), "a", "b", Effect.REPLACE),
        ("gcp:serviceaccount/account:Account", ("displayName",), "a", "b", Effect.UPDATE),
        # Kubernetes: names, namespaces and the per-kind fields of pulumi-kubernetes diff.go.
        ("kubernetes:core/v1:Namespace", ("metadata", "name"), "a", "b", Effect.REPLACE),
        ("kubernetes:core/v1:Namespace", ("metadata", "labels", "team"), "a", "b", Effect.UPDATE),
        (
            "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
            ("metadata", "name"),
            "a",
            "b",
            Effect.REPLACE,
        ),
        (
            "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
            ("spec", "cohortName"),
            "a",
            "b",
            Effect.UPDATE,
        ),
        (
            "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
            ("roleRef", "name"),
            "a",
            "b",
            Effect.REPLACE,
        ),
        (
            "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
            ("subjects", 0, "name"),
            "a",
            "b",
            Effect.UPDATE,
        ),
        (
            "kubernetes:apps/v1:Deployment",
            ("spec", "selector", "matchLabels", "app"),
            "a",
            "b",
            Effect.REPLACE,
        ),
        ("kubernetes:apps/v1:Deployment", ("spec", "replicas"), 1, 2, Effect.UPDATE),
        ("kubernetes:core/v1:ConfigMap", ("data", "GCP_ZONE"), "a", "b", Effect.REPLACE),
        ("kubernetes:helm.sh/v3:Release", ("namespace",), "a", "b", Effect.REPLACE),
        ("kubernetes:helm.sh/v3:Release", ("version",), "1", "2", Effect.UPDATE),
    ],
)
def test_which_changes_replace(
    token: str, path: tuple[Any, ...], old: Any, new: Any, effect: Effect
):
    assert verdict(token, path, old, new) is effect


def test_a_configmap_is_updated_when_the_provider_makes_configmaps_mutable():
    path = ("data", "GCP_ZONE")
    mutable = {"enableConfigMapMutable": True}
    assert (
        verdict("kubernetes:core/v1:ConfigMap", path, "a", "b", provider=mutable) is Effect.UPDATE
    )
    immutable = {"immutable": True}
    assert (
        verdict("kubernetes:core/v1:ConfigMap", path, "a", "b", provider=mutable, news=immutable)
        is Effect.REPLACE
    )


def test_a_set_is_compared_without_its_order():
    rules = rules_for(POOL)
    assert rules is not None and rules.is_set(("nodeConfig", "oauthScopes"))
    assert not rules.is_set(("nodeConfig", "labels"))


def test_a_set_element_is_replaced_whole_when_it_holds_a_forcenew_field():
    # A change to any field of a set element re-hashes it: the element goes and comes back,
    # which replaces when the element holds a ForceNew field (schema.go diffSet).
    rules = TerraformRules(
        "t", [ForceNew(("s",), "block-set", False), ForceNew(("s", "k"), "scalar", False)]
    )

    def effect(element: dict[str, Any]) -> Effect:
        olds, news = {"s": [{**element, "other": 1}]}, {"s": [{**element, "other": 2}]}
        return rules.decide(("s", 0, "other"), 1, 2, Context(olds, news)).effect

    assert effect({"k": "x"}) is Effect.REPLACE
    assert effect({}) is Effect.UPDATE


def test_the_kubernetes_provider_is_replaced_only_when_it_points_elsewhere():
    def kubeconfig(server: str) -> str:
        return (
            "apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: " + server + "}\n"
            "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n"
        )

    token = "pulumi:providers:kubernetes"
    same = verdict(token, ("kubeconfig",), kubeconfig("https://a"), kubeconfig("https://a") + "\n")
    moved = verdict(token, ("kubeconfig",), kubeconfig("https://a"), kubeconfig("https://b"))
    assert (same, moved) == (Effect.UPDATE, Effect.REPLACE)
    assert verdict(token, ("enableServerSideApply",), True, False) is Effect.UPDATE


def test_project_iam_members_and_named_resources_are_deleted_before_their_replacement():
    member = rules_for("gcp:projects/iAMMember:IAMMember")
    template = rules_for("gcp:compute/instanceTemplate:InstanceTemplate")
    pool = rules_for(POOL)
    assert member is not None and template is not None and pool is not None
    assert member.delete_before_replace(Context({}, {}))
    assert pool.delete_before_replace(Context({}, {"name": "tpu-a-0"}))
    # A template named by prefix gets a fresh name: created before the old one goes.
    assert not template.delete_before_replace(Context({}, {"namePrefix": "ai-gpu-"}))


def _dynamic(example: str, name: str) -> dict[str, Any]:
    (found,) = [r for r in build_graph(examples()[example].config) if r.name == name]
    return found.inputs


@pytest.mark.parametrize(
    ("example", "name", "key", "value", "replaces"),
    [
        # components/slurm/cleanup.py: a new cluster name replaces, new nodesets update.
        ("slurm", "slurm-tpu-cleanup", "cluster", "other", ("cluster",)),
        ("slurm", "slurm-tpu-cleanup", "nodesets", [], ()),
        # components/slurm/scripts.py: a new commit re-uploads, a new prefix replaces.
        ("slurm", "slurm-scripts", "commit", "0" * 40, ()),
        ("slurm", "slurm-scripts", "prefix", "elsewhere", ("prefix",)),
        # components/tpu_vms/provider.py: every queued resource input replaces.
        ("tpu-vms", "tpuvm-maxtext-qr", "nodeCount", 3, ("nodeCount",)),
    ],
)
def test_dynamic_providers_answer_with_their_own_diff(
    example: str, name: str, key: str, value: Any, replaces: tuple[str, ...]
):
    olds = _dynamic(example, name)
    answer = dynamic_decision(olds, {**olds, key: value})
    assert answer.error == ""
    assert (answer.changes, answer.replaces) == (True, replaces)
    assert dynamic_decision(olds, dict(olds)).changes is False


def test_a_provider_module_that_no_longer_imports_is_found_without_running_the_pickle():
    inputs = _dynamic("tpu-vms", "tpuvm-maxtext-qr")
    assert "components.tpu_vms.provider" in pickled_modules(inputs)
    assert missing_provider_modules(inputs) == ()
    # The module moved (same length, so the pickle stays well formed).
    moved = base64.b64decode(inputs["__provider"]["value"]).replace(
        b"components.tpu_vms.provider", b"components.tpu_vms.provideX"
    )
    renamed = {"__provider": {**inputs["__provider"], "value": base64.b64encode(moved).decode()}}
    assert missing_provider_modules(renamed) == ("components.tpu_vms.provideX",)
