"""Every Kubernetes object the program renders, validated against Kubernetes' own OpenAPI
schemas (kubernetes-validate, strict: unknown fields refused) at the cluster's minor version:
`cluster.version` where it names one, else 1.30, the first with ValidatingAdmissionPolicy v1
(the program's floor). Kueue and JobSet objects are CRDs, validated in test_crds.py."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest

from graph.engine import Graph, Registration, list_stacks, load_stack_config
from plan.replacements import unwrap
from stacks.loading import parse
from tests.conftest import build_graph
from tests.test_docs import examples

FLOOR = "1.30"
BUILT_IN = re.compile(
    r"kubernetes:(core|apps|rbac\.authorization\.k8s\.io|networking\.k8s\.io|"
    r"admissionregistration\.k8s\.io|scheduling\.k8s\.io)/v1:\w+"
)
ALL = [*list_stacks(), *sorted(examples())]


def _minor(name: str) -> str:
    raw = load_stack_config(name) if name in list_stacks() else examples()[name].config
    version = parse(raw, name).cluster.version
    if version is None or version == "latest":
        return FLOOR
    return ".".join(version.split("-")[0].split(".")[:2])


def manifest(r: Registration) -> dict[str, Any]:
    group, kind = r.type.removeprefix("kubernetes:").rsplit(":", 1)
    api = group.removeprefix("core/")
    return {"apiVersion": api, "kind": kind, **unwrap(r.inputs)}


def objects(graph: Graph) -> list[Registration]:
    return [r for r in graph if BUILT_IN.fullmatch(r.type)]


@pytest.mark.parametrize("name", ALL)
def test_rendered_objects_validate_against_kubernetes_schemas(name: str):
    raw = load_stack_config(name) if name in list_stacks() else examples()[name].config
    graph = build_graph(raw, stack=name)
    version = f"{_minor(name)}.0"
    checked = 0
    for r in objects(graph):
        try:
            kubernetes_validate.validate(manifest(r), version, strict=True)
        except kubernetes_validate.ValidationError as error:
            raise AssertionError(f"{r.urn}: {error.message}") from None
        checked += 1
    if graph.of_type("gcp:container/cluster:Cluster"):
        assert checked, name


def test_a_misspelt_field_is_refused():
    graph = build_graph(load_stack_config("dev"), stack="dev")
    (policy, *_) = graph.of_type(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
    )
    document = manifest(policy)
    document["spec"]["validation"] = document["spec"].pop("validations")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(document, f"{FLOOR}.0", strict=True)
