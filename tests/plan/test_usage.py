"""A command line the plan cannot run with fails as an error (exit 1), never as argparse's 2,
which the documented gate reads as "changes, can apply"; with `--markdown` the pull request
still learns why, and with `--json` a tool gets an error document."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from graph.engine import REPO_ROOT
from plan.args import EXIT_ERROR, MARKER, UsageError, arguments, error_comment, fence_for
from plan.cli import main

SCHEMA = json.loads((REPO_ROOT / "schema" / "plan-output.schema.json").read_text())


@pytest.mark.parametrize(
    "argv",
    [
        ["dev", "--base", "HEAD", "--fail-on-destrutive"],  # a typo of the gate's flag
        ["dev", "--base", "HEAD", "--fail"],  # an abbreviation is not the flag
        ["dev", "--fail-on-destructive"],  # no base to compare with
        ["dev", "--markdown"],
        ["dev", "--base"],  # a flag without its value
        ["dev", "prod"],  # two stacks
    ],
)
def test_a_command_line_it_cannot_run_is_an_error(argv: list[str], capsys):
    with pytest.raises(UsageError):
        arguments(argv)
    assert main(argv) == EXIT_ERROR
    assert "python -m plan: error:" in capsys.readouterr().err


def test_a_typo_exits_1_from_the_real_command_before_any_sdk_loads():
    done = subprocess.run(
        [sys.executable, "-m", "plan", "dev", "--base", "HEAD", "--fail-on-destrutive"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == EXIT_ERROR, done.stderr
    assert "unrecognized arguments: --fail-on-destrutive" in done.stderr


def test_a_markdown_usage_error_still_posts_a_comment_under_the_stack_marker(capsys):
    assert main(["Pulumi.prod.yaml", "--markdown"]) == EXIT_ERROR
    out = capsys.readouterr().out
    assert out.splitlines()[0] == MARKER.format(stack="prod")
    assert "no plan (exit 1)" in out
    assert "--markdown and --fail-on-destructive need --base" in out


def test_a_json_usage_error_is_an_error_document(capsys):
    assert main(["dev", "--json", "--fail-on-destructive"]) == EXIT_ERROR
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert document["error"]["kind"] == "usage"
    assert document["exitCode"] == EXIT_ERROR


def test_a_missing_stack_with_markdown_posts_why(capsys):
    assert main(["no-such-stack", "--base", "HEAD", "--markdown"]) == EXIT_ERROR
    out = capsys.readouterr().out
    assert out.splitlines()[0] == MARKER.format(stack="no-such-stack")
    assert "no-such-stack" in out.split("```", 1)[1]


def test_the_comment_cannot_be_broken_out_of_by_what_it_quotes():
    why = "bad value ```` <!-- --> \x1b[2J \u202e"
    comment = error_comment("a-->b", why)
    fence = fence_for(why)
    assert len(fence) == 5
    marker = comment.splitlines()[0]
    assert marker == "<!-- ai-infra-plan:stack=a--_b -->"
    assert marker.count("-->") == 1 and marker.count("<!--") == 1
    body = comment.split(fence)[1]
    assert "\\x1b" in body and "\\u202e" in body and "\x1b" not in body
