"""Find an exception of ours behind the ones a library wrapped it in."""

from __future__ import annotations

from typing import TypeVar

E = TypeVar("E", bound=BaseException)

_MAX_LINKS = 8
_MAX_GROUP_DEPTH = 3


def find_in_chain(exc: BaseException | None, kind: type[E]) -> E | None:
    """The first ``kind`` exception behind ``exc`` (``exc`` itself included), or None.

    A library (httpx, the a2a-sdk, anyio) may have wrapped it: it is looked for along
    ``__cause__`` and ``__context__`` and inside exception groups, to a bounded depth.
    """
    return _find(exc, kind, depth=0)


def _find(exc: BaseException | None, kind: type[E], *, depth: int) -> E | None:
    seen = exc
    for _ in range(_MAX_LINKS):
        if seen is None:
            return None
        if isinstance(seen, kind):
            return seen
        if isinstance(seen, BaseExceptionGroup) and depth < _MAX_GROUP_DEPTH:
            for member in seen.exceptions:
                found = _find(member, kind, depth=depth + 1)
                if found is not None:
                    return found
        seen = seen.__cause__ or seen.__context__
    return None


__all__ = ["find_in_chain"]
