"""The base of `python -m plan <stack> --base <ref>`: the stack as it was, built by the code and
the stack file of that ref, so that a chart, pin or default bump previews like any config edit.

The ref's tree is exported to a temporary directory (`git archive`: the files a worktree of the
ref would hold, leaving no worktree, lock or branch behind in the repository) and its program
runs there under the mock engine, through `graph/record_graph.py`, in a process of its own:
with this checkout's environment when the ref's uv.lock is the same, else with the ref's own
(`uv run --project`). A stack file missing at the ref is a new stack: everything is created.
A stack file path as `--base` is built with this checkout's code. When the stack file's
repository holds no program at the ref (stack files kept apart from the code), the ref's stack
file is built with this checkout's code, and the heading says so.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from graph.engine import REPO_ROOT, Graph, run_program
from stacks.config import StackConfig
from stacks.loading import parse, read_stack_text
from stacks.messages import ConfigError

RECORDER = REPO_ROOT / "graph" / "record_graph.py"
RECORD = ("-P", str(RECORDER))
"""The recorder as a script, without its folder on sys.path (`-P`), where graph/types.py would
hide the standard library's `types`."""
TIMEOUT_SECONDS = 900
"""A base with its own environment installs it first (from uv's cache, usually seconds)."""


class BaseError(Exception):
    """A base that cannot be read or built; the message says which and why."""


@dataclass(frozen=True)
class Base:
    graph: Graph
    origin: str
    """How the heading names the base."""
    new_stack: bool = False
    config: StackConfig | None = None
    """The base's stack file as this checkout's code reads it, for what is judged from both
    configs (the cost); None where this code refuses it or there is none."""


def _parsed(config: dict[str, str], stack: str) -> StackConfig | None:
    try:
        return parse(config, stack)
    except ConfigError:
        return None


def _git(repo: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=not binary, check=False
        )
    except OSError as error:
        raise BaseError(f"cannot run git: {error}") from error


def from_file(path: Path, stack: str) -> Base:
    """A stack file path as the base: built with this checkout's code."""
    try:
        config = read_stack_text(path.read_text()).config
    except ConfigError as error:
        raise BaseError(f"the stack file at {path} is invalid:\n{error}") from error
    return Base(_build_here(config, stack, str(path)), str(path), config=_parsed(config, stack))


def _build_here(config: dict[str, str], stack: str, origin: str) -> Graph:
    try:
        return run_program(config, stack=stack)
    except ConfigError as error:
        raise BaseError(f"the stack file at {origin} is invalid:\n{error}") from error


class Pending:
    """A base being built in another process while this one builds the current side."""

    def __init__(self, base: Base | None, process: subprocess.Popen | None = None, **kw) -> None:
        self._base = base
        self._process = process
        self._kw = kw

    def cancel(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.communicate()
            shutil.rmtree(self._kw["workdir"], ignore_errors=True)

    def result(self) -> Base:
        if self._base is not None:
            return self._base
        assert self._process is not None
        workdir: Path = self._kw["workdir"]
        try:
            try:
                _, stderr = self._process.communicate(timeout=TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self._process.kill()
                raise BaseError(
                    f"building the base {self._kw['origin']} took over {TIMEOUT_SECONDS} s"
                ) from None
            out = workdir / "graph.json"
            if not out.exists():
                raise BaseError(
                    f"the code at {self._kw['origin']} could not be run to build the base:\n"
                    f"{stderr.strip()[-2000:]}"
                )
            document = json.loads(out.read_text())
            if "error" in document:
                raise BaseError(
                    f"the stack file at {self._kw['origin']} is invalid:\n{document['error']}"
                )
            self._base = Base(
                Graph.from_document(document), self._kw["origin"], config=self._kw["config"]
            )
            return self._base
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def _export(repo: Path, commit: str, directory: str, into: Path) -> None:
    archive = _git(repo, "archive", "--format=tar", commit, "--", directory or ".", binary=True)
    if archive.returncode != 0:
        raise BaseError(f"git cannot export {commit}: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")


def command(project: Path, same_lock: bool) -> list[str]:
    """How the recorder runs: this environment's interpreter when the ref locks the same
    packages, else the ref's own environment, which uv builds from its uv.lock."""
    if same_lock:
        return [sys.executable, *RECORD]
    uv = shutil.which("uv")
    if uv is None:
        raise BaseError(
            "the base's uv.lock differs from this checkout's, and building it with its own "
            "packages needs uv on PATH"
        )
    return [
        uv,
        "run",
        "--quiet",
        "--frozen",
        "--no-dev",
        "--project",
        str(project),
        "python",
        *RECORD,
    ]


def start(ref: str, stack_path: Path, stack: str) -> Pending:
    """Begin building the base at git ref `ref`; a bad ref fails here, before anything runs."""
    if not ref or ref.startswith("-"):
        # A leading '-' would reach git as an option.
        raise BaseError(f"--base {ref!r}: expected a git ref or a stack file path")
    where = stack_path.resolve().parent
    top = _git(where, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise BaseError(f"--base {ref}: {stack_path} is not in a git repository")
    repo = Path(top.stdout.strip())
    verified = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if verified.returncode != 0:
        raise BaseError(f"--base {ref}: not a commit in {repo}")
    commit = verified.stdout.strip()
    relative = stack_path.resolve().relative_to(repo)
    project = relative.parent.as_posix()
    prefix = "" if project == "." else f"{project}/"
    origin = f"{ref}:{relative.as_posix()}"
    if _git(repo, "cat-file", "-e", f"{commit}:{relative.as_posix()}").returncode != 0:
        return Pending(Base(Graph(), f"{origin} (no such file there: a new stack)", True))
    text = _git(repo, "show", f"{commit}:{relative.as_posix()}").stdout
    try:
        config = read_stack_text(text).config
    except ConfigError as error:
        raise BaseError(f"the stack file at {origin} is invalid:\n{error}") from error

    def holds(name: str) -> bool:
        return _git(repo, "cat-file", "-e", f"{commit}:{prefix}{name}").returncode == 0

    # The mock engine is graph/engine.py, or plan/engine.py in commits before it moved.
    has_program = holds("__main__.py") and (holds("graph/engine.py") or holds("plan/engine.py"))
    if not has_program:
        origin += " (no program there: built with this checkout's code)"
        return Pending(
            Base(_build_here(config, stack, origin), origin, config=_parsed(config, stack))
        )
    workdir = Path(tempfile.mkdtemp(prefix="ai-infra-base-"))
    _export(repo, commit, project if project != "." else "", workdir)
    checkout = workdir / project
    (workdir / "config.json").write_text(json.dumps(config))
    lock = checkout / "uv.lock"
    same_lock = lock.exists() and lock.read_bytes() == (REPO_ROOT / "uv.lock").read_bytes()
    origin += f" (its code at {ref})"
    try:
        arguments = command(checkout, same_lock)
        process = subprocess.Popen(
            [
                *arguments,
                "--root",
                str(checkout),
                "--stack",
                stack,
                "--config",
                str(workdir / "config.json"),
                "--out",
                str(workdir / "graph.json"),
            ],
            cwd=checkout,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    except OSError as error:
        shutil.rmtree(workdir, ignore_errors=True)
        raise BaseError(f"cannot run the base's program: {error}") from error
    except BaseError:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return Pending(None, process, workdir=workdir, origin=origin, config=_parsed(config, stack))
