"""Project services (APIs) the environment needs. They stay enabled on `pulumi destroy`:
other workloads in the project may use them, and disabling an API can break them.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.base import Component, WiringModel

REQUIRED_SERVICES: tuple[str, ...] = (
    "compute.googleapis.com",
    "container.googleapis.com",
    "iam.googleapis.com",
    "iamcredentials.googleapis.com",
    "cloudresourcemanager.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "storage.googleapis.com",
    "tpu.googleapis.com",
    "file.googleapis.com",
    "artifactregistry.googleapis.com",
)
IMAGE_STREAMING_SERVICE = "containerfilesystem.googleapis.com"
"""Image streaming needs the Container File System API ("Use Image streaming", requirements)."""


class ProjectServicesArgs(WiringModel):
    project: str
    services: tuple[str, ...] = REQUIRED_SERVICES


class ProjectServices(Component):
    """Enables each API once; everything else in the environment waits for these."""

    def __init__(
        self, name: str, args: ProjectServicesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ai-infra:services:ProjectServices", name, opts)
        self.services: list[gcp.projects.Service] = [
            gcp.projects.Service(
                f"{name}-{api.split('.')[0]}",
                project=args.project,
                service=api,
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=self.child_opts(),
            )
            for api in args.services
        ]
        self.register_outputs({"services": [s.service for s in self.services]})
