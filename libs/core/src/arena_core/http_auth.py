"""Bearer-token authentication of the arena's own HTTP endpoints.

The agents (their A2A endpoints) and the orchestrator (its ``/v1`` API) accept
requests only with ``Authorization: Bearer <token>`` when tokens are configured:

* ``ARENA_API_TOKENS``: full tokens, comma-separated (several at once so a token
  can be rotated without downtime);
* ``ARENA_API_READ_TOKENS``: read-only tokens, good for ``GET`` and ``HEAD`` only
  (follow campaigns, fetch reports and matches, read a task); anything else
  with one is refused with 403.

**Callers.** Each entry of either list is ``name:token`` or a bare ``token``
(:mod:`arena_core.api_token_entries`); the name is the *caller* the token stands
for (a bare token's is derived from its digest). :class:`BearerAuth` puts the
caller in the ASGI scope as ``scope["user"]`` (an :class:`ApiCaller`), which
a2a-sdk's default call-context builder reads: the task stores keep each caller's
tasks apart (another caller's task reads as absent, exactly like an unknown one),
and the defender keys its conversations by caller too
(:mod:`arena_core.caller_scope`). Several tokens may share a name (a rotation
keeps the caller; a read token under a full token's name reads that caller's
tasks); one token under two names is a configuration error at settings load.
Names are not secret: they appear in logs and Redis keys. Outbound tokens
(``ARENA_ATTACKER_TOKEN``, ``ARENA_ORCHESTRATOR_TOKEN``, ``ARENA_TARGET_TOKEN_*``)
are bare tokens.

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
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from starlette.authentication import AuthCredentials, BaseUser
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.api_token_entries import TokenEntry, caller_name_for

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


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def _digests(entries: Iterable[str | TokenEntry]) -> tuple[tuple[bytes, str], ...]:
    items = (TokenEntry(caller_name_for(e), e) if isinstance(e, str) else e for e in entries)
    return tuple((_digest(entry.token), entry.name) for entry in items)


@dataclass(frozen=True, slots=True)
class ApiTokens:
    """The tokens one service accepts, each with its caller's name.

    Build with :meth:`of`; compare with :meth:`identify` (or :meth:`access`). Only
    SHA-256 digests are kept.
    """

    full: tuple[tuple[bytes, str], ...] = ()
    read: tuple[tuple[bytes, str], ...] = ()

    @classmethod
    def of(cls, full: Iterable[str | TokenEntry] = (), read: Iterable[str | TokenEntry] = ()) -> ApiTokens:
        """Tokens from their entries, or from bare token values (each its own caller,
        named by :func:`~arena_core.api_token_entries.caller_name_for`)."""
        return cls(full=_digests(full), read=_digests(read))

    @property
    def enabled(self) -> bool:
        """True when requests must carry a token."""
        return bool(self.full or self.read)

    def identify(self, token: str) -> tuple[Access, str | None]:
        """What ``token`` allows and whose it is (None for :attr:`Access.NONE`).

        The presented token's digest is compared with every configured digest, whether or
        not an earlier one matched, so neither the position of a match nor the length of a
        token shows in the time taken. A token that is both full and read is full.
        """
        presented = _digest(token)
        full: str | None = None
        read: str | None = None
        for digest, name in self.full:
            matched = hmac.compare_digest(presented, digest)
            full = name if matched else full
        for digest, name in self.read:
            matched = hmac.compare_digest(presented, digest)
            read = name if matched else read
        if full is not None:
            return Access.FULL, full
        if read is not None:
            return Access.READ, read
        return Access.NONE, None

    def access(self, token: str) -> Access:
        """What ``token`` allows (:meth:`identify` without the caller)."""
        return self.identify(token)[0]


class ApiCaller(BaseUser):
    """The caller a valid token stands for, as ``scope["user"]``.

    A Starlette user (``request.user``), which a2a-sdk's ``DefaultServerCallContextBuilder``
    wraps into its ``User`` (``is_authenticated``; ``user_name`` read from ``display_name``);
    it also has a2a-sdk's ``User`` interface itself (``user_name``), without importing the SDK
    (the settings import this module before telemetry is set up, which must precede the SDK).
    Task stores scope tasks by that name (``a2a.server.owner_resolver.resolve_user_scope``).
    """

    def __init__(self, name: str, access: Access) -> None:
        self._name = name
        self.access = access

    @property
    def is_authenticated(self) -> bool:
        """Always true: only a valid token makes a caller."""
        return True

    @property
    def user_name(self) -> str:
        """The caller's name (an a2a-sdk ``User``'s)."""
        return self._name

    @property
    def display_name(self) -> str:
        """The caller's name (a Starlette user's)."""
        return self._name

    @property
    def identity(self) -> str:
        """The caller's name (a Starlette user's identity)."""
        return self._name

    def __repr__(self) -> str:
        return f"ApiCaller({self._name!r}, {self.access.value})"


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

    An admitted request carries its caller: ``scope["user"]`` is an :class:`ApiCaller`
    and ``scope["auth"]`` the ``AuthCredentials`` of its access (``full`` or ``read``).
    Public paths, and every request when no token is configured, carry none (a2a-sdk
    then sees its anonymous user, whose name is ``""``).

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
        access, name = self.tokens.identify(token)
        if access is Access.NONE or name is None:
            await self._refuse(
                scope, receive, send, 401, "Unauthorized: the bearer token is not valid here", "invalid_token"
            )
            return
        if access is Access.READ and scope["method"] not in READ_METHODS:
            message = f"Forbidden: a read-only token allows GET and HEAD only, not {scope['method']}"
            await self._refuse(scope, receive, send, 403, message, "insufficient_scope")
            return
        # What starlette's AuthenticationMiddleware would set: a2a-sdk reads the user from here.
        scope["user"] = ApiCaller(name, access)
        scope["auth"] = AuthCredentials([access.value])
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
    "REALM",
    "Access",
    "ApiCaller",
    "ApiTokens",
    "AuthErrorBody",
    "BearerAuth",
    "bearer_token",
    "status_auth_body",
    "warn_if_open",
]
