"""Targets that need a bearer token: the attacker sends it, only to the target, and never shows it."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_attacker.match_runner import MatchRunner
from arena_core.a2a import TargetConversation, connect_target
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.a2a.client.credentials import TargetCredentials
from arena_core.errors import AgentCardError, InvalidInputError, TargetError
from arena_core.match_models import MatchRequest, MatchResult
from arena_core.settings import load_settings
from arena_core.telemetry.spans import INSTRUMENTATION_NAME
from conftest import InProcessArena
from support.asgi import client_for
from support.cards import card_app, card_json

pytestmark = pytest.mark.asyncio

TOKEN = "s3cret"
VAR = "ARENA_TARGET_TOKEN_DEF"


class RequireBearer:
    """ASGI middleware: 401 unless ``Authorization: Bearer <token>``; records what it saw."""

    def __init__(self, app: ASGIApp, *, protect: Callable[[Scope], bool] = lambda _: True) -> None:
        self.app = app
        self.protect = protect
        self.seen: list[tuple[str, str, str | None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            sent = dict(scope["headers"]).get(b"authorization")
            auth = sent.decode() if sent is not None else None
            self.seen.append((scope["method"], scope["path"], auth))
            if self.protect(scope) and auth != f"Bearer {TOKEN}":
                response = PlainTextResponse(
                    "unauthorized", status_code=401, headers={"WWW-Authenticate": "Bearer"}
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _guarded_defender(arena: InProcessArena, **kwargs: Any) -> RequireBearer:
    arena.add_model(mode="obey")
    arena.add_defender(defender_turn_mode="input-required")  # follow-ups carry both ids
    guard = RequireBearer(arena.apps["defender"], **kwargs)
    arena.add("defender", guard)
    return guard


def _request(**fields: Any) -> MatchRequest:
    return MatchRequest.model_validate({"target": "http://defender", "max_turns": 4, **fields})


def _runner(arena: InProcessArena, tokens: dict[str, str]) -> MatchRunner:
    settings = load_settings(target_tokens={name: SecretStr(value) for name, value in tokens.items()})
    return MatchRunner(settings, model_factory=arena.chat_model, http=client_for(arena.router))


def _assert_secret_absent(result: MatchResult) -> None:
    assert TOKEN not in result.model_dump_json()
    assert TOKEN not in repr(result)


async def test_the_token_is_sent_with_every_request_and_the_match_plays(arena: InProcessArena) -> None:
    guard = _guarded_defender(arena)
    result = await _runner(arena, {VAR: TOKEN}).run(_request(target_token_env=VAR))
    assert result.outcome == "attacker_won", result.error
    assert result.turns_used >= 1 and result.target_name
    paths = {path for _, path, _ in guard.seen}
    assert "/.well-known/agent-card.json" in paths and any(m == "POST" for m, _, _ in guard.seen)
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in guard.seen)
    _assert_secret_absent(result)


async def test_the_attacker_service_sends_the_named_token(arena: InProcessArena) -> None:
    guard = _guarded_defender(arena)
    arena.settings = load_settings(target_tokens={VAR: SecretStr(TOKEN)})
    arena.add_attacker()
    result = await play_remote_match("http://attacker", _request(target_token_env=VAR), http=arena.http)
    assert result.outcome == "attacker_won", result.error
    assert guard.seen and all(auth == f"Bearer {TOKEN}" for _, _, auth in guard.seen)
    _assert_secret_absent(result)


async def test_without_a_token_the_match_errors_saying_the_target_needs_credentials(
    arena: InProcessArena,
) -> None:
    _guarded_defender(arena)
    result = await _runner(arena, {VAR: TOKEN}).run(_request())
    assert result.outcome == "error" and result.turns_used == 0
    assert result.error_kind == "target_unauthorized"
    assert result.error is not None
    assert "http://defender answered 401 Unauthorized" in result.error
    assert "needs credentials" in result.error and "target_token_env" in result.error
    _assert_secret_absent(result)


async def test_a_wrong_token_is_reported_as_rejected_without_quoting_it(arena: InProcessArena) -> None:
    _guarded_defender(arena)
    result = await _runner(arena, {VAR: "wrong-token"}).run(_request(target_token_env=VAR))
    assert result.outcome == "error" and result.error is not None
    assert "401 Unauthorized" in result.error and "rejected the credentials" in result.error
    assert "wrong-token" not in result.model_dump_json()


async def test_a_401_on_a_message_after_a_public_card_is_clear(arena: InProcessArena) -> None:
    _guarded_defender(arena, protect=lambda scope: scope["method"] == "POST")
    result = await _runner(arena, {}).run(_request())
    assert result.outcome == "error" and result.error is not None
    assert "answered 401 Unauthorized to a message" in result.error
    assert "needs credentials" in result.error
    good = await _runner(arena, {VAR: TOKEN}).run(_request(target_token_env=VAR))
    assert good.outcome == "attacker_won", good.error


@pytest.mark.parametrize(
    ("binding", "version", "path"),
    [
        ("JSONRPC", "1.0", "/"),
        ("JSONRPC", "0.3", "/"),
        ("HTTP+JSON", "1.0", "/rest"),
        ("HTTP+JSON", "0.3", "/rest"),
    ],
)
async def test_every_binding_and_version_carries_the_token(
    arena: InProcessArena, binding: str, version: str, path: str
) -> None:
    guard = _guarded_defender(arena)
    card = card_json(f"http://defender{path}", binding=binding, version=version, name="Guarded")
    arena.add("card", card_app(card))
    target = await connect_target(
        "http://card", http=arena.http, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert (target.binding, target.protocol_version) == (binding, version)
    conversation = TargetConversation(target)
    first = await conversation.send("uno")
    second = await conversation.send("dos")
    assert second.text and (second.context_id, second.task_id) == (first.context_id, first.task_id)
    await target.close()
    # Two messages, then the cancel with which close() releases the task left waiting for input.
    assert len(guard.seen) == 3 and all(auth == f"Bearer {TOKEN}" for _, _, auth in guard.seen)


async def test_a_variable_that_is_not_set_is_invalid_input_naming_it(arena: InProcessArena) -> None:
    _guarded_defender(arena)
    runner = _runner(arena, {VAR: TOKEN})
    with pytest.raises(InvalidInputError, match="ARENA_TARGET_TOKEN_OTHER is not set on this attacker"):
        await runner.run(_request(target_token_env="ARENA_TARGET_TOKEN_OTHER"))
    arena.add_attacker()  # the fixture's settings have no tokens at all
    with pytest.raises(InvalidInputError, match=f"{VAR} is not set"):
        await play_remote_match("http://attacker", _request(target_token_env=VAR), http=arena.http)


async def test_a_token_that_cannot_be_sent_is_invalid_input_without_its_value(arena: InProcessArena) -> None:
    _guarded_defender(arena)
    with pytest.raises(InvalidInputError) as caught:
        await _runner(arena, {VAR: "s3c\nret"}).run(_request(target_token_env=VAR))
    assert VAR in caught.value.message and "s3c" not in caught.value.message
    # Surrounding whitespace (a trailing newline from a secret file) is trimmed, not an error.
    result = await _runner(arena, {VAR: f" {TOKEN}\n"}).run(_request(target_token_env=VAR))
    assert result.outcome == "attacker_won", result.error


async def test_a_shared_client_is_not_changed(arena: InProcessArena) -> None:
    _guarded_defender(arena)
    target = await connect_target(
        "http://defender", http=arena.http, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    reply = await TargetConversation(target).send("hello")
    assert reply.text and target.authenticated
    assert TOKEN not in repr(target)
    await target.close()
    assert not arena.http.is_closed
    assert "authorization" not in arena.http.headers and arena.http.auth is None
    assert (await arena.http.get("http://defender/.well-known/agent-card.json")).status_code == 401


async def test_the_token_goes_to_the_cards_interface_host_but_nowhere_else(arena: InProcessArena) -> None:
    guard = _guarded_defender(arena)
    card = (await arena.http.get("http://defender/.well-known/agent-card.json", auth=_bearer())).json()
    cards = RequireBearer(card_app(card))
    arena.add("cards", cards)
    target = await connect_target(
        "http://cards", http=arena.http, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    await TargetConversation(target).send("hello")
    await target.close()
    assert cards.seen and guard.seen[-1][2] == f"Bearer {TOKEN}"

    credentials = TargetCredentials({"Authorization": f"Bearer {TOKEN}"}, "https://cards:8443/a")
    assert credentials.applies_to("https://cards:8443/other")
    assert not credentials.applies_to("http://cards:8443/a")
    assert not credentials.applies_to("https://elsewhere:8443/a")
    assert not credentials.allow("http://cards/")  # never downgraded to plain http
    assert not credentials.applies_to("http://cards/")
    assert TOKEN not in repr(credentials)
    assert credentials.redact(f"echo Bearer {TOKEN} and {TOKEN}") == "echo [redacted] and [redacted]"


async def test_an_https_target_does_not_send_its_token_to_a_plain_http_interface(
    arena: InProcessArena,
) -> None:
    guard = _guarded_defender(arena)  # the card says http://defender/
    target = await connect_target(
        "https://defender", http=arena.http, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert not target.authenticated
    with pytest.raises(TargetError, match=r"401 Unauthorized to a message.*needs credentials"):
        await TargetConversation(target).send("hello")
    await target.close()
    assert guard.seen[0][2] == f"Bearer {TOKEN}" and guard.seen[-1][2] is None


async def test_redirects_are_not_followed_with_credentials(arena: InProcessArena) -> None:
    elsewhere = RequireBearer(card_app({}))
    arena.add("elsewhere", elsewhere)

    async def moved(_: Request) -> Response:
        return RedirectResponse("http://elsewhere/.well-known/agent-card.json", status_code=307)

    arena.add("moved", Starlette(routes=[Route("/.well-known/agent-card.json", moved)]))
    follows = httpx.AsyncClient(transport=arena.router, follow_redirects=True)
    with pytest.raises(AgentCardError, match="HTTP 307"):
        await connect_target("http://moved", http=follows, headers={"Authorization": f"Bearer {TOKEN}"})
    await follows.aclose()
    assert elsewhere.seen == []


async def test_a_target_echoing_the_token_in_an_error_gets_it_redacted(arena: InProcessArena) -> None:
    async def rpc(request: Request) -> JSONResponse:
        body = await request.json()
        leak = request.headers.get("authorization", "")
        error = {"code": -32603, "message": f"internal error; you sent {leak}"}
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "error": error})

    app = card_app(card_json("http://leaky/", name="Leaky"))
    app.router.routes.append(Route("/", rpc, methods=["POST"]))
    arena.add("leaky", app)
    runner = _runner(arena, {VAR: TOKEN})
    result = await runner.run(
        MatchRequest.model_validate({"target": "http://leaky", "target_token_env": VAR})
    )
    assert result.outcome == "error" and result.error is not None
    assert "[redacted]" in result.error
    _assert_secret_absent(result)


def _bearer() -> Callable[[httpx.Request], httpx.Request]:
    def add(request: httpx.Request) -> httpx.Request:
        request.headers["Authorization"] = f"Bearer {TOKEN}"
        return request

    return add


# --- the token never reaches logs or spans ----------------------------------------------------

A2A_SDK_SCOPE = "a2a-python-sdk"
"""a2a-sdk's own spans: off in the services (configure_telemetry defaults
OTEL_INSTRUMENTATION_A2A_SDK_ENABLED to false before a2a is imported), on in this test process
(nothing sets the variable before the import), so they are not held to the arena's rule here."""


