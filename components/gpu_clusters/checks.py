"""The problems of `ai-infra:gpuClusters` entries, each at `[i].<field>`: GPUs and vCPUs against
the machine catalog, capacity and placement, disks, zone, image, network layout and GPUDirect,
metadata in bytes, labels, mounts, and names that another system derives.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Mapping, Sequence

from catalog import gpu as gpu_catalog
from catalog.storage import FILESTORE_TIERS
from components.base import Problem, duplicate_names, relative_path, under
from components.context import StackContext, label_problems
from components.gpu_clusters.config import (
    BUCKET_NAME,
    CLUSTER_LABEL,
    DEFAULT_IMAGE_FAMILY,
    DLVM_PROJECTS,
    END_OF_LIFE_FAMILIES,
    IMAGE_DIRS,
    RESERVED_METADATA,
    GpuClusterConfig,
)
from components.gpu_clusters.metadata import size_problems
from components.identity import Claim, account_id_problems, service_account_email
from components.locations import zone_problem
from components.logins import (
    TPU_HOST_PREFIX,
    login_problems,
    machine_account_problems,
    open_home_problem,
    viewer_role_id,
)
from components.storage import SCRATCH_PATH, Storage, mount_problems
from components.types import shadowed_dir

SUBNET_PREFIXES = (8, 29)
"""Prefix lengths of a subnet's primary IPv4 range: /8 to /29 (VPC "Subnets", IPv4 subnet
ranges; the stack's own subnet is held to the same, `network.PREFIX_LIMITS`)."""
FOREIGN_NAMES = {
    "allow": "the stack network's firewall rules <prefix>-allow-*",
    "slurm": "the Slurm cluster's resources <prefix>-slurm-<cluster>-*",
}
"""Name stems other systems derive names from: a cluster named after one would create
firewall rules, networks or accounts under their names (`<prefix>-allow-iap-ssh`)."""


def account_id(ctx: StackContext, name: str) -> str:
    """The id of a cluster's VM service account, `<prefix>-<name>-vm`."""
    return ctx.name(name, "vm")


def group_name(ctx: StackContext, name: str) -> str:
    """The managed instance group, `<prefix>-<name>`: the VMs' base name and, carrying the
    stack's prefix, the id that keeps two stacks' Ray clusters apart."""
    return ctx.name(name)


def _mount_path_problem(path: str) -> str | None:
    if top := shadowed_dir(path, IMAGE_DIRS):
        return f"'{path}' would shadow the system's {top}; mount under /mnt, /gcs, /nfs or /data"
    return None


def problems(
    clusters: list[GpuClusterConfig],
    ctx: StackContext,
    *,
    buckets: Mapping[str, str],
    storage: Storage,
    slurm_bucket: str | None = None,
    slurm_cluster: str | None = None,
    accounts: Sequence[Claim] = (),
) -> list[Problem]:
    """Checks of `ai-infra:gpuClusters`, each at `[i].<field>`. `buckets` maps the stack's
    `ai-infra:buckets` names to GCS names; `storage` is `ai-infra:storage`, whose volumes
    each cluster's `storage` list names; `slurm_bucket` and `slurm_cluster` are the Slurm
    cluster's bucket and name (which starts every name of its VMs), if any; `accounts` every
    service account id the program creates, with the config path that claims it (machines
    and pods run as them: none may log in)."""
    found = duplicate_names([c.name for c in clusters], "gpuClusters")
    machines = {
        service_account_email(account, ctx.project): f"the service account of ai-infra:"
        f"{relative_path(path)}"
        for path, account in [*account_claims_of(clusters, ctx), *accounts]
    }
    for i, config in enumerate(clusters):
        found += [p.under(i) for p in _entry_problems(config, ctx, buckets, storage, slurm_bucket)]
        found += [p.under(i) for p in machine_account_problems(config.logins, machines)]
    found += _login_reach_problems(clusters, ctx, slurm_cluster)
    return found


def account_claims_of(clusters: list[GpuClusterConfig], ctx: StackContext) -> list[Claim]:
    """The VM account each cluster creates, with its config path."""
    return [(("gpuClusters", i), account_id(ctx, c.name)) for i, c in enumerate(clusters)]


FOREIGN_VMS = {
    "gke-": "GKE's nodes (gke-<cluster>-<pool>-*)",
    TPU_HOST_PREFIX: "Cloud TPU's TPU VM hosts (t1v-n-*), which tpuVms logins may log in to",
}
"""Names other systems give their VMs in the project: a group whose VMs' names nest with
these would hand its logins theirs, or theirs its VMs."""


