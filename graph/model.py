"""A recorded plan graph as values: each registration with its inputs and options, and the
graph of one program run. The mock engine (`graph/engine.py`) records it, `graph/record_graph.py`
records it with another commit's code, and `graph.capacity` reads what it provides.

Also the two ways a recorded value is read back: with Pulumi's secret wrappers removed
(`unwrap`) and with the mock engine's floats shown as the integers they are (`integral`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stacks.environment import Environment

SECRET_SIG = "4dabf18193072939515e22adb298388d"
"""The key Pulumi's wire format marks a secret value with."""


def unwrap(value: Any) -> Any:
    """A value with Pulumi's secret wrappers removed, all the way down."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return unwrap(value.get("value"))
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def integral(value: Any) -> Any:
    """The mock engine hands numbers back as floats; show whole numbers as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def plain(value: Any) -> Any:
    """A recorded value as the program wrote it: no secret wrappers, whole numbers as ints."""
    return integral(unwrap(value))


@dataclass(frozen=True)
class Registration:
    """One resource as the program registered it."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    remote: bool
    """A component the provider expands (helm v4, yaml v2): its children are not visible."""
    inputs: dict[str, Any]
    protect: bool
    dependencies: tuple[str, ...]
    aliases: tuple[str, ...]
    ignore_changes: tuple[str, ...]
    delete_before_replace: bool
    retain_on_delete: bool
    provider: str
    replace_on_changes: tuple[str, ...] = ()
    """The `replace_on_changes` option: input paths whose change replaces, beyond the provider's."""
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Input -> the URNs of the resources whose outputs it was built from."""
    deleted_with: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    """What the mock provider returned (`_fake_outputs`)."""
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    """The `custom_timeouts` option: how long the provider waits to create, update, delete."""


@dataclass
class Graph:
    """Every registration of one program run, in the order the program constructed them."""

    resources: list[Registration] = field(default_factory=list)
    environment: Environment | None = None
    """What `__main__.py` built (its `env`); None for another program or when it raised."""
    outputs: dict[str, Any] | None = None
    """The stack outputs (`pulumi.export`) as the engine records them; None when unknown."""
    config: dict[str, str] = field(default_factory=dict)
    """The config the program ran with, as the engine hands it over (PULUMI_CONFIG)."""
    keys: dict[str, str] | None = None
    """URN -> config key, when the graph was recorded elsewhere (`from_document`)."""

    def __iter__(self) -> Iterator[Registration]:
        return iter(self.resources)

    def __len__(self) -> int:
        return len(self.resources)

    @property
    def urns(self) -> list[str]:
        return [r.urn for r in self.resources]

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.resources if r.type == type_]

    def named(self, name: str) -> Registration:
        found = [r for r in self.resources if r.name == name]
        if len(found) != 1:
            raise KeyError(f"expected one resource named {name!r}, found {[r.urn for r in found]}")
        return found[0]

    def by_urn(self, urn: str) -> Registration:
        for r in self.resources:
            if r.urn == urn:
                return r
        raise KeyError(urn)

    @property
    def resources_to_apply(self) -> list[Registration]:
        """What the engine would create: custom resources and provider-expanded components."""
        return [r for r in self.resources if r.custom or r.remote]

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> Graph:
        """A graph `graph/record_graph.py` recorded, perhaps with another commit's code: fields
        that code did not record keep their defaults."""
        names = {f.name for f in fields(Registration)}
        resources = []
        for entry in document.get("resources", []):
            known = {k: v for k, v in entry.items() if k in names}
            for key in ("dependencies", "aliases", "ignore_changes", "replace_on_changes"):
                known[key] = tuple(known.get(key) or ())
            known["property_dependencies"] = {
                k: tuple(v) for k, v in (known.get("property_dependencies") or {}).items()
            }
            resources.append(Registration(**known))
        return cls(
            resources=resources,
            outputs=document.get("outputs"),
            config=dict(document.get("config") or {}),
            keys=dict(document.get("keys") or {}),
        )

    def children(self, parent_urn: str) -> list[Registration]:
        return [r for r in self.resources if r.parent == parent_urn]

    def config_keys(self) -> dict[str, str]:
        """URN -> the config key (`ai-infra:tpuSlices[2]`) of the top-level component the
        resource is, or belongs to, per `Environment.sources`."""
        if self.keys is not None:
            return dict(self.keys)
        sources = self.environment.sources if self.environment is not None else {}
        urns = set(self.urns)
        keys: dict[str, str] = {}
        for r in self.resources:  # a parent is constructed before its children
            key = keys.get(r.parent) if r.parent in urns else sources.get(r.name)
            if key is not None:
                keys[r.urn] = key
        return keys
