"""Managed Service for Prometheus scrapes of the controllers the stack installs: a
PodMonitoring per chart, in the chart's namespace, with the token the chart's metrics
endpoint asks for. The TPU provisioner is not scraped: it serves metrics on loopback only
(gke/tpu_provisioner.py), and its metrics are controller-runtime's defaults (no custom
metric in ai-on-gke/tpu-provisioner); the controller-down alert watches it instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.monitoring.watch import JOBSET_NAMESPACE, KUEUE_NAMESPACE

SCRAPER = "gmp-scraper"
"""The service account whose token the collector presents, one per controller namespace."""
TOKEN_SECRET = f"{SCRAPER}-token"
COLLECTOR = ("gmp-system", "collector")
"""GMP's collector runs as `gmp-system/collector` (prometheus-engine manifests/operator.yaml)
and has no access to Secrets of its own."""
SCRAPE_INTERVAL = "30s"


@dataclass(frozen=True)
class Target:
    """One chart's metrics endpoint, as the pinned chart names it."""

    release: str
    namespace: str
    selector: dict[str, str]
    reader_role: str
    """The chart's ClusterRole allowing `get` on `/metrics`, which it binds to no scraper."""


TARGETS = (
    # kueue v0.19.2: selector labels (_helpers.tpl kueue.selectorLabels), container port 8443
    # named `metrics` (templates/manager/manager.yaml), served by controller-runtime with
    # TokenReview + SubjectAccessReview (cmd/kueue/main.go), `<fullname>-metrics-reader`
    # (templates/rbac/metrics_reader_role.yaml), a self-signed certificate without cert-manager.
    Target(
        "kueue",
        KUEUE_NAMESPACE,
        {
            "app.kubernetes.io/name": "kueue",
            "app.kubernetes.io/instance": "kueue",
            "control-plane": "controller-manager",
        },
        "kueue-metrics-reader",
    ),
    # jobset v0.12.0: selector labels (controller/_helpers.tpl jobset.controller.selectorLabels),
    # port 8443 named `metrics` (controller/deployment.yaml), secure serving with authn/authz
    # (main.go), `<fullname>-metrics-reader` (rbac/auth_proxy_client_clusterrole.yaml).
    Target(
        "jobset",
        JOBSET_NAMESPACE,
        {
            "app.kubernetes.io/name": "jobset",
            "app.kubernetes.io/instance": "jobset",
            "app.kubernetes.io/component": "controller",
        },
        "jobset-metrics-reader",
    ),
)


def pod_monitoring_spec(target: Target) -> dict[str, object]:
    """The PodMonitoring spec (monitoring.googleapis.com/v1, prometheus-engine
    pkg/operator/apis/monitoring/v1 pod_types.go, http_types.go)."""
    return {
        "selector": {"matchLabels": dict(target.selector)},
        "endpoints": [
            {
                "port": "metrics",
                "scheme": "https",
                "path": "/metrics",
                "interval": SCRAPE_INTERVAL,
                # Without cert-manager the charts serve a self-signed certificate for
                # localhost, and the collector dials the pod IP.
                "tls": {"insecureSkipVerify": True},
                # A PodMonitoring may only name a Secret in its own namespace.
                "authorization": {
                    "type": "Bearer",
                    "credentials": {"secret": {"name": TOKEN_SECRET, "key": "token"}},
                },
            }
        ],
    }


def scrape(
    parent: pulumi.Resource,
    name: str,
    target: Target,
    provider: k8s.Provider,
    after: list[pulumi.Resource],
) -> k8s.apiextensions.CustomResource:
    """The scraper's account and token, its grant of the chart's metrics reader, the
    collector's read of that one token, and the PodMonitoring."""
    ns = target.namespace
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=after)
    meta = k8s.meta.v1.ObjectMetaArgs
    account = k8s.core.v1.ServiceAccount(
        f"{name}-scraper", metadata=meta(name=SCRAPER, namespace=ns), opts=opts
    )
    token = k8s.core.v1.Secret(
        f"{name}-scraper-token",
        metadata=meta(
            name=TOKEN_SECRET,
            namespace=ns,
            annotations={"kubernetes.io/service-account.name": SCRAPER},
        ),
        type="kubernetes.io/service-account-token",
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[account])),
    )
    k8s.rbac.v1.ClusterRoleBinding(
        f"{name}-scraper-reads-metrics",
        metadata=meta(name=f"{target.release}-{SCRAPER}"),
        role_ref=k8s.rbac.v1.RoleRefArgs(
            api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=target.reader_role
        ),
        subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SCRAPER, namespace=ns)],
        opts=opts,
    )
    role = k8s.rbac.v1.Role(
        f"{name}-collector-token-reader",
        metadata=meta(name=f"{SCRAPER}-token-reader", namespace=ns),
        rules=[
            k8s.rbac.v1.PolicyRuleArgs(
                api_groups=[""],
                resources=["secrets"],
                resource_names=[TOKEN_SECRET],
                verbs=["get", "list", "watch"],
            )
        ],
        opts=opts,
    )
    k8s.rbac.v1.RoleBinding(
        f"{name}-collector-reads-token",
        metadata=meta(name=f"{SCRAPER}-token-reader", namespace=ns),
        role_ref=k8s.rbac.v1.RoleRefArgs(
            api_group="rbac.authorization.k8s.io", kind="Role", name=f"{SCRAPER}-token-reader"
        ),
        subjects=[
            k8s.rbac.v1.SubjectArgs(
                kind="ServiceAccount", name=COLLECTOR[1], namespace=COLLECTOR[0]
            )
        ],
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[role])),
    )
    return k8s.apiextensions.CustomResource(
        f"{name}-pod-monitoring",
        api_version="monitoring.googleapis.com/v1",
        kind="PodMonitoring",
        metadata=meta(name=target.release, namespace=ns),
        spec=pod_monitoring_spec(target),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[token])),
    )
