"""A Pulumi mock engine that records every registration: type, name, parent, inputs and options.

Tests and the offline plan both run the real program through `run_program` and read the graph
it returns. Outputs a provider would compute (emails, endpoints) are synthesised so that the
program's own `apply` chains run the way they would against GCP; the ones GCP chooses are
listed in `INVENTED`, so the plan never passes them off as known. URNs are shaped as Pulumi
state holds them (`state_urn`), not as Pulumi's own mock monitor makes them.
"""

from __future__ import annotations

import ipaddress
import json
import pickle
import runpy
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config
from pulumi.runtime import mocks as runtime_mocks
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import massage, run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from components.identity import service_account_email
from graph import types
from graph.files import REPO_ROOT, StackError, list_stacks, stack_file
from graph.model import Graph, Registration

__all__ = [
    "REPO_ROOT",
    "DuplicateUrnError",
    "Graph",
    "Registration",
    "list_stacks",
    "record_program",
    "run_program",
    "stack_file",
]

PROJECT = "ai-infra"


_CLUSTER_ENDPOINT = "203.0.113.10"
_CLUSTER_CA = "bW9jay1jYQ=="
_FILESTORE_IP = "192.0.2.2"
_FILESTORE_RANGE = "192.0.2.0/29"
_PEERED = ("198.18.", "198.19.")
"""Addresses of instances reached through private services access, one per instance name in
198.18.0.0/15 (RFC 2544's benchmarking block, never a real peer), so that two instances never
share one and the reachability model tells them apart."""
INVENTED = frozenset({_CLUSTER_ENDPOINT, _CLUSTER_CA, _FILESTORE_IP, _FILESTORE_RANGE, *_PEERED})
"""Mock outputs GCP chooses at create time (addresses, certificates): a value holding one is
unknown until `pulumi up`. Emails, names and bucket URLs follow from the inputs."""
INVENTED_PREFIXES = ("https://www.googleapis.com/compute/v1/projects/",)
"""Mock self links: GCP's have a different shape, so they are unknown too."""


def _fake_outputs(typ: str, inputs: dict[str, Any], project: str) -> dict[str, Any]:
    """The outputs the program reads back, with predictable values. Other inputs are not
    echoed: the program never reads them, and echoing them doubles the engine's work."""
    name = inputs.get("name")
    outputs: dict[str, Any] = {"name": name} if name is not None else {}
    if typ == types.SERVICE_ACCOUNT:
        email = service_account_email(inputs["accountId"], project)
        outputs["email"] = email
        outputs["member"] = f"serviceAccount:{email}"
        outputs["name"] = f"projects/{project}/serviceAccounts/{email}"
    elif typ == types.CLUSTER:
        outputs["endpoint"] = _CLUSTER_ENDPOINT
        outputs["masterAuth"] = {"clusterCaCertificate": _CLUSTER_CA}
        location = inputs.get("location", "")
        outputs["selfLink"] = f"projects/{project}/locations/{location}/clusters/{name}"
    elif typ.startswith("gcp:compute/"):
        outputs["selfLink"] = f"https://www.googleapis.com/compute/v1/projects/{project}/{name}"
        if typ == types.INSTANCE:
            # A VM's numeric id, new with every replacement; predictable from its name here.
            outputs["instanceId"] = str(zlib.crc32(str(name).encode()))
    elif typ == types.BUCKET:
        outputs["url"] = f"gs://{name}"
    elif typ == types.FILESTORE:
        # A predictable address from the documentation range, for mounts that read it.
        # Through private services access, reservedIpRange stays the allocation's name.
        network = (inputs.get("networks") or [{}])[0]
        if network.get("connectMode") == "PRIVATE_SERVICE_ACCESS":
            address, reserved = peered_address(str(name)), network.get("reservedIpRange", "")
        else:
            address, reserved = _FILESTORE_IP, _FILESTORE_RANGE
        outputs["networks"] = [
            {"ipAddresses": [address], "network": "mock", "reservedIpRange": reserved}
        ]
    elif typ == types.LUSTRE:
        address = peered_address(str(inputs.get("instanceId")))
        outputs["mountPoint"] = f"{address}@tcp:/{inputs.get('filesystem', '')}"
    return outputs


