"""The SSRF guard with real sockets on 127.0.0.0/8: refused targets see no connection at all.

A plain TCP listener on 127.0.0.2 counts the connections it gets (Linux routes all
of 127/8 to the loopback interface); allowed servers run on 127.0.0.1. Nothing
here connects outside 127/8: addresses elsewhere (cloud metadata) must be refused
before any connection, which the tests check by the error and an inner transport
that records every request it is given.
"""

from __future__ import annotations

import asyncio
import errno
import json
import re
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from arena_attacker.app import create_attacker_app
from arena_attacker.match_runner import MatchRunner
from arena_core.a2a import connect_target
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.a2a.egress_guard import EgressGuard, GuardedTransport, guarded_client
from arena_core.egress_policy import EgressPolicy, IPAddress, parse_address
from arena_core.errors import AgentCardError, TargetNotAllowedError
from arena_core.match_models import MatchRequest
from arena_core.settings import load_settings
from arena_orchestrator.app import create_orchestrator_app
from arena_orchestrator.match_player import RemoteAttackerPlayer
from conftest import InProcessArena
from support.asgi import HostRouter, client_for
from support.campaign_runs import wait_for_campaign_async
from support.cards import card_json
from support.minimal_agent import create_minimal_app
from support.uvicorn_server import bound_socket, serve_app

pytestmark = pytest.mark.asyncio

ALLOWED = "127.0.0.1"
OUTSIDE = "127.0.0.2"


