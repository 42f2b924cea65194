"""Whole numbers written as integers in the agents' JSON and event streams."""

from __future__ import annotations

import json

import pytest

from arena_core.a2a.integral_numbers import integral_json, integral_sse


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"n":445.0}', b'{"n":445}'),
        (b'{"n":-12.0,"m":[1.0, 2.5]}', b'{"n":-12,"m":[1,2.5]}'),
        (
            b'{"u":{"promptTokens":445.0,"completionTokens":6.0}}',
            b'{"u":{"promptTokens":445,"completionTokens":6}}',
        ),
        # Beyond 2**53 a double is not an exact integer: left as it is.
        (b'{"n":9007199254740994.0}', b'{"n":9007199254740994.0}'),
    ],
)
def test_integral_floats_become_integers(body: bytes, expected: bytes) -> None:
    assert integral_json(body) == expected


def test_text_that_only_looks_like_a_number_is_kept() -> None:
    body = json.dumps({"text": "version 1.0, then 2.0}", "n": 3.0}, separators=(",", ":")).encode()
    assert json.loads(integral_json(body)) == {"text": "version 1.0, then 2.0}", "n": 3}


@pytest.mark.parametrize("body", [b'{"n":445}', b'{"n":1.5}', b"not json 1.0,", b""])
def test_bodies_without_integral_floats_or_not_json_pass_unchanged(body: bytes) -> None:
    assert integral_json(body) is body


def test_each_data_line_of_an_event_stream_is_rewritten() -> None:
    chunk = b'id: 1\r\ndata: {"n":7.0}\r\n\r\n'
    assert integral_sse(chunk) == b'id: 1\r\ndata: {"n":7}\r\n\r\n'
    assert integral_sse(b'data: {"n":7}\n\n') == b'data: {"n":7}\n\n'
