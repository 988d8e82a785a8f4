"""One validated type per GCP value: every config field that holds a project id, region, zone,
name, range, role, account, tag, metadata key or label set uses the type here, so that one
value is accepted or refused the same way wherever it is written.

Each type checks the value's form, with a message that says how to write it; whether the value
fits the stack (a zone in `gcp:region`, a label key the program does not own) is a `Problem`
of the module that knows the stack.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Sequence
from typing import Annotated

from pydantic import AfterValidator

from catalog import iam as iam_catalog
from components.base import MAX_LABELS, anchored, at_most, described, matching


@described("", {"not": {"pattern": "google"}})
def _no_google(value: str) -> str:
    # "Creating and managing projects": ids cannot contain restricted strings such as google.
    if "google" in value:
        raise ValueError(f"'{value}' contains 'google', which GCP project ids may not")
    return value


PROJECT_ID = r"[a-z][-a-z0-9]{4,28}[a-z0-9]"
ProjectId = Annotated[
    str,
    matching(PROJECT_ID, "is not a GCP project id (6-30 lowercase letters, digits, '-')"),
    AfterValidator(_no_google),
]
"""A GCP project id, e.g. `ml-platform-dev`."""

ImageProject = Annotated[
    str,
    matching(
        r"[a-z][-a-z0-9.:]{4,62}[a-z0-9]",
        "is not a project id such as deeplearning-platform-release",
    ),
]
"""A project that publishes images; unlike a stack's project it may be domain-scoped."""

REGION = r"[a-z]+-[a-z]+[0-9]{1,2}"
Region = Annotated[str, matching(REGION, "is not a GCP region such as us-east5")]
"""A Compute Engine region."""

ZONE = rf"{REGION}-[a-z][a-z0-9]{{0,4}}"
"""A zone: its region and a letter, or an AI zone such as `us-central1-ai1a`."""
Zone = Annotated[str, matching(ZONE, "is not a GCP zone such as us-east5-a or us-central1-ai1a")]
"""A Compute Engine zone; whether it exists in `gcp:region` is `locations.zone_problem`."""

_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


@described("DNS label", {"pattern": anchored(_DNS_LABEL), "maxLength": 63})
def _dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a valid name: use lowercase letters, digits and '-', "
            "starting with a letter and not ending with '-' (at most 63 characters)"
        )
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
"""A name usable in GCP resource names, Kubernetes namespaces and node pool names."""

GCE_NAME = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
GceName = Annotated[
    str,
    matching(
        GCE_NAME,
        "is not a Compute Engine resource name: 1 to 63 lowercase letters, digits and '-', "
        "starting with a letter",
    ),
]
"""The name of a Compute Engine resource (a VPC, a subnet, an image, a reservation)."""

NetworkTag = Annotated[
    str,
    matching(
        GCE_NAME,
        "is not a network tag: 1-63 lowercase letters, digits or '-', starting with a letter",
    ),
]
"""A Compute Engine network tag, which firewall rules target."""

MachineType = Annotated[
    str,
    matching(
        r"[a-z][a-z0-9]*(-[a-z0-9]+){1,4}",
        "is not a Compute Engine machine type such as e2-standard-8 or n2-highmem-32",
    ),
]
"""A Compute Engine machine type; GPU and TPU catalogs decide which ones fit a pool."""


@described("IPv4 CIDR", {"pattern": r"^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$"})
def _cidr(value: str) -> str:
    try:
        network = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        raise ValueError(f"'{value}' is not an IPv4 CIDR range such as 10.0.0.0/20") from None
    if "/" not in value:
        raise ValueError(f"'{value}' has no prefix length; write a range such as {value}/20")
    if str(network) != value:
        raise ValueError(f"'{value}' has host bits set; write the range as {network}")
    return value


Cidr = Annotated[str, AfterValidator(_cidr)]
"""An IPv4 range written as its network address and prefix length."""

BASIC_ROLES = frozenset({"roles/owner", "roles/editor", "roles/viewer"})
_ROLE = re.compile(
    # Predefined roles are service.role, each part starting lowercase
    # (roles/storage.objectViewer); IAM compares roles exactly, so roles/Logging.LogWriter
    # is no role at all. Custom role ids are 3-64 letters, digits, '_' and '.'.
    r"roles/[a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)+"
    rf"|(projects/{PROJECT_ID}|organizations/[0-9]+)/roles/[A-Za-z0-9_.]{{3,64}}"
)


