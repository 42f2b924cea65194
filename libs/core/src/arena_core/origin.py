"""The origin of a URL, ``scheme://host:port``: the one place that computes it.

A target token's scope (:mod:`arena_core.credential_scope`), a rate limit
(:mod:`arena_core.rate_limit`) and every message naming where the arena
connects (:mod:`arena_core.a2a.egress_guard`) are about an origin, never about
a path, a query or user info. They all take it from :class:`Origin`, so two
URLs are the same origin, and read the same in a message, everywhere.
"""

from __future__ import annotations

from typing import NamedTuple

import httpx

DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443}
"""The port an http(s) URL without one connects to."""


class Origin(NamedTuple):
    """``(scheme, lower-case host, port)``: what two URLs must share to be the same origin.

    A tuple, so that origins compare, hash and sort as the plain tuples settings and tests
    write. ``port`` is the URL's port, else the scheme's default; 0 only for a scheme
    without a default port (nothing the arena connects to). ``str()`` is the display form,
    ``scheme://host:port`` (no port when 0), an IPv6 host in brackets; it never holds user
    info, a path or a query.
    """

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: httpx.URL | str) -> Origin:
        """The origin of ``url``, any scheme; raises ``httpx.InvalidURL`` for text that is no URL."""
        parsed = httpx.URL(url)
        # httpx lower-cases the scheme and a name, not the letters of an IPv6 address.
        return cls(parsed.scheme, parsed.host.lower(), parsed.port or DEFAULT_PORTS.get(parsed.scheme, 0))

    @classmethod
    def of_web(cls, url: httpx.URL | str) -> Origin | None:
        """The origin of an http(s) ``url`` with a host; None for anything else (no URL included)."""
        try:
            origin = cls.of(url)
        except (httpx.InvalidURL, TypeError):
            return None
        return origin if origin.scheme in DEFAULT_PORTS and origin.host else None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}" + (f":{self.port}" if self.port else "")


__all__ = ["DEFAULT_PORTS", "Origin"]
