"""Every HTTP client the services make per match or per check shares one TLS context.

Creating an ``ssl.SSLContext`` loads the CA bundle: milliseconds of CPU and native memory
the garbage collector cannot see. Made per match (the orchestrator's client to its attacker
was), it cost more CPU than the rest of following the match and made the orchestrator's
resident memory swing by hundreds of MB over a campaign (docs/performance.md).
"""

from __future__ import annotations

import ssl

import httpx
import pytest

from arena_core.a2a.client.connect import _new_http_client
from arena_core.a2a.egress_guard import shared_tls_context


@pytest.fixture
def contexts_made(monkeypatch: pytest.MonkeyPatch) -> list[ssl.SSLContext]:
    made: list[ssl.SSLContext] = []
    original = ssl.SSLContext.__new__

    def counting(cls: type[ssl.SSLContext], *args: object, **kwargs: object) -> ssl.SSLContext:
        context = original(cls, *args, **kwargs)
        made.append(context)
        return context

    shared_tls_context()  # made once per process, before counting
    monkeypatch.setattr(ssl.SSLContext, "__new__", counting)
    return made


@pytest.mark.asyncio
async def test_connection_clients_share_one_tls_context(contexts_made: list[ssl.SSLContext]) -> None:
    clients = [_new_http_client(None, httpx.Timeout(5.0)) for _ in range(5)]
    try:
        assert contexts_made == []
    finally:
        for client in clients:
            await client.aclose()


def test_the_shared_context_verifies() -> None:
    context = shared_tls_context()
    assert context is shared_tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