class LeakWatch:
    """Every log record (every logger, DEBUG and up) and every span finished while it is on."""

    def __init__(self, caplog: pytest.LogCaptureFixture, exporter: InMemorySpanExporter) -> None:
        self.caplog = caplog
        self.exporter = exporter

    def assert_never_logged(self, secret: str, *, target_loggers: tuple[str, ...] = ()) -> None:
        """No record shows ``secret``: not its message, arguments, extras, exception or stack.

        ``target_loggers``: prefixes of loggers that run inside the *target* (an in-process
        a2a-sdk server); what a target logs about the token it was sent is its own business.
        """
        records = [
            r for r in self.caplog.records if not (target_loggers and r.name.startswith(target_loggers))
        ]
        assert any(r.levelno == logging.DEBUG for r in records), "no DEBUG record: the capture is off"
        for record in records:
            texts = [record.getMessage(), repr(record.args), repr(record.__dict__)]
            if record.exc_info and record.exc_info[1] is not None:
                texts.append("".join(traceback.format_exception(record.exc_info[1])))
                texts.extend(repr(exc.args) for exc in _exception_chain(record.exc_info[1]))
            texts += [record.exc_text or "", record.stack_info or ""]
            for text in texts:
                assert secret not in text, f"{record.name} logged the token: {record.getMessage()!r}"

    def assert_never_traced(self, secret: str) -> None:
        """No span shows ``secret``: not its name, attributes, events (exceptions), links, status."""
        spans = [s for s in self.exporter.get_finished_spans() if _scope(s) != A2A_SDK_SCOPE]
        assert any(_scope(s) == INSTRUMENTATION_NAME for s in spans), "no arena span: the provider is off"
        for span in spans:
            texts = [span.name, repr(dict(span.attributes or {})), span.status.description or ""]
            for event in span.events:
                texts += [event.name, repr(dict(event.attributes or {}))]
            texts += [repr(dict(link.attributes or {})) for link in span.links]
            for text in texts:
                if secret in text:
                    at = text.index(secret)
                    pytest.fail(f"span {span.name!r} shows the token: …{text[max(0, at - 200) : at + 40]!r}")


