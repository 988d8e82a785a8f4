"""SSH among a GPU cluster's VMs and its host list, run under bash against stubs
(`tests.components.startup_vm`): the group's members as gcloud lists them, their host keys as
their guest attributes hold them, their IPs as the VPC's DNS resolves them."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from components import startup
from components.gpu_clusters import boot, metadata
from components.gpu_clusters.boot import HostSsh
from components.gpu_clusters.config import GpuClusterConfig
from plan import cli as plan_main
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.components import startup_vm
from tests.conftest import build_graph, with_config

GROUP = "ai-test-demo"
SSH = HostSsh(GROUP, "us-east5-a", 8)
KEY_A = "AAAAC3NzaC1lZDI1NTE5AAAAIAaaaa"
KEY_B = "AAAAC3NzaC1lZDI1NTE5AAAAIBbbbb"

# gcloud: `list-instances GROUP` prints $STUB_STATE/group-GROUP (name, status, id), fails with
# $STUB_GCLOUD_EXIT; `get-guest-attributes NAME` prints $STUB_STATE/hostkeys-NAME.
GCLOUD = """#!/bin/bash
echo "gcloud $*" >> "$STUB_LOG"
if [[ $4 == list-instances ]]; then
  refusals=$(cat "$STUB_STATE/refusals" 2>/dev/null || echo 0)
  if ((refusals > 0)); then
    echo $((refusals - 1)) > "$STUB_STATE/refusals"
    echo "ERROR: (gcloud) PERMISSION_DENIED: Required 'compute.instanceGroupManagers.list'" >&2
    exit 1
  fi
  cat "$STUB_STATE/group-$5" 2>/dev/null
  exit "${STUB_GCLOUD_EXIT:-0}"
fi
if [[ $3 == get-guest-attributes ]]; then cat "$STUB_STATE/hostkeys-$4" 2>/dev/null; fi
"""
# getent ahostsv4 NAME: the VPC's DNS, from $STUB_STATE/dns (`ip name` lines).
GETENT = """#!/bin/bash
awk -v name="$2" '$2 == name {print $1 "  STREAM " name}' "$STUB_STATE/dns" 2>/dev/null
"""


class Vm(startup_vm.Vm):
    def __init__(self, tmp_path: Path):
        super().__init__(tmp_path, boot.render)
        for name, text in (("gcloud", GCLOUD), ("getent", GETENT)):
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        self.members({"ai-test-demo-a": ("RUNNING", 11), "ai-test-demo-b": ("RUNNING", 12)})
        self.keys("ai-test-demo-a", f"ssh-ed25519\t{KEY_A}\n")
        self.keys("ai-test-demo-b", f"ssh-ed25519\t{KEY_B}\n")
        (self.state / "dns").write_text("10.0.0.2 ai-test-demo-a\n10.0.0.3 ai-test-demo-b\n")

    def members(self, members: dict[str, tuple[str, int]]) -> None:
        (self.state / f"group-{GROUP}").write_text(
            "".join(f"{n}\t{status}\t{id_}\n" for n, (status, id_) in members.items())
        )

    def keys(self, name: str, text: str) -> None:
        (self.state / f"hostkeys-{name}").write_text(text)

    def reboot(self) -> None:
        (self.state / "active").unlink(missing_ok=True)

    def refresh(self) -> subprocess.CompletedProcess[str]:
        """One run of the timer's service."""
        return subprocess.run(
            ["bash", str(self.root / boot.HOSTS_SCRIPT.lstrip("/"))],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )


def key_reads(calls: list[str]) -> list[str]:
    return [c.split()[4] for c in calls if "get-guest-attributes" in c]


def test_the_step_parses():
    script = boot.render([SSH])
    result = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert result.returncode == 0, result.stderr
    hosts = subprocess.run(
        ["bash", "-n"], input=boot.hosts_script(SSH), text=True, capture_output=True
    )
    assert hosts.returncode == 0, hosts.stderr


def test_each_vm_trusts_the_groups_running_members_by_ip_and_host_key(tmp_path):
    vm = Vm(tmp_path)
    vm.members(
        {
            "ai-test-demo-a": ("RUNNING", 11),
            "ai-test-demo-b": ("RUNNING", 12),
            "ai-test-demo-c": ("STOPPING", 13),  # being preempted: not a host
        }
    )
    result, calls = vm.run([SSH])
    assert result.returncode == 0, result.stderr
    assert vm.signal() == startup.DONE
    assert vm.file(boot.KNOWN_HOSTS) == (
        f"ai-test-demo-a,10.0.0.2 ssh-ed25519 {KEY_A}\n"
        f"ai-test-demo-b,10.0.0.3 ssh-ed25519 {KEY_B}\n"
    )
    assert vm.file(boot.SHOSTS_EQUIV) == "10.0.0.2\n10.0.0.3\n"
    assert vm.file(boot.HOSTFILE) == "ai-test-demo-a slots=8\nai-test-demo-b slots=8\n"
    assert key_reads(calls) == ["ai-test-demo-a", "ai-test-demo-b"]
    sshd = vm.file(boot.SSHD_DROP_IN).splitlines()
    assert {"HostbasedAuthentication yes", "UseDNS no"} <= set(sshd)
    assert "systemctl try-reload-or-restart ssh.service" in calls
    assert f"systemctl enable --now {boot.HOSTS_TIMER}" in calls
    timer = vm.file(f"/etc/systemd/system/{boot.HOSTS_TIMER}")
    assert "OnUnitActiveSec=60s" in timer.splitlines()
    service = vm.file(f"/etc/systemd/system/{boot.HOSTS_UNIT}")
    assert f"ExecStart={boot.HOSTS_SCRIPT}" in service.splitlines()