def _nested(a: str, b: str) -> bool:
    """Whether one name stem (ending in '-') starts the other: their VMs' names may meet."""
    return a.startswith(b) or b.startswith(a)


def _login_reach_problems(
    clusters: list[GpuClusterConfig], ctx: StackContext, slurm_cluster: str | None
) -> list[Problem]:
    """A cluster's login grant reaches the VMs named `<prefix>-<name>-*` in its zone, as the
    group names them. Another system whose VM names nest with that stem (another cluster in
    the zone, the Slurm cluster, GKE's nodes, TPU VM hosts) would have its VMs reached by
    these logins, or reach this cluster's with its own."""
    found = []
    # Names in order, so the clusters a name starts are one run of them, found by bisection.
    names = sorted((c.name, i) for i, c in enumerate(clusters))
    for i, config in enumerate(clusters):
        stem = f"{group_name(ctx, config.name)}-"
        foreign = dict(FOREIGN_VMS)
        if slurm_cluster is not None:
            foreign[f"{slurm_cluster}-"] = f"the Slurm cluster {slurm_cluster}'s VMs"
        for other, owner in foreign.items():
            if _nested(stem, other):
                found.append(
                    Problem(
                        (i, "name"),
                        f"its VMs are named {stem}xxxx, which nests with {owner}: a login of "
                        "one would match the other's VMs; choose another name (or stack "
                        "prefix)",
                    )
                )
        if not config.logins:
            continue
        zone = ctx.zone_of(config.zone)
        found += [
            Problem(
                (i, "logins"),
                f"these logins reach the VMs named {stem}*, which include gpuClusters "
                f"{other.name}'s in the same zone; rename one of the two clusters so neither "
                "name starts with the other's followed by '-'",
            )
            for other in _named_under(f"{config.name}-", names, clusters)
            if ctx.zone_of(other.zone) == zone
        ]
    return found


def _named_under(
    start: str, names: list[tuple[str, int]], clusters: list[GpuClusterConfig]
) -> list[GpuClusterConfig]:
    """The clusters whose names begin with `start`, in list order (`names`: (name, index),
    sorted)."""
    at = bisect.bisect_left(names, (start, -1))
    under_start = []
    while at < len(names) and names[at][0].startswith(start):
        under_start.append(names[at][1])
        at += 1
    return [clusters[k] for k in sorted(under_start)]


def _entry_problems(
    config: GpuClusterConfig,
    ctx: StackContext,
    buckets: Mapping[str, str],
    storage: Storage,
    slurm_bucket: str | None,
) -> list[Problem]:
    found = account_id_problems(account_id(ctx, config.name))
    for stem, owner in FOREIGN_NAMES.items():
        if config.name == stem or config.name.startswith(f"{stem}-"):
            found.append(
                Problem(
                    ("name",),
                    f"'{config.name}' would derive names under {owner} "
                    f"(<prefix>-{config.name}-...); choose a name that does not start with "
                    f"'{stem}'",
                )
            )
    found += _machine_problems(config)
    found += _capacity_problems(config)
    if config.zone is not None and (problem := zone_problem(config.zone, ctx.region)):
        found.append(Problem(("zone",), problem))
    found += _image_problems(config)
    if config.orchestrator not in ("none", "ray"):
        hint = (
            "; for GKE, declare the GPUs as ai-infra:gpuPools instead"
            if config.orchestrator == "gke"
            else ""
        )
        found.append(
            Problem(("orchestrator",), f"'{config.orchestrator}' is not none or ray{hint}")
        )
    found += _network_problems(config)
    found += _metadata_problems(config)
    found += size_problems(
        config,
        group=group_name(ctx, config.name),
        zone=ctx.zone_of(config.zone),
        gcs_names=buckets,
        storage=storage,
    )
    found += under(
        "labels",
        label_problems(config.labels, reserved=(CLUSTER_LABEL,), beside=len(ctx.stack_labels)),
    )
    found += _mount_problems(config, ctx, buckets, storage, slurm_bucket)
    found += login_problems(config.logins, viewer_role_id(group_name(ctx, config.name), "gpu"))
    found += _ssh_problems(config)
    return found


