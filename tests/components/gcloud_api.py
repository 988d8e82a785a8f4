"""A local fake of the Google APIs gcloud's SSH commands call (Compute Engine, Cloud TPU, OS
Login), that allows exactly what the IAM grants of a recorded stack allow, so that the installed
`gcloud` can be run against a stack as a member would run it.

- **Who may do what** comes from the graph only (`fake_iam.Iam`): the member's grants, their
  conditions evaluated with CEL on the resource each call touches.
- **What exists** comes from the graph too: each managed instance group's VMs (named as the
  group names them), each `compute.Instance`, each queued resource's TPU VMs with one host per
  worker of the catalog's shape, and their metadata and service accounts.
- **Which permission each call takes** is written at its route, from the Compute Engine and
  Cloud TPU API references, and gcloud's help text where it names one (`list-instances`:
  `compute.instanceGroupManagers.list`). Cloud TPU's GetGuestAttributes is taken to need
  `tpu.nodes.get`, as the node it reads.
- **The VM end**: gcloud hands the session to `ssh`, with IAP's tunnel as its ProxyCommand. A
  stub `ssh` on PATH (`SSH_STUB`) asks this fake what the VM would decide: IAP's tunnel to port
  22 (`iap.tunnelInstances.accessViaIAP` with `destination.port`), OS Login's check
  (`compute.instances.osLogin`, or `osAdminLogin` for `sudo`, on the instance, and
  `iam.serviceAccounts.actAs` on its account), and the key offered against the member's OS Login
  profile. IAP's own websocket is not run.

A TPU VM's worker is, to IAP and OS Login, the instance its guest attributes name (`hostname`),
as gcloud tells IAP: that this is also what OS Login checks is an assumption no document states
(docs/tpu-vms.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from catalog import tpu as tpu_catalog
from graph import types
from graph.model import Graph
from tests.components.fake_iam import ACCOUNT, GROUP, PROJECT, UNNAMED, Iam, Resource, instance

SSH_STUB = """#!{python}
# ssh, as the VM would answer it: asks the fake API (tests/components/gcloud_api.py).
import json, os, re, sys, urllib.request
args = sys.argv[1:]
cut = args.index("--") if "--" in args else len(args)
head, command = args[:cut], args[cut + 1:]
proxy = key = None
for i, a in enumerate(head):
    if a == "-o" and head[i + 1].startswith("ProxyCommand "):
        proxy = head[i + 1]
    if a == "-i":
        key = head[i + 1]
    if a.startswith("-i") and len(a) > 2:
        key = a[2:]
    if a.startswith("-oIdentityFile="):
        key = a.split("=", 1)[1]
target = [a for a in head if "@" in a and not a.startswith("-")][-1]
tunnel = None
if proxy:
    m = re.search(r"start-iap-tunnel '?([^' ]+)'? '?%p'? .*--project=(\\S+) --zone=(\\S+)", proxy)
    tunnel = {{"instance": m[1], "project": m[2], "zone": m[3]}}
public = open(key + ".pub").read().strip() if key and os.path.exists(key + ".pub") else ""
token = open(os.environ["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"]).read().strip()
body = json.dumps({{"target": target, "tunnel": tunnel, "key": public,
                   "command": " ".join(command)}}).encode()
request = urllib.request.Request(os.environ["FAKE_GCP_URL"] + "/_ssh", data=body,
                                 headers={{"Authorization": "Bearer " + token}})
