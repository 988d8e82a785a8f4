"""The Pod Security Standards' baseline checks as one admission policy, for every team
whatever its Pod Security level, with two relaxations (hostNetwork on the team's own TPU
slices for `tpuHostNetwork`, GKE's GPUDirect host paths and NET_ADMIN for `gpuDirectPods`)
and one tightening: the inline volume sources of the restricted level, at every level.

Why a policy and not only Pod Security Admission: PSA's `baseline` level refuses
`hostNetwork` outright, and GKE's multislice JobSets run with it ("Deploy TPU Multislices in
GKE", the example JobSet's `hostNetwork: true`); and baseline allows `nfs`, `iscsi` and other
inline volumes, through which a pod would mount any share the nodes reach (Slurm's /home,
another team's Filestore) as root, whatever the grants of `ai-infra:storage` say.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.gke.admission.expressions import (
    EPHEMERAL_CONTAINERS,
    GPU_DIRECT_LABEL,
    HOST_NETWORK_LABEL,
    KUEUE_MANAGED,
    NODE_POOL_LABEL,
    POD_VARIABLES,
    WORKLOADS,
    Check,
    Policy,
    all_containers,
    all_specs,
    containers_of,
    labelled,
    quoted,
)
from components.gke.gpu_direct import TRANSPORTS
from components.gke.quota import DEDICATED_KEY

BASELINE_CAPABILITIES = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
"""Capabilities the baseline level lets a container add (Pod Security Standards)."""
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
)
"""The baseline level's safe sysctls as of Kubernetes 1.32 (pod-security-admission v0.34.0
policy/check_sysctls.go; tcp_rmem and tcp_wmem joined at 1.32, and a kubelet older than that
refuses them itself)."""
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")
"""The SELinux types the baseline level allows (check_seLinuxOptions.go, 1.31 and later)."""
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
"""The deprecated per-container AppArmor annotation, which the baseline level still reads:
`runtime/default` or `localhost/<profile>` only (check_appArmorProfile.go)."""
INLINE_VOLUMES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
)
"""The inline volume sources the restricted level allows (pod-security-admission v0.34.0
policy/check_restrictedVolumes.go), taken at every level; `csi` only of `INLINE_CSI_DRIVERS`,
`image` only of a repository the team may run from (`images.py`), `ephemeral` only of a
storage class its claims may use (the claims policy)."""
INLINE_CSI_DRIVERS = ("gcsfuse.csi.storage.gke.io",)
"""CSI drivers a pod may name inline. Cloud Storage FUSE mounts a bucket as the pod's own
Workload Identity, so IAM decides what it reads or writes (the workload command renders these
volumes). Filestore's and Lustre's drivers take a share's address or instance inline and mount
it as the node, past every grant: their volumes come from `ai-infra:storage` claims only."""
GPU_DIRECT_HOST_PATHS = tuple(sorted({p for t in TRANSPORTS.values() for _, p in t.volumes}))
"""The host paths GKE's GPUDirect-TCPX, TCPXO and RDMA pods mount (gpu_direct.TRANSPORTS)."""
GPU_DIRECT_CAPABILITIES = tuple(
    sorted(
        {c for t in TRANSPORTS.values() if t.sidecar for c in t.sidecar.capabilities}
        - set(BASELINE_CAPABILITIES)
    )
)
"""What the TCPX/TCPXO receive daemon adds beyond baseline (NET_ADMIN)."""
SECURITY = "has(c.securityContext)"


def _selinux(context: str) -> str:
    """A security context's SELinux options as the baseline level allows them."""
    options = f"{context}.seLinuxOptions"
    return (
        f"!has({options}) || (!has({options}.user) && !has({options}.role) && "
        f"(!has({options}.type) || {options}.type in {quoted(SELINUX_TYPES)}))"
    )


def _no_host_process(context: str) -> str:
    options = f"{context}.windowsOptions"
    return f"!has({options}) || !has({options}.hostProcess) || !{options}.hostProcess"