FORGED_HOST_KEY = (
    "host-based SSH trusts each VM's host keys as its guest attributes publish them, which "
    "any process on that VM can rewrite (the metadata server takes guest attribute writes "
    "from any local user): a login without sudo could publish a key of its own and log in to "
    "the other VMs as any other user, sudo members included"
)


def _ssh_problems(config: GpuClusterConfig) -> list[Problem]:
    """`sshAmongVms` is for clusters whose every member is root already: only then can no
    member gain by forging a host key."""
    plain = [login.member for login in config.logins if not login.sudo]
    if not config.ssh_among_vms or not plain:
        return []
    return [
        Problem(
            ("sshAmongVms",),
            f"{FORGED_HOST_KEY} ({', '.join(plain)} {'has' if len(plain) == 1 else 'have'} "
            "no sudo); give every login sudo: true, or turn sshAmongVms off and let each user "
            "copy a key of their own (ssh-keygen on a VM, then `gcloud compute os-login "
            "ssh-keys add` from a machine logged in as them)",
        )
    ]


def _machine_problems(config: GpuClusterConfig) -> list[Problem]:
    found = []
    machine = config.machine_type
    gpu = gpu_catalog.gpu_problem(machine, config.gpu_type, config.gpu_count)
    if gpu is None:
        gpu = gpu_catalog.n1_problem(machine, config.gpu_type, config.gpu_count)
    if gpu is None and gpu_catalog.bare_metal(machine):
        gpu = (
            f"{machine} is bare metal with IPv6-only RDMA NICs on a `-vpc-roce-metal` network, "
            "which GPU clusters do not build; use a4x-highgpu-4g, or Cluster Toolkit's A4X Max "
            "blueprint"
        )
    if gpu:
        found.append(Problem(("machineType",), gpu))
    disk = gpu_catalog.boot_disk_problem(machine, config.disk_type)
    if disk:
        found.append(Problem(("diskType",), f"{disk}; set diskType to one of those"))
    if config.data_disk is not None:
        data_type = config.data_disk.type or config.disk_type
        data = gpu_catalog.boot_disk_problem(machine, data_type)
        if data:
            found.append(
                Problem(
                    ("dataDisk", "type"),
                    f"{data.replace('boots only from', 'takes only')}; set dataDisk.type",
                )
            )
    if config.threads_per_core == 2 and not gpu_catalog.smt(machine):
        found.append(
            Problem(
                ("threadsPerCore",),
                f"{machine} has one thread per core; remove threadsPerCore",
            )
        )
    return found


def _capacity_problems(config: GpuClusterConfig) -> list[Problem]:
    found = []
    machine = config.machine_type
    provisioning = config.provisioning
    if problem := gpu_catalog.capacity_problem(machine, provisioning):
        found.append(Problem(("provisioning",), problem))
    if config.reservation is not None and provisioning != "reservation":
        found.append(
            Problem(
                ("reservation",),
                f"only used with provisioning: reservation, not {provisioning}; remove it or "
                "set provisioning: reservation",
            )
        )
    capacity = gpu_catalog.series_capacity(machine)
    bound_rule = capacity.reservation_bound if capacity else "never"
    if config.reservation_bound is not None and provisioning != "reservation":
        found.append(
            Problem(("reservationBound",), "only used with provisioning: reservation; remove it")
        )
    elif config.reservation_bound and bound_rule == "never":
        found.append(
            Problem(
                ("reservationBound",),
                f"{machine} has no calendar-mode or capacity-block reservations; remove "
                "reservationBound",
            )
        )
    elif config.reservation_bound is False and bound_rule == "required":
        found.append(
            Problem(
                ("reservationBound",),
                f"{machine} consumes its reservations reservation-bound; remove "
                "reservationBound: false",
            )
        )
    if config.bound and config.reservation is None:
        found.append(
            Problem(
                ("reservation",),
                "a reservation-bound VM consumes one named reservation; name it here",
            )
        )
    if config.max_run_hours is not None and provisioning != "flex-start":
        found.append(
            Problem(("maxRunHours",), "only used with provisioning: flex-start; remove it")
        )
    if provisioning == "flex-start" and config.data_disk is not None:
        found.append(
            Problem(
                ("dataDisk",),
                "flex-start VMs are deleted at the end of their run and their disks with them; "
                "keep data in nfsShares or a bucket, and remove dataDisk",
            )
        )
    placement = config.placement
    distance = config.placement_max_distance
    if distance is not None:
        capacity = gpu_catalog.series_capacity(machine)
        if placement == "workload" and capacity is not None and capacity.accelerator_topology:
            found.append(
                Problem(
                    ("placementMaxDistance",),
                    f"{machine}'s workload policy carries its {capacity.accelerator_topology} "
                    "accelerator topology, which takes no max distance; remove it",
                )
            )
        elif placement is None:
            found.append(
                Problem(
                    ("placementMaxDistance",),
                    f"only used with a compact placement policy or a workload policy, neither "
                    f"of which {config.instance_count} x {machine} ({provisioning}) gets; "
                    "remove it",
                )
            )
        elif placement == "compact" and (
            problem := gpu_catalog.max_distance_problem(machine, distance)
        ):
            found.append(Problem(("placementMaxDistance",), problem))
    if placement == "compact":
        limit = gpu_catalog.compact_limit(machine, distance)
        if config.instance_count > limit:
            where = f"max distance {distance}" if distance else "no max distance"
            found.append(
                Problem(
                    ("instanceCount",),
                    f"a compact placement policy with {where} holds at most {limit} VMs of "
                    f"{machine}; lower instanceCount or raise placementMaxDistance",
                )
            )
    return found