class CountingListener:
    """A TCP listener that accepts nothing on its own; :meth:`connections` counts what arrived."""

    def __init__(self, host: str = OUTSIDE, port: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((host, port))
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.host, self.port = self.sock.getsockname()[:2]
        self.url = f"http://{self.host}:{self.port}"
        self._count = 0

    def connections(self) -> int:
        """Connections made so far (the kernel completes them into the backlog)."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return self._count
            conn.close()
            self._count += 1

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[CountingListener]:
    outside = CountingListener()
    yield outside
    outside.close()


def bound(host: str = ALLOWED, port: int = 0) -> socket.socket:
    return bound_socket(host, port, reuse_address=True)


class Recorder:
    """A Starlette app that answers per path and records each request's Host header."""

    def __init__(self, routes: dict[str, Response]) -> None:
        self.hosts: list[str] = []
        self._routes = routes
        self.app = Starlette(routes=[Route("/{path:path}", self._answer, methods=["GET", "POST"])])

    async def _answer(self, request: Request) -> Response:
        self.hosts.append(request.headers.get("host", ""))
        return self._routes.get(request.url.path, PlainTextResponse("hello"))


def guard_for(allowlist: str | None, resolver: Any = None) -> EgressGuard:
    return EgressGuard(EgressPolicy.parse(allowlist), resolver=resolver)


class RecordingTransport(httpx.AsyncBaseTransport):
    """Stands in for the network: records what it was asked to send."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, text="ok")


def stub_resolver(*answers: list[str]) -> tuple[Any, list[str]]:
    """A resolver giving ``answers`` in turn (the last one again after that); records the names."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[IPAddress]:
        asked.append(host)
        answer = answers[min(len(asked), len(answers)) - 1]
        return [address for text in answer if (address := parse_address(text)) is not None]

    return resolve, asked


# --- the target and its card -----------------------------------------------------------------


async def test_a_target_outside_the_allowlist_is_refused_before_any_connection(
    listener: CountingListener,
) -> None:
    with pytest.raises(TargetNotAllowedError) as caught:
        await connect_target(listener.url, guard=guard_for(ALLOWED))
    assert str(caught.value) == (
        f"refused to connect to {listener.url} (the target): 127.0.0.2 is not on the target "
        "allowlist (ARENA_TARGET_ALLOWLIST=127.0.0.1)"
    )
    # The client itself refuses too (e.g. when a caller skips the up-front check).
    async with guarded_client(guard_for(ALLOWED), timeout=httpx.Timeout(5)) as http:
        with pytest.raises(TargetNotAllowedError):
            await http.get(f"{listener.url}/.well-known/agent-card.json")
    assert listener.connections() == 0


async def test_a_refused_match_is_an_error_of_its_own_kind_and_names_no_credentials(
    listener: CountingListener,
) -> None:
    runner = MatchRunner(load_settings(target_allowlist=ALLOWED))
    target = f"http://user:pa55word@{OUTSIDE}:{listener.port}/a?token=t0ken"
    result = await runner.run(MatchRequest(target=target, max_turns=3))
    assert result.outcome == "error"
    assert result.error_kind == "target_not_allowed"
    assert result.turns == []
    assert result.error is not None
    assert f"{OUTSIDE}:{listener.port}" in result.error
    assert "pa55word" not in result.error and "t0ken" not in result.error and "user" not in result.error
    assert listener.connections() == 0


async def test_a_card_whose_interface_points_outside_is_refused(listener: CountingListener) -> None:
    server = Recorder({"/.well-known/agent-card.json": JSONResponse(card_json(f"{listener.url}/"))})
    async with serve_app(server.app, bound()) as url:
        with pytest.raises(TargetNotAllowedError) as caught:
            await connect_target(url, guard=guard_for(ALLOWED))
        result = await MatchRunner(load_settings(target_allowlist=ALLOWED)).run(MatchRequest(target=url))
    message = str(caught.value)
    assert message.startswith(
        f"refused to connect to {listener.url} (the interface the agent card of {url} lists)"
    )
    assert "127.0.0.2 is not on the target allowlist" in message
    assert result.outcome == "error" and result.error_kind == "target_not_allowed"
    assert len(server.hosts) == 2  # the card was fetched, nothing else
    assert listener.connections() == 0


async def test_a_card_pointing_at_cloud_metadata_is_refused_by_default() -> None:
    server = Recorder({"/.well-known/agent-card.json": JSONResponse(card_json("http://169.254.169.254/"))})
    async with serve_app(server.app, bound()) as url:
        result = await MatchRunner(load_settings()).run(MatchRequest(target=url))
    assert result.outcome == "error" and result.error_kind == "target_not_allowed"
    assert (
        result.error is not None and "169.254.169.254 is in the blocked range 169.254.0.0/16" in result.error
    )


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_outside_is_refused_when_followed(listener: CountingListener, status: int) -> None:
    target = f"{listener.url}/.well-known/agent-card.json"
    server = Recorder({"/go": RedirectResponse(target, status_code=status)})
    async with serve_app(server.app, bound()) as url:
        async with guarded_client(guard_for(ALLOWED), timeout=httpx.Timeout(5)) as http:
            with pytest.raises(
                TargetNotAllowedError, match=re.escape("127.0.0.2 is not on the target allowlist")
            ):
                await http.get(f"{url}/go", follow_redirects=True)
        # Through the target client (which does not follow redirects): no card, no connection.
        redirecting = Recorder({"/.well-known/agent-card.json": RedirectResponse(target, status_code=status)})
        async with serve_app(redirecting.app, bound()) as card_url:
            with pytest.raises(AgentCardError, match=f"HTTP {status}"):
                await connect_target(card_url, guard=guard_for(ALLOWED))
    assert server.hosts == [url.removeprefix("http://")]
    assert listener.connections() == 0


# --- names, addresses, resolution --------------------------------------------------------------


async def test_localhost_allowed_by_name_plays_a_whole_match() -> None:
    sock = bound()
    port = sock.getsockname()[1]
    async with serve_app(create_minimal_app(f"http://localhost:{port}", comply=True), sock):
        runner = MatchRunner(load_settings(target_allowlist="localhost"))
        result = await runner.run(MatchRequest(target=f"http://localhost:{port}", max_turns=4))
        assert result.outcome == "attacker_won", result.error
        assert result.target_name == "Weather Agent"
        # By name only: the same server by address is not on the list.
        by_address = await runner.run(MatchRequest(target=f"http://127.0.0.1:{port}", max_turns=4))
    assert by_address.error_kind == "target_not_allowed"


async def test_cloud_metadata_is_refused_by_default_without_any_connection_attempt() -> None:
    network = RecordingTransport()
    resolver, _ = stub_resolver(["169.254.169.254"])
    guard = guard_for(None, resolver)
    async with httpx.AsyncClient(transport=GuardedTransport(guard, network)) as http:
        for url in (
            "http://169.254.169.254/latest/meta-data/",
            "http://metadata.internal/computeMetadata/v1/",
        ):
            with pytest.raises(TargetNotAllowedError, match=r"blocked range 169\.254\.0\.0/16"):
                await http.get(url)
        with pytest.raises(TargetNotAllowedError, match="fd00:ec2::254"):
            await http.get("http://[fd00:ec2::254]/latest/meta-data/")
    assert network.requests == []
    with pytest.raises(TargetNotAllowedError, match=re.escape("169.254.169.254")):
        await connect_target("http://169.254.169.254")  # the default client is guarded too
    result = await MatchRunner(load_settings()).run(MatchRequest(target="http://169.254.169.254/"))
    assert result.error_kind == "target_not_allowed"


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("100.100.100.200", "blocked range 100.100.100.200/32 (the Alibaba Cloud metadata service)"),
        ("168.63.129.16", "blocked range 168.63.129.16/32 (the Azure WireServer"),
        ("fd00:ec2::254", "blocked range fd00:ec2::254/128 (the AWS IPv6 metadata service)"),
        (
            "::ffff:169.254.169.254",
            "resolves to 169.254.169.254, which is in the blocked range 169.254.0.0/16",
        ),
        ("64:ff9b::a9fe:a9fe", "embeds 169.254.169.254 (NAT64 64:ff9b::/96)"),
        ("64:ff9b:1::a9fe:a9fe", "blocked range 64:ff9b:1::/48"),
        ("2002:a9fe:a9fe::1", "embeds 169.254.169.254 (6to4 2002::/16)"),
        ("2001:0:a9fe:a9fe::1", "embeds 169.254.169.254 (Teredo 2001::/32, its server)"),
        ("::a9fe:a9fe", "blocked range ::/96 (IPv4-compatible"),
        ("::ffff:0:a9fe:a9fe", "blocked range ::ffff:0:0:0/96 (SIIT"),
    ],
)
async def test_metadata_in_any_form_is_refused_for_a_listed_name_without_a_request(
    answer: str, says: str
) -> None:
    network = RecordingTransport()
    resolver, asked = stub_resolver(["10.0.0.5", answer])
    for allowlist in (None, "*", "metadata.internal", "*.internal"):
        guard = guard_for(allowlist, resolver)
        async with httpx.AsyncClient(transport=GuardedTransport(guard, network)) as http:
            with pytest.raises(TargetNotAllowedError, match=re.escape(says)):
                await http.get("http://metadata.internal/latest/meta-data/")
            literal = str(parse_address(answer))
            with pytest.raises(TargetNotAllowedError, match="blocked range"):
                await http.get(f"http://[{literal}]/" if ":" in literal else f"http://{literal}/")
    assert network.requests == []
    assert asked == ["metadata.internal"] * 4