def test_a_rerun_and_a_reboot_read_no_key_twice_and_reload_nothing(tmp_path):
    vm = Vm(tmp_path)
    first, _ = vm.run([SSH])
    assert first.returncode == 0, first.stderr
    again, calls = vm.run([SSH])
    assert again.returncode == 0, again.stderr
    assert key_reads(calls) == []
    assert not any(c.startswith(("systemctl enable", "systemctl try-reload")) for c in calls)
    vm.reboot()
    rebooted, calls = vm.run([SSH])
    assert rebooted.returncode == 0, rebooted.stderr
    assert f"systemctl enable --now {boot.HOSTS_TIMER}" in calls
    assert not any(c.startswith("systemctl try-reload") for c in calls)
    assert vm.file(boot.HOSTFILE) == "ai-test-demo-a slots=8\nai-test-demo-b slots=8\n"


def test_a_recreated_member_is_trusted_by_its_new_key_and_a_deleted_one_not_at_all(tmp_path):
    vm = Vm(tmp_path)
    vm.run([SSH])
    new_key = "AAAAC3NzaC1lZDI1NTE5AAAAInewkey"
    vm.members({"ai-test-demo-a": ("RUNNING", 21)})  # recreated; b deleted by a resize
    vm.keys("ai-test-demo-a", f"ssh-ed25519\t{new_key}\n")
    result = vm.refresh()
    assert result.returncode == 0, result.stderr
    assert vm.file(boot.KNOWN_HOSTS) == f"ai-test-demo-a,10.0.0.2 ssh-ed25519 {new_key}\n"
    assert vm.file(boot.SHOSTS_EQUIV) == "10.0.0.2\n"
    assert vm.file(boot.HOSTFILE) == "ai-test-demo-a slots=8\n"
    cache = vm.root / boot.HOSTS_CACHE.lstrip("/")
    assert sorted(p.name for p in cache.iterdir()) == ["ai-test-demo-a.21"]


@pytest.mark.parametrize(
    "published",
    [
        "",  # the guest agent has not published its keys yet
        f"ssh-ed25519\t{KEY_B} extra\n",
        f"@cert-authority\t* ssh-ed25519 {KEY_B}\n",
        "ssh-ed25519\t$(touch /tmp/pwned)\n",
    ],
)
def test_a_member_without_well_formed_host_keys_is_left_out_until_it_has_them(tmp_path, published):
    vm = Vm(tmp_path)
    vm.keys("ai-test-demo-b", published)
    result, _ = vm.run([SSH])
    assert result.returncode == 0, result.stderr
    assert "ai-test-demo-b has published no host key yet" in result.stderr
    assert vm.file(boot.SHOSTS_EQUIV) == "10.0.0.2\n"
    assert "ai-test-demo-b" not in vm.file(boot.KNOWN_HOSTS)
    vm.keys("ai-test-demo-b", f"ssh-ed25519\t{KEY_B}\n")
    assert vm.refresh().returncode == 0
    assert vm.file(boot.SHOSTS_EQUIV) == "10.0.0.2\n10.0.0.3\n"


def test_a_group_the_vm_cannot_list_fails_the_step_and_keeps_the_last_list(tmp_path):
    vm = Vm(tmp_path)
    vm.run([SSH])
    result, calls = vm.run([SSH], STUB_GCLOUD_EXIT="1")
    assert result.returncode == 1
    assert "cannot list the group ai-test-demo" in result.stderr
    assert vm.signal() == f"{startup.FAILED}ssh among VMs"
    assert "FAILED: ssh among VMs (the host list)" in result.stderr
    assert vm.file(boot.HOSTFILE) == "ai-test-demo-a slots=8\nai-test-demo-b slots=8\n"
    # Tried as often as the step's bound allows, and no more.
    assert len([c for c in calls if " list-instances " in c]) == SSH.list_attempts


