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
   A rule with ``calls`` acts first (a model that does one thing and says
   another): when the request offers tools, its k-th model call since the last
   user message makes the rule's k-th call, and once every call is made it
   answers ``reply``. Such a rule matches the system message or the last *user*
   message (the last message is a tool result half way). A string argument
   may hold ``{result:REGEX}``: the first match of REGEX (its group 1 if it
   has one) in the tool results since the last user message, or '' (a model
   that follows what a tool told it).
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
import dataclasses
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
class ScriptedCall:
    """A tool call a rule makes: the tool's name and its arguments (see ``{result:REGEX}``)."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ScriptedRule:
    """When ``pattern`` (a regex, searched case-insensitively) matches, make ``calls`` (one per
    model call, when tools are offered), then answer ``reply``."""

    pattern: str
    reply: str
    calls: tuple[ScriptedCall, ...] = ()

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern; raises ConfigError when it is not a valid regex."""
        try:
            return re.compile(self.pattern, re.IGNORECASE | re.DOTALL)
        except re.error as exc:
            raise ConfigError(f"scripted rule pattern {self.pattern!r} is not a valid regex: {exc}") from exc


_RULES_SHAPE: Final = (
    'a JSON list of {"pattern": str, "reply": str} objects, each with optional '
    '"calls": [{"name": str, "arguments": {...}}, ...]'
)


def _calls(value: Any) -> tuple[ScriptedCall, ...] | None:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("arguments", {}), dict)
        for c in value
    ):
        return None
    return tuple(ScriptedCall(c["name"], dict(c.get("arguments", {}))) for c in value)


def load_rules(path: str) -> tuple[ScriptedRule, ...]:
    """Read rules from a JSON file (:data:`_RULES_SHAPE`)."""
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read scripted rules from {path}: {exc}") from exc
    if not isinstance(raw, list):
        raise ConfigError(f"{path} must hold {_RULES_SHAPE}")
    rules: list[ScriptedRule] = []
    for position, item in enumerate(raw, start=1):
        calls = _calls(item.get("calls")) if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("pattern"), str)
            or not isinstance(item.get("reply"), str)
            or calls is None
        ):
            raise ConfigError(f"{path}: rule {position} is not valid; the file must hold {_RULES_SHAPE}")
        rules.append(ScriptedRule(item["pattern"], item["reply"], calls))
    return tuple(rules)


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
        self._rules = [(rule.compiled(), rule) for rule in rules]

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
        tools = request.offered_tools()
        ruled = self._ruled_reply(messages, acting=bool(tools))
        if isinstance(ruled, ChatResult):
            return dataclasses.replace(ruled, prompt_tokens=prompt_tokens)
        if ruled is not None:
            return _text_result(ruled, prompt_tokens)
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

    def _ruled_reply(self, messages: list[ChatMessage], *, acting: bool) -> str | ChatResult | None:
        if not self._rules:
            return None
        last = messages[-1].text()
        system = "\n".join(m.text() for m in messages if m.role == "system")
        users = sum(1 for m in messages if m.role == "user")
        last_user_at = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        last_user = messages[last_user_at].text() if last_user_at >= 0 else ""
        for pattern, rule in self._rules:
            if rule.calls:
                if not (pattern.search(system) or pattern.search(last_user)):
                    continue
                since = messages[last_user_at + 1 :]
                made = sum(1 for m in since if m.role == "assistant" and m.tool_calls)
                if acting and made < len(rule.calls):
                    results = "\n".join(m.text() for m in since if m.role == "tool")
                    return _call_result(rule.calls[made], made + 1, results)
            elif not (pattern.search(system) or pattern.search(last)):
                continue
            return rule.reply.replace("{last}", last).replace("{n}", str(users))
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


_RESULT_REF: Final = re.compile(r"\{result:(.+?)\}(?!\})")


def _filled(value: Any, results: str) -> Any:
    """``value`` with each ``{result:REGEX}`` replaced by what REGEX finds in ``results``."""
    if isinstance(value, str):

        def found(match: re.Match[str]) -> str:
            hit = re.search(match.group(1), results)
            if hit is None:
                return ""
            return hit.group(1) if hit.re.groups else hit.group(0)

        return _RESULT_REF.sub(found, value)
    if isinstance(value, dict):
        return {key: _filled(item, results) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, results) for item in value]
    return value


def _call_result(call: ScriptedCall, number: int, results: str) -> ChatResult:
    arguments = json.dumps(_filled(call.arguments, results))
    return ChatResult(
        content=None,
        finish_reason="tool_calls",
        prompt_tokens=0,
        completion_tokens=_word_count(call.name) + _word_count(arguments),
        tool_calls=(
            ToolCall(id=f"call_{number}", function=FunctionCall(name=call.name, arguments=arguments)),
        ),
    )


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
    "ScriptedCall",
    "ScriptedEngine",
    "ScriptedMode",
    "ScriptedRule",
    "load_rules",
]