@described(
    "IAM role",
    {
        "pattern": anchored(_ROLE),
        "not": {"enum": sorted(BASIC_ROLES | set(iam_catalog.ESCALATING_ROLES))},
    },
)
def _role(value: str) -> str:
    # Compared without case or surrounding space, so `roles/Owner` or `roles/owner\n` cannot
    # slip a basic role past the check.
    if value.strip().lower() in BASIC_ROLES:
        raise ValueError(
            f"'{value}' is a basic role and grants far more than a workload needs; grant "
            "predefined roles instead (e.g. roles/storage.objectUser, roles/logging.logWriter)"
        )
    if iam_catalog.SERVICE_AGENT_ROLE.fullmatch(value):
        raise ValueError(
            f"'{value}' is a service agent role, which Google grants to its services' own "
            "agents and no other principal (cloud.google.com/iam/docs/service-agents); grant "
            "the narrow roles the work calls instead"
        )
    if not _ROLE.fullmatch(value):
        raise ValueError(
            f"'{value}' is not an IAM role; use a predefined role, written as IAM writes it "
            "(roles/storage.objectUser), or a custom role projects/PROJECT/roles/NAME"
        )
    if permission := iam_catalog.ESCALATING_ROLES.get(value):
        raise ValueError(
            f"'{value}' holds {permission}, which lets whoever runs as this account (anyone "
            "logged in to its VMs, any pod of its namespace) take further roles, up to the "
            "project's owner; grant the narrow roles the work calls instead"
        )
    return value


IamRole = Annotated[str, AfterValidator(_role)]
"""An IAM role other than the basic roles owner, editor and viewer."""

_MEMBER = re.compile(
    r"(user|group|serviceAccount):[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"
    r"|domain:[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+"
    r"|principal(Set)?://iam\.googleapis\.com/[!-~]+"
)


@described("IAM member", {"pattern": anchored(_MEMBER)})
def _member(value: str) -> str:
    if value in ("allUsers", "allAuthenticatedUsers"):
        raise ValueError(
            f"'{value}' would make the resource public; grant a user:, group: or "
            "serviceAccount: member instead"
        )
    if not _MEMBER.fullmatch(value):
        raise ValueError(
            f"'{value}' is not an IAM member; write e.g. group:ml-team@example.com, "
            "user:alice@example.com, serviceAccount:NAME@PROJECT.iam.gserviceaccount.com or "
            "domain:example.com"
        )
    return value


IamMember = Annotated[str, AfterValidator(_member)]
"""An IAM principal that is never public: `user:`, `group:`, `serviceAccount:`, `domain:`."""

_RESERVATION = re.compile(
    rf"(?P<name>{GCE_NAME})|projects/(?P<project>{PROJECT_ID})/reservations/(?P<shared>{GCE_NAME})"
)


@described("reservation name", {"pattern": anchored(_RESERVATION)})
def _reservation(value: str) -> str:
    if not _RESERVATION.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a reservation: write its name, or projects/PROJECT/reservations/"
            "NAME for one shared from another project"
        )
    return value


Reservation = Annotated[str, AfterValidator(_reservation)]
"""A reservation in the stack's project by name, or one shared from project P as
`projects/P/reservations/NAME`."""


def reservation_parts(reservation: str, project: str) -> tuple[str, str]:
    """(project, name) of a valid `Reservation`, its project defaulting to the stack's."""
    match = _RESERVATION.fullmatch(reservation)
    if match is None:
        raise ValueError(f"'{reservation}' is not a reservation")
    if match["name"]:
        return project, match["name"]
    return match["project"], match["shared"]


_SERVICE_ACCOUNT = re.compile(
    # A domain-scoped project's accounts are NAME@PROJECT.DOMAIN.iam.gserviceaccount.com
    # (IAM "Service accounts", domain-scoped projects).
    rf"(?P<id>{PROJECT_ID})@(?P<project>{PROJECT_ID})"
    r"(?:\.(?P<domain>[a-z0-9][-a-z0-9]*(?:\.[a-z0-9][-a-z0-9]*)+))?\.iam\.gserviceaccount\.com"
)
_DEFAULT_COMPUTE = re.compile(r"[0-9]+-compute@developer\.gserviceaccount\.com")
_SERVICE_AGENT = re.compile(r"service-[0-9]+@gcp-sa-[-a-z0-9]+\.iam\.gserviceaccount\.com")
"""Google-managed service agents (IAM "Service agents"): they act for a Google service."""


