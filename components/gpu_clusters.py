"""GPU clusters as managed instance groups: the cluster Google's AI infra cluster provisioning
tool stood up from environment variables, from one typed `ai-infra:gpuClusters` entry. A zonal
MIG of private, shielded GPU VMs on a Deep Learning VM image, its own least-privilege service
account, its network (the stack's, a new one, or one VPC per NIC), Filestore shares and a
startup script rendered from typed steps. GPUs scheduled by Kubernetes are `ai-infra:gpuPools`.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from typing import Annotated, Any, Literal

import pulumi
import pulumi_gcp as gcp
from pydantic import AfterValidator, Field

from components import gpu_catalog, startup_script
from components.base import (
    Cidr,
    Component,
    ConfigModel,
    DnsLabel,
    Problem,
    WiringModel,
    duplicate_names,
    service_account_email,
    slug,
)
from components.locations import zone_problem
from components.network import IAP_TCP_FORWARDING_RANGE, cloud_nat
from components.workload_identity import account_id_problems

CLUSTER_LABEL = "aiinfra-cluster"
"""The provisioning tool's billing label: Billing Reports filter a cluster's cost by it."""
DLVM_PROJECTS = ("deeplearning-platform-release", "ml-images")
"""Image projects of Deep Learning VM images, which install the NVIDIA driver from metadata and
run the Jupyter proxy agent."""
DEFAULT_IMAGE_FAMILY = "pytorch-2-9-cu129-ubuntu-2404-nvidia-580"
"""A current PyTorch GPU family (Deep Learning VM "Choose an image", 2026-09: PyTorch 2.9, CUDA
12.9, driver 580, supported to 2028-08; "Debian images have all been deprecated")."""
END_OF_LIFE_FAMILIES = {
    "pytorch-1-12-gpu-debian-10": "PyTorch 1.12 on Debian 10, the provisioning tool's default, "
    "is end of life: it gets no security fixes and no gVNIC driver, so its VMs fall back to "
    f"VirtIO networking; use {DEFAULT_IMAGE_FAMILY}",
}
_NO_GVNIC = re.compile(r".*debian-10.*")
"""Images without a gVNIC driver: the provisioning tool's instance template refused gVNIC on
anything but Debian 11 or newer ("GVNIC is only supported in debian 11 image")."""

RESERVED_METADATA = frozenset(
    {
        "enable-oslogin",
        "block-project-ssh-keys",
        "ssh-keys",
        "serial-port-enable",
        "startup-script",
        "startup-script-url",
        "install-nvidia-driver",
        "proxy-mode",
    }
)
"""Metadata keys the program sets for security or function; a cluster's `metadata` may not
override them."""
FILESTORE_CAPACITY_GB: dict[str, tuple[int, int]] = {
    "BASIC_HDD": (1024, 65433),
    "BASIC_SSD": (2560, 65433),
    "HIGH_SCALE_SSD": (10240, 102400),
    "ENTERPRISE": (1024, 10240),
}
"""Capacity range per tier in GiB (Filestore "Service tiers": 1, 2.5, 10 and 1 TiB minimum;
63.9, 63.9, 100 and 10 TiB maximum)."""
MAX_INSTANCES = 150
"""A compact placement policy holds at most 150 VMs (Compute Engine, placement policies)."""
MAX_NICS = 8
"""VMs take at most 8 NICs, fewer on small machines (Compute Engine, multiple network
interfaces); the A3 GPUDirect layouts are fixed by the catalog instead."""
_PROTECTED_PATHS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
)
"""Mounting over these would hide the system, or the image's conda under /opt."""
_MOUNT_PATH = re.compile(r"/[A-Za-z0-9._/-]+")
_IMAGE_NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_BUCKET_NAME = re.compile(r"[a-z0-9][-_.a-z0-9]{1,220}[a-z0-9]")
_METADATA_KEY = re.compile(r"[A-Za-z0-9_-]{1,128}")
_LABEL_KEY = re.compile(r"[a-z][-_a-z0-9]{0,62}")
_LABEL_VALUE = re.compile(r"[-_a-z0-9]{0,63}")


