"""Campaigns through real orchestrator processes: start services, submit, wait, account.

:func:`start_service` starts ``arena serve KIND`` like :class:`arena.local_services.LocalServices`
does, but also where LocalServices cannot: with ``ARENA_PUBLIC_URL`` (replicas behind a
proxy advertise the proxy in their cards), on another address and inside a network
namespace (an argv prefix such as ``ip netns exec NS``). The child joins the given
LocalServices, which stops it like its own.

:class:`CampaignProbe` talks to one orchestrator's REST API and reads the campaign's
records straight from Redis; :meth:`CampaignProbe.assert_each_match_once` is the check every
fault test ends with: the campaign is finished and every match is recorded exactly once.
Its waits poll observable state; their timeouts (generous: the machine may be loaded) only
guard against a hang, and a timeout says what never happened, the last state seen and
whatever ``CampaignProbe.context`` adds (e.g. the services' logs).

:func:`wait_for_campaign` (and :func:`wait_for_campaign_async`, for tests on an event loop) is
the one "wait until the campaign is final" of the other tests: it polls any orchestrator's
``GET /v1/campaigns/{id}`` through the test's own client until :func:`finished` (or another
predicate) holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
import yaml
from redis.cluster import ClusterNode

from arena.local_services import LOOPBACK, LocalServices, ServiceProcess, free_port, shutdown_grace_for
from arena_core.redis_state.keys import RedisKeys
from arena_core.redis_url import cluster_nodes, is_cluster_url
from support.processes import clean_env
from support.tcp_proxy import RoundRobinProxy

Progress = dict[str, Any]
Around = Callable[[], contextlib.AbstractContextManager[object]]
WAIT_S = 120.0
"""How long a wait polls before it fails: far beyond any healthy run, well inside the test timeout."""


def _no_context() -> str:
    return ""


def start_service(
    services: LocalServices,
    kind: str,
    *,
    name: str,
    env: Mapping[str, str],
    host: str = LOOPBACK,
    port: int | None = None,
    public_url: str | None = None,
    prefix: Sequence[str] = (),
    extra_args: Sequence[str] = (),
) -> ServiceProcess:
    """Start ``arena serve KIND`` on ``host:port`` with exactly ``env`` (plus ``public_url``)."""
    port = port or free_port()
    log_dir = services._log_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    child_env = {**env, "PYTHONUNBUFFERED": "1"}
    child_env.pop("ARENA_PUBLIC_URL", None)
    if public_url is not None:
        child_env["ARENA_PUBLIC_URL"] = public_url
    command = [
        *prefix,
        sys.executable,
        "-m",
        "arena",
        "serve",
        kind,
        "--host",
        host,
        "--port",
        str(port),
        *extra_args,
    ]
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env,
            start_new_session=True,
        )
    reachable = LOOPBACK if host == "0.0.0.0" else host
    service = ServiceProcess(
        name, f"http://{reachable}:{port}", process, log_path, shutdown_grace_for(child_env)
    )
    services.services.append(service)
    return service


def campaign_spec(
    defender_url: str,
    *,
    repetitions: int,
    max_turns: int = 2,
    concurrency: int = 3,
    attackers: Sequence[Mapping[str, Any]] = ({"strategy": "playbook"},),
    name: str = "faults",
) -> str:
    """A one-defender campaign spec: ``len(attackers) * repetitions`` matches."""
    spec: str = yaml.safe_dump(
        {
            "name": name,
            "attackers": [dict(a) for a in attackers],
            "defenders": [{"name": "target", "url": defender_url}],
            "objectives": [{"phrase": "I Give Up", "judge": "phrase"}],
            "repetitions": repetitions,
            "max_turns": max_turns,
            "concurrency": concurrency,
            "seed": 7,
        },
        sort_keys=False,
    )
    return spec


class StateUnavailable(Exception):  # noqa: N818 - mirrors the API's error kind
    """The orchestrator answered 503: its shared state (Redis) is unavailable."""


def finished(progress: Progress) -> bool:
    """The campaign is final and nothing is running any more."""
    return bool(progress["finished"]) and progress["running"] == 0


POLL_S = 0.05
"""How often the waits below read a campaign's progress."""


