"""A round-robin TCP proxy standing in for a Kubernetes Service, run as its own process.

``python bench/rr_proxy.py LISTEN_PORT UPSTREAM_PORT...`` accepts connections on
127.0.0.1:LISTEN_PORT and pipes each one to the next upstream (127.0.0.1) in turn, like
kube-proxy spreading connections over a Deployment's pods. It runs on uvloop; the bytes it
copies cost CPU that an in-kernel kube-proxy would not, and it is on the path for every
replica count alike.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

import uvloop

LOOPBACK = "127.0.0.1"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main() -> None:
    listen, upstreams = int(sys.argv[1]), [int(port) for port in sys.argv[2:]]
    turn = itertools.cycle(upstreams)

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(LOOPBACK, next(turn))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))

    server = await asyncio.start_server(handle, LOOPBACK, listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    uvloop.run(main())
