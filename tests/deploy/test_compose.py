"""deploy/compose.yaml: valid for Docker Compose v2, and every setting wired into every service.

``docker compose config`` needs no engine: it parses, interpolates and validates the file
against the Compose specification. The settings check feeds every variable of
deploy/.env.example through an env file, as a user's deploy/.env would, and reads each
service's resolved environment back. The Authentication secrets (``ARENA_API_TOKENS`` and
the other ``SecretStr`` settings) are the exception: from the shell or deploy/.env they reach
exactly the services that check or send them, never the model, Redis or Jaeger.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from arena_orchestrator.spec_loader import load_campaign_spec
from support.env_example import REPO, example_settings, secret_settings

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
    "ARENA_TRACE_QUERY_URL": "http://jaeger:16686",
    "ARENA_TARGET_CREDENTIAL_ORIGINS": "ARENA=http://defender:8081 http://defender-naive:8081",
}
API_KEYS = ("GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
# The Authentication secrets: which services get each one (x-arena-auth and per service).
AUTH_SERVICES = ("defender", "defender-naive", "attacker", "orchestrator")
SECRET_WIRING = {
    "ARENA_API_TOKENS": set(AUTH_SERVICES),
    "ARENA_API_READ_TOKENS": set(AUTH_SERVICES),
    "ARENA_ATTACKER_TOKEN": {"orchestrator"},
    "ARENA_ORCHESTRATOR_TOKEN": set(),  # the CLI's, on the user's machine
}
# The attacker's token for the stack's own defenders (deploy/campaign.yaml names it when auth is on).
STACK_TARGET_TOKEN = "ARENA_TARGET_TOKEN_ARENA"


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
        # podman 4.3's Docker API joins the arguments and splits them on spaces again.
        assert not any(" " in arg for arg in service["healthcheck"]["test"]), name
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


def test_the_secret_settings_are_the_authentication_tokens() -> None:
    """The wiring table below covers every secret setting, each documented with an empty default."""
    assert set(SECRET_WIRING) == secret_settings()
    example = example_settings()
    for key in SECRET_WIRING:
        assert example.get(key) == "", f"{key}: documented in .env.example, empty (auth off)"


def _secrets_of(environment: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value for key, value in environment.items() if key in SECRET_WIRING or key == STACK_TARGET_TOKEN
    }


def test_every_setting_reaches_every_service(tools_bin: Path, tmp_path: Path) -> None:
    settings = example_settings()
    sentinels = {name: f"sentinel-{name.lower()}" for name in settings}
    services = resolved(tools_bin, tmp_path, "compose.yaml", env_file=sentinels)
    for name in ARENA_SERVICES:
        environment = services[name]["environment"]
        for key, sentinel in sentinels.items():
            if key == "ARENA_PUBLIC_URL" or (name == "defender-naive" and key == "ARENA_DEFENDER_PROFILE"):
                continue
            if key in SECRET_WIRING:  # deploy/.env works for them too, but only where needed
                expected = sentinel if name in SECRET_WIRING[key] else None
                assert environment.get(key) == expected, (name, key, environment.get(key))
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
                if key in SECRET_WIRING:
                    assert environment.get(key) == ("" if name in SECRET_WIRING[key] else None), (name, key)
                    continue
                assert environment[key] == TOPOLOGY_DEFAULTS.get(key, default), (name, key)
            assert environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4318"
            # Authentication is off by default: every token is empty.
            assert all(value == "" for value in _secrets_of(environment).values()), name


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


def _secret_holders(services: dict[str, Any], value: str) -> dict[str, set[str]]:
    """Service -> the variables whose value holds ``value`` (anywhere in its resolved config)."""
    holders: dict[str, set[str]] = {}
    for name, service in services.items():
        environment = service.get("environment") or {}
        keys = {key for key, item in environment.items() if item is not None and value in str(item)}
        # Not smuggled anywhere else either (command, labels, healthcheck ...).
        rest = json.dumps({key: item for key, item in service.items() if key != "environment"})
        assert value not in rest, f"{name} holds the token outside its environment"
        if keys:
            holders[name] = keys
    return holders


@pytest.mark.parametrize("where", ["shell", "env-file"])
@pytest.mark.parametrize(
    "files", [("compose.yaml",), ("compose.yaml", "compose.hosted.yaml")], ids=["embedded", "hosted"]
)
def test_tokens_reach_exactly_the_services_that_need_them(
    tools_bin: Path, tmp_path: Path, where: str, files: tuple[str, ...]
) -> None:
    tokens = {key: f"tok-{key.lower().replace('_', '-')}-sentinel" for key in SECRET_WIRING}
    given: dict[str, Any] = {"shell": tokens} if where == "shell" else {"env_file": tokens}
    services = resolved(tools_bin, tmp_path, *files, **given)
    for key, token in tokens.items():
        expected = {name: {key} for name in SECRET_WIRING[key]}
        if key == "ARENA_API_TOKENS":  # the attacker's token for the stack's own defenders
            expected["attacker"] = {key, STACK_TARGET_TOKEN}
        assert _secret_holders(services, token) == expected, key
    # Never the model (nor Redis, Jaeger): it checks no token and needs none.
    for name in ("model", "redis", "jaeger"):
        if name in services:
            assert not _secrets_of(services[name].get("environment") or {}), name
    assert services["attacker"]["environment"][STACK_TARGET_TOKEN] == tokens["ARENA_API_TOKENS"]


def test_the_stack_target_token_can_be_one_of_several(tools_bin: Path, tmp_path: Path) -> None:
    """While ARENA_API_TOKENS lists several (rotation), ARENA_TARGET_TOKEN_ARENA names the one to send."""
    new, old = "tok-new-0123456789abcdef", "tok-old-0123456789abcdef"
    shell = {"ARENA_API_TOKENS": f"{new},{old}", STACK_TARGET_TOKEN: new}
    services = resolved(tools_bin, tmp_path, "compose.yaml", shell=shell)
    attacker = services["attacker"]["environment"]
    assert attacker[STACK_TARGET_TOKEN] == new
    assert attacker["ARENA_API_TOKENS"] == f"{new},{old}"
    assert _secret_holders(services, new) == {
        **{name: {"ARENA_API_TOKENS"} for name in AUTH_SERVICES},
        "attacker": {"ARENA_API_TOKENS", STACK_TARGET_TOKEN},
    }


def test_the_example_campaign_fits_the_stack_with_auth_off_and_on(tools_bin: Path, tmp_path: Path) -> None:
    path = DEPLOY / "campaign.yaml"
    text = path.read_text(encoding="utf-8")
    spec = load_campaign_spec(text.encode(), source="deploy/campaign.yaml")
    services = resolved(tools_bin, tmp_path, "compose.yaml")
    # As written: auth off, so no defender names a token the attacker would not hold.
    for defender in spec.defenders:
        assert defender.credentials is None, defender.name
        url = urlsplit(str(defender.url))
        assert url.hostname in services, url
        command = services[url.hostname]["command"]
        assert url.port == int(command[command.index("--port") + 1]), url
    # With auth on: the comment says which line to add; the result is a valid spec naming the
    # variable the attacker (only) holds.
    line = f"credentials: {{bearer_token_env: {STACK_TARGET_TOKEN}}}"
    assert f"#     {line}\n" in text
    with_auth = re.sub(r"(?m)^(    url: http://defender[^\n]*\n)", rf"\1    {line}\n", text)
    authed = load_campaign_spec(with_auth.encode(), source="deploy/campaign.yaml (auth on)")
    assert {d.credentials.bearer_token_env for d in authed.defenders if d.credentials} == {STACK_TARGET_TOKEN}
    assert all(d.credentials for d in authed.defenders)
    holders = {
        name for name, service in services.items() if STACK_TARGET_TOKEN in (service.get("environment") or {})
    }
    assert holders == {"attacker"}
