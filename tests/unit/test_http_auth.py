"""Bearer tokens: parsing (ARENA_API_TOKENS), constant-time comparison, outbound defaults."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from arena_core.errors import ConfigError
from arena_core.http_auth import Access, ApiTokens, parse_tokens, warn_if_open
from arena_core.settings import load_settings

FULL = "full-token-0123456789abcdef"
OLD = "old-token-0123456789abcdef"
READ = "read-token-0123456789abcdef"


# --- tokens and settings ---------------------------------------------------------------------


def test_tokens_are_kept_as_digests_and_compared_against_every_one() -> None:
    tokens = ApiTokens.of([FULL, OLD], [READ])
    assert FULL.encode() not in repr(tokens).encode()
    assert tokens.access(FULL) is Access.FULL
    assert tokens.access(OLD) is Access.FULL  # rotation: both accepted
    assert tokens.access(READ) is Access.READ
    assert tokens.access(FULL + "x") is Access.NONE
    assert tokens.access("") is Access.NONE
    assert not ApiTokens.of().enabled


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("short", "token 1 is 5 characters"),
        (f"{FULL},tiny", "token 2 is 4 characters"),
        ("x" * 513, "token 1 is 513 characters"),
        ("has space inside-0123456789", "token 1 is"),  # split: "has space inside-..." is one item
        ('bad"quote-0123456789abc', "characters outside"),
        (" , ,", "holds no token"),
    ],
)
def test_bad_token_lists_are_config_errors_that_never_quote_the_token(raw: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(api_tokens=raw)
    message = str(caught.value)
    assert "ARENA_API_TOKENS" in message
    assert problem in message or "characters outside" in message
    for part in raw.split(","):
        if len(part.strip()) >= 4:
            assert part.strip() not in message


def test_outbound_tokens_default_to_the_first_accepted_one() -> None:
    settings = load_settings(api_tokens=f"{FULL},{OLD}")
    assert settings.outbound_token("attacker") == FULL
    assert settings.outbound_token("orchestrator") == FULL
    own = load_settings(api_tokens=FULL, attacker_token=OLD)
    assert own.outbound_token("attacker") == OLD
    assert load_settings().outbound_token("attacker") is None
    with pytest.raises(ConfigError, match=r"ARENA_ATTACKER_TOKEN: .*must be one token"):
        load_settings(attacker_token=f"{FULL},{OLD}")
    assert FULL not in repr(settings) and FULL not in str(settings.model_dump())


def test_parse_tokens_trims_and_accepts_the_rfc6750_alphabet() -> None:
    assert parse_tokens(" a.b_c~d+e/f=-0123456789 , ") == ("a.b_c~d+e/f=-0123456789",)
    assert parse_tokens(None) == ()


@pytest.mark.parametrize(
    ("host", "warns"),
    [("127.0.0.1", False), ("::1", False), ("localhost", False), ("0.0.0.0", True), ("", True)],
)
def test_an_open_service_beyond_loopback_is_warned_about(
    host: str, warns: bool, caplog: pytest.LogCaptureFixture
) -> None:
    warn_if_open(ApiTokens.of(), host, "defender")
    assert ("ARENA_API_TOKENS is not set" in caplog.text) is warns
    caplog.clear()
    warn_if_open(ApiTokens.of([FULL]), host, "defender")
    assert caplog.text == ""


@pytest.mark.parametrize("presented", [FULL, OLD, READ, "wrong-token-0123456789abcdef", ""])
def test_every_configured_token_is_compared_with_hmac_compare_digest(
    presented: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails if the comparison stops going through hmac.compare_digest, or stops early on a match."""
    real = hmac.compare_digest
    calls: list[tuple[bytes, bytes]] = []

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    # The name http_auth looks up at call time: fails if it stops calling hmac.compare_digest.
    monkeypatch.setattr("arena_core.http_auth.hmac.compare_digest", counting)
    tokens = ApiTokens.of([FULL, OLD], [READ])
    expected = {FULL: Access.FULL, OLD: Access.FULL, READ: Access.READ}.get(presented, Access.NONE)
    assert tokens.access(presented) is expected

    presented_digest = hashlib.sha256(presented.encode()).digest()
    configured = [*tokens.full, *tokens.read]
    assert len(calls) == len(configured) == 3
    assert all(a == presented_digest for a, _ in calls)
    assert sorted(b for _, b in calls) == sorted(configured)
