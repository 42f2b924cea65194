"""``docker compose up`` for real: every image built, the stack run in a container engine.

What users type first, run as they would run it: the ``docker-compose`` binary, talking to
podman's Docker-compatible API, builds every service image from its Dockerfile and starts
the real deploy/compose.yaml. Then:

1. the embedded model's image serves the real SmolLM2 GGUF (llama.cpp) as the Compose file
   runs it: read-only root, non-root, a chat completion answered;
2. the stack comes up: every healthcheck passes (the commands in the images);
3. the example campaign (deploy/campaign.yaml) runs through the orchestrator's published port
   with the CLI on this machine, and every match is recorded;
4. every match's trace reached the OTLP receiver with spans of all four arena services (of
   three for a match the attacker refused to play: it never reached the defender);
5. every arena container runs as uid 10001 with the read-only root file system the Compose file
   asks for (a write to its root fails, /tmp is writable);
6. ``down --volumes`` leaves no container, volume or network of the project.

The override file holds only what this machine needs (tests/support/container_engine.py says
why each stand-in exists): the base images as build arguments (local stand-ins built from
Debian's packages), Redis from Debian's redis-server, the project's OTLP receiver in place of
Jaeger (no Jaeger image can be had here; it runs in the orchestrator's image, which holds the
OTLP protobuf and gRPC packages), the network's subnet (198.18.0.0/15, never a private range),
published ports on free ports of this machine (8080 may be taken), and image names of the run's
own (a test must not replace the a2a-arena/*:0.1.0 images of a real build on the machine).
The stack otherwise runs with what a user would put in deploy/.env for a quick deterministic
run: the scripted model (the real one is proven in step 1; on two cores it would take an hour
for the campaign).

Root only (rootful podman, debootstrap); skipped with the reason elsewhere. A new machine
builds everything (llama.cpp compiles in the model image: about 15 minutes on two cores).
Later runs on the same machine reuse the stand-ins and the wheels in uv's cache mount (podman's
Docker API builds without a layer cache) and take about 5 minutes. The test removes the stack and
the images it built, also when it fails; the untagged build stages stay in podman's storage, as
after any build (``podman image prune`` reclaims them).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from arena.local_services import free_port
from support.container_engine import (
    BUILD_TIMEOUT_S,
    ContainerEngine,
    HealthcheckDriver,
    StandinImages,
    container_engine_unavailable,
)
from support.env_example import REPO

pytestmark = [pytest.mark.system, pytest.mark.timeout(3600)]

COMPOSE_FILE = REPO / "deploy" / "compose.yaml"
CAMPAIGN_FILE = REPO / "deploy" / "campaign.yaml"
VENV_BIN = Path(sys.executable).parent
ARENA_SERVICES = ("model", "defender", "defender-naive", "attacker", "orchestrator")
SERVICES_TRACED = {"arena-orchestrator", "arena-attacker", "arena-defender", "arena-model"}
# What a user would set in deploy/.env for a quick, deterministic run: the scripted model.
USER_SETTINGS = {
    "ARENA_MODEL_ENGINE": "scripted",
    "ARENA_MODEL_SCRIPTED_MODE": "obey",
}
SERVICE_UID = "10001"
UP_TIMEOUT_S = 600


def _uv_version() -> str:
    text = (REPO / "services" / "defender" / "Dockerfile").read_text(encoding="utf-8")
    match = re.search(r"^ARG UV_IMAGE=\S+:(\d+\.\d+\.\d+)\s*$", text, re.MULTILINE)
    assert match, "services/defender/Dockerfile: no ARG UV_IMAGE=...:<version>"
    return match.group(1)


def _override(
    images: StandinImages, built: dict[str, str], subnet: str, ports: dict[str, int]
) -> dict[str, Any]:
    """The only changes to compose.yaml (the module's docstring says why each is needed)."""
    bases = {"args": {"PYTHON_IMAGE": images.python, "UV_IMAGE": images.uv}}
    return {
        "services": {
            "redis": {"image": images.redis, "pull_policy": "never"},
            "jaeger": {
                "image": built["orchestrator"],
                "pull_policy": "never",
                "entrypoint": ["python", "/opt/otlp_receiver.py"],
                "command": ["--host", "0.0.0.0", "--http-port", "4318", "--grpc-port", "4317"],
                "volumes": [f"{REPO / 'tests' / 'support' / 'otlp_receiver.py'}:/opt/otlp_receiver.py:ro"],
                "ports": [f"127.0.0.1:{ports['otlp']}:4318"],
                # Its own check, not the orchestrator image's HEALTHCHECK (port 8080).
                "healthcheck": {
                    "test": ["CMD", "python", "-m", "arena_core.healthcheck", "http://127.0.0.1:4318/healthz"]
                },
            },
            **{name: {"build": bases, "image": built[name]} for name in ARENA_SERVICES},
            "orchestrator": {
                "build": bases,
                "image": built["orchestrator"],
                "ports": [f"127.0.0.1:{ports['orchestrator']}:8080"],
            },
        },
        "networks": {"default": {"ipam": {"config": [{"subnet": subnet}]}}},
    }


def _override_text(override: dict[str, Any]) -> str:
    """YAML with ``!override`` on the lists that replace the Compose file's (ports, volumes, command)."""
    text = yaml.safe_dump(override, sort_keys=False, default_flow_style=None, width=1000)
    return re.sub(r"^(\s+)(command|volumes|ports):", r"\1\2: !override", text, flags=re.MULTILINE)


class Stack:
    """docker-compose for one project of this run's, with the override."""

    def __init__(self, engine: ContainerEngine, workdir: Path, images: StandinImages) -> None:
        self.engine = engine
        self.images = images
        self.project = f"arena-engine-{secrets.token_hex(3)}"
        # Images of this run's own, never the a2a-arena/*:0.1.0 of a real build on this machine
        # (the two defender services share one, as in compose.yaml).
        self.built = {
            name: f"localhost/{self.project}/{name.removesuffix('-naive')}:test" for name in ARENA_SERVICES
        }
        self.subnet = f"198.19.{secrets.randbelow(200) + 20}.0/24"
        self.ports: dict[str, int] = {}
        self.override = workdir / "compose.override.yaml"
        self.write_override()
        self.env_file = workdir / "compose.env"
        self.env_file.write_text("".join(f"{key}={value}\n" for key, value in USER_SETTINGS.items()))

    def write_override(self) -> None:
        """(Again) with ports that are free now: call it right before ``up``."""
        self.ports = {"orchestrator": free_port(), "otlp": free_port()}
        override = _override(self.images, self.built, self.subnet, self.ports)
        self.override.write_text(_override_text(override), encoding="utf-8")

    def remove(self) -> None:
        """Whatever is left of the project and its images; never raises (it runs in cleanup)."""
        self.engine.remove_project(self.project)
        self.engine.podman_status("rmi", "--force", *sorted(set(self.built.values())), timeout=300)

    def compose(
        self, *args: str, timeout: float = 600, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [
            str(self.engine.tools_bin / "docker-compose"),
            "--project-name",
            self.project,
            "--project-directory",
            str(COMPOSE_FILE.parent),
            "-f",
            str(COMPOSE_FILE),
            "-f",
            str(self.override),
            "--env-file",
            str(self.env_file),
            *args,
        ]
        done = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=timeout, env=self.engine.env
        )
        if check:
            assert done.returncode == 0, (
                f"docker-compose {' '.join(args)} failed ({done.returncode}):\n"
                f"{done.stdout[-4000:]}\n{done.stderr[-6000:]}\n{self.logs()}"
            )
        return done

    def logs(self) -> str:
        try:
            done = self.compose("logs", "--no-color", "--tail", "40", timeout=120, check=False)
        except subprocess.TimeoutExpired:
            return "(docker-compose logs timed out)"
        return done.stdout[-12000:]

    def containers(self) -> dict[str, list[dict[str, Any]]]:
        """The project's containers by Compose service, from ``podman inspect``."""
        ids = self.engine.podman(
            "ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}", "--format", "{{.ID}}"
        ).split()
        by_service: dict[str, list[dict[str, Any]]] = {}
        if ids:
            for container in json.loads(self.engine.podman("inspect", *ids)):
                service = container["Config"]["Labels"]["com.docker.compose.service"]
                by_service.setdefault(service, []).append(container)
        return by_service


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, tools_bin: Path) -> Iterator[ContainerEngine]:
    reason = container_engine_unavailable()
    if reason is not None:
        pytest.skip(f"a container engine cannot run here: {reason}")
    engine = ContainerEngine(tmp_path_factory.mktemp("engine"), tools_bin)
    with engine.docker_api():
        yield engine


