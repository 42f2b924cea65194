"""The test round-robin proxy sends every connection to a live upstream once one is dead.

The fault tests rely on it: after a replica dies, a retry through the proxy must reach the
survivor, however many connections open at the same moment.
"""

from __future__ import annotations

import asyncio

import pytest

from arena.local_services import LOOPBACK, free_port
from support.tcp_proxy import RoundRobinProxy

pytestmark = pytest.mark.timeout(60)

CONNECTIONS = 64


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
    await writer.drain()
    writer.close()


async def _ask(port: int) -> bytes:
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    try:
        writer.write(b"GET / HTTP/1.1\r\nHost: proxy\r\n\r\n")
        await writer.drain()
        return await reader.read()
    finally:
        writer.close()


@pytest.mark.parametrize("dead", [[0], [0, 2], [1, 2]])
def test_connections_opened_together_all_reach_the_live_upstream(dead: list[int]) -> None:
    async def run() -> list[bytes]:
        live = await asyncio.start_server(_answer, LOOPBACK, 0)
        live_port = live.sockets[0].getsockname()[1]
        # Nothing listens on a fresh free port: connecting to it is refused, like a killed replica.
        upstreams = [(LOOPBACK, free_port() if n in dead else live_port) for n in range(3)]
        try:
            with RoundRobinProxy(upstreams) as proxy:
                return await asyncio.gather(*(_ask(proxy.port) for _ in range(CONNECTIONS)))
        finally:
            live.close()
            await live.wait_closed()

    answers = asyncio.run(run())
    assert all(answer.startswith(b"HTTP/1.1 204") for answer in answers), answers


def test_a_connection_is_closed_when_every_upstream_is_dead() -> None:
    async def run() -> bytes:
        with RoundRobinProxy([(LOOPBACK, free_port()), (LOOPBACK, free_port())]) as proxy:
            return await _ask(proxy.port)

    assert asyncio.run(run()) == b""
