"""The version rules of :mod:`arena_core.a2a.protocol_versions` and the cost of the version guard."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from starlette.types import Scope

from arena_core.a2a.protocol_versions import (
    V03_METHODS,
    V03_TO_V10_METHODS,
    V10_METHODS,
    V10_TO_V03_METHODS,
    requested_version,
    supported_version,
)
from arena_core.a2a.version_guard import jsonrpc_version_answer


def _scope(headers: dict[str, str], query: bytes = b"") -> Scope:
    raw = [(name.encode(), value.encode()) for name, value in headers.items()]
    return {"type": "http", "method": "POST", "path": "/", "headers": raw, "query_string": query}


def test_a_request_that_cannot_name_the_other_versions_method_is_not_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cost: a body without a JSON escape or the start of a method name of the other version is
    decided by substring searches alone; the version comes from the headers."""
    v10 = requested_version(_scope({"a2a-version": "1.0"}))
    v03 = requested_version(_scope({}))
    v10_body = b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"text": "a/b or tasks/get"}}'
    v03_body = b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"text": "plan a trip"}}'
    other = b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}'

    def no_parse(_: bytes) -> object:
        raise AssertionError("parsed")

    with monkeypatch.context() as patch:
        patch.setattr("arena_core.a2a.version_guard.json", SimpleNamespace(loads=no_parse))
        assert jsonrpc_version_answer(v10_body, v10) is None
        assert jsonrpc_version_answer(v03_body, v03) is None
        with pytest.raises(AssertionError, match="parsed"):
            jsonrpc_version_answer(other, v10)
    answer = jsonrpc_version_answer(other, v10)
    assert answer is not None and answer["error"]["code"] == -32601


def test_the_method_tables_cover_the_sdks_methods() -> None:
    assert set(V03_TO_V10_METHODS) == V03_METHODS
    assert set(V03_TO_V10_METHODS.values()) | {"ListTasks"} == V10_METHODS == set(V10_TO_V03_METHODS)


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("1.0", "1.0"),
        ("1.0.0", "1.0"),
        ("01.00", "1.0"),
        ("0.3", "0.3"),
        ("0.3.1", "0.3"),
        ("1.1", None),
        ("2.0", None),
        ("0.2", None),
        ("1", None),
        ("1.0.0.0", None),
        ("1.\u0660", None),  # an Arabic-Indic zero is no ASCII digit
        ("", None),
    ],
)
def test_supported_version(text: str, version: str | None) -> None:
    assert supported_version(text) == version


@pytest.mark.parametrize(
    ("headers", "query", "expected"),
    [
        ({}, b"", ("", "none", "0.3")),
        ({"a2a-version": "1.0"}, b"", ("1.0", "header", "1.0")),
        ({"a2a-version": " 1.0.2 "}, b"", ("1.0.2", "header", "1.0")),
        ({"a2a-version": "1.1"}, b"", ("1.1", "header", None)),
        ({"a2a-version": ""}, b"", ("", "none", "0.3")),
        ({}, b"A2A-Version=1.0", ("1.0", "query", "1.0")),
        ({}, b"a=1&a2a-VERSION=0.3", ("0.3", "query", "0.3")),
        ({}, b"A2A-Version=2.0", ("2.0", "query", None)),
        ({}, b"A2A-Version=", ("", "none", "0.3")),
        ({"a2a-version": "0.3"}, b"A2A-Version=1.0", ("0.3", "header", "0.3")),
        ({"a2a-version": ""}, b"A2A-Version=1.0", ("1.0", "query", "1.0")),
    ],
)
def test_requested_version(
    headers: dict[str, str], query: bytes, expected: tuple[str, str, str | None]
) -> None:
    requested = requested_version(_scope(headers, query))
    assert (requested.text, requested.source, requested.version) == expected


def test_a_repeated_header_counts_once_the_first_as_the_sdk_reads_it() -> None:
    scope = _scope({})
    scope["headers"] = [(b"a2a-version", b"1.0"), (b"a2a-version", b"2.0")]
    assert requested_version(scope).version == "1.0"


def test_an_answer_repeats_at_most_40_characters_of_the_version() -> None:
    requested = requested_version(_scope({"a2a-version": "9" * 5000}))
    assert requested.version is None
    assert requested.shown == "9" * 40 + "..."
    assert len(requested.describe()) < 60