@described("service account email", {"pattern": anchored(_SERVICE_ACCOUNT)})
def _service_account(value: str) -> str:
    if _DEFAULT_COMPUTE.fullmatch(value):
        raise ValueError(
            f"'{value}' is the default compute service account, which is granted the project "
            "Editor role by default; leave it unset for a dedicated least-privilege account"
        )
    if _SERVICE_AGENT.fullmatch(value):
        raise ValueError(
            f"'{value}' is a Google-managed service agent, which acts for a Google service, "
            "not a workload; leave it unset for a dedicated least-privilege account"
        )
    match = _SERVICE_ACCOUNT.fullmatch(value)
    # A project id never contains "google" (see _no_google), so that is a domain read wrong.
    if match is None or "google" in match["project"]:
        raise ValueError(
            f"'{value}' is not a user-managed service account email "
            "(NAME@PROJECT.iam.gserviceaccount.com)"
        )
    return value


ServiceAccountEmail = Annotated[str, AfterValidator(_service_account)]
"""A user-managed service account, `NAME@PROJECT.iam.gserviceaccount.com`; Google-managed
defaults (the default compute account and the like) are refused."""


def service_account_project(email: str) -> str:
    """The project that owns a valid `ServiceAccountEmail`, as IAM names it."""
    match = _SERVICE_ACCOUNT.fullmatch(email)
    if match is None:
        raise ValueError(f"'{email}' is not a service account email")
    domain = match["domain"]
    return f"{domain}:{match['project']}" if domain else match["project"]


MetadataKey = Annotated[
    str,
    matching(
        r"[a-zA-Z0-9_-]{1,128}",
        "is not a metadata key: use letters, digits, '-' and '_' (at most 128 characters)",
    ),
]
"""A Compute Engine metadata key."""

LABEL_KEY = re.compile(r"[a-z][-_a-z0-9]{0,62}")
LABEL_VALUE = re.compile(r"[-_a-z0-9]{0,63}")


@described(
    "map: label key → value",
    {
        "propertyNames": {"pattern": anchored(LABEL_KEY)},
        "additionalProperties": {"type": "string", "pattern": anchored(LABEL_VALUE)},
    },
)
def _labels(labels: dict[str, str]) -> dict[str, str]:
    bad = sorted(
        k for k, v in labels.items() if not LABEL_KEY.fullmatch(k) or not LABEL_VALUE.fullmatch(v)
    )
    if bad:
        raise ValueError(
            f"labels {', '.join(bad)} are not GCP labels: keys and values use lowercase "
            "letters, digits, '-' and '_' (keys start with a letter), at most 63 characters"
        )
    return labels


Labels = Annotated[
    dict[str, str],
    at_most(MAX_LABELS, "GCP allows 64 labels per resource"),
    AfterValidator(_labels),
]
"""GCP labels. Which keys the program owns, and how many fit beside the stack's, are
problems of the stack (`components.context.label_problems`)."""

DISK_PATH = re.compile(rf"projects/{PROJECT_ID}/zones/(?P<zone>{ZONE})/disks/{GCE_NAME}")
DiskPath = Annotated[
    str, matching(DISK_PATH, "is not a disk: projects/PROJECT/zones/ZONE/disks/NAME")
]
"""An existing Persistent Disk or Hyperdisk by its path."""


DiskImage = Annotated[
    str,
    matching(
        rf"projects/{PROJECT_ID}/global/images/{GCE_NAME}",
        "is not a disk image: projects/PROJECT/global/images/NAME",
    ),
]
"""A Compute Engine disk image by its path (an image itself, not a family)."""

KmsCryptoKey = Annotated[
    str,
    matching(
        rf"projects/{PROJECT_ID}/locations/[a-z][-a-z0-9]{{0,62}}"
        r"/keyRings/[A-Za-z0-9_-]{1,63}/cryptoKeys/[A-Za-z0-9_-]{1,63}",
        "is not a Cloud KMS key: projects/PROJECT/locations/LOCATION/keyRings/RING/cryptoKeys/KEY",
    ),
]
"""A Cloud KMS crypto key by its resource name (Cloud KMS "Resource names": key ring and key
ids are 1-63 letters, digits, '_' and '-')."""


def disk_zone(path: str) -> str:
    """The zone of a valid `DiskPath`."""
    match = DISK_PATH.fullmatch(path)
    if match is None:
        raise ValueError(f"'{path}' is not a disk path")
    return match["zone"]


