"""A tiny round-robin TCP proxy on loopback, for tests that kill one of several replicas.

Each client connection goes to the next upstream in turn; an upstream that refuses the
connection is skipped, so once a replica is dead every new connection lands on a live
one (what a Kubernetes Service or Compose's DNS round robin achieves once the dead
endpoint is dropped). A connection stays on its upstream until either side closes it;
when an upstream dies, the proxy closes its clients' connections, so an in-flight request
fails as it would without the proxy.

The proxy also counts, per upstream, the connections waiting for the answer to a
``POST`` (the client sent a request, the upstream has not answered yet): a test waits
for that count to be positive to kill a replica while it is busy with a message.

It runs its own event loop in a daemon thread, so synchronous tests can use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field

from arena.local_services import LOOPBACK, free_port

CHUNK = 65_536


@dataclass
class _Connection:
    upstream: int
    awaiting_post: bool = False


@dataclass
class RoundRobinProxy:
    """Forwards ``http://127.0.0.1:port`` to ``upstreams`` (``(host, port)`` pairs) in turn."""

    upstreams: list[tuple[str, int]]
    port: int = field(default_factory=free_port)
    connections: dict[int, int] = field(default_factory=dict)
    """Upstream index -> connections it has been given (for assertions)."""
    _state: list[_Connection] = field(default_factory=list)
    _next: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _server: asyncio.Server | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def in_flight(self, upstream: int) -> int:
        """Connections to ``upstream`` waiting for the answer to a POST right now."""
        with self._lock:
            return sum(1 for c in self._state if c.upstream == upstream and c.awaiting_post)

    def start(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._handle, LOOPBACK, self.port)
                )
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name=f"proxy-{self.port}", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]

    def stop(self) -> None:
        loop, server = self._loop, self._server
        if loop is None or server is None or self._thread is None:
            return

        async def close() -> None:
            server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> RoundRobinProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _connect(self) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter] | None:
        for _ in range(len(self.upstreams)):
            index = self._next % len(self.upstreams)
            self._next += 1
            host, port = self.upstreams[index]
            try:
                reader, writer = await asyncio.open_connection(host, port)
            except OSError:
                continue  # refused: a dead replica; try the next one
            self.connections[index] = self.connections.get(index, 0) + 1
            return index, reader, writer
        return None

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        upstream = await self._connect()
        if upstream is None:
            client_writer.close()
            return
        index, upstream_reader, upstream_writer = upstream
        state = _Connection(index)
        with self._lock:
            self._state.append(state)
        try:
            pumps = [
                asyncio.ensure_future(self._pump(client_reader, upstream_writer, state, outbound=True)),
                asyncio.ensure_future(self._pump(upstream_reader, client_writer, state, outbound=False)),
            ]
            # Either side closing (or an upstream dying) ends the whole connection.
            _, pending = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            with self._lock:
                self._state.remove(state)
            for writer in (client_writer, upstream_writer):
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        state: _Connection,
        *,
        outbound: bool,
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                chunk = await reader.read(CHUNK)
                if not chunk:
                    return
                with self._lock:
                    if outbound:
                        if not state.awaiting_post and chunk.startswith(b"POST "):
                            state.awaiting_post = True
                    else:
                        state.awaiting_post = False
                writer.write(chunk)
                await writer.drain()


__all__ = ["RoundRobinProxy"]
