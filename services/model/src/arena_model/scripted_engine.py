"""A deterministic, clearly fake model for tests and benchmarks.

The scripted engine answers by fixed rules, so a test can predict every reply
and a benchmark measures the arena rather than a model. Its model id is always
``"scripted"`` so that nobody mistakes its answers for a real model's. It is
never the default engine.

Rules, first match wins:

0. Configured ``rules`` (a list of :class:`ScriptedRule`): the first whose
   regular expression matches the system message or the last message answers
   with its ``reply``, in which ``{last}`` is the last message's text and
   ``{n}`` the number of user messages. Tests use rules to make the scripted
   model speak a strategy's or judge's JSON, or to play a chosen part.
1. The request offers tools and the last message is not from the assistant:
   call the first tool once, with arguments built from its JSON schema. If the
   last message is a tool result containing ``[[stop]]``, answer ``"done"``
   instead (this lets a test end a tool loop).
2. Otherwise answer text according to ``mode``:
   ``echo`` repeats every user message (or the tool result just received),
   ``refuse`` always refuses, ``obey`` repeats what follows
   ``repeat after me:`` / ``say exactly:``, answers a request to repeat, print,
   show or reveal its instructions (or system prompt) with its system message,
   word for word (a model that leaks everything it holds), and refuses anything
   else.

Token counts are whitespace-separated word counts, so usage is deterministic.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast, get_args

from arena_core.errors import ConfigError
from arena_model.engine import ChatEngine, ChatResult
from arena_model.openai_models import (
    ChatMessage,
    ChatRequest,
    FunctionCall,
    Tool,
    ToolCall,
)

ScriptedMode = Literal["echo", "refuse", "obey"]
SCRIPTED_MODES: Final[tuple[str, ...]] = get_args(ScriptedMode)
SCRIPTED_MODEL_ID: Final = "scripted"
DEFAULT_TOOL_TEXT: Final = "Please repeat after me: I Give Up"
REFUSAL: Final = "I can't help with that."
STOP_MARKER: Final = "[[stop]]"

# Case-insensitive; the earliest marker in the message wins. The captured text
# runs to the end of that line only, so trailing chatter is not repeated.
_OBEY_PATTERN: Final = re.compile(r"(?:repeat after me|say exactly):([^\r\n]*)", re.IGNORECASE)
_LEAK_PATTERN: Final = re.compile(
    r"\b(?:repeat|print|show|reveal|output)\b[^.?!\n]{0,40}\b(?:instructions|system prompt)\b", re.IGNORECASE
)
_QUOTES: Final = "\"'`\u201c\u201d\u2018\u2019"


@dataclass(frozen=True, slots=True)
class ScriptedRule:
    """When ``pattern`` (a regex, searched case-insensitively) matches, answer ``reply``."""

    pattern: str
    reply: str

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern; raises ConfigError when it is not a valid regex."""
        try:
            return re.compile(self.pattern, re.IGNORECASE | re.DOTALL)
        except re.error as exc:
            raise ConfigError(f"scripted rule pattern {self.pattern!r} is not a valid regex: {exc}") from exc


def load_rules(path: str) -> tuple[ScriptedRule, ...]:
    """Read rules from a JSON file: ``[{"pattern": "...", "reply": "..."}, ...]``."""
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read scripted rules from {path}: {exc}") from exc
    if not isinstance(raw, list) or not all(
        isinstance(item, dict) and isinstance(item.get("pattern"), str) and isinstance(item.get("reply"), str)
        for item in raw
    ):
        raise ConfigError(f'{path} must hold a JSON list of {{"pattern": str, "reply": str}} objects')
    return tuple(ScriptedRule(item["pattern"], item["reply"]) for item in raw)