_MOUNT_PATH = re.compile(r"/[A-Za-z0-9._-][A-Za-z0-9._/-]*")
"""One leading '/': POSIX leaves a path that starts with exactly two slashes to the system
(posixpath.normpath keeps `//etc`), and Linux reads it as `/etc`."""


@described("absolute path", {"pattern": anchored(_MOUNT_PATH)})
def _mount_path(value: str) -> str:
    # normpath folds '..', '.', '//' inside and a trailing '/': a path equal to its normal
    # form climbs nowhere.
    if not _MOUNT_PATH.fullmatch(value) or posixpath.normpath(value) != value:
        raise ValueError(
            f"'{value}' is not an absolute, normalised path of letters, digits, '.', '_', '-' "
            "and '/' (one leading '/', no '..', no trailing '/'); write e.g. /gcs/data"
        )
    return value


MountPath = Annotated[str, AfterValidator(_mount_path)]
"""Where a file system is mounted on a VM: absolute and normalised."""

SYSTEM_DIRS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
)
"""Top-level directories of a VM's OS that a file system mounted at or under would hide."""


def shadowed_dir(path: str, also: Sequence[str] = ()) -> str | None:
    """The top-level directory a mount at `path` (a `MountPath`) would hide: one of
    `SYSTEM_DIRS` or of a system's own `also`; None when it hides none."""
    top = "/" + path.split("/")[1]
    return top if top in SYSTEM_DIRS or top in also else None


_IMAGE = re.compile(
    r"(?:(?P<registry>[a-zA-Z0-9][-a-zA-Z0-9.]*[a-zA-Z0-9](?::[0-9]{1,5})?)/)?"
    r"(?P<path>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?"
)


@described("container image", {"pattern": anchored(_IMAGE)})
def _image(value: str) -> str:
    if len(value) > 512 or not _IMAGE.fullmatch(value):
        raise ValueError(
            f"'{value}' is not a container image reference; write REGISTRY/PATH:TAG or "
            "REGISTRY/PATH@sha256:DIGEST, e.g. us-docker.pkg.dev/my-project/images/app:1.0"
        )
    return value


ImageReference = Annotated[str, AfterValidator(_image)]
"""A container image: `REGISTRY/PATH[:TAG][@sha256:DIGEST]`."""


def image_registry(image: str) -> str | None:
    """The registry host of a valid `ImageReference`, or None for Docker Hub's short form."""
    match = _IMAGE.fullmatch(image)
    return match["registry"] if match else None


def is_digest_pinned(image: str) -> bool:
    match = _IMAGE.fullmatch(image)
    return bool(match and match["digest"])


def image_has_tag_or_digest(image: str) -> bool:
    match = _IMAGE.fullmatch(image)
    return bool(match and (match["tag"] or match["digest"]))


ARTIFACT_REPOSITORY = re.compile(
    r"(?P<location>[a-z]+(?:-[a-z]+[0-9]{1,2})?)-docker\.pkg\.dev/"
    rf"(?P<project>{PROJECT_ID})/(?P<repository>[a-z](?:[-a-z0-9]{{0,61}}[a-z0-9])?)"
)
"""A Docker repository of Artifact Registry as images name it: `LOCATION-docker.pkg.dev/
PROJECT/REPOSITORY`, LOCATION a region or multi-region (Artifact Registry "Repository and
image names"; repository ids are lowercase letters, digits and '-', starting with a letter)."""
ArtifactRepository = Annotated[
    str,
    matching(
        ARTIFACT_REPOSITORY,
        "is not an Artifact Registry Docker repository; write it as images name it, "
        "LOCATION-docker.pkg.dev/PROJECT/REPOSITORY, e.g. us-docker.pkg.dev/my-project/vision",
    ),
]


def artifact_repository(image: str) -> str | None:
    """The `ArtifactRepository` an image of Artifact Registry lives in, or None for an image
    of any other registry."""
    match = ARTIFACT_REPOSITORY.match(image)
    if match is None or image[match.end() : match.end() + 1] != "/":
        return None
    return match[0]


def repository_parts(repository: str) -> tuple[str, str, str]:
    """(location, project, repository id) of a valid `ArtifactRepository`."""
    match = ARTIFACT_REPOSITORY.fullmatch(repository)
    assert match is not None, repository
    return match["location"], match["project"], match["repository"]
