"""The credentials sent to one A2A agent, to its own origins only, and kept out of every text.

A :class:`TargetCredentials` is an ``httpx.Auth`` passed per request (``auth=``), never set on a
shared httpx client. Its headers go to the origin of the agent's URL and to the origin of the
interface chosen from its card (:meth:`TargetCredentials.allow`), unless that interface would
downgrade https to plain http or leave the token's scope (``ARENA_TARGET_CREDENTIAL_ORIGINS``).
Their values never appear in its ``repr``, and :func:`redact` takes them out of any text an
agent sends back (an agent may echo its token in a reply or an error).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Generator, Mapping
from typing import Any

import httpx

from arena_core.a2a.egress_guard import display_origin
from arena_core.credential_scope import display, origin_of
from arena_core.errors import TargetNotAllowedError
from arena_core.log_redaction import REDACTED
from arena_core.origin import Origin

# Visible ASCII and inner spaces: anything else would be refused by the HTTP stack with
# an error that quotes the value.
_HEADER_VALUE = re.compile(r"[\x21-\x7e]+(?: +[\x21-\x7e]+)*")


class TargetCredentials(httpx.Auth):
    """Headers (e.g. a bearer token) for one agent, sent only to its allowed origins.

    Passed per request (``auth=``), so a shared httpx client is never changed. The
    values never appear in ``repr`` or in the error messages of the client. With a
    ``scope`` (the token's ``ARENA_TARGET_CREDENTIAL_ORIGINS`` entry) no origin outside
    it is ever added: a target outside it raises TargetNotAllowedError here. A header
    value that cannot be sent over HTTP raises ValueError (without the value).
    """

    def __init__(
        self, headers: Mapping[str, str], target_url: str, *, scope: frozenset[Origin] | None = None
    ) -> None:
        for name, value in headers.items():
            if not _HEADER_VALUE.fullmatch(value):
                # Never quote the value: it is a secret.
                raise ValueError(
                    f"the {name} header for target {target_url} is empty or holds characters "
                    "that cannot be sent in HTTP (only visible ASCII and inner spaces)"
                )
        self._headers = dict(headers)
        self._https = httpx.URL(target_url).scheme == "https"
        self._scope = scope
        if not self.in_scope(target_url):
            raise TargetNotAllowedError(
                f"target {display_origin(target_url)} is outside the origins its token may go to "
                "(ARENA_TARGET_CREDENTIAL_ORIGINS)"
            )
        self._origins = {origin_of(target_url)}
        secrets = set(self._headers.values())
        secrets |= {value.split(" ", 1)[1] for value in self._headers.values() if " " in value}
        # Longest first, so a token is not half-redacted inside its "Bearer <token>" form.
        self._secrets = tuple(sorted(secrets, key=len, reverse=True))

    @classmethod
    def bearer(cls, token: str, url: str) -> TargetCredentials:
        """``Authorization: Bearer <token>`` for the agent at ``url``, unscoped."""
        return cls({"Authorization": f"Bearer {token}"}, url)

    def in_scope(self, url: httpx.URL | str) -> bool:
        """True unless a scope is set and ``url``'s origin is outside it."""
        return self._scope is None or origin_of(url) in self._scope

    def allow(self, url: str) -> bool:
        """Also send the headers to ``url``'s origin, unless it downgrades https to http or
        leaves the scope."""
        if (self._https and httpx.URL(url).scheme != "https") or not self.in_scope(url):
            return False
        self._origins.add(origin_of(url))
        return True

    def applies_to(self, url: httpx.URL | str) -> bool:
        """True when a request to ``url`` carries the headers."""
        origin = origin_of(url)
        return origin is not None and origin in self._origins

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self.applies_to(request.url):
            request.headers.update(self._headers)
        yield request

    def fingerprint(self) -> str:
        """A digest of the headers (names and values), to tell identities apart without keeping
        the secrets (e.g. a card cache's key)."""
        material = "\n".join(f"{name.lower()}:{value}" for name, value in sorted(self._headers.items()))
        return hashlib.sha256(material.encode()).hexdigest()[:32]

    def redact(self, text: str) -> str:
        """``text`` with every credential value replaced by ``[redacted]``."""
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def redact_json(self, value: Any) -> Any:
        """:meth:`redact` applied to every string in a JSON-like value."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(str(k)): self.redact_json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_json(v) for v in value]
        return value

    def __repr__(self) -> str:
        names = ", ".join(sorted(self._headers))
        origins = ", ".join(sorted(display(origin) for origin in self._origins if origin is not None))
        return f"TargetCredentials(headers=[{names}], origins=[{origins}])"


def redact(text: str, credentials: TargetCredentials | None) -> str:
    """``text`` without the values of ``credentials`` (unchanged when there are none)."""
    return credentials.redact(text) if credentials is not None else text


__all__ = ["TargetCredentials", "redact"]
