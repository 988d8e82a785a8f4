"""`uv run python -m workload <stack> submit|list|logs|delete ...`.

`submit` renders a team's JobSet from the stack, checks it offline and prints it with what it
checked (`-o FILE` writes the same to a file); `--apply` then submits it with the official
Kubernetes client and your kubeconfig. `list`, `logs` (the leader pod's) and `delete` act on
the team's JobSets. Exits 0 when done, 1 when a check or the cluster refuses, 2 on bad input;
nothing is sent unless every check passed.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The flags are read before anything heavier than argparse is imported: `--help` and a wrong
# flag answer at once, and each command imports what it needs when it runs
# (benchmarks/README.md, "The front door").
if TYPE_CHECKING:
    from graph.stack import Stack
    from workload import checks
    from workload.cluster import Cluster
    from workload.request import Request
    from workload.target import Target

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2


def load(target: str, *, build: bool = True) -> Stack:
    """Open a stack as the plan does (its warnings, its refusals), under the mock engine;
    without `build`, only its config (for commands that need no more than a team's
    namespace). A stack without a GKE cluster runs no JobSets."""
    from graph.files import StackError, stack_path
    from graph.stack import open_stack
    from stacks.messages import ConfigError

    _, path = stack_path(target)
    try:
        stack = open_stack(target, build=build)
    except ConfigError as error:
        lines = "\n  ".join(f"{where}: {message}" for where, message in error.rendered)
        raise StackError(f"{path.name} is not a valid stack config:\n  {lines}") from None
    if not stack.config.cluster.enabled:
        raise StackError(f"stack '{stack.name}' builds no GKE cluster (cluster.enabled: false)")
    return stack


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m workload",
        description="Run a team's training job on the stack's capacity as a JobSet.",
    )
    top.add_argument("stack", help="stack name (prod) or stack file path")
    commands = top.add_subparsers(dest="command", required=True)

    submit = commands.add_parser("submit", help="render, check and (with --apply) submit")
    submit.add_argument("--team", required=True)
    submit.add_argument(
        "--slice",
        required=True,
        dest="capacity",
        help="a tpuSlices name, tpuProvisioner.<type>, or a gpuPools name",
    )
    submit.add_argument("--name", required=True, help="the JobSet's name")
    submit.add_argument("--image", required=True)
    submit.add_argument("--slices", type=int, help="TPU slices (default 1)")
    submit.add_argument("--nodes", type=int, help="GPU nodes (default 1)")
    submit.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    submit.add_argument("--priority", help="a kueue.priorityClasses name")
    submit.add_argument("--max-restarts", type=int, default=0)
    submit.add_argument(
        "--ttl", help="delete the JobSet this long after it ends: 3600, 90m, 12h (default 12h)"
    )
    submit.add_argument(
        "--grace-period",
        help="time a stopped pod has to save its state before it is killed: 30, 5m (default 30s)",
    )
    submit.add_argument(
        "--volume",
        dest="volumes",
        action="append",
        default=[],
        metavar="NAME",
        help="mount at /data/NAME an ai-infra:storage volume or a bucket the team is granted",
    )
    submit.add_argument("--cpu", help="CPU each pod requests, e.g. 32")
    submit.add_argument("--memory", help="memory each pod requests, e.g. 256Gi")
    submit.add_argument(
        "--as-group",
        action="append",
        default=[],
        help="a Google group you act as, for the offline RBAC check",
    )
    submit.add_argument("-o", "--output", type=Path, help="write the report and manifest here")
    submit.add_argument("--apply", action="store_true", help="submit it to the cluster")
    _cluster_flags(submit)
    submit.add_argument("args", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")

    for name, helptext in (
        ("list", "the team's JobSets and their Kueue state"),
        ("logs", "the leader pod's logs"),
        ("delete", "delete a JobSet, its Jobs and pods"),
    ):
        sub = commands.add_parser(name, help=helptext)
        sub.add_argument("--team", required=True)
        if name != "list":
            sub.add_argument("name", help="the JobSet's name")
        if name == "logs":
            sub.add_argument("--tail", type=int, help="only the last N lines")
        _cluster_flags(sub)
    return top


def _cluster_flags(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--kubeconfig", help="default: $KUBECONFIG or ~/.kube/config")
    sub.add_argument("--context", help="a context of the kubeconfig")


def request_of(args: argparse.Namespace) -> Request:
    """The flags as a request, each checked on its own."""
    from workload.request import (
        FlagError,
        Request,
        check_image,
        check_memory,
        check_quantity,
        parse_env,
        parse_grace,
        parse_ttl,
    )

    check_image(args.image)
    check_quantity("--cpu", args.cpu)
    check_quantity("--memory", args.memory)
    check_memory(args.memory)
    if args.max_restarts < 0:
        raise FlagError("--max-restarts", f"{args.max_restarts} is negative")
    command = list(args.args)
    if command[:1] == ["--"]:
        command = command[1:]
        if not command or not command[0].strip():
            raise FlagError(
                "COMMAND",
                "nothing to run after '--'; give the command (-- python3 train.py), or leave "
                "out '--' to run the image's entrypoint",
            )
    elif command:
        raise FlagError("COMMAND", f"put the command after '--': -- {shlex.join(command)}")
    return Request(
        team=args.team,
        capacity=args.capacity,
        name=args.name,
        image=args.image,
        command=command,
        slices=args.slices,
        nodes=args.nodes,
        env=parse_env(args.env),
        priority=args.priority,
        max_restarts=args.max_restarts,
        ttl_seconds=parse_ttl(args.ttl),
        grace_seconds=parse_grace(args.grace_period),
        volumes=list(args.volumes),
        cpu=args.cpu,
        memory=args.memory,
    )


def _check_against_stack(stack: Stack, request: Request, target: Target) -> None:
    from workload.mounts import volume_problems
    from workload.render import replicas_and_pods
    from workload.render import replicated_job_name as job_name
    from workload.request import FlagError, check_name

    if target.tpu and request.nodes is not None:
        raise FlagError("--nodes", f"{target.source} is TPU capacity; give --slices")
    if not target.tpu and request.slices is not None:
        raise FlagError("--slices", f"{target.source} is a GPU pool; give --nodes")
    replicas, pods = replicas_and_pods(request, target)
    check_name(request.name, job_name(target), replicas, pods)
    classes = stack.config.kueue.priority_classes
    if request.priority is not None and request.priority not in classes:
        raise FlagError(
            "--priority",
            f"'{request.priority}' is not a priority class of the stack ({', '.join(classes)})",
        )
    if problems := volume_problems(stack.config, target.team, request.volumes):
        raise FlagError("--volume", "; ".join(problems))


def render(
    stack: Stack, request: Request, groups: list[str]
) -> tuple[dict[str, Any], list[checks.Check], list[str]]:
    """The JobSet, the checks it passed or failed, and what the report says about it."""
    from workload import checks
    from workload.mounts import team_volumes
    from workload.render import jobset, networking, replicas_and_pods
    from workload.target import resolve

    target = resolve(stack, request.team, request.capacity)
    _check_against_stack(stack, request, target)
    replicas, _ = replicas_and_pods(request, target)
    net = networking(target, replicas)
    mounts = team_volumes(stack.config, target, request.volumes, host_network=net.host_network)
    manifest = jobset(request, target, mounts, net)
    found = [
        checks.capacity_check(request, target),
        checks.crd_check(manifest),
        checks.rbac_check(stack, target, groups),
        checks.policy_check(stack, target, manifest),
        checks.admission_check(stack, target, manifest),
    ]
    notes = [
        f"team {target.team.name}: namespace {target.namespace}, runs as "
        f"{target.service_account}, queue {target.local_queue} -> ClusterQueue "
        f"{target.cluster_queue}, flavor {target.flavor}",
        f"network: {net.reason}",
        *(f"volume: {line}" for line in mounts.lines),
    ]
    return manifest, found, notes


def report(
    command: str, manifest: dict[str, Any], found: list[checks.Check], notes: list[str]
) -> str:
    """The manifest with what was checked, as YAML comments above it."""
    import yaml

    lines = [f"# {command}", "#"]
    lines += [f"# {note}" for note in notes]
    lines += [f"# {'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}" for c in found]
    return "\n".join(lines) + "\n" + yaml.safe_dump(manifest, sort_keys=False)


def command_line(argv: Sequence[str]) -> str:
    """How the report names the command that made it, without where it was written."""
    shown, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("-o", "--output"):
            skip = True
            continue
        shown.append(arg)
    return "uv run python -m workload " + shlex.join(shown)


def submit(args: argparse.Namespace, argv: Sequence[str], connect: Connect) -> int:
    from workload.cluster import ClusterError
    from workload.request import FlagError

    request = request_of(args)
    stack = load(args.stack)
    manifest, found, notes = render(stack, request, args.as_group)
    text = report(command_line(argv), manifest, found, notes)
    if args.output is not None:
        try:
            args.output.write_text(text)
        except OSError as error:
            raise FlagError("-o", f"cannot write {args.output}: {error.strerror}") from None
    else:
        sys.stdout.write(text)
    if not all(c.ok for c in found):
        print("not submitted: a check failed", file=sys.stderr)
        return EXIT_REFUSED
    if not args.apply:
        return 0
    cluster = connect(args.kubeconfig, args.context)
    namespace = manifest["metadata"]["namespace"]
    allowed, reason = cluster.may_create_jobsets(namespace)
    if not allowed:
        raise FlagError(
            "--team",
            f"your credentials may not create JobSets in namespace {namespace}"
            + (f" ({reason})" if reason else "")
            + "; ask to be added to one of the team's groups",
        )
    try:
        cluster.create(manifest)
    except ClusterError as error:
        if error.status == 409:
            raise FlagError(
                "--name",
                f"a JobSet named {request.name} already exists in {namespace}; delete it "
                f"(python -m workload {args.stack} delete --team {request.team} "
                f"{request.name}) or choose another name",
            ) from None
        if error.status == 403:
            raise FlagError("--team", f"{error}: you may not create JobSets there") from None
        raise
    print(
        f"submitted JobSet {namespace}/{request.name}; follow it with "
        f"python -m workload {args.stack} logs --team {request.team} {request.name}",
        file=sys.stderr,
    )
    return 0


def _state(jobset: dict[str, Any], workload: dict[str, Any] | None) -> str:
    conditions = {
        c["type"]: c
        for c in jobset.get("status", {}).get("conditions", [])
        if c.get("status") == "True"
    }
    for kind in ("Completed", "Failed"):
        if kind in conditions:
            return kind.lower()
    if workload is not None and workload.get("spec", {}).get("active") is False:
        return "deactivated (requeue limit reached); delete it to release its quota and pools"
    if jobset.get("spec", {}).get("suspend"):
        evicted = [
            c
            for c in (workload or {}).get("status", {}).get("conditions", [])
            if c.get("type") == "Evicted" and c.get("status") == "True"
        ]
        if evicted:
            return f"evicted ({evicted[0].get('reason', '')}), waiting to be requeued"
        return "queued"
    return "running"


def list_jobsets(args: argparse.Namespace, connect: Connect) -> int:
    from components.gke import DEFAULT_LOCAL_QUEUE, PROVISIONED_QUEUE_SUFFIX
    from workload.render import QUEUE_LABEL
    from workload.target import team_of

    stack = load(args.stack, build=False)
    namespace = team_of(stack, args.team).name
    cluster = connect(args.kubeconfig, args.context)
    workloads = {
        ref["name"]: w
        for w in cluster.workloads(namespace)
        for ref in w.get("metadata", {}).get("ownerReferences", [])
        if ref.get("kind") == "JobSet"
    }
    items = cluster.jobsets(namespace)
    if not items:
        print(f"no JobSets in {namespace}")
    for item in items:
        name = item["metadata"]["name"]
        queue = item["metadata"].get("labels", {}).get(QUEUE_LABEL, DEFAULT_LOCAL_QUEUE)
        state = _state(item, workloads.get(name))
        idle = not state.startswith(("running", "completed", "failed"))
        held = queue.endswith(PROVISIONED_QUEUE_SUFFIX) and idle
        note = "; holds its provisioner-created pool while it exists" if held else ""
        print(f"{name}  queue {queue}  {state}{note}")
    return 0


def logs(args: argparse.Namespace, connect: Connect) -> int:
    from workload.render import CONTAINER
    from workload.target import team_of

    stack = load(args.stack, build=False)
    namespace = team_of(stack, args.team).name
    cluster = connect(args.kubeconfig, args.context)
    leader = cluster.leader(namespace, args.name)
    if leader is None:
        print(f"JobSet {namespace}/{args.name} has no leader pod (yet)", file=sys.stderr)
        return EXIT_REFUSED
    sys.stdout.write(cluster.logs(namespace, leader, CONTAINER, args.tail))
    return 0


def delete(args: argparse.Namespace, connect: Connect) -> int:
    from workload.cluster import ClusterError
    from workload.request import FlagError
    from workload.target import team_of

    stack = load(args.stack, build=False)
    namespace = team_of(stack, args.team).name
    cluster = connect(args.kubeconfig, args.context)
    try:
        cluster.delete(namespace, args.name)
    except ClusterError as error:
        if error.status == 404:
            raise FlagError("name", f"no JobSet named {args.name} in {namespace}") from None
        raise
    print(f"deleted JobSet {namespace}/{args.name} with its Jobs and pods")
    return 0


Connect = Callable[[str | None, str | None], "Cluster"]


def main(argv: Sequence[str] | None = None, connect: Connect | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    from graph.files import StackError
    from workload.cluster import Cluster, ClusterError, KubeconfigError
    from workload.request import FlagError

    connect = connect or Cluster.connect
    try:
        if args.command == "submit":
            return submit(args, argv, connect)
        return {"list": list_jobsets, "logs": logs, "delete": delete}[args.command](args, connect)
    except (FlagError, StackError, KubeconfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_REFUSED
