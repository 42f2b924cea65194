"""What the stock-client scripts share: arguments, the follow-up rule, the transcript they print.

The scripts in this folder run in a foreign interpreter (a2a-sdk 0.3's virtualenv) or in the
project's, so this module uses the standard library only. For each variant (a binding, streaming
or not) a script discovers the agent through its card with a stock SDK client, holds a
conversation of the given turns, and records a transcript; it prints the list of transcripts as
JSON on stdout (exit 0 even when the agent misbehaves: a transcript's ``error`` says at which
stage). tests/system/test_stock_clients.py reads them. One process runs every variant, because
importing an SDK costs more than a conversation.

The follow-up rule is the one the A2A spec gives a careful client: after a task that waits for
input (``input-required``, ``auth-required``) send its ``taskId`` and ``contextId``; after a
terminal task or a Message, send the ``contextId`` only, which opens a new task in the same
conversation. Neither SDK applies it by itself: the application sets the ids on each message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

WAITING_STATES = frozenset({"input-required", "auth-required"})
CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_FIELDS = ("url", "preferredTransport", "protocolVersion", "additionalInterfaces")
VARIANTS = ("JSONRPC/stream", "JSONRPC/send", "HTTP+JSON/stream", "HTTP+JSON/send")


@dataclass
class Turn:
    """One message sent and what came back (states in the 0.3 spelling: ``input-required``)."""

    sent_task_id: str | None
    sent_context_id: str | None
    kind: str = ""
    """``task`` or ``message``: what the response was (a stream of task updates is a task)."""
    task_id: str | None = None
    context_id: str | None = None
    state: str | None = None
    status_text: str = ""
    artifact_text: str = ""
    events: list[str] = field(default_factory=list)
    """The kinds of the stream's events (or of the one response), in order."""

    @property
    def reply(self) -> str:
        return self.status_text or self.artifact_text

    def next_ids(self) -> tuple[str | None, str | None]:
        """The ``(taskId, contextId)`` the next message carries."""
        if self.kind == "task" and self.state in WAITING_STATES:
            return self.task_id, self.context_id
        return None, self.context_id


@dataclass
class Transcript:
    client: str
    binding: str
    streaming: bool
    card_request_headers: dict[str, str] = field(default_factory=dict)
    """Headers of the card request that a server could tell clients apart by."""
    card_legacy_fields: list[str] = field(default_factory=list)
    """Which A2A 0.3 top-level fields the served card had."""
    card: dict[str, Any] = field(default_factory=dict)
    """What the client's card parser made of the card (its interfaces)."""
    transport: dict[str, str] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    error: dict[str, str] | None = None

    def fail(self, stage: str, exc: BaseException) -> None:
        self.error = {"stage": stage, "type": type(exc).__name__, "message": str(exc)[:800]}

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for turn, raw in zip(self.turns, data["turns"], strict=True):
            raw["reply"] = turn.reply
        return data


Converse = Callable[[Transcript, str, list[str], float], Awaitable[None]]
"""A script's conversation: (transcript to fill, agent URL, turn texts, HTTP timeout in seconds)."""


def main(description: str, client: str, converse: Converse) -> None:
    """Parse the command line, run each variant's conversation, print the transcripts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("url", help="the agent's base URL (the card is at <url>/.well-known/agent-card.json)")
    parser.add_argument(
        "--variant", action="append", choices=VARIANTS, help="BINDING/stream|send; repeat (default: all)"
    )
    parser.add_argument("--turn", action="append", required=True, help="one message text; repeat per turn")
    parser.add_argument("--timeout", type=float, default=30.0, help="HTTP timeout in seconds")
    args = parser.parse_args()

    async def run_all() -> list[Transcript]:
        transcripts = []
        for variant in args.variant or VARIANTS:
            binding, _, mode = variant.partition("/")
            transcript = Transcript(client=client, binding=binding, streaming=mode == "stream")
            await converse(transcript, args.url, args.turn, args.timeout)
            transcripts.append(transcript)
        return transcripts

    json.dump([transcript.as_json() for transcript in asyncio.run(run_all())], sys.stdout, indent=2)
    sys.stdout.write("\n")


def card_headers(headers: Any) -> dict[str, str]:
    """The request headers that could tell a 1.0 client's card request from a 0.3 client's."""
    interesting = {"a2a-version", "accept", "x-a2a-extensions"}
    return {name.lower(): value for name, value in headers.items() if name.lower() in interesting}