def _never(campaign_url: str, timeout_s: float, progress: Progress) -> AssertionError:
    return AssertionError(f"{campaign_url} never got there within {timeout_s:g} s; last progress: {progress}")


def wait_for_campaign(
    client: httpx.Client,
    campaign_url: str,
    until: Callable[[Progress], bool] = finished,
    *,
    timeout_s: float = WAIT_S,
) -> Progress:
    """Poll ``GET campaign_url`` (``.../v1/campaigns/{id}``) until ``until(progress)``, by default
    until the campaign is :func:`finished`; the timeout only guards against a hang."""
    deadline = time.monotonic() + timeout_s
    while True:
        progress = dict(client.get(campaign_url).json())
        if until(progress):
            return progress
        if time.monotonic() > deadline:
            raise _never(campaign_url, timeout_s, progress)
        time.sleep(POLL_S)


async def wait_for_campaign_async(
    client: httpx.AsyncClient,
    campaign_url: str,
    until: Callable[[Progress], bool] = finished,
    *,
    timeout_s: float = WAIT_S,
) -> Progress:
    """:func:`wait_for_campaign` for tests on an event loop (e.g. through ``httpx.ASGITransport``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        progress = dict((await client.get(campaign_url)).json())
        if until(progress):
            return progress
        if time.monotonic() > deadline:
            raise _never(campaign_url, timeout_s, progress)
        await asyncio.sleep(POLL_S)


@dataclass
class CampaignProbe:
    """One orchestrator's API and its Redis namespace, seen from the test.

    ``around`` wraps every request (e.g. ``lambda: network.entered("client")`` to talk from
    inside a network namespace); ``context`` is added to the message of a wait that times out.
    """

    url: str
    redis_url: str
    namespace: str
    around: Around = field(default=contextlib.nullcontext)
    context: Callable[[], str] = field(default=_no_context)

    def _redis(self) -> redis.Redis | redis.RedisCluster:
        if is_cluster_url(self.redis_url):
            node_url, seeds = cluster_nodes(self.redis_url)
            return redis.RedisCluster.from_url(
                node_url,
                startup_nodes=[ClusterNode(host, port) for host, port in seeds],
                socket_timeout=5,
                socket_connect_timeout=5,
                decode_responses=True,
            )
        return redis.Redis.from_url(
            self.redis_url, socket_timeout=5, socket_connect_timeout=5, decode_responses=True
        )

    def submit(self, spec: str) -> str:
        with self.around():
            response = httpx.post(
                f"{self.url}/v1/campaigns",
                content=spec,
                headers={"Content-Type": "application/yaml"},
                timeout=30,
            )
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def progress(self, campaign_id: str) -> Progress:
        with self.around():
            response = httpx.get(f"{self.url}/v1/campaigns/{campaign_id}", timeout=10)
        if response.status_code == 503:
            raise StateUnavailable(response.text)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def wait(
        self,
        campaign_id: str,
        predicate: Callable[[Progress], bool],
        *,
        timeout_s: float = WAIT_S,
        what: str = "the expected state",
    ) -> Progress:
        """Poll progress until ``predicate`` holds; the timeout only guards against a hang."""
        deadline = time.monotonic() + timeout_s
        progress: Progress = {}
        problem = ""
        while True:
            # While Redis is away (and on the first use of a pooled connection after it came
            # back) the API answers 503, as documented: keep polling.
            try:
                progress = self.progress(campaign_id)
            except (httpx.HTTPError, StateUnavailable) as exc:
                problem = f" (last poll failed: {type(exc).__name__}: {exc})"
            else:
                problem = ""
                if predicate(progress):
                    return progress
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"campaign {campaign_id} never reached {what} within {timeout_s:g} s; "
                    f"last progress: {progress}{problem}\n{self.context()}"
                )
            time.sleep(0.05)

    def wait_until(self, condition: Callable[[], bool], *, timeout_s: float = WAIT_S, what: str) -> None:
        """Poll ``condition`` (anything the test can observe) until it holds."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"never observed {what} within {timeout_s:g} s\n{self.context()}")
            time.sleep(0.02)

    def _hash(self, campaign_id: str, part: str) -> dict[str, Any]:
        key = RedisKeys(self.namespace).campaign_part(campaign_id, part)
        with self.around():
            client = self._redis()
            try:
                return {str(k): json.loads(v) for k, v in client.hgetall(key).items()}
            finally:
                client.close()

    def records(self, campaign_id: str) -> dict[str, dict[str, Any]]:
        """Match id -> the stored record (the results hash, written once per match)."""
        return self._hash(campaign_id, "results")

    def running(self, campaign_id: str) -> dict[str, dict[str, Any]]:
        """Match id -> who plays it now."""
        return self._hash(campaign_id, "running")

    def assert_each_match_once(self, campaign_id: str, total: int) -> dict[int, dict[str, Any]]:
        """The campaign is finished with every match recorded exactly once; index -> summary."""
        progress = self.progress(campaign_id)
        assert finished(progress), progress
        assert progress["status"] == "completed", progress
        assert progress["done"] == total, progress
        assert sum(progress["counts"].values()) == total, progress["counts"]
        with self.around():
            listed = httpx.get(
                f"{self.url}/v1/campaigns/{campaign_id}/matches", params={"limit": 1000}, timeout=10
            ).json()
        assert listed["total"] == total
        assert sorted(m["index"] for m in listed["matches"]) == list(range(total))
        records = self.records(campaign_id)
        assert len(records) == total
        summaries = {r["summary"]["index"]: r["summary"] for r in records.values()}
        assert sorted(summaries) == list(range(total)), "an index recorded twice or missing"
        for match_id, record in records.items():
            assert record["summary"]["match_id"] == match_id
        # The counters agree with the records: nothing was counted twice.
        outcomes: dict[str, int] = {}
        for summary in summaries.values():
            key = summary["outcome"] or summary["disposition"]
            outcomes[key] = outcomes.get(key, 0) + 1
        assert {k: v for k, v in progress["counts"].items() if v} == outcomes
        assert self.running(campaign_id) == {}
        return summaries