def _check_the_real_model(engine: ContainerEngine, image: str) -> None:
    """The model image as Compose runs it, but with its defaults: llama.cpp on the baked-in GGUF."""
    port = free_port()
    name = f"arena-engine-model-{secrets.token_hex(3)}"
    try:
        engine.podman(
            "run", "--detach", "--rm", "--name", name, "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", "--init", "--publish", f"127.0.0.1:{port}:8090",
            image, "--host", "0.0.0.0", "--port", "8090",
            what="podman run (the model image)",
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        ready = None
        while time.monotonic() < deadline:
            try:
                ready = httpx.get(f"{base}/readyz", timeout=5)
                if ready.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        assert ready is not None and ready.status_code == 200, engine.podman("logs", name)
        answer = httpx.post(
            f"{base}/v1/chat/completions",
            json={"model": "any", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8},
            timeout=120,
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["model"] != "scripted", body
        assert body["choices"][0]["message"]["content"].strip(), body
        user = engine.podman("exec", name, "python", "-c", "import os; print(os.getuid())").strip()
        assert user == SERVICE_UID
        # The image's own HEALTHCHECK (what `docker run` uses; Compose gives its own).
        engine.podman("healthcheck", "run", name, what="the model image's HEALTHCHECK")
    finally:
        engine.podman_status("rm", "--force", name)


def _check_containers(stack: Stack) -> None:
    """Every arena container: non-root, read-only root file system, writable /tmp."""
    containers = stack.containers()
    assert len(containers["defender"]) == 2, "deploy.replicas: 2"
    probe = (
        "import os, tempfile\n"
        "try:\n    open('/app/probe', 'w')\nexcept OSError as exc:\n    print('root', exc.errno)\n"
        "with tempfile.NamedTemporaryFile(dir='/tmp'):\n    print('tmp ok')\n"
        "print('uid', os.getuid(), os.getgid())\n"
    )
    for service in ARENA_SERVICES:
        for container in containers[service]:
            name = container["Name"]
            assert container["State"]["Running"], f"{name}: {container['State']}"
            assert container["HostConfig"]["ReadonlyRootfs"] is True, f"{name}: read_only: true"
            assert container["State"]["Health"]["Status"] == "healthy", (
                f"{name}: {container['State']['Health']}"
            )
            out = stack.engine.podman("exec", name, "python", "-c", probe).split("\n")
            assert "root 30" in out, f"{name}: a write to the root file system did not fail with EROFS: {out}"
            assert "tmp ok" in out and f"uid {SERVICE_UID} {SERVICE_UID}" in out, f"{name}: {out}"
            # Every process of the container (the init and the service) runs as the service user.
            top = stack.engine.podman("top", name, "user", "args").splitlines()[1:]
            assert top and all(line.split()[0] in {SERVICE_UID, "arena"} for line in top), f"{name}: {top}"


def _run_the_example_campaign(stack: Stack, orchestrator: str, out: Path, workdir: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            str(VENV_BIN / "arena"),
            "campaign",
            "run",
            str(CAMPAIGN_FILE.relative_to(REPO)),
            "--orchestrator",
            orchestrator,
            "--wait",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        cwd=REPO,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}\n{stack.logs()}"
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def _wait_for_traces(otlp: str, expected: dict[str, set[str]]) -> None:
    """Until each trace holds spans of the services expected of it (trace id -> services)."""
    deadline = time.monotonic() + 90
    missing: dict[str, set[str]] = {}
    while time.monotonic() < deadline:
        missing = {}
        for trace_id, services in expected.items():
            answer = httpx.get(f"{otlp}/api/traces/{trace_id}", timeout=10)
            seen: set[str] = set()
            if answer.status_code == 200:
                for trace in answer.json()["data"]:
                    seen |= {process["serviceName"] for process in trace["processes"].values()}
            if not seen >= services:
                missing[trace_id] = services - seen
        if not missing:
            return
        time.sleep(2)
    pytest.fail(f"traces without spans of every service (trace id: services missing): {missing}")


def test_compose_up_builds_and_runs_the_stack(engine: ContainerEngine, tmp_path: Path) -> None:
    stack = Stack(engine, tmp_path, engine.standin_images(_uv_version()))
    try:
        stack.compose("build", timeout=BUILD_TIMEOUT_S)
        _check_the_real_model(engine, stack.built["model"])

        stack.write_override()  # the build may have taken long: ports free now
        with HealthcheckDriver(engine, stack.project) as healthchecks:
            # depends_on waits for each dependency's healthcheck; --wait for every service's.
            stack.compose(
                "up", "--detach", "--wait", "--wait-timeout", str(UP_TIMEOUT_S), timeout=UP_TIMEOUT_S + 60
            )
            _check_containers(stack)

            report = _run_the_example_campaign(
                stack, f"http://127.0.0.1:{stack.ports['orchestrator']}", tmp_path / "reports", tmp_path
            )
            spec = yaml.safe_load(CAMPAIGN_FILE.read_text())
            expected = (
                len(spec["attackers"])
                * len(spec["defenders"])
                * len(spec["objectives"])
                * spec["repetitions"]
            )
            matches = report["matches"]
            assert report["progress"]["status"] == "completed", report["progress"]
            assert len(matches) == expected
            assert sorted(match["index"] for match in matches) == list(range(expected))
            outcomes = [(match["outcome"], match.get("error_kind"), match.get("error")) for match in matches]
            # Every match played to a verdict (the scripted attacker model refuses crescendo's asks).
            assert all(match["outcome"] != "error" for match in matches), outcomes
            assert {"attacker_won", "defended"} <= {match["outcome"] for match in matches}, outcomes
            # A match that sent the defender a message has spans of all four services; one the
            # attacker refused to play never reached the defender (the attacker knows its card
            # from an earlier match: cards are cached as their Cache-Control allows).
            expected_spans = {
                match["trace_id"]: SERVICES_TRACED
                if match["turns_used"]
                else SERVICES_TRACED - {"arena-defender"}
                for match in matches
            }
            assert any(match["turns_used"] for match in matches), outcomes
            _wait_for_traces(f"http://127.0.0.1:{stack.ports['otlp']}", expected_spans)
        assert not healthchecks.errors, healthchecks.errors

        stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "30", timeout=300)
        left = engine.project_objects(stack.project)
        assert left == {"container": [], "volume": [], "network": []}, f"left after down --volumes: {left}"
    finally:
        stack.remove()