async def test_a_name_off_the_list_is_not_even_resolved() -> None:
    resolver, asked = stub_resolver(["127.0.0.1"])
    with pytest.raises(TargetNotAllowedError, match=re.escape("evil.test is not on the target allowlist")):
        await guard_for("agent.example.com", resolver).check_url("http://evil.test/")
    assert asked == []


async def test_dns_rebinding_cannot_reach_the_second_address(listener: CountingListener) -> None:
    # Same port on both addresses: only the address decides where a connection lands.
    server = Recorder({})
    async with serve_app(server.app, _bound_same_port(listener.port)):
        resolver, asked = stub_resolver([ALLOWED], [OUTSIDE])
        name = f"rebind.test:{listener.port}"
        async with guarded_client(guard_for(ALLOWED, resolver), timeout=httpx.Timeout(5)) as http:
            # rebind.test is unknown to the system resolver: this answer proves the connection
            # went to the checked address, never to a lookup of its own.
            first = await http.get(f"http://{name}/first")
            assert first.status_code == 200 and first.text == "hello"
            assert str(first.request.url) == f"http://{name}/first"
            with pytest.raises(
                TargetNotAllowedError, match=re.escape("rebind.test resolves to 127.0.0.2, which is not")
            ):
                await http.get(f"http://{name}/second")
    assert server.hosts == [name]  # the Host header kept the name
    assert asked == ["rebind.test", "rebind.test"]
    assert listener.connections() == 0


def _bound_same_port(port: int) -> socket.socket:
    try:
        return bound(ALLOWED, port)
    except OSError as exc:  # pragma: no cover - the port is taken on 127.0.0.1 by chance
        if exc.errno == errno.EADDRINUSE:
            pytest.skip(f"port {port} is taken on 127.0.0.1")
        raise


async def test_every_resolved_address_must_be_allowed(listener: CountingListener) -> None:
    resolver, _ = stub_resolver([ALLOWED, OUTSIDE])
    async with guarded_client(guard_for(ALLOWED, resolver), timeout=httpx.Timeout(5)) as http:
        with pytest.raises(TargetNotAllowedError, match=re.escape("resolves to 127.0.0.2")):
            await http.get(f"http://mixed.test:{listener.port}/")
    assert listener.connections() == 0


async def test_the_next_checked_address_is_tried_when_one_refuses_the_connection() -> None:
    server = Recorder({})
    sock = bound()
    port = sock.getsockname()[1]
    resolver, _ = stub_resolver(["127.0.0.3", ALLOWED])  # nothing listens on 127.0.0.3
    guard = guard_for("127.0.0.0/8", resolver)
    async with serve_app(server.app, sock), guarded_client(guard, timeout=httpx.Timeout(5)) as http:
        response = await http.get(f"http://two.test:{port}/")
    assert response.text == "hello"
    assert server.hosts == [f"two.test:{port}"]


