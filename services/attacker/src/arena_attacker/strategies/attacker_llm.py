"""The attacker model as strategies use it: prompts in, text or JSON out.

Every call records token usage and the hash of its system prompt in the
strategy's :class:`StrategyReport`. :meth:`AttackerLLM.ask_json` extracts the
first JSON object of a reply and checks its required keys, returning None when
the model did not produce one (small models often don't; strategies then fall
back). A reply that is a refusal to play the attacker raises
:class:`~arena_attacker.match_session.AttackerRefused`: hosted models often
refuse, and that must be reported, not counted as a defence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from arena_attacker.match_session import AttackerRefused, MatchSession
from arena_attacker.strategies.strategy import Strategy, StrategyReport
from arena_core.hashing import prompt_hash
from arena_core.llm import ChatModel, Message

_APOSTROPHE = "['\u2019]"
_REFUSAL = re.compile(
    r"^\W*(?:(?:i" + _APOSTROPHE + r"?m\s+)?sorry|i\s+apologi[sz]e|unfortunately)?[\s,.!]*(?:but\s+)?"
    r"(?:i(?:\s+can(?:not|" + _APOSTROPHE + r"?t)|\s+won" + _APOSTROPHE + r"?t|\s+will\s+not|"
    r"(?:\s+am|" + _APOSTROPHE + r"m)\s+(?:not\s+able|unable)\s+to)\s+"
    r"(?:help|assist|comply|do|participate|provide|create|generate|engage|play|write|continue|"
    r"fulfil|fulfill|support|take\s+part|pretend|role-?play)"
    r"|i\s+must\s+decline|i\s+(?:have|need)\s+to\s+decline|as\s+an\s+ai\b"
    r"|this\s+request\s+(?:goes\s+against|violates))",
    re.IGNORECASE,
)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def looks_like_refusal(text: str) -> bool:
    """True when ``text`` opens by declining to help (the attacker model won't play)."""
    return bool(_REFUSAL.match(text.strip()))


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first parseable JSON object in ``text`` (fenced or bare), else None."""
    for match in _JSON_OBJECT.finditer(text):
        candidate = match.group(0)
        # Shrink from the right until it parses: models add prose after the object.
        end = len(candidate)
        while end > 1:
            try:
                value = json.loads(candidate[:end])
            except json.JSONDecodeError:
                end = candidate.rfind("}", 0, end - 1) + 1
                if end <= 0:
                    break
                continue
            if isinstance(value, dict):
                return value
            break
    return None


class AttackerLLM:
    """A strategy's handle on the attacker model."""

    def __init__(
        self,
        model: ChatModel,
        report: StrategyReport,
        *,
        temperature: float | None,
        max_tokens: int | None,
        seed: int | None,
    ) -> None:
        self._model = model
        self._report = report
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._seed = seed
        report.attacker_model = model.model_id
        report.attacker_temperature = temperature

    @classmethod
    def for_strategy(cls, strategy: Strategy, session: MatchSession) -> AttackerLLM:
        """The attacker model of ``strategy`` for one match, with its settings and the match seed."""
        context = strategy.context
        return cls(
            context.model_factory(),
            strategy.report,
            temperature=context.temperature,
            max_tokens=context.max_tokens,
            seed=session.request.seed,
        )

    async def ask(self, system: str, messages: Sequence[Message], *, name: str) -> str:
        """One completion under ``system``; ``name`` labels the prompt in the report.

        Raises AttackerRefused when the reply is a refusal to play.
        """
        self._report.prompt_hashes.setdefault(name, prompt_hash(system))
        reply = await self._model.complete(
            [{"role": "system", "content": system}, *messages],
            temperature=self._temperature,
            max_tokens=self._max_tokens,
            seed=self._seed,
        )
        self._report.attacker_usage = self._report.attacker_usage + reply.usage
        if looks_like_refusal(reply.content):
            raise AttackerRefused(reply.content)
        return reply.content

    async def ask_json(
        self, system: str, messages: Sequence[Message], *, name: str, required: Sequence[str]
    ) -> tuple[dict[str, Any] | None, str]:
        """Like :meth:`ask`, plus the first JSON object having every ``required`` key (or None)."""
        text = await self.ask(system, messages, name=name)
        value = first_json_object(text)
        if value is None or any(key not in value for key in required):
            return None, text
        return value, text


__all__ = ["AttackerLLM", "first_json_object", "looks_like_refusal"]
