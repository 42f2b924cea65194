"""The agents under test: real ``arena serve defender`` processes on a scripted model.

One scripted model server and at most two defenders for the whole session, started on
first use:

* the defender with default settings (``ARENA_DEFENDER_TURN_MODE`` unset), which every
  requirement that does not depend on the turn mode runs against;
* a defender in the other turn mode, only when a test needs it: requirements about
  non-terminal tasks (task-only follow-ups, cancel, subscribe) run in ``input-required``
  mode, those about terminal tasks (a completed task refuses messages, cannot be canceled,
  a stream closes at the terminal state) in ``complete`` mode. Whichever mode is the
  default is served by the default defender.

The scripted model answers every turn ``turn <n>: <message>``, where ``n`` counts the
user messages the defender gave it: ``turn 2`` proves the defender kept the conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Literal

import httpx
import pytest

from arena.local_services import LocalServices, ServiceProcess
from arena_core.settings import ArenaSettings
from conformance.wire import CARD_PATH, VERSION_HEADER, Agent, Endpoints, Wire, card_endpoints
from support.processes import clean_env

TurnMode = Literal["complete", "input-required"]

REPLY_RULES = [{"pattern": ".", "reply": "turn {n}: {last}"}]
START_TIMEOUT_S = 120.0


def default_turn_mode() -> TurnMode:
    """The defender's turn mode when ``ARENA_DEFENDER_TURN_MODE`` is unset."""
    field = ArenaSettings.model_fields.get("defender_turn_mode")
    mode = field.default if field is not None else "input-required"
    return "complete" if mode == "complete" else "input-required"


class Defenders:
    """The defender processes of the session, started on first use, by turn mode."""

    def __init__(self, services: LocalServices, model_url: str, http: httpx.Client) -> None:
        self._services = services
        self._model_url = model_url
        self._http = http
        self._started: dict[str, ServiceProcess] = {}
        self._endpoints: dict[tuple[str, str], Endpoints] = {}
        self.default_mode = default_turn_mode()

    def url(self, mode: TurnMode | None = None) -> str:
        """The defender serving ``mode`` (None: the default settings)."""
        key = "default" if mode is None or mode == self.default_mode else mode
        if key not in self._started:
            env = {"ARENA_MODEL_BASE_URL": f"{self._model_url}/v1"}
            if key != "default":
                env["ARENA_DEFENDER_TURN_MODE"] = key
            defender = self._services.start("defender", name=f"defender-{key}", env=env)
            self._services.wait_ready(defender, timeout_s=START_TIMEOUT_S)
            self._started[key] = defender
        return self._started[key].url

    def endpoints(self, url: str, version: str) -> Endpoints:
        """Where a client of ``version`` finds the JSON-RPC and HTTP+JSON endpoints: in the card."""
        key = (url, version)
        if key not in self._endpoints:
            headers = {VERSION_HEADER: version} if version == "1.0" else {}
            card = self._http.get(f"{url}{CARD_PATH}", headers=headers).json()
            try:
                self._endpoints[key] = card_endpoints(card, version)
            except AssertionError:
                if version == "1.0":
                    raise
                # A card a 0.3 client cannot read fails test_agent_card; the 0.3 protocol checks still
                # run, on the endpoints the 1.0 card declares (the same URLs serve both versions).
                self._endpoints[key] = self.endpoints(url, "1.0")
        return self._endpoints[key]

    def agent(self, wire: Wire, mode: TurnMode | None = None) -> Agent:
        url = self.url(mode)
        return Agent(self._http, wire, self.endpoints(url, wire.version))


@pytest.fixture(scope="session")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(30.0)) as client:
        yield client


@pytest.fixture(scope="session")
def defenders(tmp_path_factory: pytest.TempPathFactory, http: httpx.Client) -> Iterator[Defenders]:
    root = tmp_path_factory.mktemp("conformance")
    rules = root / "rules.json"
    rules.write_text(json.dumps(REPLY_RULES))
    with LocalServices(root / "logs", env=clean_env()) as services:
        model = services.start(
            "model", extra_args=["--engine", "scripted", "--scripted-rules", str(rules)], name="model"
        )
        services.wait_ready(model, timeout_s=START_TIMEOUT_S)
        yield Defenders(services, model.url, http)


@pytest.fixture
def agent(defenders: Defenders, wire: Wire) -> Agent:
    """``wire`` to the defender with default settings."""
    return defenders.agent(wire)


@pytest.fixture
def completing_agent(defenders: Defenders, wire: Wire) -> Agent:
    """``wire`` to a defender whose every turn completes its task (``complete`` mode)."""
    return defenders.agent(wire, "complete")


@pytest.fixture
def parking_agent(defenders: Defenders, wire: Wire) -> Agent:
    """``wire`` to a defender that parks every turn's task in input-required (``input-required`` mode)."""
    return defenders.agent(wire, "input-required")


@pytest.fixture
def defender_url(defenders: Defenders) -> str:
    """The base URL of the defender with default settings."""
    return defenders.url()


__all__ = ["Defenders", "TurnMode", "default_turn_mode"]
