"""A Pulumi mock engine that records every registration: type, name, parent, inputs and options.

Tests and the offline plan both run the real program through `run_program` and read the graph
it returns. Outputs a provider would compute (emails, endpoints) are synthesised so that the
program's own `apply` chains run the way they would against GCP.
"""

from __future__ import annotations

import json
import runpy
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi.runtime import config as runtime_config
from pulumi.runtime import mocks as runtime_mocks
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from components.identity import service_account_email

if TYPE_CHECKING:
    from stacks.environment import Environment

PROJECT = "ai-infra"
REPO_ROOT = Path(__file__).resolve().parent.parent


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
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    """The `custom_timeouts` option: how long the provider waits to create, update, delete."""


@dataclass
class Graph:
    """Every registration of one program run, in the order the program constructed them."""

    resources: list[Registration] = field(default_factory=list)
    environment: Environment | None = None
    """What `__main__.py` built (its `env`); None for another program or when it raised."""

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

    def children(self, parent_urn: str) -> list[Registration]:
        return [r for r in self.resources if r.parent == parent_urn]

    def config_keys(self) -> dict[str, str]:
        """URN -> the config key (`ai-infra:tpuSlices[2]`) of the top-level component the
        resource is, or belongs to, per `Environment.sources`."""
        sources = self.environment.sources if self.environment is not None else {}
        urns = set(self.urns)
        keys: dict[str, str] = {}
        for r in self.resources:  # a parent is constructed before its children
            key = keys.get(r.parent) if r.parent in urns else sources.get(r.name)
            if key is not None:
                keys[r.urn] = key
        return keys


def _fake_outputs(typ: str, inputs: dict[str, Any], project: str) -> dict[str, Any]:
    """The outputs the program reads back, with predictable values. Other inputs are not
    echoed: the program never reads them, and echoing them doubles the engine's work."""
    name = inputs.get("name")
    outputs: dict[str, Any] = {"name": name} if name is not None else {}
    if typ == "gcp:serviceaccount/account:Account":
        email = service_account_email(inputs["accountId"], project)
        outputs["email"] = email
        outputs["member"] = f"serviceAccount:{email}"
        outputs["name"] = f"projects/{project}/serviceAccounts/{email}"
    elif typ == "gcp:container/cluster:Cluster":
        outputs["endpoint"] = "203.0.113.10"
        outputs["masterAuth"] = {"clusterCaCertificate": "bW9jay1jYQ=="}
        location = inputs.get("location", "")
        outputs["selfLink"] = f"projects/{project}/locations/{location}/clusters/{name}"
    elif typ.startswith("gcp:compute/"):
        outputs["selfLink"] = f"https://www.googleapis.com/compute/v1/projects/{project}/{name}"
        if typ == "gcp:compute/instance:Instance":
            # A VM's numeric id, new with every replacement; predictable from its name here.
            outputs["instanceId"] = str(zlib.crc32(str(name).encode()))
    elif typ == "gcp:storage/bucket:Bucket":
        outputs["url"] = f"gs://{name}"
    elif typ == "gcp:filestore/instance:Instance":
        # A predictable address from the documentation range, for mounts that read it.
        outputs["networks"] = [{"ipAddresses": ["192.0.2.2"], "network": "mock"}]
    return outputs


