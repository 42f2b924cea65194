"""Bearer-token authentication of the arena's own HTTP endpoints.

The agents (their A2A endpoints) and the orchestrator (its ``/v1`` API) accept
requests only with ``Authorization: Bearer <token>`` when tokens are configured:

* ``ARENA_API_TOKENS``: full tokens, comma-separated (several at once so a token
  can be rotated without downtime);
* ``ARENA_API_READ_TOKENS``: read-only tokens, good for ``GET`` and ``HEAD`` only
  (follow campaigns, fetch reports and matches, read a task); anything else
  with one is refused with 403.

What stays public: the agent card (clients need it to learn how to authenticate;
it declares the ``bearer`` scheme), ``/healthz`` and ``/readyz`` (probes carry no
token), and on the orchestrator the dashboard's static files and the OpenAPI
description. With no tokens configured nothing is checked (the local default;
services log a warning when they listen beyond loopback without tokens).

Answers: no ``Authorization`` header, another scheme, or a token that matches
none → **401** with ``WWW-Authenticate: Bearer realm="a2a-arena"`` (plus
``error="invalid_token"`` when a token was sent, RFC 6750 §3.1); a read-only
token on a method that changes something → **403** with
``error="insufficient_scope"``. Tokens are compared in constant time: the
presented token and each configured one are hashed (SHA-256) and every digest
is compared with :func:`hmac.compare_digest`, whether or not an earlier one
matched, so neither the position of a match nor the length of a token leaks
through timing. A token is never logged, echoed in an error or put in a span.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

MIN_TOKEN_LENGTH = 16
MAX_TOKEN_LENGTH = 512
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9._~+/=-]+$")
"""RFC 6750 ``b64token`` characters: what may follow ``Bearer`` in a header."""

REALM = "a2a-arena"
logger = logging.getLogger(__name__)
READ_METHODS = frozenset({"GET", "HEAD"})
BEARER_SCHEME_NAME = "bearer"
"""The name of the scheme in agent cards' ``securitySchemes``."""


class Access(Enum):
    """What a request's credentials allow."""

    NONE = "none"  # no token, or not one of ours
    READ = "read"
    FULL = "full"


def parse_tokens(raw: str | None) -> tuple[str, ...]:
    """Split a comma-separated token list; raise ValueError naming what is wrong (never the token).

    Each token is 16-512 characters from the RFC 6750 token alphabet
    (letters, digits and ``-._~+/=``), so it fits in a header unchanged.
    """
    if raw is None:
        return ()
    tokens: list[str] = []
    for position, item in enumerate(raw.split(","), start=1):
        token = item.strip()
        if not token:
            continue
        if not MIN_TOKEN_LENGTH <= len(token) <= MAX_TOKEN_LENGTH:
            msg = (
                f"token {position} is {len(token)} characters; tokens must be "
                f"{MIN_TOKEN_LENGTH}-{MAX_TOKEN_LENGTH} (e.g. `openssl rand -hex 32`)"
            )
            raise ValueError(msg)
        if not TOKEN_PATTERN.match(token):
            msg = f"token {position} has characters outside A-Z a-z 0-9 - . _ ~ + / ="
            raise ValueError(msg)
        tokens.append(token)
    if not tokens and raw.strip():
        msg = "holds no token (only commas and spaces)"
        raise ValueError(msg)
    return tuple(tokens)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


@dataclass(frozen=True, slots=True)
class ApiTokens:
    """The tokens one service accepts. Build with :meth:`of`; compare with :meth:`access`."""

    full: tuple[bytes, ...] = ()
    read: tuple[bytes, ...] = ()

    @classmethod
    def of(cls, full: Iterable[str] = (), read: Iterable[str] = ()) -> ApiTokens:
        """Tokens from their plain values (kept only as SHA-256 digests)."""
        return cls(full=tuple(_digest(t) for t in full), read=tuple(_digest(t) for t in read))

    @property
    def enabled(self) -> bool:
        """True when requests must carry a token."""
        return bool(self.full or self.read)

    def access(self, token: str) -> Access:
        """What ``token`` allows, compared in constant time against every configured token."""
        presented = _digest(token)
        full = False
        read = False
        for digest in self.full:
            full |= hmac.compare_digest(presented, digest)
        for digest in self.read:
            read |= hmac.compare_digest(presented, digest)
        if full:
            return Access.FULL
        return Access.READ if read else Access.NONE


AuthErrorBody = Callable[[int, str], dict[str, Any]]
"""Builds the JSON body of a 401/403 from its status and reason."""


def status_auth_body(status: int, message: str) -> dict[str, Any]:
    """A google.rpc.Status body, the shape of the agents' HTTP+JSON errors."""
    name = "UNAUTHENTICATED" if status == 401 else "PERMISSION_DENIED"
    return {"error": {"code": status, "status": name, "message": message}}


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer`` header; None when absent or another scheme."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() != "bearer":
                return None
            return token.strip() or None
    return None


class BearerAuth:
    """ASGI middleware: requests outside ``public_paths`` need a token of ``tokens``.

    ``public_paths`` are exact paths; ``public_prefixes`` cover a subtree (the
    dashboard's assets). Websocket and lifespan scopes pass through (the arena
    serves neither over HTTP). With ``tokens`` not enabled it is a no-op.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens: ApiTokens,
        public_paths: Collection[str] = (),
        public_prefixes: Collection[str] = (),
        error_body: AuthErrorBody = status_auth_body,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.public_paths = frozenset(public_paths)
        self.public_prefixes = tuple(public_prefixes)
        self.error_body = error_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.tokens.enabled or self._public(scope["path"]):
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope)
        if token is None:
            await self._refuse(
                scope,
                receive,
                send,
                401,
                "Unauthorized: this endpoint needs an 'Authorization: Bearer' token",
                None,
            )
            return
        access = self.tokens.access(token)
        if access is Access.NONE:
            await self._refuse(
                scope, receive, send, 401, "Unauthorized: the bearer token is not valid here", "invalid_token"
            )
            return
        if access is Access.READ and scope["method"] not in READ_METHODS:
            message = f"Forbidden: a read-only token allows GET and HEAD only, not {scope['method']}"
            await self._refuse(scope, receive, send, 403, message, "insufficient_scope")
            return
        await self.app(scope, receive, send)

    def _public(self, path: str) -> bool:
        return path in self.public_paths or path.startswith(self.public_prefixes)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, message: str, error: str | None
    ) -> None:
        challenge = f'Bearer realm="{REALM}"' + (f', error="{error}"' if error else "")
        response = JSONResponse(self.error_body(status, message), status_code=status)
        response.headers["WWW-Authenticate"] = challenge
        # The body (if any) is never read: close, so it is not taken for the next request.
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


def warn_if_open(tokens: ApiTokens, host: str, service: str) -> None:
    """Log a warning when ``service`` listens beyond loopback and asks for no token."""
    if tokens.enabled:
        return
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        logger.warning(
            "the %s listens on %s and ARENA_API_TOKENS is not set: anyone who reaches it can use it",
            service,
            host or "every interface",
        )


__all__ = [
    "BEARER_SCHEME_NAME",
    "MIN_TOKEN_LENGTH",
    "REALM",
    "Access",
    "ApiTokens",
    "AuthErrorBody",
    "BearerAuth",
    "bearer_token",
    "parse_tokens",
    "status_auth_body",
    "warn_if_open",
]
