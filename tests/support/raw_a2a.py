"""Speaking A2A as raw JSON on one of the four wires (1.0 / 0.3 x JSON-RPC / HTTP+JSON).

Tests that check what goes over the wire build their messages here rather than
through a2a-sdk's client, so each version's own JSON shape is what is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RawWire:
    """One protocol version and binding."""

    name: str
    version: str  # "1.0" or "0.3"
    binding: str  # "jsonrpc" or "rest"

    @property
    def headers(self) -> dict[str, str]:
        """The version header of this wire (none for 0.3)."""
        return {"A2A-Version": "1.0"} if self.version == "1.0" else {}

    def message(self, text: str, *, task_id: str | None = None, context_id: str | None = None) -> Any:
        """A user message with one text part, in this wire's JSON."""
        message: dict[str, Any] = {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}]}
        if (self.version, self.binding) == ("0.3", "jsonrpc"):
            message.update(kind="message", role="user", parts=[{"kind": "text", "text": text}])
        elif self.version == "0.3":  # 0.3's HTTP+JSON speaks the 0.3 protobuf's JSON
            message["content"] = message.pop("parts")
        if task_id is not None:
            message["taskId"] = task_id
        if context_id is not None:
            message["contextId"] = context_id
        return message

    def state(self, task: dict[str, Any]) -> str:
        """A task's state in 0.3 JSON-RPC spelling (``input-required``), whatever the wire."""
        return str(task["status"]["state"]).lower().removeprefix("task_state_").replace("_", "-")


WIRE_NAMES = [
    ("1.0-jsonrpc", "1.0", "jsonrpc"),
    ("1.0-rest", "1.0", "rest"),
    ("0.3-jsonrpc", "0.3", "jsonrpc"),
    ("0.3-rest", "0.3", "rest"),
]


def text_of(message: dict[str, Any]) -> str:
    """The first text of a message or artifact (``parts``, or 0.3 HTTP+JSON's ``content``)."""
    return str((message.get("parts") or message["content"])[0]["text"])


__all__ = ["WIRE_NAMES", "RawWire", "text_of"]