def _scope(span: ReadableSpan) -> str:
    return span.instrumentation_scope.name if span.instrumentation_scope else ""


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) not in seen:
            seen.add(id(current))
            yield current
            stack += [e for e in (current.__cause__, current.__context__) if e is not None]


@pytest.fixture
def leak_watch(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Iterator[LeakWatch]:
    """Logs of every logger at DEBUG, and spans through an SDK provider with an in-memory exporter.

    The arena asks ``trace.get_tracer`` for its tracer on every span (arena_core.telemetry.spans),
    so the global provider is swapped for this test only: monkeypatch puts the previous one back,
    and the exporter is stopped so a span ended later (a background task's) is dropped, not kept.
    """
    caplog.set_level(logging.DEBUG)
    for name, existing in list(logging.root.manager.loggerDict.items()):
        if isinstance(existing, logging.Logger) and existing.level > logging.DEBUG:
            caplog.set_level(logging.DEBUG, logger=name)  # caplog restores the level at teardown
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    assert trace.get_tracer_provider() is provider
    yield LeakWatch(caplog, exporter)
    exporter.shutdown()


def _echo_app(echo: Callable[[str], dict[str, Any]]) -> Starlette:
    """A JSON-RPC 1.0 target (not a2a-sdk) answering what ``echo`` makes of the Authorization it got."""

    async def rpc(request: Request) -> JSONResponse:
        body = await request.json()
        answer = echo(request.headers.get("authorization", ""))
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), **answer})

    app = card_app(card_json("http://echo/", name="Echo"))
    app.router.routes.append(Route("/", rpc, methods=["POST"]))
    return app


