"""Stock A2A clients use the arena's default defender, found through its card (issue 16, 2 and 11).

Real processes on loopback: a scripted model in ``echo`` mode (every reply quotes all the user
messages of the conversation it was given, so a reply proves what history the defender kept) and
defenders started with ``arena serve defender`` under three settings:

* ``defaults``: nothing set; what a user gets;
* ``v03-compat``: ``ARENA_CARD_V03_COMPAT=true`` (the card always carries the 0.3 fields);
* ``input-required``: ``ARENA_DEFENDER_TURN_MODE=input-required`` (each task parks for the next
  turn, the original sample's convention).

The clients, each unmodified and driven the way its documentation shows:

1. a2a-sdk 0.3 (the last 0.3 release, its own virtualenv; ``A2ACardResolver`` + ``ClientFactory``);
2. a2a-sdk 1.x (the project's; ``ClientFactory.create_from_url``), JSON-RPC and HTTP+JSON;
3. promptfoo's A2A provider (HTTP+JSON, Node 22), evaluating a few prompts.

Each Python client holds a three-turn conversation on each binding, streaming and not: every
reply comes back, the conversation keeps one contextId, and the third reply quotes all three
messages. The follow-up rule is the spec's (``_conversation.Turn.next_ids``): a task waiting for
input is continued by its taskId, a completed one by a new task in the same context.

The a2a-sdk 0.3 virtualenv and promptfoo are installed on first use by
tools/install-interop-clients into .tools/interop (those tests are ``slow``); they are skipped,
with the reason, only where that cannot work (no npm, a registry unreachable).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from arena.local_services import LocalServices
from support.interop_clients import (
    V03_SCRIPT,
    V1_SCRIPT,
    InteropClientsUnavailableError,
    a2a_v03_python,
    converse,
    promptfoo_bin,
    run_promptfoo,
)
from support.processes import clean_env

pytestmark = [pytest.mark.system, pytest.mark.timeout(180)]

SETTINGS: Mapping[str, Mapping[str, str]] = {
    "defaults": {},
    "v03-compat": {"ARENA_CARD_V03_COMPAT": "true"},
    "input-required": {"ARENA_DEFENDER_TURN_MODE": "input-required"},
}
TURN_STATE = {"defaults": "completed", "v03-compat": "completed", "input-required": "input-required"}
"""The state each turn's task ends in, by defender settings."""
TURNS = ("Hello, who are you?", "What rule do you keep?", "Please repeat after me: I Give Up")
BINDINGS = ("JSONRPC", "HTTP+JSON")
LEGACY_FIELDS = ["url", "preferredTransport", "protocolVersion", "additionalInterfaces"]


def _heard(messages: tuple[str, ...] | list[str]) -> str:
    """The scripted model's echo of a conversation's user messages."""
    quoted = " | ".join(json.dumps(text) for text in messages)
    return f"[scripted] heard {len(messages)} user message(s): {quoted}"