def _no_control_characters(value: str) -> str:
    if any(ord(c) < 32 and c not in "\t\n" for c in value) or "\x7f" in value:
        raise ValueError("must not contain control characters")
    return value


class GcsMount(ConfigModel):
    bucket: str
    """A bucket of this stack's `ai-infra:buckets` by its name there, or any bucket's full
    name. The cluster's service account is granted object access on it, per member."""
    mount_path: str
    """Absolute path on every VM, e.g. `/gcs/data`."""
    read_only: bool = False
    """Mount read-only and grant objectViewer instead of objectUser."""


class NfsShare(ConfigModel):
    mount_path: str
    """Absolute path on every VM, e.g. `/nfs/home`."""
    tier: Literal["BASIC_HDD", "BASIC_SSD", "HIGH_SCALE_SSD", "ENTERPRISE"] = "BASIC_SSD"
    """Filestore tier; ENTERPRISE instances are regional, the others sit in the cluster's zone."""
    size_gb: int = 2560
    """Capacity in GiB, at least the tier's minimum: BASIC_HDD 1024, BASIC_SSD 2560,
    HIGH_SCALE_SSD 10240, ENTERPRISE 1024."""


class GpuClusterConfig(ConfigModel):
    """One entry of `ai-infra:gpuClusters`: a managed instance group of GPU VMs. The defaults are
    the provisioning tool's default cluster: one a2-highgpu-2g with two A100s."""

    name: DnsLabel
    """The tool's NAME_PREFIX: names the VMs, the `aiinfra-cluster` label and every derived
    resource (`<prefix>-<name>-...`); the service account `<prefix>-<name>-vm` must fit in 30
    characters."""
    instance_count: int = Field(default=1, ge=1, le=MAX_INSTANCES)
    """VMs in the group."""
    machine_type: str = "a2-highgpu-2g"
    """An a2, a3, a4, a4x or g2 machine type (GPUs built in) or n1 with attachable GPUs."""
    gpu_type: str = "nvidia-tesla-a100"
    """`guest_accelerator` type; must match the machine's built-in GPUs."""
    gpu_count: int = Field(default=2, ge=1, le=16)
    """GPUs per VM; must match the machine's built-in GPUs."""
    image_family: str | None = None
    """Image family; defaults to `pytorch-2-9-cu129-ubuntu-2404-nvidia-580` when `image` is
    unset. `pytorch-1-12-gpu-debian-10` (the tool's default) is accepted with a warning: it is
    end of life."""
    image: str | None = None
    """A specific image name, instead of `imageFamily`."""
    image_project: str = "deeplearning-platform-release"
    """Project of the image; Ray and the Jupyter proxy need a Deep Learning VM image
    (`deeplearning-platform-release` or `ml-images`)."""
    disk_size_gb: int = Field(default=2000, ge=50, le=65536)
    """Boot disk size."""
    disk_type: Literal["pd-ssd", "pd-balanced", "pd-standard", "hyperdisk-balanced"] = "pd-ssd"
    """Boot disk type; must be one the machine type boots from."""
    zone: str | None = None
    """Zone of the VMs and Filestore shares; defaults to `gcp:zone`."""
    network: Literal["default", "new", "multi-nic"] = "default"
    """`default`: the stack's VPC (with its NAT, IAP SSH and internal firewall rules), not the
    project's auto-mode `default` VPC. `new`: a VPC, subnet, router and NAT of its own.
    `multi-nic`: one VPC per NIC (`nicCount`, 5 by default); a3-highgpu-8g and a3-megagpu-8g
    get their GPUDirect layout (1 + 4 or 1 + 8 NICs, GPU VPCs at MTU 8244)."""
    nic_count: int | None = Field(default=None, ge=2, le=MAX_NICS)
    """NICs (and VPCs) with `network: multi-nic`; 5 unless the machine fixes it."""
    subnet_cidr: Cidr = "10.130.0.0/20"
    """The first subnet of `new` and `multi-nic`; further NICs take the following ranges of the
    same size."""
    metadata: dict[str, Annotated[str, AfterValidator(_no_control_characters)]] = Field(
        default_factory=dict
    )
    """Extra instance metadata; cannot override enable-oslogin, startup-script and the other
    keys the program sets."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Extra labels on the VMs, disks and Filestore instances (beside the stack's and
    `aiinfra-cluster=<name>`)."""
    startup_command: Annotated[str, AfterValidator(_no_control_characters)] = ""
    """Shell command run last on every boot, as root, after mounts and Ray."""
    gcs_mounts: list[GcsMount] = Field(default_factory=list)
    """Buckets mounted with gcsfuse (`implicit_dirs`) on every VM."""
    nfs_shares: list[NfsShare] = Field(default_factory=list)
    """A Filestore instance per entry, mounted on every VM."""
    orchestrator: str = "none"
    """`none` or `ray` (head on the first VM, the others join it). For Kubernetes, use
    `ai-infra:gpuPools`."""
    ops_agent: bool = True
    """Install the Ops Agent (logs, GPU metrics) with retries and random back-off; a failure
    never blocks the rest of the startup script."""
    jupyter_proxy: bool = True
    """The Deep Learning VM's Jupyter proxy (`proxy-mode: project_editors`); the stack output
    `gpuClusters.<name>.jupyterUrls` prints the command that lists the URLs."""
    spot: bool = False
    """Spot VMs: cheaper, preemptible at any time."""
    threads_per_core: Literal[1, 2] | None = None
    """SMT: unset keeps the platform's default (two threads per core on the x86 GPU families,
    one on A4X's Arm cores); 1 turns SMT off, halving the vCPUs, for CPU-bound data loaders
    that suffer from sibling threads."""

    @property
    def resolved_image_family(self) -> str | None:
        if self.image is None and self.image_family is None:
            return DEFAULT_IMAGE_FAMILY
        return self.image_family

    @property
    def image_ref(self) -> str:
        if self.image is not None:
            return f"projects/{self.image_project}/global/images/{self.image}"
        return f"projects/{self.image_project}/global/images/family/{self.resolved_image_family}"

    @property
    def dlvm(self) -> bool:
        return self.image_project in DLVM_PROJECTS

    @property
    def gvnic(self) -> bool:
        return not _NO_GVNIC.fullmatch(self.image or self.resolved_image_family or "")

    @property
    def nic_layout(self) -> gpu_catalog.GpuNicLayout | None:
        return gpu_catalog.nic_layout(self.machine_type) if self.network == "multi-nic" else None

    @property
    def nics(self) -> int:
        if self.network != "multi-nic":
            return 1
        layout = self.nic_layout
        if layout is not None:
            return 1 + layout.gpu_nics
        return self.nic_count or 5

    def nic_cidrs(self) -> list[str]:
        first = ipaddress.IPv4Network(self.subnet_cidr)
        return [
            str(
                ipaddress.IPv4Network(
                    (int(first.network_address) + k * first.num_addresses, first.prefixlen)
                )
            )
            for k in range(self.nics)
        ]

    @property
    def gpus(self) -> int:
        return self.instance_count * self.gpu_count