def _image_problems(config: GpuClusterConfig) -> list[Problem]:
    found = []
    if config.image is not None and config.image_family is not None:
        found.append(
            Problem(("image",), "set either image or imageFamily, not both; remove one of them")
        )
    if not config.dlvm:
        needs = [
            what
            for what, on in (
                ("orchestrator: ray", config.orchestrator == "ray"),
                ("jupyterProxy", config.jupyter_proxy),
            )
            if on
        ]
        if needs:
            found.append(
                Problem(
                    ("imageProject",),
                    f"{' and '.join(needs)} need a Deep Learning VM image; use imageProject "
                    f"{' or '.join(DLVM_PROJECTS)}, or turn {' and '.join(needs)} off",
                )
            )
    if gpu_catalog.arm(config.machine_type) and config.image is None and not config.image_family:
        found.append(
            Problem(
                ("imageFamily",),
                f"{config.machine_type} runs Arm CPUs and the default image is x86; set an "
                "arm64 image, e.g. imageFamily ubuntu-accelerator-2404-arm64-with-nvidia-580 "
                "with imageProject ubuntu-os-accelerator-images",
            )
        )
    return found


def _network_problems(config: GpuClusterConfig) -> list[Problem]:
    found = []
    layout = gpu_catalog.nic_layout(config.machine_type)
    if config.network != "multi-nic" and config.nic_count is not None:
        found.append(
            Problem(("nicCount",), "only used with network: multi-nic; remove it or set network")
        )
    if config.network == "multi-nic" and layout is not None:
        if config.nic_count is not None and config.nic_count != layout.nics:
            found.append(
                Problem(
                    ("nicCount",),
                    f"{config.machine_type} uses {layout.host_nics} + {layout.gpu_nics} NICs "
                    "for GPU traffic; remove nicCount",
                )
            )
        if not config.gvnic:
            found.append(
                Problem(
                    ("imageFamily",),
                    f"GPU NICs need gVNIC, which this image lacks; use {DEFAULT_IMAGE_FAMILY}",
                )
            )
    if config.network == "multi-nic" and layout is None:
        most = gpu_catalog.max_nics(config.machine_type)
        if config.nics > most:
            found.append(
                Problem(
                    ("nicCount",),
                    f"{config.machine_type} has {gpu_catalog.vcpus(config.machine_type)} vCPUs "
                    f"and takes at most {most} NICs (one per vCPU, 2 to "
                    f"{gpu_catalog.MAX_VNICS}), not {config.nics}; set nicCount to at most "
                    f"{most} or pick a larger machine type",
                )
            )
    found += _gpu_direct_problems(config, layout)
    if config.network != "default":
        subnet = ipaddress.IPv4Network(config.subnet_cidr)
        low, high = SUBNET_PREFIXES
        if not low <= subnet.prefixlen <= high:
            found.append(
                Problem(
                    ("subnetCidr",),
                    f"VM subnets take a /{low} to /{high}, not /{subnet.prefixlen}; resize "
                    f"{config.subnet_cidr}",
                )
            )
        elif int(subnet.network_address) + config.nics * subnet.num_addresses > 2**32:
            found.append(
                Problem(
                    ("subnetCidr",),
                    f"{config.nics} ranges of /{subnet.prefixlen} from "
                    f"{config.subnet_cidr} run past 255.255.255.255; pick a lower range",
                )
            )
    return found