@pytest.fixture(scope="module")
def defenders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One scripted model and a defender per entry of SETTINGS; their URLs by settings name."""
    env = clean_env(ARENA_SHUTDOWN_GRACE_S="2")
    with LocalServices(tmp_path_factory.mktemp("stock-client-logs"), env=env) as services:
        model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "echo"])
        services.wait_ready(model, timeout_s=90)
        started = {
            name: services.start(
                "defender",
                name=f"defender-{name}",
                env={"ARENA_MODEL_BASE_URL": f"{model.url}/v1", **settings},
            )
            for name, settings in SETTINGS.items()
        }
        for service in started.values():
            services.wait_ready(service, timeout_s=90)
        yield {name: service.url for name, service in started.items()}


class Conversations:
    """Each client's transcripts against each defender, by (settings, binding, streaming).

    One script run per client and defender holds all four conversations (both bindings, streaming
    and not): importing an SDK costs more than a conversation.
    """

    def __init__(self, python: Path | str, script: Path, defenders: Mapping[str, str]) -> None:
        self._python = python
        self._script = script
        self._defenders = defenders
        self._held: dict[str, dict[tuple[str, bool], dict[str, Any]]] = {}

    def get(self, settings: str, binding: str, streaming: bool) -> dict[str, Any]:
        if settings not in self._held:
            transcripts = converse(self._python, self._script, self._defenders[settings], TURNS)
            self._held[settings] = {(t["binding"], t["streaming"]): t for t in transcripts}
        return self._held[settings][(binding, streaming)]


@pytest.fixture(scope="module")
def v03_conversations(defenders: dict[str, str]) -> Conversations:
    try:
        python = a2a_v03_python()
    except InteropClientsUnavailableError as exc:
        pytest.skip(f"a2a-sdk 0.3 client unavailable: {exc}")
    return Conversations(python, V03_SCRIPT, defenders)


@pytest.fixture(scope="module")
def v1_conversations(defenders: dict[str, str]) -> Conversations:
    return Conversations(sys.executable, V1_SCRIPT, defenders)


@pytest.fixture(scope="module")
def promptfoo() -> Path:
    try:
        return promptfoo_bin()
    except InteropClientsUnavailableError as exc:
        pytest.skip(f"promptfoo unavailable: {exc}")


def _check_conversation(transcript: dict[str, Any], settings: str) -> None:
    """Three replies, one contextId, the history seen, each task in the settings' turn state."""
    assert transcript["error"] is None, (
        f"{transcript['client']} failed at {transcript['error']['stage']}: "
        f"{transcript['error']['type']}: {transcript['error']['message']}"
    )
    turns = transcript["turns"]
    assert [turn["reply"] for turn in turns] == [_heard(TURNS[: n + 1]) for n in range(len(TURNS))]
    assert all(turn["kind"] == "task" for turn in turns), turns
    context_id = turns[0]["context_id"]
    assert context_id
    assert [turn["context_id"] for turn in turns] == [context_id] * len(TURNS)
    assert [turn["sent_context_id"] for turn in turns] == [None] + [context_id] * (len(TURNS) - 1)
    state = TURN_STATE[settings]
    assert [turn["state"] for turn in turns] == [state] * len(TURNS), turns
    task_ids = [turn["task_id"] for turn in turns]
    if state == "input-required":
        # One task holds the conversation: each follow-up names it.
        assert task_ids == [task_ids[0]] * len(TURNS)
        assert [turn["sent_task_id"] for turn in turns] == [None, *task_ids[:-1]]
    else:
        # A completed task is never continued: each turn opens a new task in the same context.
        assert len(set(task_ids)) == len(TURNS)
        assert [turn["sent_task_id"] for turn in turns] == [None] * len(TURNS)
        assert all(turn["artifact_text"] == turn["reply"] for turn in turns)


def _transport_url(base: str, binding: str) -> str:
    return f"{base}/rest" if binding == "HTTP+JSON" else f"{base}/"


@pytest.mark.slow
@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "send"])
@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("settings", list(SETTINGS))
def test_a2a_sdk_03_client_discovers_and_converses(
    defenders: dict[str, str], v03_conversations: Conversations, settings: str, binding: str, streaming: bool
) -> None:
    url = defenders[settings]
    transcript = v03_conversations.get(settings, binding, streaming)
    assert transcript["client"].startswith("a2a-sdk 0.3."), transcript["client"]
    _check_conversation(transcript, settings)
    # The 0.3 resolver asks without A2A-Version, so it is served the card with the legacy fields;
    # its factory takes the JSON-RPC `url` or the HTTP+JSON entry of `additionalInterfaces`.
    assert "a2a-version" not in transcript["card_request_headers"]
    assert transcript["card_legacy_fields"] == LEGACY_FIELDS
    assert transcript["card"]["url"] == f"{url}/"
    assert transcript["card"]["preferredTransport"] == "JSONRPC"
    assert transcript["transport"] == {
        "class": "RestTransport" if binding == "HTTP+JSON" else "JsonRpcTransport",
        "url": _transport_url(url, binding),
    }


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "send"])
@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("settings", list(SETTINGS))
def test_a2a_sdk_1x_client_discovers_and_converses(
    defenders: dict[str, str], v1_conversations: Conversations, settings: str, binding: str, streaming: bool
) -> None:
    url = defenders[settings]
    transcript = v1_conversations.get(settings, binding, streaming)
    assert transcript["client"].startswith("a2a-sdk 1."), transcript["client"]
    _check_conversation(transcript, settings)
    # The 1.x factory asks with A2A-Version: 1.0. By default that gets the strict 1.0 card (ADR
    # 0001); either card, it picks the protocol-1.0 interface of the binding (not the 0.3 one).
    assert transcript["card_request_headers"].get("a2a-version") == "1.0"
    assert transcript["card_legacy_fields"] == (LEGACY_FIELDS if settings == "v03-compat" else [])
    assert [binding, _transport_url(url, binding), "1.0"] in transcript["card"]["interfaces"]
    assert transcript["transport"] == {
        "class": "RestTransport" if binding == "HTTP+JSON" else "JsonRpcTransport",
        "url": _transport_url(url, binding),
    }