def account_id(prefix: str, name: str) -> str:
    return f"{prefix}-{name}-vm"


def _mount_path_problem(path: str) -> str | None:
    if not _MOUNT_PATH.fullmatch(path) or posixpath.normpath(path) != path:
        return (
            f"'{path}' is not an absolute, normalised path of letters, digits, '.', '_', '-' and "
            "'/'; write e.g. /gcs/data"
        )
    top = "/" + path.split("/")[1]
    if top in _PROTECTED_PATHS:
        return f"'{path}' would shadow the system's {top}; mount under /mnt, /gcs, /nfs or /data"
    return None


def problems(
    clusters: list[GpuClusterConfig],
    *,
    prefix: str,
    region: str,
    default_zone: str,
    buckets: list[str],
    reserved_labels: tuple[str, ...],
) -> list[Problem]:
    """Checks of `ai-infra:gpuClusters`, each at `[i].<field>`."""
    found = duplicate_names([c.name for c in clusters], "gpuClusters")
    for i, config in enumerate(clusters):
        found += [
            p.under(i)
            for p in _entry_problems(config, prefix, region, default_zone, buckets, reserved_labels)
        ]
    return found


def _entry_problems(
    config: GpuClusterConfig,
    prefix: str,
    region: str,
    default_zone: str,
    buckets: list[str],
    reserved_labels: tuple[str, ...],
) -> list[Problem]:
    found = account_id_problems(account_id(prefix, config.name))
    gpu = gpu_catalog.gpu_problem(config.machine_type, config.gpu_type, config.gpu_count)
    if gpu:
        found.append(Problem(("machineType",), gpu))
    capacity = gpu_catalog.capacity_problem(config.machine_type, config.spot)
    if capacity:
        found.append(Problem(("machineType",), capacity))
    disk = gpu_catalog.boot_disk_problem(config.machine_type, config.disk_type)
    if disk:
        found.append(Problem(("diskType",), f"{disk}; set diskType to one of those"))
    zone = config.zone or default_zone
    if config.zone is not None and not re.fullmatch(r"[a-z]+-[a-z]+[0-9]+-[a-z]", config.zone):
        found.append(Problem(("zone",), f"'{config.zone}' is not a zone such as {region}-a"))
    elif config.zone is not None and (problem := zone_problem(zone, region)):
        found.append(Problem(("zone",), problem))
    if config.image is not None and config.image_family is not None:
        found.append(
            Problem(("image",), "set either image or imageFamily, not both; remove one of them")
        )
    for key, value in (("image", config.image), ("imageFamily", config.image_family)):
        if value is not None and not _IMAGE_NAME.fullmatch(value):
            found.append(Problem((key,), f"'{value}' is not an image name (lowercase, '-')"))
    if not re.fullmatch(r"[a-z][-a-z0-9.:]{4,62}[a-z0-9]", config.image_project):
        found.append(Problem(("imageProject",), f"'{config.image_project}' is not a project id"))
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
    if config.orchestrator not in ("none", "ray"):
        hint = (
            "; for GKE, declare the GPUs as ai-infra:gpuPools instead"
            if config.orchestrator == "gke"
            else ""
        )
        found.append(
            Problem(("orchestrator",), f"'{config.orchestrator}' is not none or ray{hint}")
        )
    if config.threads_per_core == 2 and not gpu_catalog.smt(config.machine_type):
        found.append(
            Problem(
                ("threadsPerCore",),
                f"{config.machine_type} has one thread per core; remove threadsPerCore",
            )
        )
    found += _network_problems(config)
    found += _metadata_problems(config)
    found += _label_problems(config, reserved_labels)
    found += _mount_problems(config, buckets)
    if len(config.startup_command) > 32768:
        found.append(
            Problem(
                ("startupCommand",),
                "is over 32768 characters; put a script in a bucket "
                "mounted with gcsMounts and run that",
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
        if config.nic_count is not None and config.nic_count != 1 + layout.gpu_nics:
            found.append(
                Problem(
                    ("nicCount",),
                    f"{config.machine_type} uses 1 + {layout.gpu_nics} NICs for GPUDirect; "
                    "remove nicCount",
                )
            )
        if not config.gvnic:
            found.append(
                Problem(
                    ("imageFamily",),
                    "GPUDirect NICs need gVNIC, which this image lacks; "
                    f"use {DEFAULT_IMAGE_FAMILY}",
                )
            )
    last = ipaddress.IPv4Network(config.subnet_cidr)
    if int(last.network_address) + config.nics * last.num_addresses > 2**32:
        found.append(
            Problem(
                ("subnetCidr",),
                f"{config.nics} ranges of /{last.prefixlen} from "
                f"{config.subnet_cidr} run past 255.255.255.255; pick a lower range",
            )
        )
    return found


def _metadata_problems(config: GpuClusterConfig) -> list[Problem]:
    found = []
    for key in config.metadata:
        if key.lower() in RESERVED_METADATA:
            found.append(
                Problem(
                    ("metadata", key),
                    "is set by the program (OS Login, startup script, driver, Jupyter proxy); "
                    "remove it, or use the cluster's own field for it",
                )
            )
        elif not _METADATA_KEY.fullmatch(key):
            found.append(
                Problem(("metadata", key), "keys use letters, digits, '-' and '_' (1-128)")
            )
    if sum(len(k) + len(v) for k, v in config.metadata.items()) > 256 * 1024:
        found.append(Problem(("metadata",), "exceeds Compute Engine's 256 KB; trim it"))
    return found


def _label_problems(config: GpuClusterConfig, reserved: tuple[str, ...]) -> list[Problem]:
    found = []
    for key, value in config.labels.items():
        if key in (CLUSTER_LABEL, *reserved):
            found.append(Problem(("labels", key), "is set by the program; remove it"))
        elif not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(value):
            found.append(
                Problem(
                    ("labels", key),
                    "is not a GCP label: keys and values use lowercase letters, digits, '-' and "
                    "'_' (keys start with a letter, at most 63 characters)",
                )
            )
    return found


def _mount_problems(config: GpuClusterConfig, buckets: list[str]) -> list[Problem]:
    found = []
    paths: dict[str, tuple[str, int]] = {}
    entries = [("gcsMounts", i, m.mount_path) for i, m in enumerate(config.gcs_mounts)] + [
        ("nfsShares", i, s.mount_path) for i, s in enumerate(config.nfs_shares)
    ]
    for key, i, path in entries:
        bad = _mount_path_problem(path)
        if bad:
            found.append(Problem((key, i, "mountPath"), bad))
            continue
        for other, (other_key, j) in paths.items():
            if path == other or path.startswith(other + "/") or other.startswith(path + "/"):
                found.append(
                    Problem(
                        (key, i, "mountPath"),
                        f"'{path}' overlaps {other_key}[{j}].mountPath '{other}'; every mount "
                        "needs its own, unnested path",
                    )
                )
                break
        else:
            paths[path] = (key, i)
    for i, mount in enumerate(config.gcs_mounts):
        if mount.bucket not in buckets and not _BUCKET_NAME.fullmatch(mount.bucket):
            found.append(
                Problem(
                    ("gcsMounts", i, "bucket"),
                    f"'{mount.bucket}' is neither a bucket of ai-infra:buckets "
                    f"({', '.join(buckets) or 'none'}) nor a GCS bucket name",
                )
            )
    for i, share in enumerate(config.nfs_shares):
        low, high = FILESTORE_CAPACITY_GB[share.tier]
        if not low <= share.size_gb <= high:
            found.append(
                Problem(
                    ("nfsShares", i, "sizeGb"),
                    f"{share.tier} holds {low} to {high} GiB, not {share.size_gb}; set sizeGb in "
                    "that range or pick another tier",
                )
            )
    return found


def warnings(config: GpuClusterConfig) -> list[str]:
    """What is allowed but ill-advised, for `pulumi up` to print."""
    family = config.resolved_image_family
    return [END_OF_LIFE_FAMILIES[family]] if family in END_OF_LIFE_FAMILIES else []


class GpuClusterArgs(WiringModel):
    project: str
    region: str
    zone: str
    """Resolved from the entry or `gcp:zone`."""
    prefix: str
    labels: dict[str, str]
    """The stack's resource labels."""
    protect: bool
    config: GpuClusterConfig
    stack_network: Any
    """Self link of the stack's VPC, used by `network: default`."""
    stack_network_name: Any
    """The stack VPC's name (`pulumi.Input[str]`)."""
    stack_subnet: Any
    buckets: dict[str, str]
    """GCS name of each `ai-infra:buckets` entry, by its config name."""
    bucket_resources: list[Any] = Field(default_factory=list)
    """The stack's buckets, for grants on them to wait for."""


class GpuCluster(Component):
    """A zonal managed instance group of GPU VMs with its account, network and shares."""

    instance_group: pulumi.Output[str]
    filestore_ips: pulumi.Output[list[str]]
    jupyter_urls_command: str
    """Lists each VM with its Jupyter proxy URL once the VMs are up."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ai-infra:gpu_clusters:GpuCluster", name, opts)
        config = args.config
        base = f"{args.prefix}-{config.name}"
        labels = {**args.labels, **config.labels, CLUSTER_LABEL: config.name}
        for warning in warnings(config):
            pulumi.log.warn(f"gpuClusters {config.name}: {warning}", self)

        grants = self._identity(name, args)
        networks, subnets, network_names = self._networks(name, args, base)
        shares = self._shares(name, args, base, labels, network_names[0])
        self.filestore_ips = pulumi.Output.all(*[ip for _, ip in shares])
        script = self.filestore_ips.apply(lambda ips: startup_script.render(_steps(args, ips)))

        metadata: dict[str, pulumi.Input[str]] = {
            **config.metadata,
            "enable-oslogin": "TRUE",
            "block-project-ssh-keys": "TRUE",
            "startup-script": script,
        }
        if config.dlvm:
            metadata["install-nvidia-driver"] = "True"
        if config.jupyter_proxy:
            # Deep Learning VM's proxy agent: URLs for whoever holds editor on the project.
            metadata["proxy-mode"] = "project_editors"

        placement = gpu_catalog.group_placement(config.machine_type)
        compact = None
        workload = None
        if config.instance_count > 1 and placement == "compact":
            compact = gcp.compute.ResourcePolicy(
                f"{name}-placement",
                project=args.project,
                region=args.region,
                name=f"{base}-placement",
                group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
                    collocation="COLLOCATED"
                ),
                opts=self.child_opts(),
            )
        elif config.instance_count > 1 and placement == "workload":
            workload = gcp.compute.ResourcePolicy(
                f"{name}-placement",
                project=args.project,
                region=args.region,
                name=f"{base}-placement",
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT"
                ),
                opts=self.child_opts(),
            )

        nic_type = "GVNIC" if config.gvnic else "VIRTIO_NET"
        template = gcp.compute.InstanceTemplate(
            f"{name}-template",
            project=args.project,
            # Templates are immutable: a changed one is created beside the old under a fresh
            # suffix, the group moves to it, then the old one goes.
            name_prefix=f"{base}-",
            machine_type=config.machine_type,
            guest_accelerators=[
                gcp.compute.InstanceTemplateGuestAcceleratorArgs(
                    type=config.gpu_type, count=config.gpu_count
                )
            ],
            disks=[
                gcp.compute.InstanceTemplateDiskArgs(
                    boot=True,
                    auto_delete=True,
                    device_name=BOOT_DEVICE,
                    source_image=config.image_ref,
                    disk_size_gb=config.disk_size_gb,
                    disk_type=config.disk_type,
                    labels=labels,
                )
            ],
            network_interfaces=[
                gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                    network=network, subnetwork=subnet, nic_type=nic_type
                )
                for network, subnet in zip(networks, subnets, strict=True)
            ],
            scheduling=gcp.compute.InstanceTemplateSchedulingArgs(
                # GPUs cannot live-migrate ("GPU machine types": host maintenance).
                on_host_maintenance="TERMINATE",
                automatic_restart=not config.spot,
                preemptible=config.spot,
                provisioning_model="SPOT" if config.spot else "STANDARD",
                instance_termination_action="STOP" if config.spot else None,
            ),
            # Secure Boot stays off: it refuses unsigned kernel modules, and the driver the DLVM
            # builds from `install-nvidia-driver` is unsigned (NVIDIA, "precompiled and signed
            # drivers ... required when nodes are enabled with Secure Boot"). vTPM and integrity
            # monitoring still apply.
            shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
                enable_secure_boot=False, enable_vtpm=True, enable_integrity_monitoring=True
            ),
            service_account=gcp.compute.InstanceTemplateServiceAccountArgs(
                email=service_account_email(account_id(args.prefix, config.name), args.project),
                # Access is decided by the account's IAM roles, not by scopes.
                scopes=["cloud-platform"],
            ),
            metadata=metadata,
            labels=labels,
            advanced_machine_features=(
                gcp.compute.InstanceTemplateAdvancedMachineFeaturesArgs(
                    threads_per_core=config.threads_per_core
                )
                if config.threads_per_core
                else None
            ),
            resource_policies=compact.self_link if compact else None,
            opts=self.child_opts(depends_on=grants),
        )
        self.group = gcp.compute.InstanceGroupManager(
            f"{name}-mig",
            project=args.project,
            zone=args.zone,
            name=base,
            base_instance_name=base,
            target_size=config.instance_count,
            versions=[
                gcp.compute.InstanceGroupManagerVersionArgs(
                    name="default", instance_template=template.self_link
                )
            ],
            # The boot disk holds the users' environment, notebooks and checkpoints (2 TB by
            # default): a repaired or recreated VM keeps it and its name.
            stateful_disks=[
                gcp.compute.InstanceGroupManagerStatefulDiskArgs(
                    device_name=BOOT_DEVICE, delete_rule="ON_PERMANENT_INSTANCE_DELETION"
                )
            ],
            # A new template reaches running VMs only when they are recreated; nothing restarts
            # a training job behind its users' backs.
            update_policy=gcp.compute.InstanceGroupManagerUpdatePolicyArgs(
                type="OPPORTUNISTIC",
                minimal_action="RESTART",
                replacement_method="RECREATE",
                max_surge_fixed=0,
                max_unavailable_fixed=1,
            ),
            resource_policies=(
                gcp.compute.InstanceGroupManagerResourcePoliciesArgs(
                    workload_policy=workload.self_link
                )
                if workload
                else None
            ),
            wait_for_instances=False,
            opts=self.child_opts(protect=args.protect),
        )
        self.instance_group = self.group.instance_group
        self.jupyter_urls_command = (
            f"gcloud compute instances list --project={args.project} --zones={args.zone} "
            f"--filter=labels.{CLUSTER_LABEL}={config.name} "
            "--format='value(name,metadata.items.proxy-url)'"
        )
        self.register_outputs(
            {
                "instanceGroup": self.instance_group,
                "filestoreIps": self.filestore_ips,
                "jupyterUrls": self.jupyter_urls_command,
            }
        )

    def _identity(self, name: str, args: GpuClusterArgs) -> list[pulumi.Resource]:
        """The VMs' own account: logs, metrics, the buckets it mounts, and (for Ray) reading
        which VMs the group has."""
        config = args.config
        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            project=args.project,
            account_id=account_id(args.prefix, config.name),
            display_name=f"GPU cluster {config.name} VMs",
            opts=self.child_opts(),
        )
        member = account.email.apply(lambda email: f"serviceAccount:{email}")
        roles = ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
        if config.orchestrator == "ray":
            # The startup script elects the Ray head by listing the cluster's VMs.
            roles.append("roles/compute.viewer")
        grants: list[pulumi.Resource] = [
            gcp.projects.IAMMember(
                f"{name}-{slug(role)}",
                project=args.project,
                role=role,
                member=member,
                opts=self.child_opts(),
            )
            for role in roles
        ]
        for i, mount in enumerate(config.gcs_mounts):
            role = "roles/storage.objectViewer" if mount.read_only else "roles/storage.objectUser"
            grants.append(
                gcp.storage.BucketIAMMember(
                    f"{name}-gcs{i}",
                    bucket=args.buckets.get(mount.bucket, mount.bucket),
                    role=role,
                    member=member,
                    opts=self.child_opts(depends_on=args.bucket_resources),
                )
            )
        return [account, *grants]

    def _networks(
        self, name: str, args: GpuClusterArgs, base: str
    ) -> tuple[list[pulumi.Input[str]], list[pulumi.Input[str]], list[pulumi.Input[str]]]:
        """Self links of the VPC and subnet behind each NIC, and the VPCs' names."""
        config = args.config
        if config.network == "default":
            return [args.stack_network], [args.stack_subnet], [args.stack_network_name]
        layout = config.nic_layout
        networks: list[pulumi.Input[str]] = []
        subnets: list[pulumi.Input[str]] = []
        names: list[pulumi.Input[str]] = []
        for k, cidr in enumerate(config.nic_cidrs()):
            mtu = None
            if layout is not None:
                mtu = layout.host_mtu if k == 0 else layout.gpu_mtu
            vpc = gcp.compute.Network(
                f"{name}-net{k}",
                project=args.project,
                name=f"{base}-net{k}",
                auto_create_subnetworks=False,
                routing_mode="REGIONAL",
                mtu=mtu,
                opts=self.child_opts(),
            )
            subnet = gcp.compute.Subnetwork(
                f"{name}-subnet{k}",
                project=args.project,
                region=args.region,
                name=f"{base}-subnet{k}",
                network=vpc.self_link,
                ip_cidr_range=cidr,
                private_ip_google_access=True,
                opts=self.child_opts(),
            )
            gcp.compute.Firewall(
                f"{name}-internal{k}",
                project=args.project,
                name=f"{base}-internal{k}",
                network=vpc.name,
                direction="INGRESS",
                source_ranges=[cidr],
                allows=[
                    gcp.compute.FirewallAllowArgs(protocol="tcp"),
                    gcp.compute.FirewallAllowArgs(protocol="udp"),
                    gcp.compute.FirewallAllowArgs(protocol="icmp"),
                ],
                description=f"Traffic between the GPU cluster {config.name}'s VMs on NIC {k}",
                opts=self.child_opts(),
            )
            networks.append(vpc.self_link)
            subnets.append(subnet.self_link)
            names.append(vpc.name)
            if k == 0:
                self._egress(name, args, base, vpc, subnet)
        return networks, subnets, names

    def _egress(
        self,
        name: str,
        args: GpuClusterArgs,
        base: str,
        vpc: gcp.compute.Network,
        subnet: gcp.compute.Subnetwork,
    ) -> None:
        """NAT for the host NIC (the VMs have no public IP) and SSH through IAP only."""
        cloud_nat(
            self,
            name,
            project=args.project,
            region=args.region,
            base=base,
            network=vpc.self_link,
            subnet=subnet.self_link,
        )
        gcp.compute.Firewall(
            f"{name}-iap-ssh",
            project=args.project,
            name=f"{base}-iap-ssh",
            network=vpc.name,
            direction="INGRESS",
            source_ranges=[IAP_TCP_FORWARDING_RANGE],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
            description="SSH to the GPU cluster's VMs through Identity-Aware Proxy only",
            opts=self.child_opts(),
        )

    def _shares(
        self,
        name: str,
        args: GpuClusterArgs,
        base: str,
        labels: dict[str, str],
        network_name: pulumi.Input[str],
    ) -> list[tuple[NfsShare, pulumi.Output[str]]]:
        """A Filestore instance per share, on the host NIC's VPC (Filestore takes its name)."""
        config = args.config
        shares = []
        for k, share in enumerate(config.nfs_shares):
            instance = gcp.filestore.Instance(
                f"{name}-nfs{k}",
                project=args.project,
                name=f"{base}-nfs{k}",
                # Enterprise instances are regional (Filestore "Service tiers").
                location=args.region if share.tier == "ENTERPRISE" else args.zone,
                tier=share.tier,
                file_shares=gcp.filestore.InstanceFileSharesArgs(
                    name=NFS_SHARE, capacity_gb=share.size_gb
                ),
                networks=[
                    gcp.filestore.InstanceNetworkArgs(network=network_name, modes=["MODE_IPV4"])
                ],
                labels=labels,
                opts=self.child_opts(protect=args.protect),
            )
            ip = instance.networks.apply(lambda n: (n[0].ip_addresses or [""])[0] if n else "")
            shares.append((share, ip))
        return shares


BOOT_DEVICE = "boot"
NFS_SHARE = "share"
"""The one file share of each Filestore instance (Basic tiers allow 16 characters)."""


def _steps(args: GpuClusterArgs, ips: list[str]) -> list[startup_script.Step]:
    """Ops Agent first (it runs alongside the rest), then mounts, Ray, and the user's command
    last, so that it finds its data and its cluster."""
    config = args.config
    steps: list[startup_script.Step] = []
    if config.ops_agent:
        steps.append(startup_script.OpsAgent())
    steps += [
        startup_script.GcsMount(args.buckets.get(m.bucket, m.bucket), m.mount_path, m.read_only)
        for m in config.gcs_mounts
    ]
    steps += [
        startup_script.NfsMount(ip, NFS_SHARE, share.mount_path)
        for share, ip in zip(config.nfs_shares, ips, strict=True)
    ]
    if config.orchestrator == "ray":
        steps.append(startup_script.Ray(config.name, args.zone, config.gpu_count))
    if config.startup_command:
        steps.append(startup_script.Command(config.startup_command))
    return steps