def _gpu_direct_problems(
    config: GpuClusterConfig, layout: gpu_catalog.GpuNicLayout | None
) -> list[Problem]:
    if not config.gpu_direct:
        return []
    if layout is None:
        machines = ", ".join(gpu_catalog.GPU_NIC_LAYOUTS)
        return [
            Problem(
                ("gpuDirect",),
                f"{config.machine_type} has no GPU NICs; GPUDirect and RDMA are for {machines}; "
                "remove gpuDirect",
            )
        ]
    if config.network != "multi-nic":
        return [
            Problem(
                ("gpuDirect",),
                "needs the GPU NICs of network: multi-nic; set network: multi-nic",
            )
        ]
    if layout.rdma and gpu_catalog.arm(config.machine_type):
        return [
            Problem(
                ("gpuDirect",),
                f"{config.machine_type} is Arm and no arm64 gIB package is pinned here; keep "
                "its RDMA NICs, install the NCCL gIB plugin in your image and remove gpuDirect",
            )
        ]
    if not layout.rdma and config.dlvm:
        return [
            Problem(
                ("imageProject",),
                f"GPUDirect-{layout.transport.upper()} needs a host image prepared for it (a "
                "TCPX kernel, or the dmabuf import helper and aperture devices, plus docker and "
                "the NVIDIA container toolkit), which Deep Learning VM images are not; build "
                "one with Cluster Toolkit's A3 image steps and set image and imageProject, or "
                "remove gpuDirect",
            )
        ]
    return []


def _metadata_problems(config: GpuClusterConfig) -> list[Problem]:
    return [
        Problem(
            ("metadata", key),
            "is set by the program (OS Login, startup script, driver, Jupyter proxy) or runs "
            "outside what the plan shows (cloud-init user data, a script URL); remove it, or "
            "use the cluster's own field for it",
        )
        for key in config.metadata
        if key.lower() in RESERVED_METADATA
    ]


def _slurm_bucket(gcs: str, ctx: StackContext, slurm_bucket: str | None) -> bool:
    """This stack's Slurm bucket, or one named as Slurm clusters name theirs in this project
    (`<project>-<prefix>-slurm-<cluster>`, `SlurmConfig.bucket_name`)."""
    return gcs == slurm_bucket or bool(re.fullmatch(rf"{re.escape(ctx.project)}-.+-slurm-.+", gcs))


class Paths:
    """Mount paths taken so far, for a nesting check that is linear in their number: each path
    and every directory above one are kept in sets, so a new path is looked up, never compared
    with each."""

    def __init__(self) -> None:
        self.taken: dict[str, str] = {}
        self.above: dict[str, str] = {}

    def clash(self, path: str) -> tuple[str, str] | None:
        """(the other path, where it is written) of a mount `path` equals or nests with."""
        parts = path.split("/")
        for k in range(2, len(parts) + 1):
            ancestor = "/".join(parts[:k])
            if ancestor in self.taken:
                return ancestor, self.taken[ancestor]
        if path in self.above:
            other = self.above[path]
            return other, self.taken[other]
        return None

    def add(self, path: str, where: str) -> None:
        self.taken[path] = where
        parts = path.split("/")
        for k in range(2, len(parts)):
            self.above.setdefault("/".join(parts[:k]), path)


def _mount_problems(
    config: GpuClusterConfig,
    ctx: StackContext,
    buckets: Mapping[str, str],
    storage: Storage,
    slurm_bucket: str | None,
) -> list[Problem]:
    found = []
    paths = Paths()
    if config.scratch_disks:
        paths.add(SCRATCH_PATH, f"the local SSD scratch of {config.machine_type}")
    entries: list[tuple[tuple[str | int, ...], str, str | None]] = []
    if config.data_disk is not None:
        entries.append((("dataDisk",), config.data_disk.mount_path, "the data disk"))
    entries += [
        (("gcsMounts", i), m.mount_path, None if m.read_only else f"bucket {m.bucket}")
        for i, m in enumerate(config.gcs_mounts)
    ]
    entries += [(("nfsShares", i), s.mount_path, None) for i, s in enumerate(config.nfs_shares)]
    for where, path, open_to_all in entries:
        bad = _mount_path_problem(path)
        if bad is None and open_to_all is not None:
            bad = open_home_problem(path, open_to_all)
        if bad:
            found.append(Problem((*where, "mountPath"), bad))
            continue
        if clash := paths.clash(path):
            found.append(
                Problem(
                    (*where, "mountPath"),
                    f"'{path}' overlaps {clash[1]} '{clash[0]}'; every mount needs its own, "
                    "unnested path",
                )
            )
        else:
            key = "".join(f"[{p}]" if isinstance(p, int) else p for p in where)
            paths.add(path, f"{key}.mountPath")
    found += under(
        "storage",
        mount_problems(config.storage, storage, taken=paths.taken, reserved=IMAGE_DIRS),
    )
    found += _storage_kind_problems(config, storage)
    found += _bucket_problems(config, ctx, buckets, slurm_bucket)
    for i, share in enumerate(config.nfs_shares):
        if problem := FILESTORE_TIERS[share.tier].capacity_problem(share.size_gb):
            found.append(Problem(("nfsShares", i, "sizeGb"), f"{problem}, or pick another tier"))
    return found


