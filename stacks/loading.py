"""Loading a stack's config: from the Pulumi engine at `pulumi up`, or from a stack file for
the offline plan. `parse()` checks shapes with pydantic, then collects the cross-checks
(`checks.py`), and raises one `ConfigError` listing every problem with its config path and fix.
Nothing may be registered before it returns.
"""

from __future__ import annotations

import datetime
import gc
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pulumi
import yaml
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from components.base import PathPart, Problem
from stacks.checks import problems
from stacks.config import StackConfig, stack_keys
from stacks.inputs import control_problems, oversize_config, oversize_file
from stacks.messages import GCP_KEYS, NAMESPACE, ConfigError, problem_of

OTHER_NAMESPACES = frozenset({"gcp", "pulumi", "kubernetes"})
"""Config namespaces that belong to Pulumi and its providers; any other is a typo."""


def parse(raw: Mapping[str, Any], stack: str) -> StackConfig:
    """Validate a stack's config map (`gcp:project`, `ai-infra:network`, ...).

    Values may be strings holding JSON, as the Pulumi engine passes them, or parsed values.
    """
    data: dict[str, Any] = {"prefix": f"ai-{stack}"}
    found: list[Problem] = []
    valid_keys = stack_keys()
    for field, key in GCP_KEYS.items():
        if raw.get(key) is not None:
            data[field] = raw[key]
    for key, value in raw.items():
        namespace, colon, name = key.partition(":")
        if namespace != NAMESPACE:
            if not colon or namespace not in OTHER_NAMESPACES:
                found.append(
                    Problem(
                        (key if colon else f"(no namespace) {key}",),
                        f"unknown config namespace '{namespace}'; this program's keys are "
                        f"written {NAMESPACE}:<key> (valid namespaces: {NAMESPACE}, "
                        f"{', '.join(sorted(OTHER_NAMESPACES))})",
                    )
                )
            continue
        if name not in valid_keys:
            camel = to_camel(name)
            hint = (
                f"keys are camelCase: write {NAMESPACE}:{camel}"
                if camel != name and camel in valid_keys
                else f"unknown config key; valid keys are {', '.join(sorted(valid_keys))}"
            )
            found.append(Problem((name,), hint))
            continue
        data[name] = _decode(value)
    if controls := control_problems(data, ()):
        raise ConfigError(found + controls)
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as error:
        shapes = [problem_of(StackConfig, detail) for detail in error.errors()]
        if f"{NAMESPACE}:prefix" not in raw:
            shapes = [
                Problem(
                    p.path,
                    f"the prefix ai-{stack} comes from the stack name '{stack}' and {p.message}; "
                    f"set {NAMESPACE}:prefix to a short DNS label, e.g. ai-dev",
                )
                if p.path[:1] == ("prefix",)
                else p
                for p in shapes
            ]
        raise ConfigError(found + shapes) from None
    found += problems(config)
    if found:
        raise ConfigError(found)
    return config


def _decode(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return value


# Reading a stack file as the Pulumi CLI does (pulumi/pulumi sdk/go/common/workspace/loaders.go
# LoadProjectStackBytes, resource/config/object.go MarshalString): gopkg.in/yaml.v3 3.0.1 parses
# the file (resolve.go), every top-level config value becomes one string, objects and lists
# their JSON text, and the language host hands the program that map as PULUMI_CONFIG. Offline
# and at `pulumi up` the program then reads the same strings.

_PLAIN = "tag:ai-infra,2025:plain"
"""The tag of an unquoted, untagged scalar: resolved by yaml.v3's rules, not YAML 1.1's."""
_CORE = "tag:yaml.org,2002:"
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_SPECIAL = {
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
"""yaml.v3 resolve.go's resolveMap: the only booleans are true/false (yes, on, y are text)."""
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2}))"
    r"|(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,](\d+))?))?"
)
"""yaml.v3's allowedTimestampFormats, as Go's time.Parse reads them."""
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1


