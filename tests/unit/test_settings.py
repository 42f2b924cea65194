"""ARENA_* settings: model ids, environment parsing, errors and model resolution."""

from __future__ import annotations

import os

import pytest

from arena_core.errors import ConfigError
from arena_core.settings import (
    DEFAULT_PHRASE,
    EMBEDDED_MODEL_BASE_URL,
    EMBEDDED_MODEL_ID,
    ArenaSettings,
    ModelConfig,
    Side,
    load_settings,
    normalise_model_id,
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A monkeypatch over an environment with no ARENA_* variable left from the shell."""
    for name in list(os.environ):
        if name.startswith("ARENA_"):
            monkeypatch.delenv(name)
    return monkeypatch


def _load(env: pytest.MonkeyPatch, variables: dict[str, str]) -> ArenaSettings:
    for name, value in variables.items():
        env.setenv(name, value)
    return load_settings()


# --- normalise_model_id -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("gemini:gemini-2.5-flash", "gemini:gemini-2.5-flash"),
        ("openai/gpt-4o-mini", "openai:gpt-4o-mini"),
        ("Gemini:gemini-2.5-flash", "gemini:gemini-2.5-flash"),
        ("OPENAI/gpt-4o-mini", "openai:gpt-4o-mini"),
        ("openai:GPT-4o", "openai:GPT-4o"),
        ("  mistral:mistral-small  ", "mistral:mistral-small"),
        ("huggingface:org/model-name", "huggingface:org/model-name"),
        ("ollama:llama3.2:1b", "ollama:llama3.2:1b"),
        ("openrouter/meta-llama/llama-3.1-8b-instruct", "openrouter:meta-llama/llama-3.1-8b-instruct"),
        (EMBEDDED_MODEL_ID, EMBEDDED_MODEL_ID),
    ],
)
def test_normalise_model_id(given: str, expected: str) -> None:
    assert normalise_model_id(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("ollama/llama3.2:1b", "ollama:llama3.2:1b"),
        (
            "OpenRouter/meta-llama/llama-3.1-8b-instruct:free",
            "openrouter:meta-llama/llama-3.1-8b-instruct:free",
        ),
    ],
)
def test_normalise_slash_form_with_a_colon_in_the_model_name(given: str, expected: str) -> None:
    assert normalise_model_id(given) == expected


@pytest.mark.parametrize(
    "given",
    ["gpt-4o", "", "   ", ":gpt-4o", "openai:", "/gpt-4o", "openai/", ":"],
)
def test_normalise_rejects_ids_without_provider_and_model(given: str) -> None:
    with pytest.raises(ValueError, match="must look like 'provider:model'"):
        normalise_model_id(given)


# --- load_settings: environment -----------------------------------------------------------------


def test_defaults_from_an_empty_environment(env: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.model is None
    assert settings.redis_url is None
    assert settings.defender_phrase == DEFAULT_PHRASE
    assert settings.model_timeout_s == 120.0
    assert settings.model_max_retries == 3
    assert settings.card_v03_compat == "auto"
    assert settings.defender_turn_mode == "complete"
    assert settings.model_engine == "llama"
    assert settings.log_level == "info"


def test_reads_arena_variables(env: pytest.MonkeyPatch) -> None:
    settings = _load(
        env,
        {
            "ARENA_MODEL": "OpenAI/gpt-4o-mini",
            "ARENA_MODEL_TIMEOUT_S": "30.5",
            "ARENA_MODEL_MAX_RETRIES": "0",
            "ARENA_CARD_V03_COMPAT": "true",
            "ARENA_DEFENDER_PHRASE": "refund approved",
            "ARENA_HISTORY_MAX_MESSAGES": "2",
            "ARENA_MODEL_ENGINE": "scripted",
            "ARENA_MODEL_SCRIPTED_MODE": "obey",
            "ARENA_MODEL_THREADS": "4",
            "ARENA_MODEL_MAX_TOKENS": "96",
            "ARENA_LOG_LEVEL": "debug",
            "ARENA_REDIS_URL": "redis://localhost:6379/0",
        },
    )
    assert settings.model == "openai:gpt-4o-mini"
    assert settings.model_timeout_s == 30.5
    assert settings.model_max_retries == 0
    assert settings.card_v03_compat == "true"
    assert settings.defender_phrase == "refund approved"
    assert settings.history_max_messages == 2
    assert settings.model_engine == "scripted"
    assert settings.model_scripted_mode == "obey"
    assert settings.model_threads == 4
    assert settings.model_max_tokens == 96
    assert settings.log_level == "debug"
    assert settings.redis_url == "redis://localhost:6379/0"


def test_variables_without_the_prefix_are_ignored(env: pytest.MonkeyPatch) -> None:
    env.setenv("MODEL", "openai:gpt-4o")
    env.setenv("LOG_LEVEL", "nonsense")
    settings = load_settings()
    assert settings.model is None
    assert settings.log_level == "info"


def test_keyword_overrides_win_over_the_environment(env: pytest.MonkeyPatch) -> None:
    env.setenv("ARENA_MODEL_MAX_RETRIES", "5")
    env.setenv("ARENA_DEFENDER_PHRASE", "from env")
    settings = load_settings(model_max_retries=1)
    assert settings.model_max_retries == 1
    assert settings.defender_phrase == "from env"


def test_settings_are_frozen(env: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.model = "openai:gpt-4o"


@pytest.mark.parametrize(
    "variable",
    [
        "ARENA_MODEL",
        "ARENA_MODEL_BASE_URL",
        "ARENA_DEFENDER_MODEL",
        "ARENA_DEFENDER_MODEL_BASE_URL",
        "ARENA_ATTACKER_MODEL",
        "ARENA_ATTACKER_MODEL_BASE_URL",
        "ARENA_DEFENDER_URL",
        "ARENA_ATTACKER_URL",
        "ARENA_PUBLIC_URL",
        "ARENA_REDIS_URL",
        "ARENA_DEFENDER_SYSTEM_PROMPT",
        "ARENA_MODEL_GGUF",
    ],
)
@pytest.mark.parametrize("empty", ["", "   "])
def test_empty_optional_text_is_unset(env: pytest.MonkeyPatch, variable: str, empty: str) -> None:
    settings = _load(env, {variable: empty})
    field = variable.removeprefix("ARENA_").lower()
    assert getattr(settings, field) is None


@pytest.mark.parametrize(
    ("variable", "field", "default"),
    [
        ("ARENA_MODEL_THREADS", "model_threads", None),
        ("ARENA_DEFENDER_PHRASE", "defender_phrase", DEFAULT_PHRASE),
        ("ARENA_MODEL_TIMEOUT_S", "model_timeout_s", 120.0),
        ("ARENA_CARD_V03_COMPAT", "card_v03_compat", "auto"),
        ("ARENA_LOG_LEVEL", "log_level", "info"),
    ],
)
def test_empty_non_text_variable_is_unset(
    env: pytest.MonkeyPatch, variable: str, field: str, default: object
) -> None:
    settings = _load(env, {variable: ""})
    assert getattr(settings, field) == default


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ARENA_MODEL", "gpt-4o"),
        ("ARENA_DEFENDER_MODEL", ":missing-provider"),
        ("ARENA_ATTACKER_MODEL", "openai/"),
        ("ARENA_MODEL_TIMEOUT_S", "abc"),
        ("ARENA_CARD_V03_COMPAT", "sometimes"),
        ("ARENA_DEFENDER_TURN_MODE", "parked"),
        ("ARENA_CARD_MAX_AGE_S", "-1"),
        ("ARENA_MODEL_TIMEOUT_S", "0"),
        ("ARENA_MODEL_TIMEOUT_S", "3601"),
        ("ARENA_MODEL_MAX_RETRIES", "11"),
        ("ARENA_MODEL_MAX_RETRIES", "-1"),
        ("ARENA_CARD_V03_COMPAT", "maybe"),
        ("ARENA_DEFENDER_TEMPERATURE", "2.5"),
        ("ARENA_HISTORY_MAX_MESSAGES", "1"),
        ("ARENA_HISTORY_MAX_BYTES", "999"),
        ("ARENA_MAX_CONVERSATIONS", "0"),
        ("ARENA_DEFENDER_PHRASE", "x" * 201),
        ("ARENA_MODEL_ENGINE", "gpt"),
        ("ARENA_MODEL_SCRIPTED_MODE", "shout"),
        ("ARENA_MODEL_N_CTX", "255"),
        ("ARENA_MODEL_MAX_TOKENS", "15"),
        ("ARENA_MODEL_MAX_TOKENS", "8193"),
        ("ARENA_LOG_LEVEL", "verbose"),
    ],
)
def test_invalid_value_is_a_config_error_naming_the_variable(
    env: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    env.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"{variable}:" in str(caught.value)
    assert caught.value.kind == "config_error"


def test_every_invalid_variable_is_named(env: pytest.MonkeyPatch) -> None:
    env.setenv("ARENA_MODEL", "bad")
    env.setenv("ARENA_MODEL_TIMEOUT_S", "abc")
    env.setenv("ARENA_LOG_LEVEL", "loud")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith("invalid settings: ")
    for variable in ("ARENA_MODEL:", "ARENA_MODEL_TIMEOUT_S:", "ARENA_LOG_LEVEL:"):
        assert variable in message


def test_invalid_override_is_named_like_its_variable(env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="ARENA_MAX_TURNS_LIMIT:"):
        load_settings(max_turns_limit=0)


# --- model_for ----------------------------------------------------------------------------------

HOSTED = "gemini:gemini-2.5-flash"
OTHER_HOSTED = "openai:gpt-4o-mini"
SHARED_URL = "http://shared.example/v1"
DEFENDER_URL = "http://defender-model.example/v1"
ATTACKER_URL = "http://attacker-model.example/v1"


@pytest.mark.parametrize(
    ("variables", "side", "model_id", "base_url"),
    [
        pytest.param({}, "defender", EMBEDDED_MODEL_ID, EMBEDDED_MODEL_BASE_URL, id="embedded-default"),
        pytest.param({}, "attacker", EMBEDDED_MODEL_ID, EMBEDDED_MODEL_BASE_URL, id="embedded-default-a"),
        pytest.param(
            {"ARENA_MODEL_BASE_URL": SHARED_URL},
            "attacker",
            EMBEDDED_MODEL_ID,
            SHARED_URL,
            id="embedded-at-shared-url",
        ),
        pytest.param(
            {"ARENA_MODEL_BASE_URL": SHARED_URL, "ARENA_DEFENDER_MODEL_BASE_URL": DEFENDER_URL},
            "defender",
            EMBEDDED_MODEL_ID,
            DEFENDER_URL,
            id="embedded-at-own-url",
        ),
        pytest.param({"ARENA_MODEL": HOSTED}, "defender", HOSTED, None, id="shared-model-provider-url"),
        pytest.param(
            {"ARENA_EMBEDDED_MODEL_URL": SHARED_URL},
            "defender",
            EMBEDDED_MODEL_ID,
            SHARED_URL,
            id="embedded-server-url",
        ),
        pytest.param(
            {"ARENA_EMBEDDED_MODEL_URL": SHARED_URL, "ARENA_MODEL_BASE_URL": DEFENDER_URL},
            "attacker",
            EMBEDDED_MODEL_ID,
            DEFENDER_URL,
            id="base-url-wins-over-embedded-server-url",
        ),
        pytest.param(
            {"ARENA_MODEL": HOSTED, "ARENA_EMBEDDED_MODEL_URL": SHARED_URL},
            "attacker",
            HOSTED,
            None,
            id="hosted-model-ignores-embedded-server-url",
        ),
        pytest.param(
            {"ARENA_ATTACKER_MODEL": EMBEDDED_MODEL_ID, "ARENA_EMBEDDED_MODEL_URL": SHARED_URL},
            "attacker",
            EMBEDDED_MODEL_ID,
            SHARED_URL,
            id="embedded-named-explicitly",
        ),
        pytest.param(
            {"ARENA_MODEL": HOSTED, "ARENA_MODEL_BASE_URL": SHARED_URL},
            "attacker",
            HOSTED,
            SHARED_URL,
            id="shared-model-and-url",
        ),
        pytest.param(
            {
                "ARENA_MODEL": HOSTED,
                "ARENA_MODEL_BASE_URL": SHARED_URL,
                "ARENA_ATTACKER_MODEL_BASE_URL": ATTACKER_URL,
            },
            "attacker",
            HOSTED,
            ATTACKER_URL,
            id="shared-model-own-url",
        ),
        pytest.param(
            {"ARENA_MODEL": HOSTED, "ARENA_DEFENDER_MODEL_BASE_URL": DEFENDER_URL},
            "attacker",
            HOSTED,
            None,
            id="other-sides-url-not-used",
        ),
        pytest.param(
            {"ARENA_MODEL": HOSTED, "ARENA_DEFENDER_MODEL": OTHER_HOSTED},
            "defender",
            OTHER_HOSTED,
            None,
            id="own-model-wins",
        ),
        pytest.param(
            {"ARENA_MODEL": HOSTED, "ARENA_DEFENDER_MODEL": OTHER_HOSTED},
            "attacker",
            HOSTED,
            None,
            id="other-side-keeps-shared",
        ),
        pytest.param(
            {"ARENA_DEFENDER_MODEL": OTHER_HOSTED, "ARENA_DEFENDER_MODEL_BASE_URL": DEFENDER_URL},
            "defender",
            OTHER_HOSTED,
            DEFENDER_URL,
            id="own-model-and-url",
        ),
        pytest.param(
            {"ARENA_DEFENDER_MODEL": OTHER_HOSTED, "ARENA_MODEL_BASE_URL": SHARED_URL},
            "defender",
            OTHER_HOSTED,
            None,
            id="own-model-never-inherits-shared-url",
        ),
        pytest.param(
            {"ARENA_DEFENDER_MODEL": OTHER_HOSTED, "ARENA_MODEL_BASE_URL": SHARED_URL},
            "attacker",
            EMBEDDED_MODEL_ID,
            SHARED_URL,
            id="other-side-embedded-at-shared-url",
        ),
        pytest.param(
            {"ARENA_MODEL": HOSTED, "ARENA_MODEL_BASE_URL": SHARED_URL, "ARENA_ATTACKER_MODEL": OTHER_HOSTED},
            "attacker",
            OTHER_HOSTED,
            None,
            id="own-model-never-inherits-shared-model-url",
        ),
    ],
)
def test_model_for(
    env: pytest.MonkeyPatch,
    variables: dict[str, str],
    side: Side,
    model_id: str,
    base_url: str | None,
) -> None:
    settings = _load(env, {"ARENA_MODEL_TIMEOUT_S": "12.5", "ARENA_MODEL_MAX_RETRIES": "2", **variables})
    assert settings.model_for(side) == ModelConfig(
        model_id=model_id,
        base_url=base_url,
        timeout_s=12.5,
        max_retries=2,
        embedded=model_id == EMBEDDED_MODEL_ID,
    )
    assert settings.hosted_model_configured(side) is (model_id != EMBEDDED_MODEL_ID)


def test_model_for_normalises_the_side_model(env: pytest.MonkeyPatch) -> None:
    settings = _load(env, {"ARENA_ATTACKER_MODEL": "OpenAI/gpt-4o-mini"})
    assert settings.model_for("attacker").model_id == "openai:gpt-4o-mini"
    assert settings.hosted_model_configured("attacker")
    assert not settings.hosted_model_configured("defender")


def test_naming_the_embedded_model_resolves_like_the_default(env: pytest.MonkeyPatch) -> None:
    named = _load(env, {"ARENA_MODEL": EMBEDDED_MODEL_ID})
    env.delenv("ARENA_MODEL")
    assert named.model_for("defender") == load_settings().model_for("defender")


def test_target_tokens_are_collected_from_their_variables_and_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ARENA_TARGET_TOKEN_BILLING", "s3cret-value")
    monkeypatch.setenv("ARENA_TARGET_TOKEN_EMPTY", "  ")
    monkeypatch.setenv("GEMINI_API_KEY", "not-a-target-token")
    settings = load_settings()
    assert set(settings.target_tokens) == {"ARENA_TARGET_TOKEN_BILLING"}
    assert settings.target_tokens["ARENA_TARGET_TOKEN_BILLING"].get_secret_value() == "s3cret-value"
    assert "s3cret-value" not in repr(settings)
    assert "s3cret-value" not in settings.model_dump_json()


def test_the_core_list_of_strategy_names_matches_the_attacker_registry() -> None:
    from arena_attacker.strategies import STRATEGY_NAMES
    from arena_core.strategy_names import BUILTIN_STRATEGY_NAMES

    assert BUILTIN_STRATEGY_NAMES == STRATEGY_NAMES


def test_parked_tasks_leave_memory_soon_with_redis_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARENA_TASK_IDLE_TIMEOUT_S", raising=False)
    monkeypatch.delenv("ARENA_REDIS_URL", raising=False)
    assert load_settings().parked_task_release_s() == 600.0
    monkeypatch.setenv("ARENA_REDIS_URL", "redis://127.0.0.1:6379/0")
    assert load_settings().parked_task_release_s() == 2.0
    monkeypatch.setenv("ARENA_TASK_IDLE_TIMEOUT_S", "30")
    assert load_settings().parked_task_release_s() == 30.0
    monkeypatch.setenv("ARENA_TASK_IDLE_TIMEOUT_S", "")
    assert load_settings().parked_task_release_s() == 2.0
