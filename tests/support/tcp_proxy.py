"""A tiny round-robin TCP proxy on loopback, for tests that break one of its upstreams.

Routing: each client connection goes to the next upstream in turn; an upstream that refuses
the connection is skipped, so once a replica is dead every new connection lands on a live
one (what a Kubernetes Service or Compose's DNS round robin achieves once the dead endpoint
is dropped). A connection stays on its upstream until either side closes it; when an
upstream dies, the proxy closes its clients' connections, so an in-flight request fails as
it would without the proxy.

What a test can observe (:meth:`RoundRobinProxy.snapshot` and the shortcuts next to it):
the connections given to each upstream so far, the connections open (or being opened) to
each upstream now, the connections waiting for the answer to a ``POST`` (the client sent a
request, the upstream has not answered yet: the upstream is busy with it), and the requests
forwarded to each upstream.

What a test can control: a gate on requests. After :meth:`RoundRobinProxy.hold`, every new
request (a client chunk that starts with an HTTP method) waits in the proxy before any byte
of it reaches an upstream, so the upstream certainly has not answered it (``after=n`` lets
``n`` more requests through first); :meth:`RoundRobinProxy.release` lets them go. A test
uses it to keep matches in flight on purpose: they stay exactly where they are until it
says so, however slow the machine.

The proxy runs its own event loop in a daemon thread, so synchronous tests can use it. All
its bookkeeping is shared with the test's thread under one lock; what the test reads are
copies, never the live structures.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from arena.local_services import LOOPBACK, free_port

CHUNK = 65_536
START_TIMEOUT_S = 30.0
HANDLER_START_TURNS = 5
"""Loop turns from an accepted connection to its handler running (accept task, protocol, handler)."""
_METHODS = (b"GET ", b"POST ", b"PUT ", b"PATCH ", b"DELETE ", b"HEAD ", b"OPTIONS ")


@dataclass
class _Connection:
    upstream: int
    awaiting_post: bool = False
    held: bool = False


@dataclass(frozen=True)
class ProxySnapshot:
    """The proxy's counters at one instant (upstream index -> count; missing means 0)."""

    given: dict[int, int]
    """Connections each upstream has been given so far."""
    open: dict[int, int]
    """Connections to each upstream open, or being opened, now."""
    in_flight: dict[int, int]
    """Connections waiting for an upstream's answer to a POST now."""
    forwarded: dict[int, int]
    """Requests forwarded to each upstream so far."""
    held: int
    """Requests waiting at the gate now (not sent to any upstream)."""


