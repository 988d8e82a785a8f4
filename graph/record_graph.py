"""Record one stack's graph with the code of another checkout, for `python -m plan --base <ref>`.

Run as a script, with the checkout's own interpreter or environment:
`python -P record_graph.py --root <checkout> --stack <name> --config <json> --out <json>`
(`-P`: this folder's types.py must not hide the standard library's).
It imports the program and its mock engine (`graph.engine`, or `plan.engine` before the engine
moved) from `--root` and nothing from the checkout it comes from, so it works with the code of
any commit whose `record_program` takes a config map, a stack name and a program. URNs are
made as Pulumi state holds them whatever that code's mock engine does, and the stack outputs
are recorded too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any


def _state_urn(self: Any, parent: str, type_: str, name: str) -> str:
    from pulumi.runtime import settings

    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != "pulumi:pulumi:Stack":
            type_ = f"{parent_type}${type_}"
    return f"urn:pulumi:{settings.get_stack()}::{settings.get_project()}::{type_}::{name}"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def record(root: Path, stack: str, config: dict[str, str]) -> dict[str, Any]:
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(root))
    os.chdir(root)

    from pulumi.runtime import mocks, rpc, settings
    from pulumi.runtime.stack import massage

    try:  # the checkout's own
        import graph.engine as engine
    except ImportError:  # a commit from before the engine moved to graph/
        import plan.engine as engine  # type: ignore[no-redef]

    mocks.MockMonitor.make_urn = _state_urn  # type: ignore[method-assign]
    outputs: dict[str, Any] = {}
    register_outputs = mocks.MockMonitor.RegisterResourceOutputs

    def capture(self: Any, request: Any) -> Any:
        if request.urn.split("::")[2] == "pulumi:pulumi:Stack":
            outputs["value"] = rpc.deserialize_properties(request.outputs, keep_unknowns=True)
        return register_outputs(self, request)

    mocks.MockMonitor.RegisterResourceOutputs = capture  # type: ignore[method-assign]
    built: dict[str, Any] = {}

    def program() -> None:
        namespace = runpy.run_path(str(root / "__main__.py"), run_name="__main__")
        built["env"] = namespace.get("env")
        stack_resource = settings.get_root_resource()
        stack_resource.register_outputs(  # type: ignore[union-attr]
            massage(getattr(stack_resource, "outputs", {}), [])
        )

    graph, error = engine.record_program(config, stack=stack, program=program)
    if error is not None:
        return {"error": f"{type(error).__name__}: {error}" if not str(error) else str(error)}
    graph.environment = built.get("env")
    keys = graph.config_keys() if hasattr(graph, "config_keys") else {}
    return {
        "resources": [
            {f.name: _plain(getattr(r, f.name)) for f in dataclasses.fields(r)}
            for r in graph.resources
        ],
        "keys": keys,
        "outputs": _plain(outputs.get("value")) if "value" in outputs else None,
        "config": config,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--stack", required=True)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    config = json.loads(args.config.read_text())
    document = record(args.root.resolve(), args.stack, config)
    args.out.write_text(json.dumps(document))
    return 2 if "error" in document else 0


if __name__ == "__main__":
    sys.exit(main())
