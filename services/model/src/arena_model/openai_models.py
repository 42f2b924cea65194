"""The OpenAI chat-completions request, as the model server accepts it.

Only the subset of the OpenAI wire format that the arena's engines can honour
is modelled. Unknown fields are ignored rather than rejected, because clients
such as the ``openai`` SDK and any-llm send many optional fields
(``user``, ``metadata``, ``logprobs``...) that change nothing for us.
Values that *are* modelled are validated strictly, so a client learns about a
typo'd temperature instead of silently getting a default.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "length", "tool_calls"]

# Upper bound on a completion length; generous for every engine we ship and
# small enough that a typo (max_tokens=10**9) is reported instead of honoured.
MAX_COMPLETION_TOKENS = 8192


class _WireModel(BaseModel):
    """Base for every wire model: ignore unknown fields, never mutate."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class TextPart(_WireModel):
    """One ``{"type": "text", "text": ...}`` content part.

    Image, audio and file parts are rejected: no engine here can read them.
    """

    type: Literal["text"]
    text: str


class FunctionCall(_WireModel):
    """The function half of a tool call: a name and JSON-encoded arguments."""

    name: str
    arguments: str


class ToolCall(_WireModel):
    """A tool call made by the assistant (in a request's history or a reply)."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class FunctionDefinition(_WireModel):
    """A callable function offered to the model; ``parameters`` is a JSON schema."""

    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_WireModel):
    """An OpenAI function tool: ``{"type": "function", "function": {...}}``."""

    type: Literal["function"]
    function: FunctionDefinition


class StreamOptions(_WireModel):
    """Streaming options; only ``include_usage`` has an effect."""

    include_usage: bool = False


class ChatMessage(_WireModel):
    """One message of the conversation.

    Contract: ``content`` is text (a string or a list of text parts); it may
    be null only on an assistant message that carries ``tool_calls``. A
    ``tool`` message must name the ``tool_call_id`` it answers.
    """

    role: Role
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    @model_validator(mode="after")
    def _check_role_fields(self) -> ChatMessage:
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError(
                f"a {self.role} message needs content (only an assistant message "
                "with tool_calls may have null content)"
            )
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id it answers")
        return self

    def text(self) -> str:
        """Return the message's text; parts are joined by newlines, null is ``""``."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content)


class ChatRequest(_WireModel):
    """A ``POST /v1/chat/completions`` body.

    ``model`` is accepted whatever its value: the server hosts one engine and
    reports that engine's model id in the response, so clients configured with
    any model name keep working.
    """

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_COMPLETION_TOKENS)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=MAX_COMPLETION_TOKENS)
    seed: int | None = None
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    n: int | None = None

    @field_validator("n")
    @classmethod
    def _only_one_choice(cls, value: int | None) -> int | None:
        if value is not None and value != 1:
            raise ValueError("only n=1 is supported")
        return value

    @property
    def completion_limit(self) -> int | None:
        """The requested completion length: ``max_completion_tokens`` wins over ``max_tokens``."""
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens

    @property
    def stop_sequences(self) -> list[str]:
        """``stop`` normalised to a list (empty when absent)."""
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)

    @property
    def include_usage_chunk(self) -> bool:
        """True when a streaming client asked for a final usage chunk."""
        return self.stream_options is not None and self.stream_options.include_usage

    def offered_tools(self) -> list[Tool]:
        """The tools the model may call: none when ``tool_choice`` is ``"none"``.

        A named ``tool_choice`` (``{"type": "function", "function": {"name": X}}``)
        moves that tool to the front, so engines that call "the first tool" call it.
        """
        tools = list(self.tools or [])
        if self.tool_choice == "none":
            return []
        if isinstance(self.tool_choice, dict):
            function = self.tool_choice.get("function")
            wanted = function.get("name") if isinstance(function, dict) else None
            named = [tool for tool in tools if tool.function.name == wanted]
            if named:
                return named + [tool for tool in tools if tool.function.name != wanted]
        return tools


__all__ = [
    "MAX_COMPLETION_TOKENS",
    "ChatMessage",
    "ChatRequest",
    "FinishReason",
    "FunctionCall",
    "FunctionDefinition",
    "Role",
    "StreamOptions",
    "TextPart",
    "Tool",
    "ToolCall",
]