async def test_a_pinned_request_keeps_the_name_for_host_and_tls() -> None:
    network = RecordingTransport()
    resolver, _ = stub_resolver(["10.0.0.5", "fd00::5"])
    async with httpx.AsyncClient(transport=GuardedTransport(guard_for(None, resolver), network)) as http:
        response = await http.post("https://agent.test:8443/rpc?x=1", json={"a": 1})
        await http.get("http://[fd00::7]:8080/")
    sent, literal = network.requests
    assert str(sent.url) == "https://10.0.0.5:8443/rpc?x=1"
    assert sent.headers["host"] == "agent.test:8443"
    assert sent.extensions["sni_hostname"] == "agent.test"
    assert json.loads(await sent.aread()) == {"a": 1}
    assert str(response.request.url) == "https://agent.test:8443/rpc?x=1"
    assert str(literal.url) == "http://[fd00::7]:8080/"
    assert "sni_hostname" not in literal.extensions


async def test_an_unresolvable_name_is_a_connection_error() -> None:
    async def fail(host: str, port: int) -> list[IPAddress]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async with guarded_client(guard_for(None, fail), timeout=httpx.Timeout(5)) as http:
        with pytest.raises(httpx.ConnectError, match=re.escape("cannot resolve nowhere.test")):
            await http.get("http://nowhere.test/")


# --- through the attacker agent and the orchestrator ---------------------------------------------


async def test_the_attacker_task_fails_with_the_reason(listener: CountingListener) -> None:
    settings = load_settings(target_allowlist=ALLOWED)
    attacker = create_attacker_app(settings, public_url="http://attacker")
    async with client_for(HostRouter({"attacker": attacker})) as http:
        result = await play_remote_match(
            "http://attacker", MatchRequest(target=listener.url, max_turns=2), http=http
        )
    assert result.outcome == "error"
    assert result.error_kind == "target_not_allowed"
    assert listener.connections() == 0


async def test_a_campaign_records_a_refused_defender_as_an_error_without_retrying(
    arena: InProcessArena, listener: CountingListener
) -> None:
    settings = load_settings(
        target_allowlist=ALLOWED,
        attacker_url="http://attacker",
        orchestrator_retry_backoff_s=0,
        orchestrator_match_attempts=3,
    )
    # The attacker reaches targets itself, through its guarded client (target_http unset).
    arena.add("attacker", create_attacker_app(settings, public_url="http://attacker"))
    app = create_orchestrator_app(settings, http=arena.http)
    arena.add("orchestrator", app)
    worker = asyncio.create_task(app.state.worker.run())
    try:
        spec = {
            "name": "outside",
            "attackers": [{"strategy": "playbook"}],
            "defenders": [{"name": "outside", "url": listener.url}],
            "objectives": [{"phrase": "I Give Up"}],
            "repetitions": 1,
            "max_turns": 3,
        }
        created = (await arena.http.post("http://orchestrator/v1/campaigns", json=spec)).json()
        progress = await wait_for_campaign_async(
            arena.http, f"http://orchestrator/v1/campaigns/{created['id']}", timeout_s=60
        )
        matches = (await arena.http.get(f"http://orchestrator/v1/campaigns/{created['id']}/matches")).json()
    finally:
        app.state.worker.stop()
        await asyncio.wait_for(worker, 30)
    assert progress["counts"]["error"] == 1
    (summary,) = matches["matches"]
    assert summary["outcome"] == "error"
    assert summary["error_kind"] == "target_not_allowed"
    assert summary["attempts"] == 1
    assert "127.0.0.2 is not on the target allowlist" in summary["error"]
    assert listener.connections() == 0


async def test_a_campaign_attacker_url_outside_the_allowlist_is_refused(listener: CountingListener) -> None:
    guard = guard_for(ALLOWED)
    player = RemoteAttackerPlayer("http://127.0.0.1:9", guard=guard)
    from arena_orchestrator.campaign_models import MatchJob

    job = MatchJob.model_construct(
        attacker_url=listener.url,
        request=MatchRequest(target="http://127.0.0.1:9", max_turns=1),
        timeout_s=10.0,
    )
    with pytest.raises(TargetNotAllowedError, match=r"\(the attacker\): 127.0.0.2 is not on"):
        await player.play(job)
    assert listener.connections() == 0