def service_logs(services: LocalServices, lines: int = 30) -> str:
    """The last ``lines`` of every started service's log, for a failing assertion's message."""
    return "\n".join(f"--- {s.name}\n{s.log_tail(lines)}" for s in services.services)


def wait_all_ready(services: LocalServices, *started: ServiceProcess) -> None:
    """Wait for each of ``started`` to answer its readiness probe."""
    for service in started:
        services.wait_ready(service, timeout_s=60)


def scripted_model(
    services: LocalServices, rules: Path, latency_ms: int, *, name: str = "model", **kwargs: Any
) -> ServiceProcess:
    """``arena serve model --engine scripted`` answering by ``rules`` after ``latency_ms``
    (``kwargs`` as :func:`start_service` takes them: port, prefix, ...)."""
    args = ["--engine", "scripted", "--scripted-rules", str(rules), "--latency-ms", str(latency_ms)]
    return start_service(services, "model", name=name, env=clean_env(), extra_args=args, **kwargs)


def gated_model(
    services: LocalServices, rules: Path, latency_ms: int
) -> tuple[ServiceProcess, RoundRobinProxy]:
    """A scripted model and a gate in front of it (not started): the agents call the gate, and a
    test holds model calls there (:meth:`RoundRobinProxy.hold`) to catch matches mid-play."""
    port = free_port()
    model = scripted_model(services, rules, latency_ms, port=port)
    return model, RoundRobinProxy([(LOOPBACK, port)])


__all__ = [
    "POLL_S",
    "WAIT_S",
    "CampaignProbe",
    "StateUnavailable",
    "campaign_spec",
    "finished",
    "gated_model",
    "scripted_model",
    "service_logs",
    "start_service",
    "wait_all_ready",
    "wait_for_campaign",
    "wait_for_campaign_async",
]
