"""How the house is layered, held by reading every module's imports:

    catalog/          facts; imports nothing of the program but its value types
    components/       the systems and what two of them share; a system is reached through its
                      face (`components/<system>/__init__.py`), which declares and holds no logic
    stacks/           the config root, the registry of systems, their composition
    graph/            the library of the recorded program: engine, record, capacity,
                      reachability, RBAC, the stack as opened
    plan, prices, preflight, workload, hosts, policy
                      the tools: each imports the layers above and no other tool; one composer
                      per command (its `__main__.py`) puts tools together

Imports under `if TYPE_CHECKING:` are for the type checker and do not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.system import System
from graph.engine import REPO_ROOT
from stacks import registry

TOOLS: tuple[str, ...] = ("plan", "prices", "preflight", "workload", "hosts", "policy")
LIBRARY: str = "graph"
CATALOG: str = "catalog"


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (REPO_ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement outside `if TYPE_CHECKING:` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            yield from (n for stmt in node.orelse for n in _runtime_imports_of(stmt))
            continue
        yield from _runtime_imports_of(node)


def _runtime_imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    yield from _runtime_imports(node)


def imported(path: Path) -> set[str]:
    """The dotted modules (and `module.name` for a `from` import) a file imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _roots(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported(path)}


def _relative(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


LAYERS: list[tuple[str, set[str], tuple[str, ...]]] = [
    (CATALOG, {"stacks", LIBRARY, *TOOLS}, ()),
    ("components", {"stacks", LIBRARY, *TOOLS}, ()),
    ("stacks", {LIBRARY, *TOOLS}, ()),
    # record_graph.py runs another checkout's engine, at plan/engine.py in older commits.
    (LIBRARY, set(TOOLS), ("graph/record_graph.py",)),
]
for _tool in TOOLS:
    _others: set[str] = {t for t in TOOLS if t != _tool}
    LAYERS.append((_tool, _others, (f"{_tool}/__main__.py",)))


@pytest.mark.parametrize(("package", "forbidden", "skip"), LAYERS, ids=[p for p, *_ in LAYERS])
def test_each_layer_imports_only_those_below_it(
    package: str, forbidden: set[str], skip: tuple[str, ...]
):
    wrong = {
        _relative(path): sorted(_roots(path) & forbidden)
        for path in _modules(package)
        if _relative(path) not in skip
    }
    assert not {m: i for m, i in wrong.items() if i}


def test_the_catalog_imports_only_value_types_of_the_program():
    allowed = {"components.locations", "components.types"}
    wrong = {
        _relative(path): sorted(
            n
            for n in imported(path)
            if n.startswith("components.") and ".".join(n.split(".")[:2]) not in allowed
        )
        for path in _modules(CATALOG)
    }
    assert not {m: i for m, i in wrong.items() if i}


def test_each_composer_composes_only_what_its_command_needs():
    """`python -m plan` composes the plan and the cost; the others run their own tool."""
    allowed = {"plan": {"plan", "prices"}}
    for tool in TOOLS:
        main = REPO_ROOT / tool / "__main__.py"
        if main.exists():
            used = _roots(main) & set(TOOLS)
            assert used <= allowed.get(tool, {tool}), (tool, used)


def test_the_policy_pack_and_the_reachability_model_need_no_sdk():
    """`pulumi preview --policy-pack policy` runs them with pulumi-policy alone installed
    (policy/requirements.txt): the standard library, graph's own model modules and the TPU
    catalog's tables (standard library only)."""
    light = {"graph", "graph.types", "graph.netpol", "graph.topology", "catalog", "catalog.tpu"}
    models = ["reachability.py", "netpol.py", "topology.py"]
    for path in [REPO_ROOT / "graph" / name for name in models] + [REPO_ROOT / "catalog/tpu.py"]:
        roots = {LIBRARY, "components", "stacks", "catalog"}
        ours = {n for n in imported(path) if n.split(".")[0] in roots}
        assert {
            n if n in ("graph", "catalog") else ".".join(n.split(".")[:2]) for n in ours
        } <= light, path


# Faces.


def _faces() -> dict[str, Path]:
    """Package -> face of every system folder: a package under components/ whose __init__.py
    declares a registry entry."""
    found = {}
    for init in sorted((REPO_ROOT / "components").glob("*/__init__.py")):
        tree = ast.parse(init.read_text())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        if any(isinstance(c.func, ast.Name) and c.func.id == "System" for c in calls):
            found[f"components.{init.parent.name}"] = init
    return found


def test_every_registered_system_has_a_face():
    import importlib

    declared = set()
    for package in _faces():
        module = importlib.import_module(package)
        declared |= {id(v) for v in vars(module).values() if isinstance(v, System)}
    assert {id(s) for s in registry.SYSTEMS} <= declared


_DECLARATION = (ast.Name, ast.Attribute, ast.Constant, ast.Tuple, ast.List, ast.Call, ast.keyword)


def _logic(face: Path) -> list[str]:
    """What a face holds beyond imports, docstrings, `__all__` and entries that only point at
    functions (`System(name=..., problems=system.problems, builds=(Step(...),))`)."""
    found = []
    for node in ast.parse(face.read_text()).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == "__all__":
                continue
            inner = [n for n in ast.walk(node.value) if n is not node.value]
            if (
                isinstance(target, ast.Name)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "System"
                and all(isinstance(n, (*_DECLARATION, ast.expr_context)) for n in inner)
                and not any(
                    isinstance(n, ast.Call) and ast.unparse(n.func) not in ("Step", "Stage")
                    for n in inner
                )
            ):
                continue
        found.append(f"line {node.lineno}: {ast.unparse(node).splitlines()[0]}")
    return found


def test_faces_hold_declarations_and_no_logic():
    assert set(_faces()) >= {f"components.{n}" for n in ("gke", "tpu_vms", "slurm", "storage")}
    assert {package: _logic(face) for package, face in _faces().items() if _logic(face)} == {}


PICKLED_ALIASES = {"components/tpu_vm_provider.py"}
"""Modules that stay where Pulumi's state pickled a provider before it moved (docs/adr)."""


def _past_a_face(path: Path, faces: set[str]) -> list[str]:
    """The imports of `path` that reach into a system's modules from outside its folder."""
    own = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts[:2])
    found = []
    for name in imported(path):
        for face in faces:
            if face == own or not name.startswith(f"{face}."):
                continue
            rest = name.removeprefix(f"{face}.").split(".")[0]
            folder = REPO_ROOT.joinpath(*face.split("."))
            if (folder / f"{rest}.py").exists() or (folder / rest).is_dir():
                found.append(name)
    return found


