"""The OpenAI-compatible HTTP app around one :class:`ChatEngine`.

Routes: ``POST /v1/chat/completions`` (JSON or Server-Sent Events),
``GET /v1/models``, ``GET /healthz`` and ``GET /readyz``. Every error a
client can cause is answered with OpenAI's error body and a 4xx status, and
every engine failure with a 5xx and the same body: never a traceback.

The app adds no locking of its own: engines decide how much concurrency they
take (the scripted engine takes any; the llama engine queues internally).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any, Final

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from arena_core.errors import ArenaError, ConfigError, InvalidInputError
from arena_model.engine import ChatEngine, ChatResult
from arena_model.openai_models import ChatRequest
from arena_model.responses import (
    CompletionMeta,
    completion_chunks,
    completion_dict,
    error_dict,
    models_dict,
)

logger = logging.getLogger(__name__)

# Validation messages beyond this many are summarised; one bad request should
# not produce a kilobyte of error text.
_MAX_REPORTED_ERRORS: Final = 3
DISCONNECT_CHECK_S: Final = 0.5
"""How often a request waiting for the engine checks that its client is still there."""
_SSE_HEADERS: Final = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class _BodyTooLargeError(Exception):
    """Internal signal: the request body exceeded the configured limit."""


def _error(
    status: int,
    message: str,
    *,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> JSONResponse:
    return JSONResponse(error_dict(message, type_=type_, param=param, code=code), status_code=status)


def _dumps(payload: dict[str, Any]) -> str:
    # Same compact, UTF-8 preserving encoding that JSONResponse uses.
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _describe_validation(error: ValidationError) -> tuple[str, str | None]:
    """A readable message and the ``param`` (dotted location) of the first problem."""
    problems = error.errors(include_url=False)
    parts = []
    for problem in problems[:_MAX_REPORTED_ERRORS]:
        location = ".".join(str(item) for item in problem["loc"])
        parts.append(f"{location}: {problem['msg']}" if location else str(problem["msg"]))
    if len(problems) > _MAX_REPORTED_ERRORS:
        parts.append(f"and {len(problems) - _MAX_REPORTED_ERRORS} more problem(s)")
    first = problems[0]["loc"] if problems else ()
    param = ".".join(str(item) for item in first) or None
    return "Invalid request: " + "; ".join(parts), param


async def _read_body(request: Request, limit: int) -> bytes:
    """Read the body, refusing more than ``limit`` bytes without buffering them all."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _BodyTooLargeError
    body = bytearray()
    # Chunked uploads have no Content-Length, so the limit is enforced as
    # bytes arrive as well.
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _BodyTooLargeError
    return bytes(body)


class _ModelServer:
    """Request handlers bound to one engine and one body limit."""

    def __init__(self, engine: ChatEngine, max_body_bytes: int) -> None:
        self.engine = engine
        self.max_body_bytes = max_body_bytes
        self.created = int(time.time())

    async def chat_completions(self, request: Request) -> Response:
        try:
            body = await _read_body(request, self.max_body_bytes)
        except _BodyTooLargeError:
            return _error(
                413,
                f"Request body is larger than the limit of {self.max_body_bytes} bytes.",
                code="request_too_large",
            )
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            return _error(400, f"Request body is not valid JSON: {error}.", code="invalid_json")
        try:
            chat = ChatRequest.model_validate(payload)
        except ValidationError as error:
            message, param = _describe_validation(error)
            return _error(400, message, param=param, code="invalid_value")

        # The whole answer is computed before any byte is sent, so an engine
        # failure can still become a proper status code even when streaming.
        outcome = await self._complete_while_wanted(chat, request)
        if isinstance(outcome, Response):
            return outcome
        meta = CompletionMeta(model=self.engine.model_id)
        if chat.stream:
            return StreamingResponse(
                _sse(outcome, meta, include_usage=chat.include_usage_chunk),
                media_type="text/event-stream",
                headers=_SSE_HEADERS,
            )
        return JSONResponse(completion_dict(outcome, meta))

    async def _complete_while_wanted(self, chat: ChatRequest, request: Request) -> ChatResult | Response:
        """:meth:`_complete`, dropped when its client goes away first.

        A client that timed out does not read the answer, yet a request queued behind a long
        generation would still be generated later: under load, clients' timeouts and retries
        then pile up work nobody waits for (each retry queued behind the abandoned attempts).
        So the client's connection is checked while the request waits; once it is gone the
        request is cancelled: still queued, it is never generated; already generating, its
        engine finishes that generation (llama.cpp cannot be stopped mid-way) and moves on.
        """
        work = asyncio.ensure_future(self._complete(chat))
        try:
            while True:
                done, _ = await asyncio.wait({work}, timeout=DISCONNECT_CHECK_S)
                if done:
                    return work.result()
                if await request.is_disconnected():
                    logger.info("a client went away before its completion: request dropped")
                    return _error(499, "The client closed the connection.", code="client_closed_request")
        finally:
            # Dropped, or this handler itself cancelled: the work must not outlive it.
            if not work.done():
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work

    async def _complete(self, chat: ChatRequest) -> ChatResult | Response:
        engine = self.engine
        try:
            return await engine.complete(chat)
        except InvalidInputError as error:
            return _error(400, error.message, code=error.kind)
        except ArenaError as error:
            logger.warning("engine %s failed: %s", engine.name, error.message)
            return _error(500, error.message, type_="server_error", code=error.kind)
        except Exception:
            # The boundary: whatever went wrong inside the engine is logged
            # with its traceback here and reported to the client as a 500.
            logger.exception("engine %s raised while completing", engine.name)
            return _error(
                500,
                f"The {engine.name} engine failed to answer; see the model server log.",
                type_="server_error",
                code="engine_error",
            )

    async def models(self, request: Request) -> Response:
        return JSONResponse(models_dict(self.engine.model_id, self.created))

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        engine = self.engine
        if engine.ready():
            return JSONResponse({"status": "ready", "engine": engine.name, "model": engine.model_id})
        return JSONResponse(
            {
                "status": "not_ready",
                "engine": engine.name,
                "reason": engine.unready_reason(),
            },
            status_code=503,
        )


async def _sse(result: ChatResult, meta: CompletionMeta, *, include_usage: bool) -> AsyncIterator[str]:
    # An async generator: Starlette would push a sync iterator through a
    # thread pool one chunk at a time.
    for chunk in completion_chunks(result, meta, include_usage=include_usage):
        yield f"data: {_dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


async def _http_error(request: Request, exc: Exception) -> Response:
    # 404/405 and friends get OpenAI's error shape too, so clients can parse them.
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "Internal server error."
    return _error(status, f"{detail} ({request.method} {request.url.path})", code=f"http_{status}")


def create_app(engine: ChatEngine, *, max_body_bytes: int = 1_000_000) -> Starlette:
    """Build the ASGI app serving ``engine``.

    The app never closes the engine: whoever created the engine owns it.

    Raises:
        ConfigError: ``max_body_bytes`` is not positive.
    """
    if max_body_bytes <= 0:
        raise ConfigError(f"max_body_bytes must be positive, got {max_body_bytes}.")
    server = _ModelServer(engine, max_body_bytes)
    routes = [
        Route("/v1/chat/completions", server.chat_completions, methods=["POST"]),
        Route("/v1/models", server.models, methods=["GET"]),
        Route("/healthz", server.healthz, methods=["GET"]),
        Route("/readyz", server.readyz, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})


__all__ = ["create_app"]