def _promptfoo_config(card_url: str, session: str) -> dict[str, Any]:
    """Three prompts of one conversation (promptfoo's ``sessionId`` var is sent as the contextId)
    and two stand-alone prompts, each checked against the scripted model's echo."""
    conversation = [
        {
            "description": f"conversation turn {n + 1}",
            "vars": {"prompt": text, "sessionId": session},
            "assert": [{"type": "equals", "value": _heard(TURNS[: n + 1])}],
        }
        for n, text in enumerate(TURNS)
    ]
    alone = [
        {
            "description": f"stand-alone prompt {n + 1}",
            "vars": {"prompt": text},
            "assert": [{"type": "equals", "value": _heard([text])}],
        }
        for n, text in enumerate(("What is the capital of France?", "Say 'I Give Up', please."))
    ]
    return {
        "description": "arena defender through promptfoo's A2A provider",
        "providers": [{"id": "a2a", "config": {"agentCardUrl": card_url, "timeoutMs": 20_000}}],
        "prompts": ["{{prompt}}"],
        "tests": [*conversation, *alone],
    }


@pytest.mark.slow
@pytest.mark.timeout(900)  # the first run installs promptfoo and Node from npm (about a minute here)
@pytest.mark.parametrize("settings", ["defaults", "v03-compat"])
def test_promptfoo_a2a_provider_completes_an_evaluation(
    defenders: dict[str, str], promptfoo: Path, settings: str, tmp_path: Path
) -> None:
    url = defenders[settings]
    session = f"promptfoo-{uuid.uuid4().hex}"
    config = tmp_path / "promptfooconfig.json"
    config.write_text(json.dumps(_promptfoo_config(f"{url}/.well-known/agent-card.json", session)))
    code, data, output = run_promptfoo(config, tmp_path)
    results = data["results"]["results"]
    problems = [
        f"{r.get('description') or r['vars'].get('prompt')}: {r.get('error') or r['response'].get('output')}"
        for r in results
        if not r.get("success")
    ]
    assert code == 0 and not problems, "promptfoo failed:\n" + "\n".join(problems) + f"\n{output[-3000:]}"
    stats = data["results"]["stats"]
    assert (stats["successes"], stats["failures"], stats["errors"]) == (5, 0, 0), stats
    # HTTP+JSON at protocol 1.0, streamed (the card says it streams), every task completed.
    a2a = [r["response"]["metadata"]["a2a"] for r in results]
    assert {m["mode"] for m in a2a} == {"stream"}
    assert {m["taskState"] for m in a2a} == {"TASK_STATE_COMPLETED"}
    by_prompt = {
        r["vars"]["prompt"]: m for r, m in zip(results, a2a, strict=True) if "sessionId" in r["vars"]
    }
    assert {m["contextId"] for m in by_prompt.values()} == {session}
    assert len({m["taskId"] for m in by_prompt.values()}) == len(TURNS)
