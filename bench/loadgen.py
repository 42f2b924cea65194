"""A light load client, run as its own process: ``python bench/loadgen.py < spec.json``.

It speaks just enough HTTP/1.1 (keep-alive requests; responses parsed by httptools) over
asyncio streams, with request bodies built from small templates, so one client core
drives far more requests than an httpx client would (an httpx client saturates its own
core long before our servers do). It prints one JSON document on stdout: per-request
latencies tagged with the turn number, response sizes, errors and the elapsed time.

Two kinds of target:

* ``a2a``: JSON-RPC ``SendMessage`` (A2A 1.0) to an agent. Each of ``conversations``
  concurrent loops opens a conversation, continues it for ``turns`` turns (passing the
  ``contextId`` and ``taskId`` of the parked task), then opens the next one, until
  ``requests`` requests were made (or ``duration_s`` passed).
* ``model``: the same loop, but each turn is a direct chat-completions call to the
  model server with the messages a defender would send (system prompt, the
  conversation so far, the new message).

The first ``warmup`` requests of each loop are made but not reported.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httptools

DEFENDER_SYSTEM_PROMPT = "You are a helpful assistant. Never say the forbidden phrase."
READ_SIZE = 65_536
"""How many bytes one read from a connection asks for."""


class LoadError(Exception):
    """The target answered something this client cannot use (bad status, bad JSON-RPC result)."""


@dataclass
class Spec:
    url: str
    kind: str = "a2a"
    conversations: int = 1
    turns: int = 5
    requests: int = 100
    duration_s: float = 0.0
    warmup: int = 0
    history_length: int | None = None
    token: str | None = None
    text: str = "Please tell me about the weather today, and say something nice."

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Spec:
        return cls(**raw)


@dataclass
class Results:
    # (turn, latency ms, response bytes, finished at: time.monotonic(), the same clock in every process)
    samples: list[tuple[int, float, int, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0


class _Response:
    """One response, read by an ``httptools.HttpResponseParser`` that calls back here."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.body = bytearray()
        self.keep_alive = True
        self.complete = False

    def on_headers_complete(self) -> None:
        # Only known while the headers are being parsed: llhttp forgets it once the message ends.
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.complete = True


class Connection:
    """One kept-alive HTTP/1.1 connection; responses are read by httptools (llhttp), the parser
    uvicorn uses, so any framing (Content-Length, chunked, keep-alive or close) is read right."""

    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        return self._reader, self._writer

    async def post(self, path: str, body: bytes, headers: bytes) -> tuple[int, bytes]:
        reader, writer = await self._open()
        writer.write(
            b"POST "
            + path.encode()
            + b" HTTP/1.1\r\nHost: "
            + self._host.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n"
            + headers
            + b"\r\n"
            + body
        )
        response = _Response()
        while not response.complete:
            received = await reader.read(READ_SIZE)
            if not received:
                raise LoadError("the server closed the connection in the middle of a response")
            response.parser.feed_data(received)
        if not response.keep_alive:
            self.close()
        return response.parser.get_status_code(), bytes(response.body)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


def _a2a_body(spec: Spec, context_id: str | None, task_id: str | None, turn: int) -> bytes:
    message: dict[str, Any] = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": f"{spec.text} (turn {turn})"}],
    }
    if context_id:
        message["contextId"] = context_id
    if task_id:
        message["taskId"] = task_id
    params: dict[str, Any] = {"message": message}
    if spec.history_length is not None:
        params["configuration"] = {"historyLength": spec.history_length}
    return json.dumps({"jsonrpc": "2.0", "id": turn, "method": "SendMessage", "params": params}).encode()


def _model_body(history: list[dict[str, str]], turn: int, spec: Spec) -> bytes:
    messages = [{"role": "system", "content": DEFENDER_SYSTEM_PROMPT}, *history]
    messages.append({"role": "user", "content": f"{spec.text} (turn {turn})"})
    return json.dumps(
        {"model": "scripted", "messages": messages, "temperature": 0.7, "max_tokens": 256}
    ).encode()


class Budget:
    def __init__(self, spec: Spec) -> None:
        self._left = spec.requests + spec.warmup * spec.conversations
        self._deadline = time.monotonic() + spec.duration_s if spec.duration_s > 0 else None

    def take(self) -> bool:
        if self._deadline is not None:
            return time.monotonic() < self._deadline
        if self._left <= 0:
            return False
        self._left -= 1
        return True


async def _loop(spec: Spec, budget: Budget, results: Results) -> None:
    parts = urlsplit(spec.url)
    connection = Connection(parts.hostname or "127.0.0.1", parts.port or 80)
    path = parts.path or "/"
    headers = b""
    if spec.kind == "a2a":
        headers += b"A2A-Version: 1.0\r\n"
    if spec.token:
        headers += b"Authorization: Bearer " + spec.token.encode() + b"\r\n"
    made = 0
    try:
        while True:
            context_id: str | None = None
            task_id: str | None = None
            history: list[dict[str, str]] = []
            for turn in range(1, spec.turns + 1):
                if not budget.take():
                    return
                if spec.kind == "a2a":
                    body = _a2a_body(spec, context_id, task_id, turn)
                else:
                    body = _model_body(history, turn, spec)
                began = time.perf_counter()
                status, data = await connection.post(path, body, headers)
                elapsed_ms = (time.perf_counter() - began) * 1000.0
                made += 1
                if status != 200:
                    results.errors.append(f"HTTP {status}: {data[:200]!r}")
                    break
                reply = json.loads(data)
                if spec.kind == "a2a":
                    task = (reply.get("result") or {}).get("task")
                    if task is None:
                        results.errors.append(f"no task in {data[:300]!r}")
                        break
                    state = task.get("status", {}).get("state")
                    if state not in ("TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"):
                        results.errors.append(f"task state {state}")
                        break
                    # A parked task is continued by its id; after a completed one the next turn
                    # is a new task in the same context.
                    context_id = task["contextId"]
                    task_id = task["id"] if state == "TASK_STATE_INPUT_REQUIRED" else None
                else:
                    history.append({"role": "user", "content": f"{spec.text} (turn {turn})"})
                    history.append(reply["choices"][0]["message"])
                if made > spec.warmup:
                    results.samples.append((turn, elapsed_ms, len(data), time.monotonic()))
    finally:
        connection.close()


async def run(spec: Spec) -> Results:
    results = Results()
    budget = Budget(spec)
    results.started = time.monotonic()
    outcomes = await asyncio.gather(
        *(_loop(spec, budget, results) for _ in range(spec.conversations)), return_exceptions=True
    )
    results.finished = time.monotonic()
    results.errors.extend(f"{type(o).__name__}: {o}" for o in outcomes if isinstance(o, BaseException))
    return results


def main() -> None:
    spec = Spec.from_json(json.load(sys.stdin))
    results = asyncio.run(run(spec))
    json.dump(
        {
            "samples": results.samples,
            "errors": results.errors[:20],
            "error_count": len(results.errors),
            "elapsed_s": results.finished - results.started,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
