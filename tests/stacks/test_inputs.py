"""Every input is text a terminal prints as written and a config the engine can hand the
program: control characters anywhere, a stack file or config too large, and nesting no key
reads are refused at their path before anything registers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.text import is_hidden, one_line, printable
from graph.engine import record_program
from stacks.inputs import CONFIG_LIMIT, FILE_LIMIT, MAX_REPORTED, control_problems
from stacks.loading import MAX_DEPTH, parse, read_stack_text
from stacks.messages import ConfigError
from tests.conftest import with_config
from tests.tpu_vms.test_vms import stack, vm

HOSTILE = [
    "\x1b[2K\x1b[1A",  # ESC: erase the line, move up
    "\x9b2K",  # C1 CSI, the one-byte form of ESC [
    "echo ok\rrm -rf /",  # carriage return: the second part overprints the first
    "\x07",
    "\x00",
    "\x7f",
    "abc\u202edcba",  # right-to-left override
    "a\u2066b\u2069",  # bidi isolate
    "one\u2028two",  # Unicode line separator
    "\x0b",  # vertical tab
    "\x0c",  # form feed
    "pr\u200bod",  # zero-width space: reads as `prod`
    "\ufeffecho",  # byte order mark
    "soft\u00adhyphen",
    "ok\U000e0072\U000e006d",  # tag characters: invisible ASCII ('rm')
]


def rejected(config: dict[str, Any]) -> dict[str, str]:
    graph, error = record_program(config)
    assert isinstance(error, ConfigError), error
    assert graph.resources == [], [r.urn for r in graph]
    return dict(error.rendered)


@pytest.mark.parametrize("text", HOSTILE)
def test_control_characters_in_a_startup_script_are_refused_at_its_path(text):
    found = rejected(stack(tpuVms=[vm(startupScript=f"#!/bin/bash\necho hi\n{text}\n")]))
    message = found["ai-infra:tpuVms[0].startupScript"]
    assert "which a terminal acts on or draws as nothing" in message
    assert all(c.isprintable() for c in message), message


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"labels": {"team": "a\x1bb"}}, "ai-infra:labels.team"),
        ({"teams": [{"name": "ok"}, {"name": "r\x1b[8m"}]}, "ai-infra:teams[1].name"),
        ({"tpuVms": [vm(name="exp\r")]}, "ai-infra:tpuVms[0].name"),
        ({"gcp:project": "proj\x9b"}, "gcp:project"),
    ],
)
def test_control_characters_are_refused_in_every_key_not_only_scripts(overrides, path):
    assert "which a terminal acts on" in rejected(stack(**overrides))[path]


def test_a_control_character_in_a_key_is_refused_at_the_mapping_holding_it():
    found = rejected(with_config(labels={"a\x1b[2Kb": "x"}))
    assert "has the key 'a\\x1b[2Kb'" in found["ai-infra:labels"]


def test_an_escape_written_as_json_text_is_refused_as_the_engine_decodes_it():
    """The engine hands objects as JSON text, where ESC may be written `\\u001b`."""
    config = with_config()
    config["ai-infra:labels"] = json.dumps({"team": "\x1b[31m"})
    assert "\\u001b" in config["ai-infra:labels"]
    with pytest.raises(ConfigError) as error:
        parse(config, "test")
    assert "which a terminal acts on" in dict(error.value.rendered)["ai-infra:labels.team"]


def test_newlines_and_tabs_stay_allowed_in_scripts():
    script = "#!/bin/bash\n\tif true; then\n\t\techo ok\n\tfi\n"
    config = parse(stack(tpuVms=[vm(startupScript=script)]), "test")
    assert config.tpu_vms[0].startup_script == script


def test_many_hostile_values_are_counted_not_listed_one_by_one():
    with pytest.raises(ConfigError) as error:
        parse(with_config(labels={f"k{i}": "\x1b" for i in range(50)}), "test")
    assert len(error.value.problems) == MAX_REPORTED + 1
    assert "and 30 more" in error.value.problems[-1].message


def test_one_line_escapes_what_it_refuses():
    for text in HOSTILE:
        assert all(c.isprintable() for c in one_line(text)), repr(one_line(text))


def test_the_loader_refuses_exactly_what_the_plan_escapes():
    """One class of characters: what a stack file may not hold is what the plan would show
    escaped, over the whole Basic Multilingual Plane and the tag characters."""
    for code in [*range(0x10000), *range(0xE0000, 0xE0080)]:
        char = chr(code)
        if 0xD800 <= code < 0xE000:
            continue  # surrogates: not text that YAML or JSON decode to
        refused = bool(control_problems({"x": f"a{char}b"}, ()))
        escaped = printable(char) != char
        assert refused == escaped == is_hidden(char), (hex(code), refused, escaped)
    assert not control_problems({"x": "tab\there\nnext line"}, ())


def test_a_stack_file_past_the_limit_is_refused_before_it_is_parsed():
    text = "config:\n  ai-infra:labels:\n" + "#" * FILE_LIMIT + "\n"
    with pytest.raises(ConfigError) as error:
        read_stack_text(text)
    assert "a stack file is at most" in str(error.value)


@pytest.mark.parametrize("entries", [8_000, 20_000])
def test_a_config_the_engine_cannot_hand_the_program_is_refused(entries):
    """Under the file limit, but more than the one environment string `pulumi up` passes."""
    lines = "".join(f"    key{i}: value{i}\n" for i in range(entries))
    text = f"config:\n  ai-infra:labels:\n{lines}"
    assert len(text) < FILE_LIMIT
    with pytest.raises(ConfigError) as error:
        read_stack_text(text)
    assert f"{CONFIG_LIMIT:,} bytes" in str(error.value)


def test_a_config_under_the_limit_is_read():
    lines = "".join(f"    key{i}: value{i}\n" for i in range(100))
    assert read_stack_text(f"config:\n  ai-infra:labels:\n{lines}").config


@pytest.mark.parametrize(
    "text",
    [
        "config:\n  ai-infra:labels: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "config:\n  ai-infra:labels: " + "{a: " * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1),
        "config:\n  ai-infra:x:\n" + "".join("  " * (i + 2) + "- \n" for i in range(200)),
    ],
)
def test_nesting_no_key_reads_is_refused_without_a_traceback(text):
    with pytest.raises(ConfigError) as error:
        read_stack_text(text)
    assert "levels deep" in str(error.value) or "not valid YAML" in str(error.value)


def test_deep_json_from_the_engine_is_refused_as_a_shape_not_a_crash():
    config = with_config()
    config["ai-infra:labels"] = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ConfigError):
        parse(config, "test")


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"teams": [{"name": f"t{i}"} for i in range(257)]}, "ai-infra:teams"),
        ({"tpuVms": [vm(name=f"v{i}") for i in range(257)]}, "ai-infra:tpuVms"),
        ({"buckets": [{"name": f"b{i}"} for i in range(257)]}, "ai-infra:buckets"),
        (
            {"network": {"authorizedNetworks": [{"cidr": f"10.0.{i}.0/24"} for i in range(101)]}},
            "ai-infra:network.authorizedNetworks",
        ),
        (
            {
                "network": {
                    "allow": [
                        {
                            "name": "many",
                            "to": "tpuVms",
                            "sources": [f"10.{i // 256}.{i % 256}.0/24" for i in range(257)],
                            "ports": ["tcp:22"],
                        }
                    ]
                }
            },
            "ai-infra:network.allow[0].sources",
        ),
    ],
)
def test_every_list_is_bounded_at_its_path(overrides, path):
    with pytest.raises(ConfigError) as error:
        parse(stack(**overrides), "test")
    rendered = dict(error.value.rendered)
    assert path in rendered and "at most" in rendered[path], rendered
