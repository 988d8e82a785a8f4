"""The identity of GKE's open-source TPU provisioner (ai-on-gke `tpu-provisioner`), which
creates slice node pools on demand. Running the controller itself is not built yet.
"""

from __future__ import annotations

from components.base import ConfigModel, Problem
from components.gke import ReleaseChannel

NAMESPACE = "tpu-provisioner-system"
KUBERNETES_SERVICE_ACCOUNT = "tpu-provisioner-controller-manager"


def account_id(prefix: str) -> str:
    """The provisioner's Google service account id, reserved whether or not it is enabled."""
    return f"{prefix}-tpu-prov"


class TpuProvisionerConfig(ConfigModel):
    """`ai-infra:tpuProvisioner`: the identity for GKE's open-source TPU provisioner, which
    creates slice node pools on demand. It manages node pools itself, so the cluster must not
    be on a release channel."""

    enabled: bool = False
    """Create the provisioner's Google service account (`roles/container.clusterAdmin`) and
    bind it to `tpu-provisioner-system/tpu-provisioner-controller-manager`. Requires
    `cluster.releaseChannel: NONE`."""


def problems(config: TpuProvisionerConfig, release_channel: ReleaseChannel) -> list[Problem]:
    if config.enabled and release_channel != "NONE":
        return [
            Problem(
                ("enabled",),
                "the TPU provisioner manages node pools itself and requires a cluster without "
                "a release channel; set ai-infra:cluster.releaseChannel: NONE (now "
                f"{release_channel})",
            )
        ]
    return []