def _no_probe_host(c: str) -> str:
    """No probe or lifecycle handler of container `c` sets `host` (check_hostProbesAndhost
    Lifecycle.go): httpGet and tcpSocket only, as that check reads them."""
    handlers = [f"{c}.{p}" for p in ("livenessProbe", "readinessProbe", "startupProbe")]
    handlers += [f"{c}.lifecycle.{h}" for h in ("postStart", "preStop")]
    clauses = []
    for handler in handlers:
        parent = handler.rsplit(".", 1)[0]
        guard = f"!has({handler})" if parent == c else f"!has({parent}) || !has({handler})"
        hosts = " && ".join(
            f"(!has({handler}.{kind}) || !has({handler}.{kind}.host) || "
            f"{handler}.{kind}.host == '')"
            for kind in ("httpGet", "tcpSocket")
        )
        clauses.append(f"({guard} || ({hosts}))")
    return " && ".join(clauses)


def _gpu_direct(pools: Sequence[str]) -> str:
    """Every pod spec of a Kueue-managed object pinned to a fast-path GPU pool, in a namespace
    whose team set gpuDirectPods."""
    pinned = all_specs(
        f"has(s.nodeSelector) && '{NODE_POOL_LABEL}' in s.nodeSelector && "
        f"s.nodeSelector['{NODE_POOL_LABEL}'] in {quoted(pools)}"
    )
    return f"{labelled(GPU_DIRECT_LABEL)} && ({KUEUE_MANAGED}) && {pinned}"


def _host_checks() -> tuple[Check, ...]:
    """The host's namespaces and ports: hostNetwork only on the team's own slices."""
    pinned = (
        f"has(s.nodeSelector) && '{DEDICATED_KEY}' in s.nodeSelector && "
        f"s.nodeSelector['{DEDICATED_KEY}'] == variables.team"
    )
    host_network_allowed = f"{labelled(HOST_NETWORK_LABEL)} && ({KUEUE_MANAGED}) && {pinned}"
    return (
        Check(
            all_specs(f"!has(s.hostNetwork) || !s.hostNetwork || ({host_network_allowed})"),
            "hostNetwork is allowed only to Kueue-managed pods on the team's own slices "
            f"(nodeSelector {DEDICATED_KEY}: <team>, tpuSlices[].team) in a namespace whose "
            "team set tpuHostNetwork",
        ),
        Check(
            all_specs("(!has(s.hostPID) || !s.hostPID) && (!has(s.hostIPC) || !s.hostIPC)"),
            "hostPID and hostIPC are not allowed (Pod Security baseline)",
        ),
        # A host-network pod's ports are host ports: the API server defaults hostPort to
        # containerPort for them (pkg/apis/core/v1/defaults.go), before admission.
        Check(
            all_specs(
                f"has(s.hostNetwork) && s.hostNetwork || ({containers_of('s')}).all(c, "
                "!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))"
            ),
            "hostPort is not allowed (Pod Security baseline)",
        ),
    )


def _volume_check() -> Check:
    """Inline volumes of the restricted level's kinds at every level, CSI of Cloud Storage
    FUSE only, and hostPath only for GPUDirect."""
    allowed = " || ".join(f"has(v.{k})" for k in INLINE_VOLUMES if k != "csi")
    return Check(
        all_specs(
            f"!has(s.volumes) || s.volumes.all(v, {allowed} || "
            f"(has(v.csi) && v.csi.driver in {quoted(INLINE_CSI_DRIVERS)}) || "
            "(has(v.hostPath) && variables.gpuDirect && "
            f"v.hostPath.path in {quoted(GPU_DIRECT_HOST_PATHS)}))"
        ),
        f"volumes may be {', '.join(INLINE_VOLUMES)} (Pod Security restricted's kinds, at "
        f"every level) with csi of {', '.join(INLINE_CSI_DRIVERS)} only: nfs, "
        "gcePersistentDisk and other inline sources, and other CSI drivers, would mount storage "
        "past the grants of ai-infra:storage; hostPath only for GKE's GPUDirect paths in "
        "Kueue-managed pods on a fast-path GPU pool of a team that set gpuDirectPods",
    )