def _go_int(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 0, 64), then ParseUint: `0x`, `0o`, `0b` and a leading `0`
    (octal) prefixes, an optional sign, int64 or uint64 range."""
    match = _GO_INT.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    prefix = digits[:2].lower()
    base = {"0x": 16, "0o": 8, "0b": 2}.get(prefix)
    if base is not None:
        value = int(digits[2:], base)
    else:
        value = int(digits, 8) if digits.startswith("0") else int(digits)
    value = -value if sign == "-" else value
    if _INT64[0] <= value <= _INT64[1] or (sign != "-" and value <= _UINT64_MAX):
        return value
    return None


def _go_time(match: re.Match[str]) -> str | None:
    """Go's time.Time.String() of a yaml.v3 timestamp, or None when time.Parse refuses it."""
    year, month, day, hour, minute, second, fraction, zone = (
        match[1],
        match[2],
        match[3],
        match[4] or match[9],
        match[5] or match[10],
        match[6] or match[11],
        match[7] or match[12],
        match[8],
    )
    try:
        datetime.date(int(year), int(month), int(day))
    except ValueError:
        return None
    clock = [int(part or 0) for part in (hour, minute, second)]
    if clock[0] > 23 or clock[1] > 59 or clock[2] > 59:
        return None
    text = f"{year}-{int(month):02d}-{int(day):02d} {clock[0]:02d}:{clock[1]:02d}:{clock[2]:02d}"
    nanos = (fraction or "")[:9].ljust(9, "0").rstrip("0")
    if nanos:
        text += f".{nanos}"
    if zone is None or zone == "Z":
        return f"{text} +0000 UTC"
    # A fixed offset prints as `-0500 -0500`; on a machine whose local zone uses that offset,
    # Go names it instead (`-0500 EST`). Either way it is not RFC 3339 text any more.
    offset = zone.replace(":", "")
    return f"{text} {offset} {offset}"


def go_scalar(text: str) -> Any:
    """An unquoted YAML scalar as gopkg.in/yaml.v3 3.0.1 resolves it (resolve.go `resolve`):
    YAML 1.2 booleans and nulls, Go integer syntax with `_` removed (`017` is octal 15),
    floats, timestamps as Go prints them; anything else is text."""
    if text in _SPECIAL:
        return _SPECIAL[text]
    hint = text[:1]
    if hint == ".":
        # Go's ParseFloat: no `_` without a base prefix; out of range is an error, not inf.
        if re.fullmatch(r"\.[0-9]+([eE][-+]?[0-9]+)?", text) and math.isfinite(float(text)):
            return float(text)
        return text
    if not (hint.isdigit() or hint in "+-"):
        return text
    if (timestamp := _TIMESTAMP.fullmatch(text)) and (when := _go_time(timestamp)):
        return when
    plain = text.replace("_", "")
    if (number := _go_int(plain)) is not None:
        return number
    if _YAML_FLOAT.fullmatch(plain) and math.isfinite(float(plain)):
        return float(plain)
    return text


def go_json_number(value: int | float) -> str:
    """A number as Go's encoding/json writes it, after yaml.v3's re-encode round trip (which
    turns -0.0 into 0): shortest digits, exponent form only below 1e-6 or from 1e21."""
    if isinstance(value, int):
        return str(value)
    if math.isinf(value) or math.isnan(value):
        shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
        raise ValueError(f"json: unsupported value: {shown}")
    if value == 0:
        return "0"
    if abs(value) < 1e-6 or abs(value) >= 1e21:
        mantissa, exponent = repr(value).split("e")
        return f"{mantissa}e{int(exponent):+d}".replace("e+-", "e-")
    return format(Decimal(repr(value)).normalize(), "f")


