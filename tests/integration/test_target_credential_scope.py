"""A scoped target token (ARENA_TARGET_CREDENTIAL_ORIGINS) goes only to its origins.

Whoever may submit a match chooses both the target and the token variable; a scope stops
them from pairing a token with a host of their own, and stops a target's card from moving
the token to an interface elsewhere. Every host here is an in-process ASGI app that records
the ``Authorization`` header of each request it gets.
"""

from __future__ import annotations

import logging

import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_attacker.match_runner import MatchRunner
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.errors import InvalidInputError
from arena_core.match_models import MatchRequest
from arena_core.settings import load_settings
from conftest import InProcessArena
from support.asgi import client_for
from support.cards import card_app

pytestmark = pytest.mark.asyncio

TOKEN = "scoped-s3cret-token"
VAR = "ARENA_TARGET_TOKEN_DEF"


class Recorder:
    """ASGI middleware: remembers (path, Authorization) of every request, then passes it on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[tuple[str, str | None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            sent = dict(scope["headers"]).get(b"authorization")
            self.seen.append((scope["path"], sent.decode() if sent is not None else None))
        await self.app(scope, receive, send)


def _defender(arena: InProcessArena) -> Recorder:
    arena.add_model(mode="obey")
    arena.add_defender()
    recorder = Recorder(arena.apps["defender"])
    arena.add("defender", recorder)
    return recorder


def _runner(arena: InProcessArena, origins: str) -> MatchRunner:
    settings = load_settings(target_tokens={VAR: SecretStr(TOKEN)}, target_credential_origins=origins or None)
    return MatchRunner(settings, model_factory=arena.chat_model, http=client_for(arena.router))


def _request(target: str) -> MatchRequest:
    return MatchRequest.model_validate({"target": target, "max_turns": 4, "target_token_env": VAR})


async def test_a_scoped_token_plays_against_its_own_origin(arena: InProcessArena) -> None:
    defender = _defender(arena)
    result = await _runner(arena, "DEF=http://defender").run(_request("http://defender/"))
    assert result.outcome == "attacker_won", result.error
    assert defender.seen and all(auth == f"Bearer {TOKEN}" for _, auth in defender.seen)


async def test_a_scoped_token_is_refused_for_another_target_before_any_request(arena: InProcessArena) -> None:
    defender = _defender(arena)
    thief = Recorder(Starlette())
    arena.add("thief", thief)
    runner = _runner(arena, "DEF=http://defender")
    with pytest.raises(InvalidInputError) as refused:
        await runner.run(_request("http://thief:80/steal?x=1"))
    message = refused.value.message
    assert VAR in message and "http://defender:80" in message and "ARENA_TARGET_CREDENTIAL_ORIGINS" in message
    assert "http://thief:80/steal" in message and "x=1" not in message  # no query
    assert TOKEN not in message
    # Another port or scheme of the same host is another origin.
    for other in ("http://defender:8081", "https://defender"):
        with pytest.raises(InvalidInputError):
            await runner.run(_request(other))
    assert thief.seen == [] and defender.seen == []


async def test_a_card_cannot_move_a_scoped_token_to_another_origin(arena: InProcessArena) -> None:
    defender = _defender(arena)
    card = (await arena.http.get("http://defender/.well-known/agent-card.json")).json()
    defender.seen.clear()
    cards = Recorder(card_app(card))  # its interfaces point at http://defender
    arena.add("cards", cards)
    result = await _runner(arena, "DEF=http://cards").run(_request("http://cards"))
    assert result.outcome == "error" and result.error_kind == "target_not_allowed", result
    assert result.error is not None and "ARENA_TARGET_CREDENTIAL_ORIGINS" in result.error
    assert "http://defender" in result.error and TOKEN not in result.model_dump_json()
    assert cards.seen == [("/.well-known/agent-card.json", f"Bearer {TOKEN}")]
    assert defender.seen == []  # nothing went to the interface, with or without the token


async def test_unscoped_tokens_keep_working_and_are_warned_about(
    arena: InProcessArena, caplog: pytest.LogCaptureFixture
) -> None:
    defender = _defender(arena)
    with caplog.at_level(logging.WARNING, logger="arena_attacker.match_runner"):
        runner = _runner(arena, "")
    assert any(
        VAR in r.getMessage() and "ARENA_TARGET_CREDENTIAL_ORIGINS" in r.getMessage() for r in caplog.records
    )
    result = await runner.run(_request("http://defender"))
    assert result.outcome == "attacker_won", result.error
    assert all(auth == f"Bearer {TOKEN}" for _, auth in defender.seen)


async def test_the_attacker_service_refuses_a_scoped_token_for_another_target(arena: InProcessArena) -> None:
    defender = _defender(arena)
    arena.settings = load_settings(
        target_tokens={VAR: SecretStr(TOKEN)}, target_credential_origins="DEF=http://x"
    )
    arena.add_attacker()
    with pytest.raises(InvalidInputError, match="ARENA_TARGET_CREDENTIAL_ORIGINS"):
        await play_remote_match("http://attacker", _request("http://defender"), http=arena.http)
    assert defender.seen == []
