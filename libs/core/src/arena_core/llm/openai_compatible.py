"""``OpenAICompatibleClient``: chat completions from a llama.cpp-style server, without an SDK.

The embedded model server (``arena serve model``) and llama.cpp's own server speak
OpenAI's chat-completions API. For them :class:`~arena_core.llm.chat_model.ChatModel`
posts one JSON body over a kept-alive aiohttp session and reads the JSON answer, instead
of going through any-llm, the OpenAI SDK and httpx (ADR 0013, docs/performance.md): the
SDK rebuilt and re-validated every message of the conversation on every call, and
httpx's connection pool costs milliseconds of CPU per request once a few dozen
conversations are in flight. Hosted providers keep any-llm.

An ``httpx.AsyncClient`` passed as ``http_client`` is used instead of aiohttp; the
in-process tests route it to ASGI apps.

Contract: :meth:`OpenAICompatibleClient.create` returns the decoded JSON object of a 2xx
answer, or raises :class:`ModelHttpError` (the server answered with an error status; the
status and the server's own message are kept), :class:`ModelResponseError` (the answer is
not a JSON object, or larger than :data:`MAX_RESPONSE_BYTES`), or the HTTP client's
connection errors and timeouts (not answered at all). ``ChatModel`` decides which of
them are worth a retry. The W3C trace context is the caller's to put in ``headers``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import httpx
from opentelemetry.instrumentation.utils import suppress_http_instrumentation

MAX_ERROR_TEXT = 300
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""A chat completion is a few kilobytes; a larger answer is refused, not buffered."""
_TOO_LARGE = f"the model server's answer is larger than {MAX_RESPONSE_BYTES} bytes"


class ModelHttpError(Exception):
    """The model server answered with an HTTP error status."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code


class ModelResponseError(Exception):
    """The model server's answer is not a chat-completions JSON object."""


class OpenAICompatibleClient:
    """Posts chat-completions requests to ``{base_url}/chat/completions``.

    The aiohttp session is made on first use, in the running event loop, and closed by
    :meth:`aclose`. An ``http_client`` given by the caller is used as given and never
    closed here.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._http_client = http_client
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        timeout_s: float,
        headers: Mapping[str, str] | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """One chat completion; ``params`` (temperature, max_tokens, tools, seed) go in the body."""
        body = json.dumps(
            {"model": model, "messages": list(messages), **params}, separators=(",", ":"), ensure_ascii=False
        ).encode()
        request_headers = {**self._headers, **headers} if headers else self._headers
        if self._http_client is not None:
            status, reason, raw = await self._post_httpx(self._http_client, body, request_headers, timeout_s)
        else:
            status, reason, raw = await self._post_aiohttp(body, request_headers, timeout_s)
        if status >= 400:
            raise ModelHttpError(status, _error_text(raw, reason))
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly nested JSON
            raise ModelResponseError(f"the model server's answer is not JSON: {type(exc).__name__}") from exc
        if not isinstance(data, dict):
            raise ModelResponseError("the model server's answer is not a JSON object")
        return data

    async def _post_aiohttp(
        self, body: bytes, headers: Mapping[str, str], timeout_s: float
    ) -> tuple[int, str, bytes]:
        session = self._current_session()
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with session.post(self.url, data=body, headers=headers, timeout=timeout) as response:
            if response.content_length is not None and response.content_length > MAX_RESPONSE_BYTES:
                raise ModelResponseError(
                    f"the model server's answer is larger than {MAX_RESPONSE_BYTES} bytes"
                )
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.content.iter_chunked(64 * 1024):
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise ModelResponseError(
                        f"the model server's answer is larger than {MAX_RESPONSE_BYTES} bytes"
                    )
                chunks.append(chunk)
            return response.status, response.reason or "", b"".join(chunks)

    async def _post_httpx(
        self, client: httpx.AsyncClient, body: bytes, headers: Mapping[str, str], timeout_s: float
    ) -> tuple[int, str, bytes]:
        # The caller's trace context is in the headers already; no second client span.
        with suppress_http_instrumentation():
            response = await client.post(self.url, content=body, headers=headers, timeout=timeout_s)
        if len(response.content) > MAX_RESPONSE_BYTES:
            raise ModelResponseError(_TOO_LARGE)
        return response.status_code, response.reason_phrase, response.content

    def _current_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            # A session belongs to one event loop; one left on a finished loop is dropped
            # (its connections went with that loop).
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=60),
                auto_decompress=True,
                trust_env=False,
            )
            self._session_loop = loop
        return self._session

    async def aclose(self) -> None:
        """Close the aiohttp session, if this event loop made one."""
        session, self._session = self._session, None
        if session is not None and not session.closed and self._session_loop is asyncio.get_running_loop():
            await session.close()


def _error_text(raw: bytes, reason: str) -> str:
    """The server's own error message (OpenAI's ``{"error": {"message": ...}}``), else its text."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message.strip():
            return message.strip()[:MAX_ERROR_TEXT]
    text = raw.decode("utf-8", errors="replace").strip()
    return text[:MAX_ERROR_TEXT] or reason or "no message"


__all__ = ["MAX_RESPONSE_BYTES", "ModelHttpError", "ModelResponseError", "OpenAICompatibleClient"]