class _CliLoader(yaml.CSafeLoader):
    """libyaml's parser (yaml.v3 is a Go port of libyaml; PyYAML's pure-Python parser took
    about 10 s per MB) with yaml.v3's scalar resolution and its refusals: a key written twice
    in one mapping, and documents that expand aliases far beyond their size."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return f"{_CORE}merge" if value == "<<" else _PLAIN
        return super().resolve(kind, value, implicit)


def _construct_plain(loader: _CliLoader, node: yaml.ScalarNode) -> Any:
    return go_scalar(node.value)


def _construct_tagged(loader: Any, tag: str, node: yaml.Node) -> Any:
    """An explicitly tagged node. yaml.v3 resolves a core tag and refuses a value of another
    kind (`!!bool yes`); it keeps the text of any other tag, as if untagged and quoted."""
    if isinstance(node, yaml.MappingNode):
        return _construct_mapping(loader, node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    text = str(node.value)
    kinds: dict[str, tuple[type, ...]] = {
        "int": (int,),
        "float": (int, float),
        "bool": (bool,),
        "null": (type(None),),
    }
    short = tag.removeprefix(_CORE)
    if short == "binary":
        raise yaml.constructor.ConstructorError(
            None, None, "!!binary values are not supported in a stack file", node.start_mark
        )
    if short not in kinds:
        return text
    value = go_scalar(text)
    if not isinstance(value, kinds[short]) or (short == "int" and isinstance(value, bool)):
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot decode `{text}` as a !!{short}", node.start_mark
        )
    return float(value) if short == "float" else value


def _construct_mapping(loader: _CliLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[str, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.value == "<<":
            continue
        line = key_node.start_mark.line + 1
        if key_node.value in seen:
            # yaml.v3 decode.go: `mapping key "x" already defined at line N`.
            key = key_node.value
            where = (key,) if ":" in key else ("(stack file)",)
            raise ConfigError(
                [
                    Problem(
                        where,
                        f"{'' if ':' in key else repr(key) + ' '}is written twice in one mapping "
                        f"(lines {seen[key]} and {line}); the Pulumi CLI refuses the file; "
                        "keep one",
                    )
                ]
            )
        seen[key_node.value] = line
    loader.flatten_mapping(node)
    pairs = loader.construct_pairs(node, deep=True)
    return dict(pairs)


_CliLoader.add_constructor(_PLAIN, _construct_plain)
_CliLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
for _tag in ("str", "int", "float", "bool", "null", "timestamp", "binary", "set", "omap"):
    _CliLoader.add_constructor(
        f"{_CORE}{_tag}",
        lambda loader, node, tag=f"{_CORE}{_tag}": _construct_tagged(loader, tag, node),
    )
_CliLoader.add_multi_constructor("", _construct_tagged)


_ALIAS_LOW, _ALIAS_HIGH = 400_000, 4_000_000
MAX_DEPTH = 64
"""Levels of nesting a stack file may have: the deepest key reads about ten, and the reader
after this check recurses once per level."""


def _allowed_alias_ratio(decoded: int) -> float:
    """yaml.v3 decode.go allowedAliasRatio: the share of alias expansions a document of this
    decoded size may have."""
    if decoded <= _ALIAS_LOW:
        return 0.99
    if decoded >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)


def _check_aliasing(root: yaml.Node) -> None:
    """Refuse what yaml.v3 refuses as "document contains excessive aliasing" (decode.go
    unmarshal: every node decoded inside an alias's expansion counts against the document),
    before anything expands it: a few lines of anchors can stand for billions of values."""
    decoded = aliases = 0
    seen: set[int] = set()
    todo: list[tuple[yaml.Node, bool]] = [(root, False)]
    while todo:
        node, inside = todo.pop()
        if id(node) in seen:
            decoded += 1  # the alias node itself
            aliases += inside
            inside = True
        seen.add(id(node))
        decoded += 1
        aliases += inside
        if aliases > 100 and decoded > 1000 and aliases / decoded > _allowed_alias_ratio(decoded):
            raise ConfigError(
                [
                    Problem(
                        ("(stack file)",),
                        "expands its anchors and aliases far beyond its size; the Pulumi CLI "
                        "refuses it (document contains excessive aliasing); write values out",
                    )
                ]
            )
        if isinstance(node, yaml.MappingNode):
            todo += [(part, inside) for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            todo += [(item, inside) for item in node.value]


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than `MAX_DEPTH` from the parser's events, before anything
    composes the document: libyaml's composer and every reader after it recurse once per
    level, and 10^5 levels crash the interpreter."""
    depth = 0
    for event in yaml.parse(text, Loader=_CliLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    [
                        Problem(
                            ("(stack file)",),
                            f"nests values more than {MAX_DEPTH} levels deep, far beyond any "
                            "config key's shape; write the values the keys take",
                        )
                    ]
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_yaml(text: str) -> Any:
    """Parse a stack file as yaml.v3 does; a syntax error, a repeated key or an explicit tag of
    the wrong kind is a `ConfigError`."""
    loader = _CliLoader(text)
    try:
        _check_depth(text)
        root = loader.get_single_node()
        if root is None:
            return None
        _check_aliasing(root)
        return loader.construct_document(root)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" on line {where.line + 1}" if where is not None else ""
        reason = getattr(error, "problem", None) or "it cannot be parsed"
        raise ConfigError(
            [Problem(("(stack file)",), f"is not valid YAML{line}: {reason}; fix the file")]
        ) from None
    finally:
        loader.dispose()


@dataclass(frozen=True)
class StackFile:
    """A stack file as `pulumi up` hands it to the program."""

    config: dict[str, str]
    """PULUMI_CONFIG: `namespace:key` -> one string; objects and lists as JSON text."""
    warnings: tuple[str, ...] = ()
    """What the Pulumi CLI prints about the file without refusing it."""


def _non_text_keys(value: Any, path: tuple[PathPart, ...]) -> Iterator[Problem]:
    """workspace/project.go SimplifyMarshalledValue: every mapping key must be text."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                yield Problem(
                    path[1:] if path[:1] == ("config",) and len(path) > 1 else ("(stack file)",),
                    f"has the key {key!r}, which YAML reads as {type(key).__name__}; the "
                    "Pulumi CLI accepts only text keys (expected only string keys); quote it",
                )
            else:
                yield from _non_text_keys(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _non_text_keys(item, (*path, i))


def _config_key(key: str) -> str | None:
    """resource/config/key.go ParseKey, after loaders.go namespaces a bare key with the
    project's name: `namespace:name`, or the old `namespace:config:name`."""
    parts = key.split(":")
    if len(parts) == 1:
        return f"{NAMESPACE}:{key}"
    if len(parts) == 2:
        return key
    if len(parts) == 3 and parts[1] == "config":
        return f"{parts[0]}:{parts[2]}"
    return None


def _json_text(value: Any, key: str, path: tuple[PathPart, ...]) -> str:
    """A config object as Go's encoding/json writes it: keys sorted, Go's number format."""
    if isinstance(value, dict):
        if set(value) == {"secure"} and isinstance(value["secure"], str):
            raise ConfigError([Problem((key, *path), _SECURE)])
        items = (
            f"{json.dumps(k)}:{_json_text(v, key, (*path, k))}" for k, v in sorted(value.items())
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v, key, (*path, i)) for i, v in enumerate(value)) + "]"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        try:
            return go_json_number(value)
        except ValueError as error:
            raise ConfigError(
                [
                    Problem(
                        (key, *path),
                        f"is {value}, which the Pulumi CLI cannot load ({error}); write a "
                        "number, or quote it to mean text",
                    )
                ]
            ) from None
    return json.dumps(value)


_SECURE = (
    "is a secret (secure:); the offline plan has no key to decrypt it, so it cannot show what "
    "`pulumi up` would do with it; plan with a copy of the stack file that holds a stand-in value"
)


def engine_value(key: str, value: Any) -> str:
    """MarshalString: a top-level value as the one string the program receives."""
    if isinstance(value, dict | list):
        return _json_text(value, key, ())
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _json_text(value, key, ())
    return str(value)


def read_stack_text(text: str) -> StackFile:
    """What `pulumi up` hands the program for a stack file's text, or the `ConfigError` the
    Pulumi CLI's refusal of the file becomes."""
    if too_large := oversize_file(text):
        raise ConfigError([too_large])
    # The collector would walk the whole heap (the SDKs are loaded) again and again while the
    # document's many small objects are made; it had half of a large file's time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        document = load_yaml(text)
    finally:
        if collecting:
            gc.enable()
    if document is None:
        return StackFile({})
    if not isinstance(document, dict):
        raise ConfigError(
            [Problem(("(stack file)",), "must be a mapping with a config: key, not a list")]
        )
    bad = list(_non_text_keys(document, ()))
    if bad:
        raise ConfigError(bad)
    config = document.get("config")
    if config is None:
        return StackFile({})
    if not isinstance(config, dict):
        raise ConfigError(
            [Problem(("(stack file)",), "config: must be a mapping of namespace:key to value")]
        )
    found: list[Problem] = []
    warnings: list[str] = []
    values: dict[str, str] = {}
    written: dict[str, str] = {}
    for key, value in config.items():
        name = _config_key(key)
        if name is None:
            found.append(
                Problem(
                    (key,),
                    "is not a config key; the Pulumi CLI reads keys as namespace:key "
                    f"(e.g. {NAMESPACE}:tpuSlices)",
                )
            )
            continue
        if name in written:
            found.append(
                Problem(
                    (key,),
                    f"and {written[name]} are the same key {name}; the Pulumi CLI keeps one of "
                    "them at random; keep one",
                )
            )
            continue
        written[name] = key
        if value is None:
            warnings.append(f"{name} has no value; the Pulumi CLI warns and passes an empty string")
        try:
            values[name] = engine_value(name, value)
        except ConfigError as error:
            found += error.problems
    if not found and (too_large := oversize_config(json.dumps(values, separators=(",", ":")))):
        found.append(too_large)
    if found:
        raise ConfigError(found)
    return StackFile(values, tuple(warnings))


def read_pulumi_config() -> dict[str, Any]:
    """Every config value the engine handed this program, keyed `namespace:key`."""
    from pulumi.runtime import config as runtime_config

    values: dict[str, Any] = dict(runtime_config.get_config_env())
    values.update(runtime_config.CONFIG.get())
    return values


def load() -> StackConfig:
    """Validate the running stack's config; raises `ConfigError` before any resource exists."""
    return parse(read_pulumi_config(), pulumi.get_stack())
