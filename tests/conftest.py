"""Shared fixtures: in-process arena wiring over httpx ASGI transports.

``arena`` builds a small world of in-process apps reachable by host name:
``http://model`` (the scripted model server), ``http://defender`` and
``http://attacker``, all wired with real HTTP semantics through
:class:`support.asgi.HostRouter`. No component of ours is mocked.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from starlette.types import ASGIApp

from arena_attacker.app import create_attacker_app
from arena_core.llm import ChatModel
from arena_core.settings import ArenaSettings, ModelConfig, load_settings
from arena_defender.app import create_defender_app
from arena_model.app import create_app
from arena_model.scripted_engine import ScriptedEngine, ScriptedRule
from support.asgi import HostRouter, client_for
from support.deploy_tools import ToolsUnavailableError, deploy_tools_bin
from support.redis_cluster import CLUSTER_SKIP_REASON, RedisClusterNodes, start_cluster
from support.redis_server import SKIP_REASON, RedisServer, find_redis_server


@dataclass
class InProcessArena:
    """Apps reachable by host through one router."""

    router: HostRouter
    http: httpx.AsyncClient
    settings: ArenaSettings
    apps: dict[str, ASGIApp] = field(default_factory=dict)

    def add(self, host: str, app: ASGIApp) -> str:
        self.apps[host] = app
        self.router.add(host, app)
        return f"http://{host}"

    def add_model(
        self,
        host: str = "model",
        *,
        mode: str = "echo",
        tool_text: str | None = None,
        rules: Sequence[ScriptedRule] = (),
    ) -> str:
        """A scripted model server; ``rules`` make it speak a part (see ScriptedEngine)."""
        if tool_text is None:
            engine = ScriptedEngine(mode=mode, rules=rules)
        else:
            engine = ScriptedEngine(mode=mode, tool_text=tool_text, rules=rules)
        return self.add(host, create_app(engine))

    def chat_model(self, host: str = "model") -> ChatModel:
        config = ModelConfig(
            model_id="llamacpp:scripted",
            base_url=f"http://{host}/v1",
            timeout_s=10.0,
            max_retries=0,
            embedded=True,
        )
        return ChatModel.from_config(config, client_args={"http_client": client_for(self.router)})

    def add_defender(self, host: str = "defender", *, model_host: str = "model", **overrides: object) -> str:
        settings = load_settings(**overrides) if overrides else self.settings
        app = create_defender_app(settings, public_url=f"http://{host}", model=self.chat_model(model_host))
        return self.add(host, app)

    def add_attacker(self, host: str = "attacker", *, model_host: str = "model") -> str:
        app = create_attacker_app(
            self.settings,
            public_url=f"http://{host}",
            model_factory=lambda: self.chat_model(model_host),
            target_http=client_for(self.router),
        )
        return self.add(host, app)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session; tests isolate themselves by namespace."""
    binary = find_redis_server()
    if binary is None:
        pytest.skip(SKIP_REASON)
    server = RedisServer(binary, tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterNodes]:
    """One Redis Cluster (three masters, three replicas) for the session; tests isolate
    themselves by namespace. Tests that fail a node over start a cluster of their own."""
    cluster = start_cluster(tmp_path_factory.mktemp("redis-cluster"))
    if cluster is None:
        pytest.skip(CLUSTER_SKIP_REASON)
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_namespace() -> str:
    """A key namespace no other test uses."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> ArenaSettings:
    """Settings from a clean environment (no ARENA_* leaks from the shell)."""
    import os

    for name in list(os.environ):
        if name.startswith("ARENA_"):
            monkeypatch.delenv(name)
    return load_settings()


@pytest_asyncio.fixture
async def arena(settings: ArenaSettings) -> AsyncIterator[InProcessArena]:
    router = HostRouter({})
    http = client_for(router)
    yield InProcessArena(router=router, http=http, settings=settings)
    await http.aclose()


@pytest.fixture(scope="session")
def tools_bin() -> Path:
    """``.tools/bin`` with helm, kubectl, docker-compose, hadolint and kubernetes-validate.

    Installed on first use by tools/install-deploy-tools; skipped (with the reason) on a
    machine that cannot have them.
    """
    try:
        return deploy_tools_bin()
    except ToolsUnavailableError as exc:
        pytest.skip(f"deployment checkers unavailable: {exc}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of the deployment checkers are ``slow``: the quick loop needs no tool downloads."""
    for item in items:
        if "tools_bin" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
