"""IAM roles a stack may not grant to what a person can run code as (a VM's account, a team's
Kubernetes service account, a bucket member): roles that let their holder take more roles.
Whoever logs in to a VM, even without sudo, reads the VM account's token from the metadata
server, and whoever runs a pod as a Workload Identity account holds its roles; so a role that
can set a project's IAM policy, mint tokens or keys for other accounts, edit a custom role or
run a build or deployment as a stronger account makes every such person the project's owner.

Facts only: role ids and one escalating permission each, read from the predefined roles'
`includedPermissions` (IAM `roles.list`) as recorded by iann0036/iam-dataset
(gcp/roles/*.json at commit 2073fa52ac008a45477aa0b1b4580cd99135bf60, 2026-08-22).
Custom roles (`projects/P/roles/R`) hold what their project gives them; no table can judge
them offline.
"""

from __future__ import annotations

import re

ESCALATING_PERMISSIONS = (
    "resourcemanager.projects.setIamPolicy",
    "resourcemanager.folders.setIamPolicy",
    "resourcemanager.organizations.setIamPolicy",
    "iam.serviceAccounts.setIamPolicy",
    "iam.serviceAccounts.getAccessToken",
    "iam.serviceAccounts.implicitDelegation",
    "iam.serviceAccounts.signBlob",
    "iam.serviceAccounts.signJwt",
    "iam.serviceAccountKeys.create",
    "iam.serviceAccounts.actAs",
    "iam.roles.update",
    "deploymentmanager.deployments.create",
    "cloudbuild.builds.create",
)
"""Permissions that hand their holder another principal's access: grant any role (set an IAM
policy), act as another account (tokens, signatures, keys, delegation; `actAs` on the project
attaches every account of it to what the holder creates, which IAM's best practices for
service accounts advise against), widen a custom role it holds (`iam.roles.update`), or run
work as a stronger Google-managed account (Deployment Manager's and Cloud Build's)."""

ESCALATING_ROLES: dict[str, str] = {
    "roles/assuredoss.admin": "iam.serviceAccountKeys.create",
    "roles/backupdr.computeEngineOperator": "iam.serviceAccounts.actAs",
    "roles/cloudbuild.admin": "cloudbuild.builds.create",
    "roles/cloudbuild.builds.builder": "cloudbuild.builds.create",
    "roles/cloudbuild.builds.editor": "cloudbuild.builds.create",
    "roles/cloudbuild.editor": "cloudbuild.builds.create",
    "roles/composer.worker": "cloudbuild.builds.create",
    "roles/dataflow.admin": "cloudbuild.builds.create",
    "roles/dataflow.developer": "cloudbuild.builds.create",
    "roles/dataproc.hubAgent": "iam.serviceAccounts.actAs",
    "roles/deploymentmanager.admin": "deploymentmanager.deployments.create",
    "roles/deploymentmanager.editor": "deploymentmanager.deployments.create",
    "roles/earthengine.appsPublisher": "iam.serviceAccounts.setIamPolicy",
    "roles/editor": "iam.serviceAccountKeys.create",
    "roles/iam.admin": "iam.serviceAccounts.setIamPolicy",
    "roles/iam.dataScientist": "iam.serviceAccounts.actAs",
    "roles/iam.databasesAdmin": "iam.serviceAccounts.actAs",
    "roles/iam.devOps": "iam.serviceAccounts.setIamPolicy",
    "roles/iam.editor": "iam.serviceAccountKeys.create",
    "roles/iam.organizationRoleAdmin": "iam.roles.update",
    "roles/iam.roleAdmin": "iam.roles.update",
    "roles/iam.securityAdmin": "resourcemanager.projects.setIamPolicy",
    "roles/iam.serviceAccountAdmin": "iam.serviceAccounts.setIamPolicy",
    "roles/iam.serviceAccountKeyAdmin": "iam.serviceAccountKeys.create",
    "roles/iam.serviceAccountTokenCreator": "iam.serviceAccounts.getAccessToken",
    "roles/iam.serviceAccountUser": "iam.serviceAccounts.actAs",
    "roles/iam.workloadIdentityUser": "iam.serviceAccounts.getAccessToken",
    "roles/owner": "resourcemanager.projects.setIamPolicy",
    "roles/resourcemanager.folderAdmin": "resourcemanager.projects.setIamPolicy",
    "roles/resourcemanager.folderIamAdmin": "resourcemanager.folders.setIamPolicy",
    "roles/resourcemanager.organizationAdmin": "resourcemanager.projects.setIamPolicy",
    "roles/resourcemanager.projectIamAdmin": "resourcemanager.projects.setIamPolicy",
    "roles/run.sourceDeveloper": "cloudbuild.builds.create",
    "roles/securitycenter.admin": "iam.serviceAccountKeys.create",
}
"""Predefined roles (service agent roles aside) holding one of `ESCALATING_PERMISSIONS`, with
the first they hold. Basic roles are refused on their own (`components.types`)."""

SERVICE_AGENT_ROLE = re.compile(r"roles/[A-Za-z0-9_.]+[sS]erviceAgent[A-Za-z0-9_]*")
"""Service agent roles (`roles/<service>.serviceAgent` and the like): Google grants them to
its services' own agents, and they are not to be granted to other principals
(cloud.google.com/iam/docs/service-agents); many hold the permissions above."""
