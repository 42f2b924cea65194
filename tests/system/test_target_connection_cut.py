"""A connection to the target cut mid-match is ``target_unreachable``, with or without a token.

Real processes on loopback: a scripted model, a defender (requiring a bearer token when the
target is credentialed) and a TCP proxy in front of it that its card names, so every request
of the match crosses the proxy. The match runs in this process (the attacker's
:class:`MatchRunner`, its own guarded client), so the test sees its result and its logs.

"Mid-match" is never a matter of timing: the proxy lets the card fetch and the first turn's
message through, then holds the second turn's message at its gate (the defender never sees
it); the test cuts the connection only once that message is held, and the match cannot end
before it (the message can never be answered).
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from pydantic import SecretStr

from arena.local_services import LOOPBACK, LocalServices, ServiceProcess, free_port
from arena_attacker.match_runner import MatchRunner
from arena_core.a2a import TargetConversation, connect_target
from arena_core.errors import TargetUnreachableError
from arena_core.match_models import MatchRequest
from arena_core.settings import load_settings
from support.campaign_runs import start_service
from support.processes import clean_env
from support.tcp_proxy import RoundRobinProxy

pytestmark = [pytest.mark.system, pytest.mark.asyncio, pytest.mark.timeout(120)]

TOKEN = "cut-connection-token-0123456789abcdef"
VAR = "ARENA_TARGET_TOKEN_CUT"
WAIT_S = 30.0


@dataclass(frozen=True)
class DefenderProcess:
    """A defender whose card sends clients to ``proxy_port``, where each test puts a proxy."""

    service: ServiceProcess
    proxy_port: int
    credentialed: bool


@pytest.fixture(scope="module")
def defenders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[bool, DefenderProcess]]:
    """A scripted model that refuses and two defenders using it: one wants a token, one not."""
    with LocalServices(tmp_path_factory.mktemp("logs"), env=clean_env()) as services:
        model_port = free_port()
        model = services.start(
            "model", port=model_port, extra_args=["--engine", "scripted", "--scripted-mode", "refuse"]
        )
        started: dict[bool, DefenderProcess] = {}
        for credentialed in (False, True):
            env = clean_env(ARENA_MODEL_BASE_URL=f"http://{LOOPBACK}:{model_port}/v1")
            if credentialed:
                env["ARENA_API_TOKENS"] = TOKEN
            proxy_port = free_port()
            service = start_service(
                services,
                "defender",
                name=f"defender-{'token' if credentialed else 'open'}",
                env=env,
                public_url=f"http://{LOOPBACK}:{proxy_port}",
            )
            started[credentialed] = DefenderProcess(service, proxy_port, credentialed)
        # Started together, waited for together: the machine is shared and starting is slow.
        for service in (model, *(d.service for d in started.values())):
            services.wait_ready(service, timeout_s=90)
        yield started


@dataclass(frozen=True)
class ProxiedDefender:
    """A defender and the proxy in front of it (this test's own: stopping it is the cut)."""

    proxy: RoundRobinProxy
    credentialed: bool
    logs: Callable[[], str]


def _proxied(defender: DefenderProcess) -> Iterator[ProxiedDefender]:
    upstream = int(defender.service.url.rsplit(":", 1)[1])
    with RoundRobinProxy([(LOOPBACK, upstream)], port=defender.proxy_port) as proxy:
        yield ProxiedDefender(proxy, defender.credentialed, lambda: defender.service.log_tail(30))


@pytest.fixture(params=[False, True], ids=["without-token", "with-token"])
def defender(
    request: pytest.FixtureRequest, defenders: dict[bool, DefenderProcess]
) -> Iterator[ProxiedDefender]:
    yield from _proxied(defenders[bool(request.param)])


@pytest.fixture
def credentialed_defender(defenders: dict[bool, DefenderProcess]) -> Iterator[ProxiedDefender]:
    yield from _proxied(defenders[True])


async def _until(condition: Callable[[], bool], *, what: str, context: Callable[[], str]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {WAIT_S:g} s for {what}\n{context()}")
        await asyncio.sleep(0.02)


@pytest.mark.usefixtures("settings")  # no ARENA_* of the shell reaches load_settings()
async def test_a_cut_mid_match_is_target_unreachable_with_or_without_a_token(
    defender: ProxiedDefender, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    proxy = defender.proxy
    runner = MatchRunner(load_settings(target_tokens={VAR: SecretStr(TOKEN)}))
    fields = {"target": proxy.url, "max_turns": 3}
    if defender.credentialed:
        fields["target_token_env"] = VAR
    # The card fetch and turn 1's message pass; turn 2's message waits at the gate.
    proxy.hold(after=2)
    match = asyncio.create_task(runner.run(MatchRequest.model_validate(fields)))
    await _until(
        lambda: proxy.held() > 0 or match.done(), what="turn 2's message at the gate", context=defender.logs
    )
    assert not match.done(), match.result()
    proxy.stop()  # closes every connection, the held one included, and listens no more
    result = await asyncio.wait_for(match, WAIT_S)
    await runner.aclose()

    assert result.outcome == "error", result
    assert result.turns_used == 1  # the cut came mid-match, after a real turn
    # A broken connection is infrastructure, retried by the orchestrator, token or not.
    assert result.error_kind == "target_unreachable", result.error
    assert result.error is not None and "connection failed" in result.error
    assert TOKEN not in result.model_dump_json()
    for record in caplog.records:
        shown = [record.getMessage(), repr(record.args)]
        if record.exc_info and record.exc_info[1] is not None:
            shown.append("".join(traceback.format_exception(record.exc_info[1])))
        assert all(TOKEN not in text for text in shown), record.name


async def test_the_unreachable_error_of_a_credentialed_target_carries_no_token(
    credentialed_defender: ProxiedDefender,
) -> None:
    proxy = credentialed_defender.proxy
    target = await connect_target(proxy.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout_s=WAIT_S)
    try:
        conversation = TargetConversation(target)
        await conversation.send("hello")
        proxy.hold()
        second = asyncio.create_task(conversation.send("hello again"))
        await _until(
            lambda: proxy.held() > 0 or second.done(),
            what="the follow-up at the gate",
            context=credentialed_defender.logs,
        )
        proxy.stop()
        with pytest.raises(TargetUnreachableError) as caught:
            await asyncio.wait_for(second, WAIT_S)
    finally:
        await target.close()
    error = caught.value
    assert error.kind == "target_unreachable"
    # Classified before the cause was dropped: nothing of the request is chained or quoted.
    assert error.__cause__ is None
    assert TOKEN not in error.message
    assert TOKEN not in "".join(traceback.format_exception(error))