def _container_checks() -> tuple[Check, ...]:
    return (
        Check(
            all_containers(
                f"!{SECURITY} || !has(c.securityContext.privileged) || "
                "!c.securityContext.privileged"
            ),
            "privileged containers are not allowed (Pod Security baseline)",
        ),
        Check(
            all_containers(
                f"!{SECURITY} || !has(c.securityContext.capabilities) || "
                "!has(c.securityContext.capabilities.add) || "
                f"c.securityContext.capabilities.add.all(a, a in {quoted(BASELINE_CAPABILITIES)} "
                f"|| (variables.gpuDirect && a in {quoted(GPU_DIRECT_CAPABILITIES)}))"
            ),
            "capabilities beyond the baseline set are not allowed (Pod Security baseline), but "
            "NET_ADMIN in Kueue-managed pods on a fast-path GPU pool of a team that set "
            "gpuDirectPods",
        ),
        Check(
            all_containers(
                f"!{SECURITY} || !has(c.securityContext.procMount) || "
                "c.securityContext.procMount == 'Default'"
            ),
            "procMount must be Default (Pod Security baseline)",
        ),
        Check(
            all_specs(
                "!has(s.securityContext) || !has(s.securityContext.sysctls) || "
                f"s.securityContext.sysctls.all(x, x.name in {quoted(SAFE_SYSCTLS)})"
            ),
            "only the safe sysctls are allowed (Pod Security baseline)",
        ),
        Check(
            all_containers(_no_probe_host("c")),
            "probes and lifecycle hooks may not name a host: the kubelet would connect there "
            "from the node (Pod Security baseline, 1.34)",
        ),
    )


def _profile_checks() -> tuple[Check, ...]:
    """seccomp, AppArmor, SELinux and Windows host processes, on the pod and each container."""

    def both(pod: str, container: str) -> str:
        return all_specs(f"!has(s.securityContext) || {pod}") + (
            " && " + all_containers(f"!{SECURITY} || {container}")
        )

    def not_unconfined(key: str, context: str) -> str:
        return f"!has({context}.{key}) || {context}.{key}.type != 'Unconfined'"

    return (
        Check(
            both(
                not_unconfined("seccompProfile", "s.securityContext"),
                not_unconfined("seccompProfile", "c.securityContext"),
            ),
            "seccomp profile Unconfined is not allowed (Pod Security baseline)",
        ),
        Check(
            both(
                not_unconfined("appArmorProfile", "s.securityContext"),
                not_unconfined("appArmorProfile", "c.securityContext"),
            ),
            "AppArmor profile Unconfined is not allowed (Pod Security baseline)",
        ),
        Check(
            both(_selinux("s.securityContext"), _selinux("c.securityContext")),
            "SELinux user and role may not be set, and the type only to "
            f"{', '.join(t for t in SELINUX_TYPES if t)} (Pod Security baseline)",
        ),
        Check(
            both(_no_host_process("s.securityContext"), _no_host_process("c.securityContext")),
            "Windows host processes are not allowed (Pod Security baseline)",
        ),
        Check(
            "variables.metas.all(m, !has(m.annotations) || m.annotations.all(k, "
            f"!k.startsWith('{APPARMOR_ANNOTATION}') || m.annotations[k] == '' || "
            "m.annotations[k] == 'runtime/default' || m.annotations[k].startsWith('localhost/')))",
            "AppArmor annotations may name runtime/default or localhost/ profiles only "
            "(Pod Security baseline)",
        ),
    )


def _in_order() -> tuple[Check, ...]:
    """The checks in the order the policy has listed them since before the volume check
    took hostPath's place, so an update of the registered policy shows what changed."""
    host_network, host_namespaces, host_port = _host_checks()
    privileged, capabilities, proc_mount, sysctls, probes = _container_checks()
    seccomp, apparmor, selinux, windows, annotations = _profile_checks()
    return (
        host_network,
        host_namespaces,
        _volume_check(),
        privileged,
        host_port,
        capabilities,
        proc_mount,
        seccomp,
        sysctls,
        apparmor,
        selinux,
        windows,
        annotations,
        probes,
    )


def pod_security(gpu_direct_pools: Sequence[str]) -> Policy:
    """The baseline level's checks (Pod Security Standards), hostNetwork, the GPU fast path
    and inline volumes as the module says."""
    return Policy(
        "ai-infra-team-pod-security",
        (*WORKLOADS, EPHEMERAL_CONTAINERS),
        _in_order(),
        (*POD_VARIABLES, ("gpuDirect", _gpu_direct(gpu_direct_pools))),
    )
