"""The Cloud TPU API messages of a queued resource and its TPU VMs, from the provider's inputs:
the create request on the GA `tpu_v2` or the `tpu_v2alpha1` surface, the node each in-place
update sends, which inputs replace and which update, how a queued resource's state and failure
read, and whether an existing one is this entry's. Pure functions of messages and inputs; the
calls themselves are `provider.py`'s.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any, cast

from google.cloud import tpu_v2, tpu_v2alpha1

from components.api_calls import utcnow


class QueuedResourceError(Exception):
    """A queued resource that did not become ACTIVE or go away; the message says why and what
    to do."""


CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
V2 = "v2"
V2ALPHA1 = "v2alpha1"
DEAD_STATES = frozenset({"FAILED", "SUSPENDING", "SUSPENDED"})
"""A queued resource in these states never becomes ACTIVE again; it stays until deleted
(tpu/docs/queued-resources: a SUSPENDED request "is no longer eligible for further
allocation"; a FAILED one "remains in the queue until it is explicitly deleted")."""
GONE = "GONE"
"""The state `diff` reports for a queued resource the API no longer has."""
CAPACITY = ("on-demand", "reserved", "spot", "best-effort")
REPLACE_KEYS = (
    "project",
    "zone",
    "queuedResourceId",
    "acceleratorType",
    "runtimeVersion",
    "nodeCount",
    "nodePrefix",
    "capacity",
    "reservationName",
    "serviceAccount",
    "network",
    "subnetwork",
    "queueCount",
    "additionalNetworks",
    "secureBoot",
    "bootDisk",
)
"""Inputs that reach the TPU VMs and that Cloud TPU cannot change on them: the queued resource
has no update call, and UpdateNode takes none of these."""
EXTERNAL_IPS = "enableExternalIps"
IN_PLACE_KEYS = ("labels", "metadata", "tags", "dataDisks", EXTERNAL_IPS)
"""Inputs Cloud TPU changes on running TPU VMs: UpdateNode's update_mask takes labels, metadata,
tags and `network_config.enable_external_ips` (tpu_v2 and tpu_v2alpha1 UpdateNodeRequest,
google-cloud-tpu 1.28.0), and data_disks through v2alpha1, as gcloud alpha's `tpu-vm
attach-disk` and `detach-disk` send it (gcloud 578.0.0 surface/compute/tpus/tpu_vm/
attach_disk.py: UpdateNode with update_mask 'data_disks'). `update` applies them to every TPU
VM of the queued resource; nothing is replaced. The public IP is the first network's
`network_config`: with `additionalNetworks` the TPU VMs carry `network_configs` instead, which
the mask does not reach, so there a change of it replaces them."""
UPDATE_FIELDS = {
    "labels": "labels",
    "metadata": "metadata",
    "tags": "tags",
    "dataDisks": "data_disks",
    EXTERNAL_IPS: "network_config.enable_external_ips",
}
"""Each in-place input's field in UpdateNode's update_mask."""
UPDATE_KEYS = ("timeoutSeconds", "queueingPolicy", "apiVersion")
"""Inputs that shape only how a request waits, or which API surface serves it: a change is
recorded without touching the ACTIVE queued resource, and applies to its next request."""
INPUT_DEFAULTS: dict[str, Any] = {
    "queueCount": 0,
    "additionalNetworks": [],
    "bootDisk": {},
    "queueingPolicy": {},
    # States written before the GA surface was used were created through v2alpha1.
    "apiVersion": V2ALPHA1,
}
"""Inputs added since the first release, as a state written before them reads: the same
request, so that upgrading the program replaces nothing on their account."""

QueuedResourceMessage = tpu_v2.QueuedResource | tpu_v2alpha1.QueuedResource


def prop(props: Mapping[str, Any], key: str) -> Any:
    """An input as the provider reads it: one a state written before it existed has its
    default (`INPUT_DEFAULTS`)."""
    return props.get(key, INPUT_DEFAULTS.get(key))


def qualified_name(props: Mapping[str, Any]) -> str:
    return (
        f"projects/{props['project']}/locations/{props['zone']}"
        f"/queuedResources/{props['queuedResourceId']}"
    )


def delete_command(props: Mapping[str, Any]) -> str:
    return (
        f"gcloud compute tpus queued-resources delete {props['queuedResourceId']} "
        f"--zone={props['zone']} --project={props['project']} --force"
    )


def node_names(prefix: str, node_count: int) -> list[str]:
    """The TPU VMs a queued resource creates: one node named `prefix`, or for a multislice
    request `prefix-0` ... `prefix-(n-1)` (MultisliceParams.node_id_prefix in the v2 API).
    MaxText's multihost_runner.py finds exactly these with `--TPU_PREFIX=<prefix>`."""
    if node_count == 1:
        return [prefix]
    return [f"{prefix}-{i}" for i in range(node_count)]


def _queueing_policy(
    policy: Mapping[str, Any], now: datetime.datetime, wait_seconds: float
) -> tpu_v2.QueuedResource.QueueingPolicy:
    """The request's queueing policy. Its bounds are one oneof (QueueingPolicy.
    start_timing_constraints), so an earliest and a latest start together become a
    `valid_interval`, as gcloud builds it. Without a latest start the request expires when
    `pulumi up` stops waiting for it, so a request whose `pulumi up` was killed cannot start
    billing later."""
    after = _instant(policy, "validAfter", now)
    until = _instant(policy, "validUntil", now) or now + datetime.timedelta(seconds=wait_seconds)
    qp = tpu_v2.QueuedResource.QueueingPolicy
    if after is None:
        if "validUntilTime" in policy:
            return qp(valid_until_time=until)
        return qp(valid_until_duration=until - now)
    if after >= until:
        raise QueuedResourceError(
            f"the request may start from {after.isoformat()} but must start by "
            f"{until.isoformat()}; move validAfter earlier, or raise timeoutMinutes"
        )
    # google.type.Interval; proto-plus takes datetimes for its Timestamp fields.
    return qp(valid_interval={"start_time": after, "end_time": until})


def _instant(
    policy: Mapping[str, Any], bound: str, now: datetime.datetime
) -> datetime.datetime | None:
    if f"{bound}Seconds" in policy:
        return now + datetime.timedelta(seconds=int(policy[f"{bound}Seconds"]))
    if f"{bound}Time" in policy:
        return datetime.datetime.fromisoformat(policy[f"{bound}Time"])
    return None


def build_request(
    props: Mapping[str, Any], now: datetime.datetime | None = None
) -> QueuedResourceMessage:
    """The QueuedResource for the provider's inputs, of the API surface `apiVersion` names."""
    project, zone = props["project"], props["zone"]
    primary = tpu_v2.NetworkConfig(
        network=props["network"],
        subnetwork=props["subnetwork"],
        enable_external_ips=bool(props["enableExternalIps"]),
        queue_count=int(prop(props, "queueCount")),
    )
    node = tpu_v2.Node(
        accelerator_type=props["acceleratorType"],
        runtime_version=props["runtimeVersion"],
        service_account=tpu_v2.ServiceAccount(
            email=props["serviceAccount"], scope=[CLOUD_PLATFORM_SCOPE]
        ),
        shielded_instance_config=tpu_v2.ShieldedInstanceConfig(
            enable_secure_boot=bool(props["secureBoot"])
        ),
        labels=dict(props["labels"]),
        metadata=dict(props["metadata"]),
        tags=list(props["tags"]),
        data_disks=[
            tpu_v2.AttachedDisk(source_disk=d["sourceDisk"], mode=d["mode"])
            for d in props["dataDisks"]
        ],
    )
    extra = [
        tpu_v2.NetworkConfig(
            network=n["network"], subnetwork=n["subnetwork"], queue_count=int(n["queueCount"])
        )
        for n in prop(props, "additionalNetworks")
    ]
    # Node: "network_config and network_configs are mutually exclusive".
    if extra:
        node.network_configs = [primary, *extra]
    else:
        node.network_config = primary
    spec = tpu_v2.QueuedResource.Tpu.NodeSpec(
        parent=f"projects/{project}/locations/{zone}", node=node
    )
    count = int(props["nodeCount"])
    if count == 1:
        spec.node_id = props["nodePrefix"]
    else:
        # MultisliceParams: "node_count ... must be greater than 1"; one oneof with node_id.
        spec.multislice_params = tpu_v2.QueuedResource.Tpu.NodeSpec.MultisliceParams(
            node_count=count, node_id_prefix=props["nodePrefix"]
        )
    request = tpu_v2.QueuedResource(
        tpu=tpu_v2.QueuedResource.Tpu(node_spec=[spec]),
        queueing_policy=_queueing_policy(
            prop(props, "queueingPolicy"), now or utcnow(), float(props["timeoutSeconds"])
        ),
    )
    capacity = props["capacity"]
    if capacity not in CAPACITY:
        raise ValueError(f"capacity '{capacity}' is not one of {', '.join(CAPACITY)}")
    if capacity == "reserved":
        # gcloud's GA `--reserved` asks for any matching reservation in the zone this way
        # (command_lib/compute/tpus/queued_resources/util.py).
        request.reservation_name = (
            props["reservationName"] or f"projects/{project}/locations/{zone}/reservations/-"
        )
    elif capacity == "spot":
        request.spot = tpu_v2.QueuedResource.Spot()
    if prop(props, "apiVersion") == V2:
        if capacity == "best-effort" or prop(props, "bootDisk"):
            raise ValueError("best-effort capacity and bootDisk need apiVersion v2alpha1")
        return request
    return _v2alpha1(request, props)


def _v2alpha1(request: tpu_v2.QueuedResource, props: Mapping[str, Any]) -> QueuedResourceMessage:
    """The same request on the v2alpha1 surface, plus what only it has."""
    # Through JSON, which carries the well-known types (the interval's timestamps) as the API
    # does; the two surfaces name the multislice parameters differently.
    data = json.loads(
        tpu_v2.QueuedResource.to_json(
            request, preserving_proto_field_name=True, always_print_fields_with_no_presence=False
        )
    )
    for spec in data["tpu"]["node_spec"]:
        if "multislice_params" in spec:
            spec["multi_node_params"] = spec.pop("multislice_params")
    alpha = cast(
        tpu_v2alpha1.QueuedResource, tpu_v2alpha1.QueuedResource.from_json(json.dumps(data))
    )
    if props["capacity"] == "reserved":
        # gcloud alpha's `--reserved` is Guaranteed.reserved, with the reservation if named.
        alpha.guaranteed = tpu_v2alpha1.QueuedResource.Guaranteed(reserved=True)
        alpha.reservation_name = props["reservationName"]
    elif props["capacity"] == "best-effort":
        alpha.best_effort = tpu_v2alpha1.QueuedResource.BestEffort()
    boot = prop(props, "bootDisk")
    if boot:
        config = tpu_v2alpha1.BootDiskConfig(
            enable_confidential_compute=bool(boot.get("confidentialCompute", False))
        )
        if boot.get("kmsKeyName"):
            config.customer_encryption_key = tpu_v2alpha1.CustomerEncryptionKey(
                kms_key_name=boot["kmsKeyName"]
            )
        alpha.tpu.node_spec[0].node.boot_disk_config = config
    return alpha


def state_of(resource: QueuedResourceMessage) -> str:
    return tpu_v2.QueuedResourceState.State(resource.state.state).name


def failure_reason(resource: QueuedResourceMessage) -> str:
    state = resource.state
    error = state.failed_data.error if "failed_data" in state else None
    if error is not None and error.message:
        return error.message
    initiator = tpu_v2.QueuedResourceState.StateInitiator(state.state_initiator).name
    if initiator == "SERVICE":
        return "the Cloud TPU service ended it (for spot or best-effort capacity: preemption)"
    if initiator == "USER":
        return "a user ended it"
    return "no reason given"


def echoed_nodes(resource: QueuedResourceMessage) -> list[str]:
    """The TPU VM names a queued resource holds: GET lists one node spec per node with its
    `node_id` (what gcloud's `queued-resources ssh` iterates), or the multislice parameters."""
    names: list[str] = []
    for spec in resource.tpu.node_spec:
        params = (
            spec.multislice_params
            if isinstance(spec, tpu_v2.QueuedResource.Tpu.NodeSpec)
            else spec.multi_node_params
        )
        if spec.node_id:
            names.append(spec.node_id)
        elif params.node_count:
            names += node_names(params.node_id_prefix, params.node_count)
    return sorted(names)


def _merged(current: Mapping[str, str], old: Mapping[str, str], new: Mapping[str, str]):
    """`current` with what this entry set before (`old`) replaced by what it sets now."""
    return {**{k: v for k, v in current.items() if k not in old}, **new}


def node_update(
    api: str,
    path: str,
    current: Any,
    olds: Mapping[str, Any],
    news: Mapping[str, Any],
    changed: list[str],
) -> Any:
    """The Node message UpdateNode takes for `changed`, on the API surface `api`: each field
    as the TPU VM has it now, less what the entry set before, plus what it sets now."""
    types: Any = tpu_v2 if api == V2 else tpu_v2alpha1
    node = types.Node(name=path)
    if "labels" in changed:
        node.labels = _merged(current.labels, prop(olds, "labels"), prop(news, "labels"))
    if "metadata" in changed:
        node.metadata = _merged(current.metadata, prop(olds, "metadata"), prop(news, "metadata"))
    if "tags" in changed:
        old_tags = set(prop(olds, "tags"))
        kept = [t for t in current.tags if t not in old_tags]
        node.tags = list(dict.fromkeys([*kept, *prop(news, "tags")]))
    if "dataDisks" in changed:
        old_disks = {d["sourceDisk"] for d in prop(olds, "dataDisks")}
        disks = [
            types.AttachedDisk(source_disk=d.source_disk, mode=d.mode)
            for d in current.data_disks
            if d.source_disk not in old_disks
        ]
        disks += [
            types.AttachedDisk(source_disk=d["sourceDisk"], mode=d["mode"])
            for d in prop(news, "dataDisks")
        ]
        node.data_disks = disks
    if EXTERNAL_IPS in changed:
        node.network_config = types.NetworkConfig(
            enable_external_ips=bool(prop(news, EXTERNAL_IPS))
        )
    return node


def create_time(resource: QueuedResourceMessage) -> str:
    # proto-plus gives a Timestamp field as a datetime, or None while unset.
    created: Any = resource.create_time
    return created.isoformat() if created else ""


def why_foreign(resource: QueuedResourceMessage, props: Mapping[str, Any]) -> str | None:
    """Why an existing queued resource by this entry's id is not the one this entry asks for,
    or None when it is: the same TPU VMs, accelerator, software and account, carrying every
    label the entry sets (the stack's `ai-infra-stack` among them)."""
    specs = list(resource.tpu.node_spec)
    if not specs:
        return "it holds no TPU node spec"
    node = specs[0].node
    wanted = {
        "accelerator type": (node.accelerator_type, props["acceleratorType"]),
        "software version": (node.runtime_version, props["runtimeVersion"]),
        "service account": (node.service_account.email, props["serviceAccount"]),
        "TPU VMs": (
            ", ".join(echoed_nodes(resource)),
            ", ".join(sorted(node_names(props["nodePrefix"], int(props["nodeCount"])))),
        ),
    }
    for what, (got, want) in wanted.items():
        if got != want:
            return f"its {what} is '{got}', this entry's '{want}'"
    missing = sorted(k for k, v in props["labels"].items() if node.labels.get(k) != v)
    if missing:
        return f"it lacks this entry's labels {', '.join(missing)}"
    return None