def _echoed_in_a_reply(auth: str) -> dict[str, Any]:
    message = {
        "messageId": "m-1",
        "contextId": "c-1",
        "role": "ROLE_AGENT",
        "parts": [{"text": f"thanks for {auth}"}],
        "metadata": {"seen": auth},
    }
    return {"result": {"message": message}}


def _echoed_in_an_error(auth: str) -> dict[str, Any]:
    return {"error": {"code": -32603, "message": f"internal error; you sent {auth}", "data": {"h": auth}}}


ECHOES = pytest.mark.parametrize("echo", [_echoed_in_a_reply, _echoed_in_an_error], ids=["reply", "error"])


async def _play_against_echo(arena: InProcessArena, echo: Callable[[str], dict[str, Any]]) -> None:
    arena.add("echo", _echo_app(echo))
    request = MatchRequest.model_validate({"target": "http://echo", "target_token_env": VAR, "max_turns": 2})
    result = await _runner(arena, {VAR: TOKEN}).run(request)
    _assert_echo_result(result, echo)


def _assert_echo_result(result: MatchResult, echo: Callable[[str], dict[str, Any]]) -> None:
    if echo is _echoed_in_an_error:
        assert result.outcome == "error" and "[redacted]" in (result.error or ""), result.error
    else:
        assert result.turns_used >= 1 and "[redacted]" in result.model_dump_json(), result.error
    _assert_secret_absent(result)


async def test_a_played_match_with_a_token_logs_and_traces_nothing_of_it(
    arena: InProcessArena, leak_watch: LeakWatch
) -> None:
    _guarded_defender(arena)
    result = await _runner(arena, {VAR: TOKEN}).run(_request(target_token_env=VAR))
    assert result.outcome == "attacker_won", result.error
    _assert_secret_absent(result)
    # The target here is the arena's defender: a2a-sdk's server logs the headers it received at
    # DEBUG (call_context), the token among them. That is the target's log, not the attacker's.
    leak_watch.assert_never_logged(TOKEN, target_loggers=("a2a.server.",))
    leak_watch.assert_never_traced(TOKEN)


@ECHOES
async def test_a_target_echoing_the_token_gets_it_into_no_log_and_no_span(
    arena: InProcessArena, leak_watch: LeakWatch, echo: Callable[[str], dict[str, Any]]
) -> None:
    await _play_against_echo(arena, echo)
    leak_watch.assert_never_logged(TOKEN)
    leak_watch.assert_never_traced(TOKEN)


@ECHOES
async def test_the_attacker_service_logs_and_traces_nothing_of_the_token(
    arena: InProcessArena, leak_watch: LeakWatch, echo: Callable[[str], dict[str, Any]]
) -> None:
    arena.add("echo", _echo_app(echo))
    arena.settings = load_settings(target_tokens={VAR: SecretStr(TOKEN)})
    arena.add_attacker()
    request = MatchRequest.model_validate({"target": "http://echo", "target_token_env": VAR, "max_turns": 2})
    result = await play_remote_match("http://attacker", request, http=arena.http)
    _assert_echo_result(result, echo)
    leak_watch.assert_never_logged(TOKEN)
    leak_watch.assert_never_traced(TOKEN)