class _RecordingMocks(runtime_mocks.Mocks):
    def __init__(self, project: str) -> None:
        self.project = project

    def new_resource(self, args: runtime_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", _fake_outputs(args.typ, args.inputs, self.project)

    def call(self, args: runtime_mocks.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


class _RecordingMonitor(runtime_mocks.MockMonitor):
    """Pulumi's MockMonitor, recording each registration with its options. It deserializes a
    request's inputs once, for both the record and the mocks."""

    def __init__(self, mocks: _RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording_mocks = mocks
        self.graph = Graph()

    def RegisterResource(self, request: Any) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        _ensure_event_loop()
        inputs = rpc.deserialize_properties(request.object)
        id_, state = self.recording_mocks.new_resource(
            runtime_mocks.MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=inputs,
                provider=request.provider,
                resource_id=request.importId,
                custom=request.custom or False,
            )
        )
        self.resources[urn] = runtime_mocks.MockMonitor.ResourceRegistration(urn, id_, state)
        self.graph.resources.append(
            Registration(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=request.custom,
                remote=request.remote,
                inputs=inputs,
                protect=bool(request.protect),
                dependencies=tuple(request.dependencies),
                aliases=tuple(str(a) for a in request.aliases),
                ignore_changes=tuple(request.ignoreChanges),
                delete_before_replace=request.deleteBeforeReplace,
                retain_on_delete=bool(request.retainOnDelete),
                provider=request.provider,
                replace_on_changes=tuple(request.replaceOnChanges),
                custom_timeouts={
                    op: value
                    for op in ("create", "update", "delete")
                    if (value := getattr(request.customTimeouts, op))
                },
            )
        )
        state_proto = _sync_await(rpc.serialize_properties(state, {}))
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=state_proto)


def stack_file(stack: str) -> Path:
    return REPO_ROOT / f"Pulumi.{stack}.yaml"


def parse_stack_file(text: str) -> dict[str, Any]:
    """The `config:` map of a stack file's text, as YAML values; a key written twice is a
    `ConfigError`, as the Pulumi CLI refuses it."""
    from stacks.loading import load_yaml, stack_config_map

    return stack_config_map(load_yaml(text))


def read_stack_file(path: Path) -> dict[str, Any]:
    return parse_stack_file(path.read_text())


def load_stack_config(stack: str) -> dict[str, Any]:
    """The `config:` map of `Pulumi.<stack>.yaml`."""
    path = stack_file(stack)
    if not path.exists():
        raise FileNotFoundError(f"{path.name} not found: stacks are {', '.join(list_stacks())}")
    return read_stack_file(path)


def list_stacks() -> list[str]:
    return sorted(p.name.split(".")[1] for p in REPO_ROOT.glob("Pulumi.*.yaml"))


def _engine_config(config: Mapping[str, Any]) -> dict[str, str]:
    """Config as the Pulumi CLI hands it to a program: strings, objects as JSON."""
    return {
        key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()
    }


def record_program(
    config: Mapping[str, Any],
    stack: str = "test",
    program: Callable[[], Any] | None = None,
) -> tuple[Graph, BaseException | None]:
    """Run `program` (default: the repository's `__main__.py`) under the mock engine and
    return what it registered, with the exception it raised, if any. A bad config must raise
    before registering anything; tests check that on the returned graph."""
    project_id = str(config.get("gcp:project", "mock-project"))
    mocks = _RecordingMocks(project_id)
    monitor = _RecordingMonitor(mocks)
    runtime_settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    runtime_config.set_all_config(_engine_config(config))

    # The order the program constructs resources in: the monitor receives registrations as
    # their inputs resolve, on executor threads, in an order that varies from run to run.
    stack_urn = monitor.make_urn("", "pulumi:pulumi:Stack", f"{PROJECT}-{stack}")
    # Holding each resource keeps its id from being reused while `urn_of` maps it.
    constructed: list[tuple[pulumi.Resource, str]] = []
    urn_of: dict[int, str] = {}

    def record_construction(args: pulumi.ResourceTransformationArgs) -> None:
        parent = args.opts.parent if args.opts is not None else None
        parent_urn = urn_of.get(id(parent), stack_urn) if parent is not None else stack_urn
        urn = monitor.make_urn(parent_urn, args.type_, args.name)
        constructed.append((args.resource, urn))
        urn_of[id(args.resource)] = urn

    def body() -> None:
        pulumi.runtime.register_stack_transformation(record_construction)
        if program is None:
            namespace = runpy.run_path(str(REPO_ROOT / "__main__.py"), run_name="__main__")
            monitor.graph.environment = namespace.get("env")
        else:
            program()

    try:
        _sync_await(run_pulumi_func(body))
        error = None
    except Exception as raised:
        error = raised
    order = {urn: i for i, (_, urn) in enumerate(constructed)}
    monitor.graph.resources.sort(key=lambda r: order.get(r.urn, len(order)))
    return monitor.graph, error


def run_program(
    config: Mapping[str, Any],
    stack: str = "test",
    program: Callable[[], Any] | None = None,
) -> Graph:
    """`record_program`, raising what the program raises."""
    graph, error = record_program(config, stack, program)
    if error is not None:
        raise error
    return graph