def peered_address(name: str) -> str:
    """The invented address of an instance reached through private services access."""
    offset = zlib.crc32(name.encode()) % (2**17 - 2) + 1
    return str(ipaddress.IPv4Address("198.18.0.0") + offset)


EXISTING_SIZE_GIB = 18000
"""The size of an existing instance the mock engine reads: what `pulumi up` reads is unknown."""


def _fake_lookup(token: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """What reading an existing instance returns, predictably: its address from the same
    invented ones, its share or file system named after it."""
    if token == "gcp:filestore/getInstance:getInstance":
        return {
            "networks": [{"ipAddresses": [peered_address(str(args.get("name")))]}],
            "fileShares": [{"name": "share", "capacityGb": EXISTING_SIZE_GIB}],
        }
    if token == "gcp:lustre/getInstance:getInstance":
        filesystem = str(args.get("instanceId", "")).replace("-", "")[:8]
        return {
            "mountPoint": f"{peered_address(str(args.get('instanceId')))}@tcp:/{filesystem}",
            "filesystem": filesystem,
            "capacityGib": str(EXISTING_SIZE_GIB),
        }
    return {}


class _RecordingMocks(runtime_mocks.Mocks):
    def __init__(self, project: str) -> None:
        self.project = project

    def new_resource(self, args: runtime_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", _fake_outputs(args.typ, args.inputs, self.project)

    def call(
        self, args: runtime_mocks.MockCallArgs
    ) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        # No failures: the mock monitor iterates the second item, so it is a list, never None.
        return _fake_lookup(args.token, args.args), []


ROOT_STACK = types.STACK


def state_urn(stack: str, project: str, parent: str, type_: str, name: str) -> str:
    """The URN `pulumi up` gives a resource (pulumi/pulumi deployment.go generateURN, urn.go
    New): the parent's whole qualified type chain joined with `$`, and no prefix under the
    root stack. Pulumi's MockMonitor keeps only the parent's last type and the stack's."""
    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != ROOT_STACK:
            type_ = f"{parent_type}${type_}"
    return f"urn:pulumi:{stack}::{project}::{type_}::{name}"


class _RecordingMonitor(runtime_mocks.MockMonitor):
    """Pulumi's MockMonitor, recording each registration with its options and the stack's
    outputs. It deserializes a request's inputs once, for both the record and the mocks."""

    def __init__(self, mocks: _RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording_mocks = mocks
        self.graph = Graph()
        self.stack_urn = ""

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        return state_urn(
            runtime_settings.get_stack(), runtime_settings.get_project(), parent, type_, name
        )

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if request.urn == self.stack_urn:
            self.graph.outputs = rpc.deserialize_properties(request.outputs, keep_unknowns=True)
        return super().RegisterResourceOutputs(request)

    def RegisterResource(self, request: Any) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == ROOT_STACK:
            self.stack_urn = urn
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
                property_dependencies={
                    key: tuple(deps.urns) for key, deps in request.propertyDependencies.items()
                },
                deleted_with=request.deletedWith,
                outputs=state,
                custom_timeouts={
                    op: value
                    for op in ("create", "update", "delete")
                    if (value := getattr(request.customTimeouts, op))
                },
            )
        )
        state_proto = _sync_await(rpc.serialize_properties(state, {}))
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=state_proto)


def parse_stack_file(text: str) -> dict[str, str]:
    """The config a stack file's text hands the program at `pulumi up` (`stacks.loading.
    read_stack_text`): one string per key; what the Pulumi CLI refuses is a `ConfigError`."""
    from stacks.loading import read_stack_text

    return read_stack_text(text).config


def read_stack_file(path: Path) -> dict[str, str]:
    return parse_stack_file(path.read_text())


