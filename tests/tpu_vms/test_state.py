"""The provider as Pulumi stores it: pickled by reference to its module into every queued
resource's state, and unpickled in a fresh process for refresh, diff and delete. A state written
by an earlier layout must still load and run."""

from __future__ import annotations

import subprocess
import sys

from pulumi.dynamic.dynamic import serialize_provider

from components.tpu_vms.provider import QueuedResourceProvider
from graph.engine import REPO_ROOT

OLD_STATE_PROVIDER = (
    "gASVtQAAAAAAAACMGmNvbXBvbmVudHMudHB1X3ZtX3Byb3ZpZGVylIwWUXVldWVkUmVzb3VyY2VQcm92aWRlcpST"
    "lCmBlH2UKIwPX2NsaWVudF9mYWN0b3J5lGgAjA9fZGVmYXVsdF9jbGllbnSUk5SMBl9jbG9ja5SMBHRpbWWUjAlt"
    "b25vdG9uaWOUk5SMDV9wb2xsX3NlY29uZHOUR0A+AAAAAAAAjAZfc2xlZXCUaAmMBXNsZWVwlJOUdWIu"
)
"""`__provider` of a queued resource deployed when the provider lived in
`components/tpu_vm_provider.py`: what `pulumi.dynamic` stored (dill, by reference to
`components.tpu_vm_provider.QueuedResourceProvider` and `._default_client`)."""


def _in_a_fresh_process(blob: str, code: str) -> list[str]:
    """Runs `code` with `p`, the provider Pulumi's dynamic provider host would unpickle from
    `blob` (pulumi/dynamic/__main__.py get_provider: base64, then dill.loads)."""
    prelude = (
        "import base64, sys, dill\n"
        "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
        "from tests.tpu_vms.fakes import FakeTpuClient, State, factory\n"
        "from tests.tpu_vms.test_provider import OLD_PROPS, NAME, existing\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", prelude + code],
        input=blob,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_a_state_from_the_old_module_path_loads_and_reads_diffs_and_deletes():
    out = _in_a_fresh_process(
        OLD_STATE_PROVIDER,
        "client = FakeTpuClient([State.SUSPENDED], exists=existing(OLD_PROPS))\n"
        "apis = []\n"
        "print(type(p).__module__, type(p).__name__, p._client_factory.__module__)\n"
        # What the old state holds, and the attributes added since, from class defaults.
        "print(p._poll_seconds, p._delete_seconds, p._call_seconds)\n"
        "p._client_factory = factory(client, apis)\n"
        "print(p.read(NAME, dict(OLD_PROPS)).outs['state'])\n"
        "print(p.diff(NAME, {**OLD_PROPS, 'state': 'ACTIVE'}, dict(OLD_PROPS)).replaces)\n"
        "p.delete(NAME, dict(OLD_PROPS))\n"
        "print(client.resource is None, client.deleted[0].force, apis[0])\n",
    )
    assert out == [
        "components.tpu_vms.provider",
        "QueuedResourceProvider",
        "components.tpu_vms.provider",
        "30.0",
        "1800.0",
        "60.0",
        "SUSPENDED",
        "['state']",
        "True",
        "True",
        "v2alpha1",
    ]


def test_the_provider_survives_pulumis_serialization_into_a_fresh_process():
    """A client held in the provider (a gRPC channel) would not pickle, and a module path that
    moves would break every state that names it."""
    blob = serialize_provider(QueuedResourceProvider())
    assert "components.tpu_vms.provider" in _referenced_modules(blob)
    out = _in_a_fresh_process(
        blob,
        "d = p.diff('', {'nodeCount': 1}, {'nodeCount': 2})\n"
        "print(type(p).__name__, d.replaces, d.delete_before_replace)\n",
    )
    assert out == ["QueuedResourceProvider", "['nodeCount']", "True"]


def _referenced_modules(blob: str) -> set[str]:
    import base64
    import pickletools

    modules = set()
    for opcode, arg, _ in pickletools.genops(base64.b64decode(blob)):
        if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE") and str(arg).startswith("components."):
            modules.add(str(arg))
    return modules
