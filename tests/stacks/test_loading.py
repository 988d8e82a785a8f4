"""A stack file is read as the Pulumi CLI reads it, so the offline plan accepts and refuses
exactly what `pulumi up` does.

The expected values are what the Pulumi CLI's own pipeline produced for each YAML text: the
research helper ran pulumi/pulumi's LoadProjectStackBytes steps (gopkg.in/yaml.v3 3.0.1 unmarshal,
re-encode, config.Value MarshalString) with go1.19 (/tmp/research/issue-15-tools,
yaml_cases.out, and the same harness on the rows below): the string PULUMI_CONFIG holds for a
top-level value, and the JSON value inside an object.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from graph.engine import record_program
from stacks.loading import parse, read_stack_text
from stacks.messages import ConfigError
from tests.conftest import BASE_CONFIG

# (YAML text, the top-level string the program receives, the value inside an object)
CLI_TABLE: list[tuple[str, str, Any]] = [
    ("yes", "yes", "yes"),
    ("no", "no", "no"),
    ("on", "on", "on"),
    ("off", "off", "off"),
    ("y", "y", "y"),
    ("n", "n", "n"),
    ("Yes", "Yes", "Yes"),
    ("true", "true", True),
    ("True", "true", True),
    ("TRUE", "true", True),
    ("false", "false", False),
    ("'true'", "true", "true"),
    ("'yes'", "yes", "yes"),
    ("~", "", None),
    ("null", "", None),
    ("", "", None),
    ("''", "", ""),
    ("0o17", "15", 15),
    ("017", "15", 15),
    ("09", "9", 9),
    ("0x1F", "31", 31),
    ("0b101", "5", 5),
    ("1_000", "1000", 1000),
    ("1e3", "1000", 1000),
    ("1.0e+3", "1000", 1000),
    ("1.0", "1", 1),
    ("1.20", "1.2", 1.2),
    ("0.5", "0.5", 0.5),
    ("-5", "-5", -5),
    ("+5", "5", 5),
    ("1e21", "1e+21", 1e21),
    ("1e16", "10000000000000000", 10000000000000000),
    ("1e-7", "1e-7", 1e-7),
    ("18446744073709551615", "18446744073709551615", 18446744073709551615),
    ("123456789012345678901234567890", "1.2345678901234568e+29", 1.2345678901234568e29),
    ("-9223372036854775809", "-9223372036854776000", -9223372036854776000),
    ("2024-01-02", "2024-01-02 00:00:00 +0000 UTC", "2024-01-02 00:00:00 +0000 UTC"),
    ("2024-01-02T03:04:05Z", "2024-01-02 03:04:05 +0000 UTC", "2024-01-02 03:04:05 +0000 UTC"),
    (
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.1 -0500 -0500",
        "2001-12-14 21:59:43.1 -0500 -0500",
    ),
    (
        "2001-12-14 21:59:43.10",
        "2001-12-14 21:59:43.1 +0000 UTC",
        "2001-12-14 21:59:43.1 +0000 UTC",
    ),
    ("'2024-01-02'", "2024-01-02", "2024-01-02"),
    ("2024-02-30", "2024-02-30", "2024-02-30"),
    ("1:30", "1:30", "1:30"),
    ("hello", "hello", "hello"),
    (".5", "0.5", 0.5),
    (".iNf", ".iNf", ".iNf"),
    ("nan", "nan", "nan"),
    ("1e400", "1e400", "1e400"),
    ("0o", "0o", "0o"),
    ("!!str 017", "017", "017"),
    ("-0.0", "0", 0),
]


def config_of(text: str) -> dict[str, str]:
    return read_stack_text(text).config


@pytest.mark.parametrize(("text", "top", "nested"), CLI_TABLE)
def test_values_reach_the_program_as_the_pulumi_cli_passes_them(text: str, top: str, nested: Any):
    config = config_of(
        f"config:\n  p:top: {text}\n  p:obj:\n    v: {text}\n  p:list:\n    - {text}\n"
    )
    assert config["p:top"] == top
    assert json.loads(config["p:obj"]) == {"v": nested}
    assert json.loads(config["p:list"]) == [nested]


def test_objects_become_json_text_with_sorted_keys_and_merges_applied():
    config = config_of(
        "base: &b {a: 1, b: 2}\n"
        "config:\n  p:m:\n    <<: *b\n    b: 3\n  p:o: {z: 1, a: {y: 2, b: [3]}}\n"
    )
    assert config["p:m"] == '{"a":1,"b":3}'
    assert config["p:o"] == '{"a":{"b":[3],"y":2},"z":1}'


def test_a_bare_key_takes_the_project_namespace_and_the_old_config_form_is_read():
    config = config_of("config:\n  protect: false\n  gcp:config:zone: us-east5-a\n")
    assert config == {"ai-infra:protect": "false", "gcp:zone": "us-east5-a"}


def test_an_empty_value_is_an_empty_string_with_the_cli_warning():
    read = read_stack_text("config:\n  ai-infra:prefix:\n")
    assert read.config == {"ai-infra:prefix": ""}
    assert read.warnings == (
        "ai-infra:prefix has no value; the Pulumi CLI warns and passes an empty string",
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("config:\n  p:a: .inf\n", "p:a: is inf, which the Pulumi CLI cannot load"),
        ("config:\n  p:a: {v: -.inf}\n", "p:a.v: is -inf"),
        ("config:\n  p:a: [.nan]\n", "json: unsupported value: NaN"),
        ("config:\n  p:a: 1\n  'p:a': 2\n", "p:a: is written twice in one mapping (lines 2 and 3)"),
        (
            "config:\n  p:a:\n    x: 1\n    x: 2\n",
            "'x' is written twice in one mapping (lines 3 and 4)",
        ),
        ("other:\n  k: 1\n  k: 2\nconfig: {}\n", "'k' is written twice"),
        ("config:\n  p:a:\n    1: x\n", "p:a: has the key 1, which YAML reads as int"),
        ("config:\n  p:a:\n    true: x\n", "has the key True, which YAML reads as bool"),
        ("config:\n  a:b:c: 1\n", "a:b:c: is not a config key"),
        ("config:\n  protect: 1\n  ai-infra:protect: 2\n", "are the same key ai-infra:protect"),
        ("config:\n  p:a: {secure: AAAB}\n", "p:a: is a secret (secure:)"),
        ("config:\n  p:a: {pw: {secure: AAAB}}\n", "p:a.pw: is a secret"),
        ("config:\n  p:a: !!bool yes\n", "cannot decode `yes` as a !!bool"),
        ("config:\n  p:a: !!binary aGk=\n", "!!binary values are not supported"),
        ("config: [1]\n", "config: must be a mapping"),
        ("- 1\n", "must be a mapping with a config: key"),
    ],
)
def test_what_the_pulumi_cli_refuses_is_refused(text: str, says: str):
    with pytest.raises(ConfigError) as raised:
        config_of(text)
    assert says in str(raised.value)


def test_an_alias_bomb_is_refused_before_it_expands():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(ConfigError) as raised:
        config_of("\n".join(lines) + "\nconfig:\n  p:a: *a8\n")
    assert "excessive aliasing" in str(raised.value)


def test_an_explicit_unknown_tag_is_kept_as_plain_data_and_runs_nothing():
    config = config_of("config:\n  p:a: !!python/object/apply:os.system [id]\n  p:b: !x 017\n")
    assert config == {"p:a": '["id"]', "p:b": "017"}


def _outcome(config: dict[str, str]) -> str:
    """What the plan makes of a config and what the program does at `pulumi up`."""
    try:
        parse(config, "test")
        planned = "accepted"
    except ConfigError as error:
        planned = str(error)
    graph, error = record_program(config)
    ran = "accepted" if error is None else str(error)
    assert not (error is not None and len(graph) > 0), "registered before refusing"
    return planned if planned == ran else f"plan: {planned} | pulumi up: {ran}"


BASE = "".join(
    f"  {key}: {value if isinstance(value, str) else json.dumps(value)}\n"
    for key, value in BASE_CONFIG.items()
    if key != "ai-infra:protect"
)


@pytest.mark.parametrize(
    ("lines", "accepted"),
    [
        ("  ai-infra:protect: false\n", True),
        ('  ai-infra:protect: "false"\n', True),  # the engine passes both as "false"
        ("  ai-infra:protect: no\n", False),  # YAML 1.1 would read False; the CLI passes "no"
        ("  ai-infra:protect: off\n", False),
        ("  ai-infra:protect: false\n  ai-infra:cluster: {regional: no}\n", False),
        ("  ai-infra:protect: false\n  ai-infra:cluster: {regional: false}\n", True),
        ("  ai-infra:protect: false\n  ai-infra:cluster: {maxPodsPerNode: 0o40}\n", True),
        ("  ai-infra:protect: false\n  ai-infra:cluster: {maxPodsPerNode: '32'}\n", False),
        ("  ai-infra:protect: false\n  ai-infra:cluster: {maxPodsPerNode: 32.5}\n", False),
    ],
)
def test_the_plan_and_pulumi_up_accept_and_refuse_the_same_stack_files(lines: str, accepted: bool):
    config = config_of(f"config:\n{BASE}{lines}")
    outcome = _outcome(config)
    assert "| pulumi up:" not in outcome, outcome
    assert (outcome == "accepted") is accepted, outcome


def test_parse_reads_the_engines_strings():
    config = parse(
        {**{k: str(v) for k, v in BASE_CONFIG.items()}, "ai-infra:protect": "true"}, "test"
    )
    assert config.protect is True
    with pytest.raises(ConfigError) as raised:
        parse({**{k: str(v) for k, v in BASE_CONFIG.items()}, "ai-infra:protect": "yes"}, "test")
    assert "ai-infra:protect: expected true or false" in str(raised.value)