def load_stack_config(stack: str) -> dict[str, str]:
    """The config `pulumi up` hands the program for `Pulumi.<stack>.yaml`."""
    path = stack_file(stack)
    if not path.exists():
        raise FileNotFoundError(f"{path.name} not found: stacks are {', '.join(list_stacks())}")
    return read_stack_file(path)


def engine_config(config: Mapping[str, Any]) -> dict[str, str]:
    """Config as the Pulumi CLI hands it to a program: strings, objects as JSON. Tests write
    Python values; a stack file read by `parse_stack_file` is in this form already."""
    return {
        key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()
    }


class DuplicateUrnError(StackError):
    """Two registrations with one URN: Pulumi's mock monitor keeps the last, but `pulumi up`
    fails the whole update with "Duplicate resource URN" (pulumi/pulumi step_generator.go)."""


def duplicate_urns(graph: Graph) -> DuplicateUrnError | None:
    """The error of a graph that registers a URN twice, naming each registration by its
    parent, or None."""
    by_urn: dict[str, list[Registration]] = {}
    for r in graph.resources:
        by_urn.setdefault(r.urn, []).append(r)
    twice = {urn: found for urn, found in by_urn.items() if len(found) > 1}
    if not twice:
        return None
    lines = [
        f"{urn}: registered {len(found)} times, under "
        + " and ".join(sorted(r.parent.rsplit("::", 1)[-1] or "the stack" for r in found))
        for urn, found in sorted(twice.items())
    ]
    return DuplicateUrnError(
        "the program registers two resources with one URN, which `pulumi up` refuses "
        "(Duplicate resource URN):\n  " + "\n  ".join(lines)
    )


def record_program(
    config: Mapping[str, Any],
    stack: str = "test",
    program: Callable[[], Any] | None = None,
) -> tuple[Graph, BaseException | None]:
    """Run `program` (default: the repository's `__main__.py`) under the mock engine and
    return what it registered, with the exception it raised, if any, or else a
    `DuplicateUrnError` for a URN registered twice. A bad config must raise before registering
    anything; tests check that on the returned graph."""
    project_id = str(config.get("gcp:project", "mock-project"))
    mocks = _RecordingMocks(project_id)
    monitor = _RecordingMonitor(mocks)
    runtime_settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    handed = engine_config(config)
    runtime_config.set_all_config(handed)
    monitor.graph.config = handed

    # The order the program constructs resources in: the monitor receives registrations as
    # their inputs resolve, on executor threads, in an order that varies from run to run.
    stack_urn = monitor.make_urn("", ROOT_STACK, f"{PROJECT}-{stack}")
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
        # `set_mocks` registered the root stack's (empty) outputs before the program ran;
        # register what it exported, as `pulumi up` does when the program ends.
        root = runtime_settings.get_root_resource()
        if isinstance(root, pulumi.ComponentResource):
            exported: Any = massage(getattr(root, "outputs", {}), [])
            root.register_outputs(exported)

    # pulumi.dynamic's serialize_provider wraps pickle._Pickler._batch_setitems (and replaces
    # save_dict) on every call and never restores them, so each dynamic resource adds a frame
    # to every later pickling in this process; a process that records many programs (the tests,
    # a plan with --base, the benchmarks) would end in RecursionError. Each run starts clean.
    batch_setitems, save_dict = pickle._Pickler._batch_setitems, pickle._Pickler.save_dict  # type: ignore[attr-defined]
    try:
        _sync_await(run_pulumi_func(body))
        error = None
    except Exception as raised:
        error = raised
    finally:
        pickle._Pickler._batch_setitems = batch_setitems  # type: ignore[attr-defined]
        pickle._Pickler.save_dict = save_dict  # type: ignore[attr-defined]
    order = {urn: i for i, (_, urn) in enumerate(constructed)}
    monitor.graph.resources.sort(key=lambda r: order.get(r.urn, len(order)))
    return monitor.graph, error or duplicate_urns(monitor.graph)


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