def test_nobody_imports_past_a_face_into_a_systems_modules():
    faces = set(_faces())
    sources = [
        path
        for package in ("components", "stacks", CATALOG, LIBRARY, *TOOLS)
        for path in _modules(package)
    ]
    sources.append(REPO_ROOT / "__main__.py")
    wrong = {
        _relative(path): sorted(_past_a_face(path, faces))
        for path in sources
        if _relative(path) not in PICKLED_ALIASES
    }
    assert not {m: i for m, i in wrong.items() if i}


def test_the_import_check_sees_an_import_past_a_face(tmp_path: Path):
    """The check is not vacuous: a tool reaching into a system's module is caught, whether it
    names the module or imports it from the package."""
    faces = set(_faces())
    probe = REPO_ROOT / "plan" / "_probe_past_a_face.py"
    try:
        probe.write_text(
            "from components.gke.quota import allocate\nfrom components.storage import boot\n"
        )
        assert sorted(_past_a_face(probe, faces)) == [
            "components.gke.quota",
            "components.gke.quota.allocate",
            "components.storage.boot",
        ]
    finally:
        probe.unlink()


def test_the_face_check_sees_logic(tmp_path: Path):
    face = tmp_path / "__init__.py"
    face.write_text(
        '"""A face."""\n'
        "from components.x import system\n"
        'SYSTEM = System(name="x", problems=system.problems, builds=(Step(Stage.X, "x", f),))\n'
        "def helper():\n    return 1\n"
        "OTHER = System(name=lambda: 1)\n"
        '__all__ = ["SYSTEM"]\n'
    )
    assert _logic(face) == ["line 4: def helper():", "line 6: OTHER = System(name=lambda: 1)"]