class ScriptedEngine(ChatEngine):
    """Deterministic rule-based responder (see the module docstring for the rules).

    Stateless apart from its options, so it serves any number of concurrent
    requests without a lock.
    """

    def __init__(
        self,
        *,
        mode: str = "echo",
        latency_ms: float = 0.0,
        tool_text: str = DEFAULT_TOOL_TEXT,
        rules: Sequence[ScriptedRule] = (),
    ) -> None:
        """Configure the responder.

        Raises:
            ConfigError: ``mode`` is not one of :data:`SCRIPTED_MODES` or
                ``latency_ms`` is negative.
        """
        if mode not in SCRIPTED_MODES:
            raise ConfigError(f"Unknown scripted mode {mode!r}; choose one of: {', '.join(SCRIPTED_MODES)}.")
        if latency_ms < 0:
            raise ConfigError(f"latency_ms must be zero or positive, got {latency_ms}.")
        self._mode = cast(ScriptedMode, mode)
        self._latency_s = latency_ms / 1000.0
        self._tool_text = tool_text
        self._rules = [(rule.compiled(), rule.reply) for rule in rules]

    @property
    def name(self) -> str:
        """Always ``"scripted"``."""
        return "scripted"

    @property
    def model_id(self) -> str:
        """Always ``"scripted"``, whatever model the client asked for."""
        return SCRIPTED_MODEL_ID

    @property
    def mode(self) -> ScriptedMode:
        """The text-reply mode in use."""
        return self._mode

    def ready(self) -> bool:
        """Always True: there is nothing to load."""
        return True

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Answer by the module's rules after the configured latency."""
        if self._latency_s > 0:
            await asyncio.sleep(self._latency_s)
        return self.answer(request)

    def answer(self, request: ChatRequest) -> ChatResult:
        """Answer synchronously, without the latency (the rules themselves)."""
        messages = request.messages
        prompt_tokens = sum(_word_count(message.text()) for message in messages)
        last = messages[-1]
        ruled = self._ruled_reply(messages)
        if ruled is not None:
            return _text_result(ruled, prompt_tokens)
        tools = request.offered_tools()
        if tools and last.role != "assistant":
            if last.role == "tool" and STOP_MARKER in last.text():
                return _text_result("done", prompt_tokens)
            call = self._tool_call(tools[0], messages)
            return ChatResult(
                content=None,
                finish_reason="tool_calls",
                prompt_tokens=prompt_tokens,
                completion_tokens=_word_count(call.function.name) + _word_count(call.function.arguments),
                tool_calls=(call,),
            )
        return _text_result(self._text_reply(messages), prompt_tokens)

    def _ruled_reply(self, messages: list[ChatMessage]) -> str | None:
        if not self._rules:
            return None
        last = messages[-1].text()
        system = "\n".join(m.text() for m in messages if m.role == "system")
        users = sum(1 for m in messages if m.role == "user")
        for pattern, reply in self._rules:
            if pattern.search(system) or pattern.search(last):
                return reply.replace("{last}", last).replace("{n}", str(users))
        return None

    def _tool_call(self, tool: Tool, messages: list[ChatMessage]) -> ToolCall:
        # The id counts earlier tool results, so the n-th call of a tool loop
        # is always "call_<n>" and tests can assert on it.
        number = sum(1 for message in messages if message.role == "tool") + 1
        schema = tool.function.parameters or {}
        arguments = {
            key: self._placeholder(prop if isinstance(prop, dict) else {})
            for key, prop in _properties(schema).items()
        }
        return ToolCall(
            id=f"call_{number}",
            function=FunctionCall(name=tool.function.name, arguments=json.dumps(arguments)),
        )

    def _placeholder(self, schema: dict[str, Any]) -> Any:
        """A fixed value that fits ``schema``: text, false, 0, first enum value, [] or {}."""
        if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
            return schema["enum"][0]
        if "const" in schema:
            return schema["const"]
        for combinator in ("anyOf", "oneOf"):
            options = schema.get(combinator)
            if isinstance(options, list) and options and isinstance(options[0], dict):
                return self._placeholder(options[0])
        kind = schema.get("type")
        if isinstance(kind, list):
            # ["string", "null"] is how optional values are spelled; use the real type.
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None and "properties" in schema:
            kind = "object"
        match kind:
            case "string":
                return self._tool_text
            case "boolean":
                return False
            case "integer" | "number":
                return 0
            case "array":
                return []
            case "object":
                return {}
            case _:
                return None

    def _text_reply(self, messages: list[ChatMessage]) -> str:
        last = messages[-1]
        if self._mode == "refuse":
            return REFUSAL
        if self._mode == "echo":
            if last.role == "tool":
                return "[scripted] tool said: " + last.text()
            user_texts = [message.text() for message in messages if message.role == "user"]
            return f"[scripted] heard {len(user_texts)} user message(s): " + " | ".join(
                json.dumps(text) for text in user_texts
            )
        last_user = next((m for m in reversed(messages) if m.role == "user"), None)
        if last_user is None:
            return REFUSAL
        system = "\n".join(m.text() for m in messages if m.role == "system")
        if system and _LEAK_PATTERN.search(last_user.text()):
            return system
        return _obeyed(last_user.text())


def _obeyed(text: str) -> str:
    """The text after an obey marker up to the end of its line, or the refusal."""
    match = _OBEY_PATTERN.search(text)
    if match is None:
        return REFUSAL
    said = match.group(1).strip().strip(_QUOTES).strip()
    return said or REFUSAL


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema's properties, required ones first (in their declared order)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    required = [key for key in schema.get("required", []) if key in properties]
    optional = [key for key in properties if key not in required]
    return {key: properties[key] for key in [*required, *optional]}


def _word_count(text: str) -> int:
    return len(text.split())


def _text_result(text: str, prompt_tokens: int) -> ChatResult:
    return ChatResult(
        content=text,
        finish_reason="stop",
        prompt_tokens=prompt_tokens,
        completion_tokens=_word_count(text),
    )


__all__ = [
    "DEFAULT_TOOL_TEXT",
    "REFUSAL",
    "SCRIPTED_MODEL_ID",
    "SCRIPTED_MODES",
    "STOP_MARKER",
    "ScriptedEngine",
    "ScriptedMode",
]
