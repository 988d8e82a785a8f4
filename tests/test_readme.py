"""The README is the front door: its examples build, and its config reference names every key."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from components.base import ConfigModel
from plan.engine import REPO_ROOT
from stacks.config import NAMESPACE, StackConfig, config_model_in
from tests.conftest import build_graph

README = (REPO_ROOT / "README.md").read_text()


def examples() -> dict[str, str]:
    return dict(re.findall(r"<!-- example: (\S+) -->\n```yaml\n(.*?)```", README, re.S))


def test_readme_examples_build():
    found = examples()
    assert found, "no examples in README"
    for name, text in found.items():
        graph = build_graph(yaml.safe_load(text)["config"], stack=name)
        if name == "gpu-cluster":
            (mig,) = graph.of_type("gcp:compute/instanceGroupManager:InstanceGroupManager")
            (template,) = graph.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
            assert mig.inputs["targetSize"] == 1
            assert template.inputs["machineType"] == "a2-highgpu-2g"
            assert template.inputs["guestAccelerators"] == [
                {"type": "nvidia-tesla-a100", "count": 2}
            ]
            continue
        pools = [
            p
            for p in graph.of_type("gcp:container/nodePool:NodePool")
            if p.inputs["name"] == "train-0"
        ]
        assert pools and pools[0].inputs["nodeCount"] == 4, name


def _fields(model: type[ConfigModel], path: str) -> list[str]:
    names = []
    for field, info in model.model_fields.items():
        alias = info.alias or field
        names.append(f"{path}{alias}")
        nested = config_model_in(info.annotation)
        if nested is not None and nested is not model:
            names += _fields(nested, f"{path}{alias}.")
    return names


def test_config_reference_documents_every_key():
    spans = re.findall(r"`([^`\n]+)`", README)
    documented = set(spans) | {t for span in spans for t in re.split(r"[^A-Za-z0-9:-]+", span)}
    missing = []
    for field, info in StackConfig.model_fields.items():
        alias = info.alias or field
        if field in ("project", "region", "zone"):
            assert f"gcp:{field}" in documented
            continue
        key = f"{NAMESPACE}:{alias}"
        nested = config_model_in(info.annotation)
        if nested is None:
            if key not in documented:
                missing.append(key)
            continue
        if f"### `{key}`" not in README:
            missing.append(key)
        for sub in _fields(nested, ""):
            leaf = sub.split(".")[-1]
            if sub not in documented and leaf not in documented:
                missing.append(f"{key}.{sub}")
    assert not missing, f"README config reference lacks {missing}"


def test_ci_runs_the_readme_test_command():
    ci = Path(REPO_ROOT / ".ci" / "run").read_text()
    assert "uv run pytest" in README and "uv run pytest" in ci
    assert "uv run python -m plan dev" in README
