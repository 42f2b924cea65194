"""Which origins each target token may be sent to (``ARENA_TARGET_CREDENTIAL_ORIGINS``).

A campaign names a target token by variable (``ARENA_TARGET_TOKEN_<NAME>``) and, separately,
the target to attack. Without a scope, whoever may submit a match can pair a token with a
host of their own and receive the secret. A scope ties the token to the origins it belongs
to: a match pairing it with a target elsewhere is refused before anything connects, and a
target's agent card cannot move the token to an interface on another origin.

Format: ``NAME=origin origin;NAME2=origin``. ``NAME`` is the token's suffix (``PROD`` for
``ARENA_TARGET_TOKEN_PROD``) or the whole variable name; an origin is
``scheme://host[:port]`` (http or https, no path, query or user info; the default port may
be left out). Origins compare as :class:`~arena_core.origin.Origin` does: (scheme, lower-case
host, port).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import httpx

from arena_core.origin import Origin

TARGET_TOKEN_PREFIX = "ARENA_TARGET_TOKEN_"  # noqa: S105 - a variable-name prefix, not a secret
_NAME = re.compile(r"^[A-Z0-9_]{1,64}$")


def origin_of(url: httpx.URL | str) -> Origin | None:
    """The origin a token scope compares: that of an http(s) ``url``; None for other schemes,
    no host, or text that is no URL (such a URL is no token's origin)."""
    return Origin.of_web(url)


def display(origin: tuple[str, str, int]) -> str:
    """``scheme://host:port`` for messages (any origin-like triple, e.g. from settings)."""
    return str(Origin(*origin))


def parse_credential_origins(text: str | None) -> dict[str, frozenset[Origin]]:
    """``ARENA_TARGET_TOKEN_<NAME>`` -> the origins its token may go to.

    Raises ValueError naming every bad entry (never quoting a token: the value holds none).
    """
    scopes: dict[str, set[Origin]] = {}
    problems: list[str] = []
    for position, raw in enumerate((text or "").split(";"), start=1):
        entry = raw.strip()
        if not entry:
            continue
        name, sep, origins = entry.partition("=")
        name = name.strip()
        if name.startswith(TARGET_TOKEN_PREFIX):
            name = name[len(TARGET_TOKEN_PREFIX) :]
        if not sep or not _NAME.fullmatch(name):
            problems.append(
                f"entry {position} must look like NAME=origin (NAME: capitals, digits and '_', "
                f"as in {TARGET_TOKEN_PREFIX}<NAME>)"
            )
            continue
        found = origins.split()
        if not found:
            problems.append(f"entry {position} ({name}) lists no origin")
            continue
        for candidate in found:
            origin = _strict_origin(candidate)
            if origin is None:
                problems.append(
                    f"entry {position} ({name}): {candidate[:100]!r} is not an origin "
                    "(http or https://host[:port], nothing after it)"
                )
            else:
                scopes.setdefault(TARGET_TOKEN_PREFIX + name, set()).add(origin)
    if problems:
        raise ValueError("; ".join(problems))
    return {name: frozenset(origins) for name, origins in scopes.items()}


def _strict_origin(text: str) -> Origin | None:
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, TypeError):
        return None
    if parsed.userinfo or parsed.query or parsed.fragment or parsed.path not in ("", "/"):
        return None
    return origin_of(parsed)


def unscoped(tokens: Mapping[str, object], scopes: Mapping[str, frozenset[Origin]]) -> list[str]:
    """The token variables without a scope, sorted (the attacker warns about each)."""
    return sorted(name for name in tokens if name not in scopes)


__all__ = ["TARGET_TOKEN_PREFIX", "display", "origin_of", "parse_credential_origins", "unscoped"]