answer = json.load(urllib.request.urlopen(request, timeout=30))
sys.stdout.write(answer["stdout"])
sys.stderr.write(answer["stderr"])
sys.exit(answer["exit"])
"""


@dataclass
class Vm:
    """A Compute Engine VM, or one worker of a TPU VM (`node` names it)."""

    project: str
    zone: str
    name: str
    ip: str
    account: str
    metadata: dict[str, str]
    node: str | None = None

    @property
    def resource(self) -> Resource:
        return instance(self.project, self.zone, self.name)

    @property
    def id(self) -> str:
        return str(int(hashlib.sha256(self.name.encode()).hexdigest()[:12], 16))

    @property
    def host_key(self) -> str:
        return "AAAAC3NzaC1lZDI1NTE5AAAAI" + hashlib.sha256(self.name.encode()).hexdigest()[:20]


@dataclass
class Node:
    """A TPU VM: one host per worker."""

    project: str
    zone: str
    name: str
    workers: list[Vm]
    metadata: dict[str, str]
    account: str


@dataclass
class World:
    """What exists: Compute Engine VMs by name, groups by name, TPU VMs and queued resources."""

    vms: dict[str, Vm] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    queued: dict[str, list[str]] = field(default_factory=dict)

    def host(self, address: str) -> Vm | None:
        every = [*self.vms.values(), *(w for n in self.nodes.values() for w in n.workers)]
        return next((v for v in every if address in (v.name, v.ip)), None)


def _template_of(graph: Graph, group: Any) -> Any:
    templates = {r.urn: r for r in graph.of_type(types.INSTANCE_TEMPLATE)}
    (urn,) = [u for u in group.property_dependencies.get("versions", ()) if u in templates]
    return templates[urn]


def _account(inputs: Mapping[str, Any]) -> str:
    accounts = inputs.get("serviceAccount") or inputs.get("serviceAccounts") or {}
    if isinstance(accounts, list):
        accounts = accounts[0] if accounts else {}
    return accounts.get("email", "")


def _plain(metadata: Mapping[str, Any]) -> dict[str, str]:
    return {k: v for k, v in metadata.items() if isinstance(v, str)}


def world_of(graph: Graph, group_size: int = 2) -> World:
    """The VMs, groups and TPU VMs the graph's stack would have once up; a flex-start group
    (no target size) holds `group_size` VMs."""
    world = World()
    address = iter(f"10.0.{i // 250}.{i % 250 + 2}" for i in range(10_000))
    for g in graph.of_type(types.INSTANCE_GROUP_MANAGER):
        template = _template_of(graph, g)
        base = g.inputs["baseInstanceName"]
        size = int(g.inputs.get("targetSize") or group_size)
        members = [f"{base}-{chr(97 + i)}{i:03d}"[: len(base) + 5] for i in range(size)]
        world.groups[g.inputs["name"]] = members
        for name in members:
            world.vms[name] = Vm(
                g.inputs["project"],
                g.inputs["zone"],
                name,
                next(address),
                _account(template.inputs),
                _plain(template.inputs.get("metadata") or {}),
            )
    for r in graph.of_type(types.INSTANCE):
        world.vms[r.inputs["name"]] = Vm(
            r.inputs["project"],
            r.inputs["zone"],
            r.inputs["name"],
            next(address),
            _account(r.inputs),
            _plain(r.inputs.get("metadata") or {}),
        )
    for q in graph.of_type(types.QUEUED_RESOURCE):
        hosts = tpu_catalog.resolve(q.inputs["acceleratorType"]).hosts
        count, prefix = int(q.inputs["nodeCount"]), q.inputs["nodePrefix"]
        names = [prefix] if count == 1 else [f"{prefix}-{i}" for i in range(count)]
        world.queued[q.inputs["queuedResourceId"]] = names
        for name in names:
            digest = hashlib.sha256(f"{q.inputs['project']}/{name}".encode()).hexdigest()[:8]
            metadata = _plain(q.inputs["metadata"])
            workers = [
                Vm(
                    q.inputs["project"],
                    q.inputs["zone"],
                    f"t1v-n-{digest}-w-{k}",
                    next(address),
                    q.inputs["serviceAccount"],
                    metadata,
                    node=name,
                )
                for k in range(hosts)
            ]
            world.nodes[name] = Node(
                q.inputs["project"],
                q.inputs["zone"],
                name,
                workers,
                metadata,
                q.inputs["serviceAccount"],
            )
    return world


class Denied(Exception):
    def __init__(self, permission: str, resource: str) -> None:
        super().__init__(f"Required '{permission}' permission for '{resource}'")
        self.permission = permission


@dataclass
class Call:
    method: str
    path: str
    member: str
    permission: str | None
    allowed: bool


@dataclass
class Login:
    """One ssh session as the VM decided it."""

    member: str
    vm: str
    user: str
    command: str
    exit: int
    why: str = ""


class FakeGcp:
    """The fake API on 127.0.0.1, with the world and grants of a recorded stack. `tokens`
    maps each access token to the member presenting it."""

    def __init__(self, graph: Graph, tokens: Mapping[str, str], iam: Iam | None = None) -> None:
        self.iam = iam or Iam(graph)
        self.world = world_of(graph)
        self.tokens = dict(tokens)
        self.calls: list[Call] = []
        self.logins: list[Login] = []
        self.profiles: dict[str, set[str]] = {}
        self.operations: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextlib.contextmanager
    def running(self) -> Iterator[FakeGcp]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join()

    def environment(self, home: Path, token: str, account: str) -> dict[str, str]:
        """What gcloud needs to call this fake as `account`, with a stub ssh on PATH."""
        bin_dir = home / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        ssh = bin_dir / "ssh"
        ssh.write_text(SSH_STUB.format(python=sys.executable))
        ssh.chmod(0o755)
        token_file = home / "token"
        token_file.write_text(token)
        return {
            "HOME": str(home),
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "FAKE_GCP_URL": self.url,
            "CLOUDSDK_CONFIG": str(home / "gcloud"),
            "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": str(token_file),
            "CLOUDSDK_CORE_ACCOUNT": account,
            "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
            "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "1",
            "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "1",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE": f"{self.url}/compute/v1/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU": f"{self.url}/tpu/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_OSLOGIN": f"{self.url}/oslogin/",
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_IAMCREDENTIALS": f"{self.url}/iamcredentials/",
        }

    def denied(self) -> list[Call]:
        return [c for c in self.calls if not c.allowed]

    # -- the decisions ------------------------------------------------------------------------

    def check(
        self,
        member: str,
        permission: str,
        resource: Resource,
        destination: Mapping[str, Any] | None = None,
        *,
        method: str = "",
        path: str = "",
    ) -> None:
        allowed = self.iam.allows(member, permission, resource, destination)
        with self.lock:
            self.calls.append(Call(method, path, member, permission, allowed))
        if not allowed:
            raise Denied(permission, resource.name or path)

    def username(self, member: str) -> str:
        return re.sub(r"[^a-z0-9]", "_", member.split(":", 1)[1].lower())

    def ssh(self, member: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """What the VM and IAP decide about one session."""
        user, address = request["target"].rsplit("@", 1)
        tunnel = request.get("tunnel")
        vm = self.world.host(tunnel["instance"] if tunnel else address)
        command = request.get("command", "")

        def refused(why: str) -> dict[str, Any]:
            self.logins.append(Login(member, vm.name if vm else address, user, command, 255, why))
            return {"exit": 255, "stdout": "", "stderr": f"{why}\n"}

        if vm is None:
            return refused(f"ssh: connect to host {address}: No route to host")
        try:
            if tunnel:
                tunnelled = Resource(
                    "iap.googleapis.com",
                    "iap.googleapis.com/TunnelInstance",
                    f"projects/{vm.project}/iap_tunnel/zones/{vm.zone}/instances/{vm.name}",
                )
                self.check(member, "iap.tunnelInstances.accessViaIAP", tunnelled, {"port": 22})
        except Denied:
            return refused(
                "ERROR: (gcloud.compute.start-iap-tunnel) Error while connecting "
                "[4033: 'not authorized']."
            )
        offered = (request.get("key") or "").split()[1:2]
        known = {k.split()[1] for k in self.profiles.get(member, set()) if len(k.split()) > 1}
        if user != self.username(member) or not offered or offered[0] not in known:
            return refused(f"{user}@{vm.name}: Permission denied (publickey).")
        sudo = command.startswith("sudo ")
        account = Resource(
            "iam.googleapis.com", ACCOUNT, f"projects/-/serviceAccounts/{vm.account}"
        )
        try:
            self.check(member, "compute.instances.osLogin", vm.resource)
            self.check(member, "iam.serviceAccounts.actAs", account)
        except Denied as denied:
            return refused(f"{user}@{vm.name}: Permission denied (publickey). [{denied}]")
        if sudo:
            try:
                self.check(member, "compute.instances.osAdminLogin", vm.resource)
            except Denied:
                self.logins.append(Login(member, vm.name, user, command, 1, "not a sudoer"))
                return {"exit": 1, "stdout": "", "stderr": f"{user} is not in the sudoers file.\n"}
        self.logins.append(Login(member, vm.name, user, command, 0))
        return {"exit": 0, "stdout": f"{user}@{vm.name}: {command}\n", "stderr": ""}


def _error(code: int, message: str) -> dict[str, Any]:
    status = {403: "PERMISSION_DENIED", 404: "NOT_FOUND", 400: "INVALID_ARGUMENT"}[code]
    return {
        "error": {
            "code": code,
            "message": message,
            "status": status,
            "errors": [
                {
                    "message": message,
                    "domain": "global",
                    "reason": "forbidden" if code == 403 else "notFound",
                }
            ],
        }
    }


def _handler(fake: FakeGcp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self, code: int, body: Mapping[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            token = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            member = fake.tokens.get(token)
            url = urlparse(self.path)
            path, query = unquote(url.path), parse_qs(url.query)
            if member is None:
                self._answer(401, {"error": {"code": 401, "message": "no such token"}})
                return
            try:
                if path == "/_ssh":
                    self._answer(200, fake.ssh(member, body))
                    return
                answer = _route(fake, member, self.command, path, query, body)
            except Denied as denied:
                self._answer(403, _error(403, str(denied)))
                return
            except LookupError as missing:
                self._answer(404, _error(404, f"The resource '{missing}' was not found"))
                return
            self._answer(200, answer)

        do_GET = do_POST = do_PATCH = _serve

    return Handler


_COMPUTE = re.compile(r"/compute/v1/projects/(?P<p>[^/]+)(?P<rest>/.*)?")
_TPU = re.compile(
    r"/tpu/(?P<v>v2|v2alpha1)/projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/(?P<rest>.+)"
)
_OSLOGIN = re.compile(r"/oslogin/(?P<v>v1\w*)/users/(?P<user>[^/:]+)(?P<rest>.*)")


def _route(
    fake: FakeGcp,
    member: str,
    method: str,
    path: str,
    query: Mapping[str, list[str]],
    body: Mapping[str, Any],
) -> dict[str, Any]:
    def check(permission: str, resource: Resource) -> None:
        fake.check(member, permission, resource, method=method, path=path)

    if m := _COMPUTE.fullmatch(path):
        return _compute(fake, check, m["p"], m["rest"] or "", method)
    if m := _TPU.fullmatch(path):
        return _tpu(fake, check, m["v"], m["p"], m["z"], m["rest"], method, body)
    if m := _OSLOGIN.fullmatch(path):
        return _oslogin(fake, member, m["user"], m["rest"], query, body)
    raise LookupError(path)


def _compute(fake: FakeGcp, check: Any, project: str, rest: str, method: str) -> dict[str, Any]:
    if rest == "":
        check(
            "compute.projects.get",
            Resource("compute.googleapis.com", PROJECT, f"projects/{project}"),
        )
        return {"name": project, "commonInstanceMetadata": {"items": []}}
    if m := re.fullmatch(
        r"/zones/([^/]+)/instanceGroupManagers/([^/]+)/listManagedInstances", rest
    ):
        zone, group = m[1], m[2]
        check(
            "compute.instanceGroupManagers.list",
            Resource(
                "compute.googleapis.com",
                GROUP,
                f"projects/{project}/zones/{zone}/instanceGroupManagers/{group}",
            ),
        )
        if group not in fake.world.groups:
            raise LookupError(f"instanceGroupManagers/{group}")
        return {
            "managedInstances": [
                {
                    "instance": f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instances/{n}",
                    "name": n,
                    "instanceStatus": "RUNNING",
                    "currentAction": "NONE",
                    "id": fake.world.vms[n].id,
                }
                for n in fake.world.groups[group]
            ]
        }
    m = re.fullmatch(r"/zones/([^/]+)/instances/([^/]+)(/getGuestAttributes)?", rest)
    if m is None:
        raise LookupError(rest)
    zone, name, guest = m[1], m[2], m[3]
    resource = instance(project, zone, name)
    check("compute.instances.getGuestAttributes" if guest else "compute.instances.get", resource)
    vm = fake.world.vms.get(name)
    if vm is None or vm.zone != zone:
        raise LookupError(f"projects/{project}/zones/{zone}/instances/{name}")
    if guest:
        return {
            "queryPath": "hostkeys/",
            "queryValue": {
                "items": [{"namespace": "hostkeys", "key": "ssh-ed25519", "value": vm.host_key}]
            },
        }
    link = f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}"
    return {
        "kind": "compute#instance",
        "id": vm.id,
        "name": name,
        "zone": link,
        "status": "RUNNING",
        "selfLink": f"{link}/instances/{name}",
        "metadata": {"items": [{"key": k, "value": v} for k, v in vm.metadata.items()]},
        "networkInterfaces": [{"name": "nic0", "networkIP": vm.ip}],
        "serviceAccounts": [{"email": vm.account, "scopes": []}],
        "disks": [],
    }


def _node(node: Node, version: str) -> dict[str, Any]:
    return {
        "name": f"projects/{node.project}/locations/{node.zone}/nodes/{node.name}",
        "id": node.workers[0].id,
        "state": "READY",
        "health": "HEALTHY",
        "acceleratorType": "v4-8",
        "runtimeVersion": "tpu-ubuntu2204-base",
        "apiVersion": "V2" if version == "v2" else "V2_ALPHA1",
        "metadata": dict(node.metadata),
        "networkEndpoints": [{"ipAddress": w.ip, "port": 8470} for w in node.workers],
        "serviceAccount": {"email": node.account},
    }


def _tpu(
    fake: FakeGcp,
    check: Any,
    version: str,
    project: str,
    zone: str,
    rest: str,
    method: str,
    body: Mapping[str, Any],
) -> dict[str, Any]:
    unnamed = Resource("tpu.googleapis.com", UNNAMED, UNNAMED)
    if m := re.fullmatch(r"queuedResources/([^/]+)", rest):
        check("tpu.queuedResources.get", unnamed)
        names = fake.world.queued.get(m[1])
        if names is None:
            raise LookupError(rest)
        parent = f"projects/{project}/locations/{zone}"
        return {
            "name": f"{parent}/queuedResources/{m[1]}",
            "state": {"state": "ACTIVE"},
            "tpu": {"nodeSpec": [{"parent": parent, "nodeId": n, "node": {}} for n in names]},
        }
    if m := re.fullmatch(r"operations/([^/]+)", rest):
        check("tpu.operations.get", unnamed)
        if m[1] not in fake.operations:
            raise LookupError(rest)
        return fake.operations[m[1]]
    m = re.fullmatch(r"nodes/([^/:]+)(:getGuestAttributes)?", rest)
    if m is None:
        raise LookupError(rest)
    name, guest = m[1], m[2]
    check("tpu.nodes.update" if method == "PATCH" else "tpu.nodes.get", unnamed)
    node = fake.world.nodes.get(name)
    if node is None:
        raise LookupError(rest)
    if guest:
        wanted = [int(w) for w in body.get("workerIds", []) if w != ""]
        workers = [node.workers[w] for w in wanted] if wanted else node.workers
        return {
            "guestAttributes": [
                {
                    "queryPath": "",
                    "queryValue": {
                        "items": [
                            {"namespace": "", "key": "hostname", "value": w.name},
                            {"namespace": "", "key": "ssh-ed25519", "value": w.host_key},
                        ]
                    },
                }
                for w in workers
            ]
        }
    if method == "PATCH":
        node.metadata.update(body.get("metadata", {}))
        operation = f"op-{len(fake.operations) + 1}"
        answer = {
            "name": f"projects/{project}/locations/{zone}/operations/{operation}",
            "done": True,
            "response": {
                "@type": f"type.googleapis.com/google.cloud.tpu.{version}.Node",
                **_node(node, version),
            },
        }
        fake.operations[operation] = answer
        return answer
    return _node(node, version)


def _oslogin(
    fake: FakeGcp,
    member: str,
    user: str,
    rest: str,
    query: Mapping[str, list[str]],
    body: Mapping[str, Any],
) -> dict[str, Any]:
    """Only one's own profile; it needs no IAM role (OS Login API: users.getLoginProfile)."""
    if member.split(":", 1)[1] != user:
        raise Denied("oslogin.users.get", f"users/{user}")
    keys = fake.profiles.setdefault(member, set())
    if rest == ":importSshPublicKey":
        keys.add(body["key"].strip())
    elif rest != "/loginProfile":
        raise LookupError(rest)
    profile = {
        "name": user,
        "posixAccounts": [
            {
                "primary": True,
                "username": fake.username(member),
                "uid": "1001",
                "gid": "1001",
                "homeDirectory": f"/home/{fake.username(member)}",
                "operatingSystemType": "LINUX",
            }
        ],
        "sshPublicKeys": {
            hashlib.sha256(k.encode()).hexdigest(): {
                "key": k,
                "fingerprint": hashlib.sha256(k.encode()).hexdigest(),
            }
            for k in sorted(keys)
        },
    }
    return {"loginProfile": profile} if rest == ":importSshPublicKey" else profile
