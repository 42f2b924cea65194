"""How deep a JSON text nests, found without parsing it: :func:`json_depth_exceeds`.

Python's ``json`` module (and protobuf's ``json_format``, which a2a-sdk parses
requests with) recurses once per nested array or object: a request body of a few
thousand ``[`` makes it raise ``RecursionError``, which a2a-sdk 1.3.0 answers as
an internal error (-32603) with a logged traceback, after spending the work.
:func:`json_depth_exceeds` answers "deeper than ``limit``?" first, in linear
time, with no recursion and no parse, so such a body can be refused as the parse error
it is (:mod:`arena_core.a2a.json_depth_guard`).

Every ``[`` and ``{`` outside a string opens a level and every ``]`` and ``}``
closes one; strings are skipped whole, escapes included (``"\\"["`` opens
nothing). The cost is linear: a body holding at most ``limit`` brackets in all
(nearly every real request) is decided by two ``bytes.count`` calls; any other
has its strings cut out and everything but its brackets dropped by the regular
expression and ``bytes`` machinery (C speed), and only the brackets left are
counted in Python, stopping at the first level past ``limit`` (about 30 ms for a
megabyte of ``[],``, a fifth of what ``json.loads`` takes for it). The text is
UTF-8 bytes (no multi-byte character holds an ASCII byte); other encodings must
be transcoded first.
"""

from __future__ import annotations

import re

MAX_JSON_DEPTH = 100
"""How deeply a request body to the agents may nest arrays and objects."""

# A whole string, escapes included; possessive, so it never backtracks.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
_OPEN = ord("[")


def json_depth_exceeds(body: bytes, limit: int) -> bool:
    """Whether the JSON text ``body`` nests arrays and objects more than ``limit`` levels deep.

    ``[]`` is one level, ``[[]]`` two; brackets inside strings do not count. Invalid
    JSON gets an answer too, never an error: a closing bracket without an opening one
    closes nothing, and a string that never ends hides the rest of the body.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    text = _STRING.sub(b"", body)
    unterminated = text.find(b'"')
    if unterminated >= 0:
        text = text[:unterminated]
    depth = 0
    for bracket in text.translate(_AS_SQUARE, _NOT_BRACKETS):
        if bracket == _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


__all__ = ["MAX_JSON_DEPTH", "json_depth_exceeds"]