def test_a_refusal_while_iam_propagates_on_first_boot_is_tried_again(tmp_path):
    """The VMs' account gets its role as the VM boots; IAM may refuse it for a minute."""
    vm = Vm(tmp_path)
    (vm.state / "refusals").write_text("3")
    result, calls = vm.run([SSH])
    assert result.returncode == 0, result.stderr
    assert vm.signal() == startup.DONE
    assert len([c for c in calls if " list-instances " in c]) == 4
    assert vm.file(boot.HOSTFILE) == "ai-test-demo-a slots=8\nai-test-demo-b slots=8\n"


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")
def test_openssh_signs_host_based_logins_to_the_groups_names_only(tmp_path):
    """The client drop-in as OpenSSH's own parser reads it (`ssh -G`)."""
    config = tmp_path / "ssh_config"
    config.write_text(boot.ssh_config(SSH))

    def effective(host: str) -> set[str]:
        shown = subprocess.run(
            ["ssh", "-G", "-F", str(config), host], capture_output=True, text=True, check=True
        )
        return set(shown.stdout.splitlines())

    assert {"hostbasedauthentication yes", "enablesshkeysign yes"} <= effective("ai-test-demo-x1")
    assert "hostbasedauthentication no" in effective("ai-prod-other-x1")


# The registered resources, under Pulumi's mock runtime.

TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"


def test_off_by_default_as_in_cluster_toolkit():
    graph = build_graph(with_config(gpuClusters=[{"name": "demo"}]))
    script = graph.of_type(TEMPLATE)[0].inputs["metadata"]["startup-script"]
    assert "ssh among VMs" not in script
    assert not graph.of_type(ROLE)


def test_the_vms_read_their_own_groups_members_and_host_keys_only():
    graph = build_graph(with_config(gpuClusters=[{"name": "demo", "sshAmongVms": True}]))
    (template,) = graph.of_type(TEMPLATE)
    script = template.inputs["metadata"]["startup-script"]
    assert "STEP='ssh among VMs'" in script and "group=ai-test-demo" in script
    (role,) = graph.of_type(ROLE)
    assert role.inputs["roleId"] == "ai_test_demo_hosts"
    assert sorted(role.inputs["permissions"]) == [
        "compute.instanceGroupManagers.get",
        "compute.instanceGroupManagers.list",
        "compute.instances.getGuestAttributes",
    ]
    (grant,) = [
        r
        for r in graph
        if r.type == "gcp:projects/iAMMember:IAMMember"
        and r.inputs["role"] == "projects/test-project/roles/ai_test_demo_hosts"
    ]
    where = "projects/test-project/zones/"
    expression = grant.inputs["condition"]["expression"]
    assert f'resource.name.startsWith("{where}' in expression, grant.urn
    assert "/instances/ai-test-demo-" in expression and "/instanceGroupManagers/ai-test-demo" in (
        expression
    )
    assert grant.urn in template.dependencies
    # No key of any kind travels in metadata or state.
    assert "PRIVATE KEY" not in script and "ssh-keygen" not in script


def test_it_runs_before_the_users_command():
    cluster = {"name": "demo", "sshAmongVms": True, "orchestrator": "ray", "startupCommand": "x"}
    steps = metadata.steps(
        GpuClusterConfig.model_validate(cluster),
        group="ai-test-demo",
        zone="us-east5-a",
        gcs_names={},
        filestore_ips=[],
        storage=parse(with_config(gpuClusters=[cluster]), "test").resolved_storage,
        endpoints={},
    )
    assert [type(s).__name__ for s in steps][-3:] == ["Ray", "HostSsh", "Command"]


@pytest.mark.parametrize("value", ["yes", "true", 1])
def test_a_switch_that_is_not_a_boolean_is_refused_at_its_path(value):
    config = with_config(gpuClusters=[{"name": "demo", "sshAmongVms": value}])
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    assert "ai-infra:gpuClusters[0].sshAmongVms" in dict(error.value.rendered)


def test_a_member_without_sudo_could_forge_a_host_key_so_the_mix_is_refused():
    """Any process on a VM can rewrite its guest attributes, host keys included: a member
    without sudo could publish its own key and log in elsewhere as anyone."""
    logins = [{"member": "user:root@x.io", "sudo": True}, {"member": "group:ml@x.io"}]
    config = with_config(gpuClusters=[{"name": "demo", "sshAmongVms": True, "logins": logins}])
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    message = dict(error.value.rendered)["ai-infra:gpuClusters[0].sshAmongVms"]
    assert "group:ml@x.io has no sudo" in message and "sudo: true" in message, message
    # Every member root already: nobody gains by forging a key.
    logins[1]["sudo"] = True
    assert build_graph(
        with_config(gpuClusters=[{"name": "demo", "sshAmongVms": True, "logins": logins}])
    )


def test_a_cluster_whose_logins_are_granted_elsewhere_is_warned_in_the_plan(tmp_path):
    path = tmp_path / "Pulumi.ssh.yaml"
    path.write_text(
        yaml.safe_dump({"config": with_config(gpuClusters=[{"name": "demo", "sshAmongVms": True}])})
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert plan_main.main([str(path)]) == 0
    section = out.getvalue()[out.getvalue().index("Warnings:") :].split("\n\n")[0]
    assert (
        "ai-infra:gpuClusters[0].sshAmongVms: host-based SSH trusts each VM's host keys" in section
    )
    assert "this cluster lists no logins" in section