class RoundRobinProxy:
    """Forwards ``http://127.0.0.1:port`` to ``upstreams`` (``(host, port)`` pairs) in turn.

    The listening socket and the upstream connections are made by the proxy's own thread,
    which starts in the network namespace of the thread that calls :meth:`start`.
    """

    def __init__(self, upstreams: list[tuple[str, int]], port: int | None = None) -> None:
        if not upstreams:
            raise ValueError("a proxy needs at least one upstream")
        self.upstreams = list(upstreams)
        self.port = port or free_port()
        self._lock = threading.Lock()
        # Everything below is guarded by _lock.
        self._given: Counter[int] = Counter()
        self._connecting: Counter[int] = Counter()
        self._forwarded: Counter[int] = Counter()
        self._connections: list[_Connection] = []
        self._next = 0
        self._holding = False
        self._allowance = 0
        # Owned by the proxy's loop.
        self._opened: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    # --- observing -----------------------------------------------------------------------

    def snapshot(self) -> ProxySnapshot:
        """A consistent copy of every counter, taken under the lock."""
        with self._lock:
            opened = Counter(self._connecting)
            in_flight: Counter[int] = Counter()
            held = 0
            for connection in self._connections:
                opened[connection.upstream] += 1
                in_flight[connection.upstream] += connection.awaiting_post
                held += connection.held
            return ProxySnapshot(
                given=dict(self._given),
                open={k: v for k, v in opened.items() if v},
                in_flight={k: v for k, v in in_flight.items() if v},
                forwarded=dict(self._forwarded),
                held=held,
            )

    @property
    def connections(self) -> dict[int, int]:
        """Upstream index -> connections it has been given so far (a copy)."""
        return self.snapshot().given

    def in_flight(self, upstream: int) -> int:
        """Connections to ``upstream`` waiting for the answer to a POST right now."""
        return self.snapshot().in_flight.get(upstream, 0)

    def open_connections(self, upstream: int) -> int:
        """Connections to ``upstream`` open or being opened right now."""
        return self.snapshot().open.get(upstream, 0)

    def held(self) -> int:
        """Requests waiting at the gate right now."""
        return self.snapshot().held

    # --- the gate --------------------------------------------------------------------------

    def hold(self, *, after: int = 0) -> None:
        """Let ``after`` more requests through, then hold every further one until :meth:`release`.

        Takes effect before this returns: a request that starts afterwards is counted against
        ``after`` or held.
        """
        if after < 0:
            raise ValueError("after must be zero or positive")

        def close() -> None:
            with self._lock:
                if not self._holding:
                    self._holding = True
                    self._opened = asyncio.Event()
                self._allowance = after

        self._in_loop(close)

    def release(self) -> None:
        """Let the held requests go, and hold no more."""

        def open_gate() -> None:
            with self._lock:
                self._holding = False
                self._allowance = 0
                opened, self._opened = self._opened, None
            if opened is not None:
                opened.set()

        self._in_loop(open_gate)

    def _in_loop(self, action: Callable[[], None]) -> None:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the proxy is not running")

        async def run() -> None:
            action()

        asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=START_TIMEOUT_S)

    async def _pass_gate(self, connection: _Connection) -> None:
        with self._lock:
            if not self._holding:
                return
            if self._allowance > 0:
                self._allowance -= 1
                return
            opened = self._opened
            connection.held = True
        assert opened is not None
        try:
            await opened.wait()
        finally:
            with self._lock:
                connection.held = False

    # --- running ---------------------------------------------------------------------------

    def start(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._handle, LOOPBACK, self.port)
                )
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            self._loop = loop
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name=f"proxy-{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(START_TIMEOUT_S):
            raise RuntimeError(f"the proxy on port {self.port} did not start within {START_TIMEOUT_S:g} s")
        if failure:
            raise failure[0]

    def stop(self) -> None:
        """Close the listening socket and every connection; idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = None

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            # A connection accepted just before the close is a bare socket until asyncio's own
            # task wraps it and starts our handler: cancelled before its first step, that task
            # never runs, and the socket is left to the garbage collector (an "unclosed socket"
            # ResourceWarning that failed a later test). A few loop turns let each one start,
            # so the handler's cleanup closes it when cancelled.
            for _ in range(HANDLER_START_TURNS):
                await asyncio.sleep(0)
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(0)  # the connection-lost callbacks of the transports just closed

        with contextlib.suppress(RuntimeError, TimeoutError):
            asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=START_TIMEOUT_S)
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=START_TIMEOUT_S)

    def __enter__(self) -> RoundRobinProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _connect(self) -> tuple[_Connection, asyncio.StreamReader, asyncio.StreamWriter] | None:
        # Each connection tries every upstream once, from its own turn on: connections opened
        # at the same time must not share one cursor, or one of them could be handed the dead
        # upstream twice and none of the live ones.
        with self._lock:
            first = self._next
            self._next += 1
        for offset in range(len(self.upstreams)):
            index = (first + offset) % len(self.upstreams)
            with self._lock:
                self._connecting[index] += 1
            host, port = self.upstreams[index]
            connection: _Connection | None = None
            try:
                reader, writer = await asyncio.open_connection(host, port)
                connection = _Connection(index)
            except OSError:
                continue  # refused: a dead replica; try the next one
            finally:
                # One step from "being opened" to "open" (or gone): never counted as neither.
                with self._lock:
                    self._connecting[index] -= 1
                    if connection is not None:
                        self._given[index] += 1
                        self._connections.append(connection)
            return connection, reader, writer
        return None

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        # Cancelled only by stop(): end normally, or asyncio's server logs the cancellation.
        with contextlib.suppress(asyncio.CancelledError):
            await self._relay(client_reader, client_writer)

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        upstream_writer: asyncio.StreamWriter | None = None
        try:
            upstream = await self._connect()
            if upstream is None:
                return
            connection, upstream_reader, upstream_writer = upstream
            try:
                pumps = [
                    asyncio.ensure_future(self._outbound(client_reader, upstream_writer, connection)),
                    asyncio.ensure_future(self._inbound(upstream_reader, client_writer, connection)),
                ]
                # Either side closing (or an upstream dying) ends the whole connection.
                try:
                    await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for task in pumps:
                        task.cancel()
                    await asyncio.gather(*pumps, return_exceptions=True)
            finally:
                with self._lock:
                    self._connections.remove(connection)
        finally:
            # Closed first, awaited after: a stop() cancelling this task mid-way (even while it
            # connects, or waits for one writer) leaves no connection open.
            writers = [writer for writer in (client_writer, upstream_writer) if writer is not None]
            for writer in writers:
                writer.close()
            for writer in writers:
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

    async def _outbound(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: _Connection
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                chunk = await reader.read(CHUNK)
                if not chunk:
                    return
                if chunk.startswith(_METHODS):
                    # A new request: it may have to wait at the gate before any byte goes on.
                    await self._pass_gate(connection)
                    with self._lock:
                        self._forwarded[connection.upstream] += 1
                        connection.awaiting_post = chunk.startswith(b"POST ")
                writer.write(chunk)
                await writer.drain()

    async def _inbound(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: _Connection
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                chunk = await reader.read(CHUNK)
                if not chunk:
                    return
                with self._lock:
                    connection.awaiting_post = False
                writer.write(chunk)
                await writer.drain()


__all__ = ["ProxySnapshot", "RoundRobinProxy"]
