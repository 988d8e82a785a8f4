"""One list of metadata keys no VM's `metadata` may set, held for every system that takes
metadata: OS Login's, SSH keys, the serial console, guest attributes, and what would run as
root outside what the plan shows (cloud-init user data, script URLs)."""

from __future__ import annotations

from typing import Any

import pytest

from components.gpu_clusters.config import RESERVED_METADATA as GPU_RESERVED
from components.startup import GUEST_RESERVED_METADATA
from components.tpu_vms.vms import RESERVED_METADATA as TPU_RESERVED
from stacks.loading import parse
from stacks.messages import ConfigError
from tests.conftest import with_config

SYSTEMS = {
    "gpuClusters": lambda metadata: with_config(
        gpuClusters=[{"name": "train", "metadata": metadata}]
    ),
    "tpuVms": lambda metadata: with_config(
        **{"gcp:region": "us-central2", "gcp:zone": "us-central2-b"},
        tpuVms=[{"name": "exp", "accelerator": "v4-8", "metadata": metadata}],
    ),
}


def test_every_system_refuses_at_least_the_keys_of_every_vm():
    assert GUEST_RESERVED_METADATA <= GPU_RESERVED
    assert GUEST_RESERVED_METADATA <= TPU_RESERVED
    assert {"user-data", "startup-script-url", "sshkeys"} <= GUEST_RESERVED_METADATA


@pytest.mark.parametrize("system", sorted(SYSTEMS))
@pytest.mark.parametrize("key", sorted(GUEST_RESERVED_METADATA))
def test_a_reserved_key_is_refused_in_any_case_at_its_path(system, key):
    shouted = key.upper()
    with pytest.raises(ConfigError) as error:
        parse(SYSTEMS[system]({shouted: "x"}), "test")
    assert f"ai-infra:{system}[0].metadata.{shouted}" in dict(error.value.rendered)


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_other_keys_stay_accepted(system):
    config: Any = parse(SYSTEMS[system]({"team-note": "x", "shutdown-script": "sync"}), "test")
    assert config is not None
