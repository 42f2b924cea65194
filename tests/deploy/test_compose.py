"""deploy/compose.yaml: valid for Docker Compose v2, and every setting wired into every service.

``docker compose config`` needs no engine: it parses, interpolates and validates the file
against the Compose specification. The settings check feeds every variable of
deploy/.env.example through an env file, as a user's deploy/.env would, and reads each
service's resolved environment back.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.env_example import REPO, example_settings

DEPLOY = REPO / "deploy"
ARENA_SERVICES = ("model", "defender", "defender-naive", "attacker", "orchestrator")
# Service -> port of its A2A agent card (ARENA_PUBLIC_URL is per service, not in the shared block).
A2A_SERVICES = {"defender": 8081, "defender-naive": 8081, "attacker": 8082}
# Values compose gives when unset: the addresses of the other services on the compose network.
TOPOLOGY_DEFAULTS = {
    "ARENA_REDIS_URL": "redis://redis:6379/0",
    "ARENA_EMBEDDED_MODEL_URL": "http://model:8090/v1",
    "ARENA_DEFENDER_URL": "http://defender:8081",
    "ARENA_ATTACKER_URL": "http://attacker:8082",
    "ARENA_ORCHESTRATOR_URL": "http://orchestrator:8080",
    "ARENA_JAEGER_URL": "http://localhost:16686",
}
API_KEYS = ("GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def compose(
    tools_bin: Path,
    tmp_path: Path,
    *args: str,
    env_file: dict[str, str] | None = None,
    shell: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "user.env"
    path.write_text("".join(f"{key}={value}\n" for key, value in (env_file or {}).items()))
    return subprocess.run(
        [str(tools_bin / "docker-compose"), "--env-file", str(path), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=DEPLOY,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **(shell or {})},
    )


def resolved(tools_bin: Path, tmp_path: Path, *files: str, **kwargs: Any) -> dict[str, Any]:
    args = [arg for name in files for arg in ("-f", name)]
    done = compose(tools_bin, tmp_path, *args, "config", "--format", "json", **kwargs)
    assert done.returncode == 0, done.stderr
    services: dict[str, Any] = json.loads(done.stdout)["services"]
    return services


def test_compose_config_is_valid(tools_bin: Path) -> None:
    # The acceptance command, verbatim.
    done = subprocess.run(
        [str(tools_bin / "docker-compose"), "-f", "deploy/compose.yaml", "config", "-q"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["-f", "compose.yaml", "-f", "compose.hosted.yaml"],
        ["-f", "compose.yaml", "--profile", "collector"],
    ],
    ids=["hosted", "collector"],
)
def test_the_variants_are_valid(tools_bin: Path, tmp_path: Path, args: list[str]) -> None:
    done = compose(tools_bin, tmp_path, *args, "config", "-q")
    assert done.returncode == 0, done.stderr


def test_the_stack(tools_bin: Path, tmp_path: Path) -> None:
    services = resolved(tools_bin, tmp_path, "compose.yaml")
    assert set(services) == {"redis", "jaeger", *ARENA_SERVICES}
    assert services["defender"]["deploy"]["replicas"] == 2
    redis = services["redis"]
    assert "--appendonly" in redis["command"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    assert any(volume["target"] == "/data" for volume in redis["volumes"])
    jaeger_ports = {port["target"] for port in services["jaeger"]["ports"]}
    assert {4317, 4318, 16686} <= jaeger_ports
    assert {port["target"] for port in services["orchestrator"]["ports"]} == {8080}
    for name in ARENA_SERVICES:
        service = services[name]
        assert service["healthcheck"]["test"][0] == "CMD", name
        assert "/readyz" in " ".join(service["healthcheck"]["test"]), name
        port = service["command"][service["command"].index("--port") + 1]
        assert f"127.0.0.1:{port}/" in " ".join(service["healthcheck"]["test"]), name
        assert service["command"][:2] == ["--host", "0.0.0.0"], name
        assert service["entrypoint"] == [f"arena-{name.removesuffix('-naive')}"], name
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"], name
        dockerfile = REPO / service["build"]["dockerfile"]
        assert dockerfile.is_file(), dockerfile
    # Every dependency waits for health where the dependency has a healthcheck.
    for name, service in services.items():
        for dependency, condition in (service.get("depends_on") or {}).items():
            expected = "service_healthy" if "healthcheck" in services[dependency] else "service_started"
            assert condition["condition"] == expected, (name, dependency)


def test_every_setting_reaches_every_service(tools_bin: Path, tmp_path: Path) -> None:
    settings = example_settings()
    sentinels = {name: f"sentinel-{name.lower()}" for name in settings}
    services = resolved(tools_bin, tmp_path, "compose.yaml", env_file=sentinels)
    for name in ARENA_SERVICES:
        environment = services[name]["environment"]
        for key, sentinel in sentinels.items():
            if key == "ARENA_PUBLIC_URL" or (name == "defender-naive" and key == "ARENA_DEFENDER_PROFILE"):
                continue
            assert environment.get(key) == sentinel, (name, key, environment.get(key))
    for name, port in A2A_SERVICES.items():
        assert services[name]["environment"]["ARENA_PUBLIC_URL"] == f"http://{name}:{port}"
    assert services["defender-naive"]["environment"]["ARENA_DEFENDER_PROFILE"] == "naive"


def test_unset_settings_get_the_documented_defaults(tools_bin: Path, tmp_path: Path) -> None:
    settings = example_settings()
    # A user who copied .env.example to .env gets the same as one who set nothing.
    for env_file in ({}, settings):
        services = resolved(tools_bin, tmp_path, "compose.yaml", env_file=env_file)
        for name in ARENA_SERVICES:
            environment = services[name]["environment"]
            for key, default in settings.items():
                if key == "ARENA_PUBLIC_URL" or (
                    name == "defender-naive" and key == "ARENA_DEFENDER_PROFILE"
                ):
                    continue
                assert environment[key] == TOPOLOGY_DEFAULTS.get(key, default), (name, key)
            assert environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4318"


def test_code_reads_only_documented_settings() -> None:
    documented = set(example_settings())
    used: set[str] = set()
    for folder in ("src", "libs", "services"):
        for path in (REPO / folder).rglob("*.py"):
            # Quoted names (strings, docs): identifiers such as ARENA_ATTEMPT are span attributes.
            used |= set(re.findall(r"(?<=[\"'`])ARENA_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    # ARENA_TARGET_TOKEN_<NAME> is a documented family of variables, not one setting.
    used = {name for name in used if not name.startswith("ARENA_TARGET_TOKEN")}
    assert used <= documented, sorted(used - documented)


def test_hosted_models_take_keys_from_the_shell_only(tools_bin: Path, tmp_path: Path) -> None:
    files = ("compose.yaml", "compose.hosted.yaml")
    services = resolved(tools_bin, tmp_path, *files, shell={"GEMINI_API_KEY": "key-from-shell"})
    assert "model" not in services
    for name in ("defender", "defender-naive", "attacker"):
        environment = services[name]["environment"]
        assert environment["GEMINI_API_KEY"] == "key-from-shell"
        assert environment["ARENA_MODEL_BASE_URL"] == ""
        assert "model" not in services[name].get("depends_on", {})
    assert services["attacker"]["environment"]["ARENA_ATTACKER_MODEL"] == "gemini:gemini-2.5-flash"
    assert services["defender"]["environment"]["ARENA_DEFENDER_MODEL"] == "gemini:gemini-2.0-flash-lite"
    # ARENA_MODEL picks both sides' model when they have none of their own.
    both = resolved(tools_bin, tmp_path, *files, env_file={"ARENA_MODEL": "openai:gpt-4o-mini"})
    for name, side in (("attacker", "ATTACKER"), ("defender", "DEFENDER")):
        assert both[name]["environment"][f"ARENA_{side}_MODEL"] == "openai:gpt-4o-mini"
    unset = resolved(tools_bin, tmp_path, *files)
    assert unset["attacker"]["environment"].get("GEMINI_API_KEY") is None
    for path in DEPLOY.glob("compose*.yaml"):
        text = path.read_text()
        for key in API_KEYS:
            assert not re.search(rf"{key}:[ \t]*\S", text), f"{path.name} sets {key}"
