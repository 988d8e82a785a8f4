"""Workload Identity: a Google service account with project roles and bucket access, usable by
exactly one Kubernetes service account (`serviceAccount:PROJECT.svc.id.goog[NS/KSA]`), and
that Kubernetes service account (in its namespace) annotated with the Google one.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, InstanceOf, SkipValidation

from components.base import Component, WiringModel
from components.buckets import BucketAccess, BucketsHandle, grant_access
from components.context import StackContext
from components.identity import Identity, account_grant, service_account

WORKLOAD_IDENTITY_USER = "roles/iam.workloadIdentityUser"


class KubernetesSide(WiringModel):
    create_namespace: bool
    namespace: SkipValidation[pulumi.Resource] | None = None
    """The namespace, when someone else creates it."""


class WorkloadIdentityArgs(WiringModel):
    context: InstanceOf[StackContext]
    account_id: str
    display_name: str
    namespace: str
    kubernetes_service_account: str
    roles: list[str] = Field(default_factory=list)
    buckets: Mapping[str, BucketAccess] = Field(default_factory=dict)
    """`ai-infra:buckets` name -> access."""
    bucket_handle: InstanceOf[BucketsHandle] | None = None
    kubernetes: KubernetesSide | None = None
    """Create the annotated Kubernetes service account (and namespace) as well."""


class WorkloadIdentity(Component):
    """GSA + per-member project roles + bucket grants + the Workload Identity binding."""

    identity: Identity
    email: str
    member: str
    """`serviceAccount:<email>`, for IAM grants."""
    workload_member: str

    def __init__(
        self, name: str, args: WorkloadIdentityArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("ai-infra:gke:WorkloadIdentity", name, opts)
        ctx = args.context
        self.identity = service_account(
            self,
            name,
            project=ctx.project,
            account_id=args.account_id,
            display_name=args.display_name,
            roles=args.roles,
        )
        account = self.identity.account
        self.email = self.identity.email
        self.member = self.identity.member
        self.workload_member = (
            f"serviceAccount:{ctx.project}.svc.id.goog"
            f"[{args.namespace}/{args.kubernetes_service_account}]"
        )
        account_grant(
            self,
            name,
            account=self.email,
            role=WORKLOAD_IDENTITY_USER,
            member=self.workload_member,
            depends_on=[account],
        )
        if args.buckets:
            assert args.bucket_handle is not None, "bucket access needs the stack's buckets"
            grant_access(
                self,
                name,
                args.bucket_handle,
                args.buckets,
                member=self.member,
                depends_on=[account],
            )
        if args.kubernetes is not None:
            self._kubernetes_side(name, args, args.kubernetes)
        self.register_outputs({"email": self.email, "member": self.workload_member})

    def _kubernetes_side(self, name: str, args: WorkloadIdentityArgs, side: KubernetesSide) -> None:
        # Kubernetes objects wait only for their namespace: the Kubernetes provider already
        # waits for the cluster.
        after: list[pulumi.Resource] = [side.namespace] if side.namespace else []
        if side.create_namespace:
            after.append(
                k8s.core.v1.Namespace(
                    f"{name}-namespace",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        k8s.core.v1.ServiceAccount(
            f"{name}-service-account",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.kubernetes_service_account,
                namespace=args.namespace,
                annotations={"iam.gke.io/gcp-service-account": self.email},
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