def _storage_kind_problems(config: GpuClusterConfig, storage: Storage) -> list[Problem]:
    """Volumes of the `storage` list the cluster's network reaches, and buckets every user can
    write kept out of the homes."""
    found = []
    for i, mount in enumerate(config.storage):
        volume = storage.volumes.get(mount.volume)
        if volume is None:
            continue
        if volume.kind != "gcs" and config.network != "default":
            found.append(
                Problem(
                    ("storage", i, "volume"),
                    f"'{mount.volume}' is a {volume.kind} volume served in the stack's VPC, "
                    f"which a cluster on network: {config.network} does not join; use "
                    "network: default, or mount a bucket",
                )
            )
        if (
            volume.kind == "gcs"
            and not mount.read_only
            and (bad := open_home_problem(mount.mount_path, f"bucket volume {mount.volume}"))
        ):
            found.append(Problem(("storage", i, "mountPath"), bad))
    return found


def _bucket_problems(
    config: GpuClusterConfig,
    ctx: StackContext,
    buckets: Mapping[str, str],
    slurm_bucket: str | None,
) -> list[Problem]:
    found = []
    for i, mount in enumerate(config.gcs_mounts):
        if mount.bucket not in buckets and not BUCKET_NAME.fullmatch(mount.bucket):
            found.append(
                Problem(
                    ("gcsMounts", i, "bucket"),
                    f"'{mount.bucket}' is neither a bucket of ai-infra:buckets "
                    f"({', '.join(buckets) or 'none'}) nor a GCS bucket name",
                )
            )
            continue
        gcs = buckets.get(mount.bucket, mount.bucket)
        in_stack = mount.bucket in buckets
        if not mount.read_only and not in_stack and _slurm_bucket(gcs, ctx, slurm_bucket):
            found.append(
                Problem(
                    ("gcsMounts", i, "readOnly"),
                    f"gs://{gcs} is a Slurm cluster's bucket, whose scripts its controller "
                    "runs as root: VMs that can write it own that cluster; set readOnly: true",
                )
            )
    return found


def warnings(config: GpuClusterConfig) -> list[Problem]:
    """What is allowed but ill-advised, at paths under the entry: the stack lists them in the
    plan and `pulumi up` logs them."""
    found = []
    if config.ssh_among_vms and not config.logins:
        found.append(
            Problem(
                ("sshAmongVms",),
                f"{FORGED_HOST_KEY}; this cluster lists no logins, so who may log in is granted "
                "outside the stack: keep it to principals with sudo "
                "(roles/compute.osAdminLogin), or turn sshAmongVms off",
            )
        )
    family = config.resolved_image_family
    if family in END_OF_LIFE_FAMILIES:
        found.append(Problem(("imageFamily",), END_OF_LIFE_FAMILIES[family]))
    layout = gpu_catalog.nic_layout(config.machine_type)
    if layout is not None and config.instance_count > 1:
        if config.network != "multi-nic":
            found.append(
                Problem(
                    ("network",),
                    f"{config.machine_type} VMs talk to each other over one NIC here; set "
                    f"network: multi-nic for its {layout.gpu_nics} GPU NICs",
                )
            )
        elif not config.gpu_direct:
            found.append(
                Problem(
                    ("gpuDirect",),
                    f"NCCL uses the {layout.gpu_nics} GPU NICs as plain sockets, a fraction of "
                    "their bandwidth, without gpuDirect",
                )
            )
    return found
