"""ARENA_TARGET_CREDENTIAL_ORIGINS: which origins each target token may be sent to."""

from __future__ import annotations

import pytest

from arena_core.credential_scope import display, origin_of, parse_credential_origins, unscoped
from arena_core.errors import ConfigError
from arena_core.settings import ArenaSettings, load_settings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, {}),
        ("", {}),
        (" ; ", {}),
        (
            "PROD=https://agent.example.com",
            {"ARENA_TARGET_TOKEN_PROD": {("https", "agent.example.com", 443)}},
        ),
        (
            "ARENA_TARGET_TOKEN_A=http://defender:8081 HTTP://Defender-2:8081/",
            {"ARENA_TARGET_TOKEN_A": {("http", "defender", 8081), ("http", "defender-2", 8081)}},
        ),
        (
            "A=http://a;B=http://[::1]:9;A=https://a",
            {
                "ARENA_TARGET_TOKEN_A": {("http", "a", 80), ("https", "a", 443)},
                "ARENA_TARGET_TOKEN_B": {("http", "::1", 9)},
            },
        ),
    ],
)
def test_entries_parse_into_origins_per_token_variable(
    text: str | None, expected: dict[str, set[tuple[str, str, int]]]
) -> None:
    assert parse_credential_origins(text) == {name: frozenset(found) for name, found in expected.items()}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("http://a", "entry 1 must look like NAME=origin"),
        ("prod=http://a", "entry 1 must look like NAME=origin"),
        ("A=http://a;B=", "entry 2 (B) lists no origin"),
        ("A=ftp://a", "'ftp://a' is not an origin"),
        ("A=http://a/path", "'http://a/path' is not an origin"),
        ("A=http://a?x=1", "is not an origin"),
        ("A=http://user:pw@a", "is not an origin"),
        ("A=a.example", "'a.example' is not an origin"),
        ("A=http://", "is not an origin"),
    ],
)
def test_bad_entries_are_named(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match="entry") as caught:
        parse_credential_origins(text)
    assert problem in str(caught.value)


def test_settings_refuse_a_bad_scope_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_TARGET_CREDENTIAL_ORIGINS", "A=http://a/path")
    with pytest.raises(ConfigError, match="ARENA_TARGET_CREDENTIAL_ORIGINS"):
        load_settings()


def test_settings_expose_the_scopes() -> None:
    settings = ArenaSettings(target_credential_origins="DEF=http://defender:8081")
    assert settings.target_credential_scopes() == {
        "ARENA_TARGET_TOKEN_DEF": frozenset({("http", "defender", 8081)})
    }
    assert ArenaSettings(target_credential_origins="").target_credential_scopes() == {}


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://Host/x?y", ("http", "host", 80)),
        ("https://host:8443", ("https", "host", 8443)),
        ("http://[::1]:1/", ("http", "::1", 1)),
        ("ftp://host", None),
        ("not a url", None),
    ],
)
def test_origin_of(url: str, origin: tuple[str, str, int] | None) -> None:
    assert origin_of(url) == origin


def test_display_and_unscoped() -> None:
    assert display(("http", "::1", 9)) == "http://[::1]:9"
    assert display(("https", "a", 443)) == "https://a:443"
    scopes = parse_credential_origins("A=http://a")
    assert unscoped({"ARENA_TARGET_TOKEN_B": 1, "ARENA_TARGET_TOKEN_A": 1}, scopes) == [
        "ARENA_TARGET_TOKEN_B"
    ]
