"""Bearer tokens: parsing (ARENA_API_TOKENS, named entries), callers, constant-time comparison,
outbound defaults, the caller handed to a2a-sdk."""

from __future__ import annotations

import hashlib
import hmac

import httpx
import pytest
from a2a.server.owner_resolver import resolve_user_scope
from a2a.server.routes.common import DefaultServerCallContextBuilder, StarletteUser
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from arena_core.api_token_entries import (
    TokenEntry,
    caller_name_for,
    conflicting_entries,
    parse_token_entries,
    parse_tokens,
    token_of_entry,
)
from arena_core.errors import ConfigError
from arena_core.http_auth import Access, ApiCaller, ApiTokens, BearerAuth, warn_if_open
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
    configured = [digest for digest, _ in (*tokens.full, *tokens.read)]
    assert len(calls) == len(configured) == 3
    assert all(a == presented_digest for a, _ in calls)
    assert sorted(b for _, b in calls) == sorted(configured)


# --- named entries: callers ------------------------------------------------------------------


def test_named_and_bare_entries_parse_into_callers() -> None:
    entries = parse_token_entries(f" alice:{FULL} , {OLD},bob.ci-2_x : {READ} ,")
    assert entries == (
        TokenEntry("alice", FULL),
        TokenEntry(caller_name_for(OLD), OLD),
        TokenEntry("bob.ci-2_x", READ),
    )
    assert caller_name_for(OLD) == "token-" + hashlib.sha256(OLD.encode()).hexdigest()[:12]
    assert parse_tokens(f"alice:{FULL},{OLD}") == (FULL, OLD)
    assert FULL not in repr(entries)  # the token is left out of the repr
    assert parse_token_entries("x" * 64 + f":{FULL}")[0].name == "x" * 64


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (f":{FULL}", "entry 1 has an invalid caller name"),
        (f"-alice:{FULL}", "entry 1 has an invalid caller name"),
        (f"{OLD},al ice:{FULL}", "entry 2 has an invalid caller name"),
        ("x" * 65 + f":{FULL}", "entry 1 has an invalid caller name"),
        # A token written before the name: neither part is quoted back.
        (f"{FULL}+/=:alice", "entry 1 has an invalid caller name"),
        (f"{FULL}:alice", "token 1 is 5 characters"),
        (f"alice:{FULL}:more", "token 1 has characters outside"),
        ("alice:short", "token 1 is 5 characters"),
        (f"alice:{FULL},,bob:tiny", "token 2 is 4 characters"),  # empty items are not counted
    ],
)
def test_bad_named_entries_are_config_errors_that_never_quote_a_token(raw: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(api_tokens=raw)
    message = str(caught.value)
    assert "ARENA_API_TOKENS" in message
    assert problem in message
    for secret in (FULL, OLD, "short", "tiny", "more"):
        assert secret not in message


def test_one_token_under_two_names_is_a_config_error_naming_the_entries() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(api_tokens=f"alice:{FULL},bob:{FULL}")
    message = str(caught.value)
    assert "ARENA_API_TOKENS entry 1 (caller 'alice') and ARENA_API_TOKENS entry 2 (caller 'bob')" in message
    assert FULL not in message
    # Across the two lists, and a bare token (its derived caller) against a named one.
    with pytest.raises(ConfigError) as caught:
        load_settings(api_tokens=f"alice:{FULL},{OLD}", api_read_tokens=f"carol:{READ},dave:{OLD}")
    message = str(caught.value)
    assert f"ARENA_API_TOKENS entry 2 (caller '{caller_name_for(OLD)}')" in message
    assert "ARENA_API_READ_TOKENS entry 2 (caller 'dave')" in message
    assert OLD not in message and FULL not in message and READ not in message


def test_names_may_repeat_and_a_token_may_repeat_under_its_own_name() -> None:
    # Rotation keeps the caller; a read token may share a full token's caller.
    settings = load_settings(
        api_tokens=f"alice:{FULL},alice:{OLD},alice:{FULL}", api_read_tokens=f"alice:{READ}"
    )
    tokens = settings.accepted_tokens()
    assert tokens.identify(FULL) == (Access.FULL, "alice")
    assert tokens.identify(OLD) == (Access.FULL, "alice")
    assert tokens.identify(READ) == (Access.READ, "alice")
    assert conflicting_entries([("A", [TokenEntry("a", FULL)]), ("B", [TokenEntry("a", FULL)])]) is None


def test_identify_names_the_caller_of_every_kind_of_token() -> None:
    tokens = ApiTokens.of([TokenEntry("alice", FULL), OLD], [TokenEntry("bob", READ)])
    assert tokens.identify(FULL) == (Access.FULL, "alice")
    assert tokens.identify(OLD) == (Access.FULL, caller_name_for(OLD))
    assert tokens.identify(READ) == (Access.READ, "bob")
    assert tokens.identify(FULL + "x") == (Access.NONE, None)
    assert tokens.identify("") == (Access.NONE, None)
    # A token that is both full and read is full, and its full caller's.
    both = ApiTokens.of([TokenEntry("alice", FULL)], [TokenEntry("alice", FULL)])
    assert both.identify(FULL) == (Access.FULL, "alice")


def test_outbound_tokens_send_only_the_token_of_a_named_entry() -> None:
    settings = load_settings(api_tokens=f"orchestrator:{FULL},ci:{OLD}")
    assert settings.outbound_token("attacker") == FULL
    assert settings.outbound_token("orchestrator") == FULL
    assert token_of_entry(f" ci : {OLD} ") == OLD
    assert token_of_entry(f" {OLD} ") == OLD
    with pytest.raises(ConfigError, match=r"ARENA_ORCHESTRATOR_TOKEN: .*must be a bare token") as caught:
        load_settings(orchestrator_token=f"ci:{OLD}")
    assert OLD not in str(caught.value)


def test_the_caller_is_a_starlette_user_with_a2a_sdks_user_interface() -> None:
    caller = ApiCaller("alice", Access.READ)
    assert caller.is_authenticated and caller.user_name == caller.display_name == caller.identity == "alice"
    assert repr(caller) == "ApiCaller('alice', read)"
    wrapped = StarletteUser(caller)  # what a2a-sdk makes of request.user
    assert wrapped.is_authenticated and wrapped.user_name == "alice"


@pytest.mark.asyncio
async def test_bearer_auth_hands_the_caller_to_a2a_sdks_call_context() -> None:
    """What the SDK's task stores scope tasks by: the owner resolver over the built call context."""
    seen: list[dict[str, object]] = []

    async def endpoint(request: Request) -> JSONResponse:
        context = DefaultServerCallContextBuilder().build(request)
        seen.append({"owner": resolve_user_scope(context), "auth": context.state.get("auth")})
        return JSONResponse({})

    tokens = ApiTokens.of([TokenEntry("alice", FULL), OLD], [TokenEntry("bob", READ)])
    app = Starlette(routes=[Route("/", endpoint, methods=["GET", "POST"])])
    guarded = BearerAuth(app, tokens=tokens, public_paths=["/public"])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(guarded), base_url="http://agent") as http:
        for token in (FULL, OLD, READ):
            response = await http.get("/", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200
        assert (await http.post("/", headers={"Authorization": f"Bearer {READ}"})).status_code == 403
    assert [entry["owner"] for entry in seen] == ["alice", caller_name_for(OLD), "bob"]
    assert [getattr(entry["auth"], "scopes", None) for entry in seen] == [["full"], ["full"], ["read"]]
