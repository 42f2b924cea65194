"""The httpx client one agent's requests go through: rate-limited, 429-aware, credentialed, size-capped.

:class:`TargetHttpClient` is what the a2a-sdk transports (and the card fetch) are given. It
adds nothing to the shared httpx client it wraps; per request, it:

* takes a slot of the :class:`~arena_core.rate_limit.RateLimiter` (``ARENA_TARGET_RATE_LIMIT``)
  for the request's origin, waiting at most until its deadline: ``timeout_s`` after the call
  started, or the end of the enclosing :func:`~arena_core.rate_limit.deadline_scope` (the
  match) when sooner;
* retries a 429 Too Many Requests once after its ``Retry-After`` (1 s without one) when that
  fits the deadline, holding the origin that long for every request of the limiter; otherwise
  it raises :class:`~arena_core.errors.TargetRateLimitedError` (kind ``rate_limited``);
* attaches the agent's :class:`~arena_core.a2a.client.credentials.TargetCredentials` and then
  never follows a redirect;
* reads the response through :func:`~arena_core.a2a.client.response_limits.limit_response`:
  at most ``max_response_bytes`` (``ARENA_TARGET_MAX_RESPONSE_BYTES``), decoded.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from arena_core.a2a.client.credentials import TargetCredentials
from arena_core.a2a.client.response_limits import ACCEPT_ENCODING, DEFAULT_MAX_RESPONSE_BYTES, limit_response
from arena_core.errors import TargetRateLimitedError
from arena_core.rate_limit import RateLimiter, current_deadline, retry_after_s, target_origin

DEFAULT_RETRY_AFTER_S = 1.0
"""How long to wait before retrying a 429 that names no (readable) Retry-After."""
MAX_HOLD_S = 3600.0
"""The longest a target's Retry-After holds its origin for other requests."""


class _NoTransport(httpx.AsyncBaseTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise RuntimeError("requests of a target client are sent through its shared client")


class TargetHttpClient(httpx.AsyncClient):
    """``inner`` as seen by one target's requests: rate-limited, 429-aware, credentialed, size-capped.

    The a2a-sdk transports call ``build_request`` and ``send`` on the client they are
    given; both are delegated to ``inner`` (its transport, timeouts, hooks and pool).
    ``send`` first takes a ``limiter`` slot for the request's origin (see the module doc
    for deadlines and 429s). With ``credentials``, requests carry this target's auth and
    never follow redirects. ``inner`` is not changed; headers the SDK sets on this
    client's defaults are added to each request. Every response's body is read (by ``send``,
    or by the caller of ``send(..., stream=True)``) through
    :func:`~arena_core.a2a.client.response_limits.limit_response`: at most ``max_response_bytes``.
    """

    def __init__(
        self,
        inner: httpx.AsyncClient,
        *,
        credentials: TargetCredentials | None,
        limiter: RateLimiter | None,
        timeout_s: float,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        super().__init__(transport=_NoTransport(), trust_env=False)
        self._inner = inner
        self._credentials = credentials
        self._limiter = limiter
        self._timeout_s = timeout_s
        self._max_response_bytes = max_response_bytes

    def build_request(self, *args: Any, **kwargs: Any) -> httpx.Request:
        request = self._inner.build_request(*args, **kwargs)
        # Defaults set on this client (the a2a-sdk sets A2A-Version) rank below the request's own.
        for name, value in self.headers.multi_items():
            request.headers.setdefault(name, value)
        return request

    async def send(self, request: httpx.Request, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        if self._credentials is not None:
            kwargs["auth"] = self._credentials
            kwargs["follow_redirects"] = False
        # Only the codings the size limit decodes itself, as it counts.
        request.headers["Accept-Encoding"] = ACCEPT_ENCODING
        response = await self._send_paced(request, kwargs)
        if not stream:
            try:
                await response.aread()
            except BaseException:
                await response.aclose()
                raise
        return response

    async def _send_paced(self, request: httpx.Request, kwargs: dict[str, Any]) -> httpx.Response:
        """``request`` sent in its rate-limit slot, 429s handled; its body is not read yet."""
        deadline = time.monotonic() + self._timeout_s
        until_match_ends = current_deadline()
        if until_match_ends is not None:
            deadline = min(deadline, until_match_ends)
        origin = target_origin(request.url)
        await self._take_slot(origin, deadline)
        response = await self._send_limited(request, kwargs)
        if response.status_code != 429:
            return response
        await response.aclose()
        asked = retry_after_s(response.headers.get("Retry-After"))
        wait = DEFAULT_RETRY_AFTER_S if asked is None else asked
        if self._limiter is not None:
            # Every request to this origin backs off, on every replica, not only this one.
            await self._limiter.hold(origin, min(wait, MAX_HOLD_S))
        left = deadline - time.monotonic()
        if wait > left:
            raise TargetRateLimitedError(
                f"target {origin} answered 429 Too Many Requests and asks to wait {wait:.1f} s, "
                f"longer than the {max(0.0, left):.1f} s left before the request's deadline; "
                "try again later"
            )
        await asyncio.sleep(wait)
        await self._take_slot(origin, deadline)
        response = await self._send_limited(request, kwargs)
        if response.status_code == 429:
            await response.aclose()
            raise TargetRateLimitedError(
                f"target {origin} answered 429 Too Many Requests again after waiting {wait:.1f} s "
                "as it asked; try again later"
            )
        return response

    async def _send_limited(self, request: httpx.Request, kwargs: dict[str, Any]) -> httpx.Response:
        """``request`` sent by ``inner``; the body of its response, not read yet, is size-capped."""
        response = await self._inner.send(request, stream=True, **kwargs)
        try:
            limit_response(response, self._max_response_bytes, url=request.url)
        except BaseException:
            await response.aclose()
            raise
        return response

    async def _take_slot(self, origin: str, deadline: float) -> None:
        if self._limiter is not None:
            await self._limiter.acquire(origin, max_wait_s=deadline - time.monotonic())

    @property
    def is_closed(self) -> bool:
        return self._inner.is_closed


__all__ = ["DEFAULT_RETRY_AFTER_S", "MAX_HOLD_S", "TargetHttpClient"]
