"""json_depth_exceeds: nesting measured without a parse, strings and escapes skipped, in linear time."""

from __future__ import annotations

import json
import time

import pytest

from arena_core.json_depth import MAX_JSON_DEPTH, json_depth_exceeds


def nested(depth: int, inner: bytes = b"") -> bytes:
    return b"[" * depth + inner + b"]" * depth


def test_exactly_at_the_limit_passes_and_one_more_level_does_not() -> None:
    assert MAX_JSON_DEPTH == 100
    assert not json_depth_exceeds(nested(100), 100)
    assert json_depth_exceeds(nested(101), 100)
    objects = b'{"a":' * 100 + b"1" + b"}" * 100
    assert not json_depth_exceeds(objects, 100)
    assert json_depth_exceeds(b'{"a":' + objects + b"}", 100)
    assert json_depth_exceeds(b'[{"a":[{"b":' * 26 + b"1" + b"}]}]" * 26, 100)  # mixed: 104 levels


def test_siblings_do_not_add_up() -> None:
    assert not json_depth_exceeds(b"[" + b"[[]]," * 5000 + b"[]]", 100)
    assert not json_depth_exceeds(json.dumps({"a": [[1]] * 1000, "b": {"c": {}}}).encode(), 3)


@pytest.mark.parametrize(
    "string",
    [
        b'"' + b"[" * 500 + b'"',  # brackets inside a string
        b'"{\\"' + b"[" * 500 + b'"',  # an escaped quote does not end the string
        b'"\\\\\\"' + b"{" * 500 + b'"',  # \\ then \" : still inside
        b'"' + b"\\u005b" * 200 + b'"',  # an escaped bracket is text
    ],
)
def test_brackets_inside_strings_do_not_count(string: bytes) -> None:
    body = b'{"message": ' + string + b', "list": ' + nested(50) + b"}"
    json.loads(body)  # the cases are valid JSON
    assert not json_depth_exceeds(body, 100)
    assert json_depth_exceeds(b'{"message": ' + string + b', "list": ' + nested(100) + b"}", 100)


def test_an_escaped_backslash_ends_its_string() -> None:
    body = b'["\\\\",' + b"[" * 200 + b"]" * 201
    json.loads(body)
    assert json_depth_exceeds(body, 100)


def test_invalid_json_gets_an_answer_never_an_error() -> None:
    assert json_depth_exceeds(b"[" * 101, 100)  # never closed
    assert json_depth_exceeds(b"]]]}" + b"{" * 101, 100)  # stray closers close nothing
    assert not json_depth_exceeds(b'"' + b"[" * 500, 100)  # an unterminated string hides the rest
    assert not json_depth_exceeds(b"", 100)
    assert json_depth_exceeds(b"\xff[" * 300, 100)  # not even text: still measured


def test_a_megabyte_is_measured_in_linear_time() -> None:
    shallow = b"[" + b"[]," * 330_000 + b"[]]"
    escapes = b'["' + b"\\n" * 500_000 + b'"]'
    deep = b"[" * 1_000_000
    started = time.perf_counter()
    assert not json_depth_exceeds(shallow, 100)
    assert not json_depth_exceeds(escapes, 100)
    assert json_depth_exceeds(deep, 100)
    # Generous: about 0.05 s here; a quadratic scan would take minutes.
    assert time.perf_counter() - started < 5
