"""Finding the JSON object in a model's free-text answer.

Models asked for "only JSON" still wrap it in markdown fences, open with a
sentence or add one after. Decoding from each ``{`` in turn and keeping the
first value that is an object copes with all of these without a fence parser.
"""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (bare, fenced or amid prose), else None.

    Objects nested inside an earlier, unparseable fragment are still found,
    because decoding restarts at every ``{``.
    """
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    return None


__all__ = ["first_json_object"]
