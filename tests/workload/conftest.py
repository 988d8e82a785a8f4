"""The workload command runs end to end here: each stack is built once (the mock engine takes
seconds) and every call goes to an in-memory API server behind the official client."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest

from graph.stack import Stack
from tests.workload.fake_api import FakeApi
from workload import cli

Run = Callable[..., tuple[int, str, str]]
_open = cli.load


@cache
def _load(target: str, build: bool = True) -> Stack:
    return _open(target, build=build)


@pytest.fixture(autouse=True)
def cached_stacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "load", lambda target, build=True: _load(target, build))


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def run(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> Run:
    def _run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv), connect=api.connect)
        out, err = capsys.readouterr()
        return code, out, err

    return _run
