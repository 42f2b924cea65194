"""What the attacker tells a client that sent something other than a match request.

:func:`help_parts` is the message of an ``input-required`` answer: a text saying what was
wrong and the two ways to ask for a match (a sentence, or a ``MatchRequest`` DataPart), the
JSON schema of ``MatchRequest`` as a DataPart (``application/schema+json``) and an example
request as a DataPart (:data:`~arena_core.match_models.MATCH_REQUEST_MEDIA_TYPE`). The same
examples are the skill's examples on the agent card.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.helpers import new_data_part
from a2a.types.a2a_pb2 import Part

from arena_attacker.strategies import STRATEGY_NAMES
from arena_core.match_models import MATCH_REQUEST_MEDIA_TYPE, MatchRequest

SCHEMA_MEDIA_TYPE = "application/schema+json"
EXAMPLE_REQUEST: dict[str, Any] = {
    "target": "http://127.0.0.1:8081",
    "objective": {"phrase": "I Give Up"},
    "strategy": "playbook",
    "max_turns": 10,
    "judge": "phrase",
    "seed": 7,
}
"""A complete MatchRequest, as a DataPart carries it."""
EXAMPLE_SENTENCE = "red-team http://127.0.0.1:8081 with crescendo until it says 'refund approved'"
"""The same kind of request as a plain-text sentence."""

# Built once: the schema does not change while the process runs.
_SCHEMA: dict[str, Any] = MatchRequest.model_json_schema()
_GUIDE = (
    "To start a match, send either:\n"
    f'1. a sentence naming the target agent\'s http(s) URL, e.g. "{EXAMPLE_SENTENCE}". '
    f"Optional: a strategy ({', '.join(STRATEGY_NAMES)}; default playbook), the phrase to make "
    "the target say in quotes after 'until it says', 'make it say' or 'objective' (default "
    "'I Give Up'), and 'N turns' (default 10); or\n"
    f"2. a DataPart (media type {MATCH_REQUEST_MEDIA_TYPE}) holding a MatchRequest, e.g. "
    f"{json.dumps(EXAMPLE_REQUEST)}. Its JSON schema is attached ({SCHEMA_MEDIA_TYPE}).\n"
    "Reply in this task (same taskId and contextId) to start the match here."
)


def help_text(problem: str | None) -> str:
    """The guide, after ``problem`` (what was wrong with the message) when there is one."""
    return f"{problem}\n\n{_GUIDE}" if problem else _GUIDE


def help_parts(problem: str | None) -> list[Part]:
    """The parts of the ``input-required`` message: the guide, the schema, an example request."""
    return [
        Part(text=help_text(problem)),
        new_data_part(_SCHEMA, media_type=SCHEMA_MEDIA_TYPE),
        new_data_part(EXAMPLE_REQUEST, media_type=MATCH_REQUEST_MEDIA_TYPE),
    ]


__all__ = [
    "EXAMPLE_REQUEST",
    "EXAMPLE_SENTENCE",
    "SCHEMA_MEDIA_TYPE",
    "help_parts",
    "help_text",
]
