"""The entries of ``ARENA_API_TOKENS`` and ``ARENA_API_READ_TOKENS``: who each token stands for.

Each comma-separated entry is ``name:token`` or a bare ``token``. The name is the
*caller* the token authenticates (:mod:`arena_core.http_auth` hands it to a2a-sdk,
which keeps each caller's tasks apart): 1-64 characters from ``A-Z a-z 0-9 . _ -``,
starting with a letter or digit. A bare token's caller is ``token-`` and the first 12
hex digits of the token's SHA-256, so it stays one caller for as long as the token
lives, but a new bare token is a new caller; name the entries to rotate a token and
keep the caller (``ci:old,ci:new``). Tokens are 16-512 characters of RFC 6750's
alphabet, which has no ``:``, so the first ``:`` of an entry always ends its name.

Errors name an entry by its position, never its token, nor a name that does not read
as one (it may be a token written first).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

MIN_TOKEN_LENGTH = 16
MAX_TOKEN_LENGTH = 512
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9._~+/=-]+$")
"""RFC 6750 ``b64token`` characters: what may follow ``Bearer`` in a header."""
CALLER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""A caller's name in ``name:token``: 1-64 characters, a letter or digit first."""
BARE_TOKEN_CALLER_PREFIX = "token-"  # noqa: S105 - a name's prefix, not a secret
"""A bare token's caller is this prefix and the first 12 hex digits of the token's SHA-256."""


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """One entry of ``ARENA_API_TOKENS`` / ``ARENA_API_READ_TOKENS``: a caller's name and a token.

    ``name`` is the one written before ``:``, or :func:`caller_name_for` the token for a
    bare entry. The token is left out of the ``repr``.
    """

    name: str
    token: str = field(repr=False)


def caller_name_for(token: str) -> str:
    """The caller name of a bare token: ``token-`` + the first 12 hex digits of its SHA-256."""
    return BARE_TOKEN_CALLER_PREFIX + hashlib.sha256(token.encode("utf-8")).hexdigest()[:12]


def token_of_entry(entry_text: str) -> str:
    """The token part of one entry (``name:token`` or a bare token), trimmed; not validated.

    A token never holds ``:`` (RFC 6750's alphabet), so whatever follows the first ``:`` is it.
    """
    _, separator, token = entry_text.strip().partition(":")
    return (token if separator else entry_text).strip()


def _entry(position: int, item: str) -> TokenEntry:
    """One non-empty, trimmed entry; ValueError naming ``position`` (never the token, nor a name
    that does not read as one: it may be a token written first)."""
    name, separator, token = item.partition(":")
    name, token = name.strip(), token.strip()
    if not separator:
        name, token = "", item
    elif not CALLER_NAME_PATTERN.match(name):
        msg = (
            f"entry {position} has an invalid caller name before ':'; a name is 1-64 characters "
            "from A-Z a-z 0-9 . _ - starting with a letter or digit (write name:token)"
        )
        raise ValueError(msg)
    if not MIN_TOKEN_LENGTH <= len(token) <= MAX_TOKEN_LENGTH:
        msg = (
            f"token {position} is {len(token)} characters; tokens must be "
            f"{MIN_TOKEN_LENGTH}-{MAX_TOKEN_LENGTH} (e.g. `openssl rand -hex 32`)"
        )
        raise ValueError(msg)
    if not TOKEN_PATTERN.match(token):
        msg = f"token {position} has characters outside A-Z a-z 0-9 - . _ ~ + / ="
        raise ValueError(msg)
    return TokenEntry(name or caller_name_for(token), token)


def parse_token_entries(raw: str | None) -> tuple[TokenEntry, ...]:
    """Split a comma-separated list of ``name:token`` or bare-token entries.

    Raises ValueError naming the entry's position (never a token). Each token is
    16-512 characters from the RFC 6750 token alphabet (letters, digits and
    ``-._~+/=``), so it fits in a header unchanged; a name follows
    :data:`CALLER_NAME_PATTERN`. Empty items (``a,,b``, a trailing comma) are skipped and
    not counted: entry 2 of ``a,,b`` is ``b``.
    """
    if raw is None:
        return ()
    items = [item.strip() for item in raw.split(",") if item.strip()]
    entries = [_entry(position, item) for position, item in enumerate(items, start=1)]
    if not entries and raw.strip():
        msg = "holds no token (only commas and spaces)"
        raise ValueError(msg)
    return tuple(entries)


def parse_tokens(raw: str | None) -> tuple[str, ...]:
    """The tokens of a comma-separated list (:func:`parse_token_entries` without the names)."""
    return tuple(entry.token for entry in parse_token_entries(raw))


def conflicting_entries(lists: Sequence[tuple[str, Sequence[TokenEntry]]]) -> str | None:
    """Why these entry lists cannot be one service's callers, or None when they can.

    ``lists`` are ``(variable name, entries)`` pairs. One token listed under two different
    caller names (in one list or across them) is a conflict: a request could not say whose it
    is. The reason names the variables, the entries' positions and the names, never the token.
    """
    seen: dict[str, tuple[str, int, str]] = {}
    for variable, entries in lists:
        for position, entry in enumerate(entries, start=1):
            first = seen.setdefault(entry.token, (variable, position, entry.name))
            if first[2] != entry.name:
                return (
                    f"{first[0]} entry {first[1]} (caller {first[2]!r}) and {variable} entry {position} "
                    f"(caller {entry.name!r}) hold the same token; a token stands for one caller"
                )
    return None


__all__ = [
    "BARE_TOKEN_CALLER_PREFIX",
    "CALLER_NAME_PATTERN",
    "MAX_TOKEN_LENGTH",
    "MIN_TOKEN_LENGTH",
    "TOKEN_PATTERN",
    "TokenEntry",
    "caller_name_for",
    "conflicting_entries",
    "parse_token_entries",
    "parse_tokens",
    "token_of_entry",
]
