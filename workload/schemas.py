"""Validate rendered Kubernetes objects against upstream CRD schemas, strictly: like
server-side apply, a field the schema does not define is an error. The CRDs live in
`workload/crds/<project>-v<version>/` (see the README there); the workload command checks its
JobSets against them, and the tests every Kueue object the program renders."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import jsonschema
import yaml

from graph.engine import REPO_ROOT

CRDS = REPO_ROOT / "workload" / "crds"


def _strict(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {k: _strict(v) for k, v in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        schema["additionalProperties"] = False
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern.startswith("^(?i)"):
        # Go's RE2 accepts a flag group after '^'; Python wants it first.
        schema["pattern"] = "(?i)^" + pattern[len("^(?i)") :]
    if schema.get("x-kubernetes-int-or-string"):
        schema.pop("type", None)
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return schema


@cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(CRDS.glob("*/*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
            found[(f"{group}/{version['name']}", kind)] = _strict(schema)
    assert found, f"no CRDs under {CRDS}"
    return found


def validate(obj: dict[str, Any]) -> list[str]:
    """Errors of `obj` against its CRD; a kind without a CRD is itself an error."""
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    schema = _schemas().get(key)
    if schema is None:
        return [f"no CRD for {key}"]
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'.'.join(str(p) for p in error.absolute_path)}: {error.message}"
        for error in validator.iter_errors(obj)
    ]
