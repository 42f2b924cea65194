"""What a campaign asks for: attackers x defenders x objectives x repetitions.

A campaign spec is written in YAML or JSON (see ``examples/campaign.yaml``) and
validated here; :mod:`arena_orchestrator.spec_loader` turns the text into a
:class:`CampaignSpec` and reports problems with their line numbers. Everything
that can be checked without asking another service is checked: URLs, names,
ranges, strategy and judge names, judge/objective combinations. Strategy
*parameters* are checked by the attacker that plays the match (the CLI checks
them before submitting, since it ships the built-in attacker).

Every error says where it is without words to parse: a field validator's error is
at its field (pydantic's ``loc``); a model validator that finds a problem in one of
the model's values raises a :class:`~pydantic_core.PydanticCustomError` whose
``ctx[FIELD_PATH]`` is that value's path under the model, such as
``("defenders", 1, "name")``. The loader points at the deepest part of
``loc + ctx[FIELD_PATH]`` that the document holds.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from arena_core.benign_requests import BENIGN_REQUESTS
from arena_core.converters import MAX_CHAIN, ConverterSpec, build_converters, parse_converter
from arena_core.errors import ArenaError, InvalidInputError
from arena_core.judges import get_judge
from arena_core.match_models import ParamValue
from arena_core.objective import DEFAULT_PHRASE, CanarySlot, Objective
from arena_core.objective_catalogue import CATALOGUE, resolve_objectives
from arena_core.planted_secrets import CANARY_ENV_PATTERN
from arena_core.probes.model import Severity
from arena_core.probes.request import ProbeRequest
from arena_core.settings import TARGET_TOKEN_ENV_PATTERN
from arena_core.strategy_names import BUILTIN_STRATEGY_NAMES

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"
"""Names of attackers, defenders and objectives: they appear in reports, JUnit and URLs."""

Name = Annotated[str, Field(pattern=NAME_PATTERN)]

MAX_OBJECTIVES = 500
"""Objectives a campaign may hold (a dataset's rows included)."""

OVER_REFUSAL = "over-refusal"
"""The attacker label of over-refusal probes in cells and reports (reserved: no attacker may use it)."""

PROTOCOL_PROBES = "protocol-probes"
"""The attacker label of protocol-probe runs (``probes:``) in cells and reports (reserved too)."""

PROTOCOL_PROBE_OBJECTIVE = "a2a-surface"
"""The objective label of protocol-probe cells: what they look at is the defender's A2A surface."""

FIELD_PATH = "field_path"
"""The ``ctx`` key of a model validator's error naming the value it is about, under the model."""


def _error_at(path: tuple[str | int, ...], kind: str, template: str, **ctx: object) -> PydanticCustomError:
    """An error about the value at ``path`` under the validated model (see :data:`FIELD_PATH`).

    ``template`` is the message, with ``{name}`` standing for ``ctx["name"]``.
    """
    return PydanticCustomError(kind, template, {**ctx, FIELD_PATH: path})


def _http_url(value: str, what: str) -> str:
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} must be an http(s) URL such as http://127.0.0.1:8081, got '{value}'")
    if parts.username or parts.password:
        raise ValueError(f"{what} must not carry credentials; use credentials.bearer_token_env")
    return text.rstrip("/")


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AttackerSpec(_Spec):
    """One attacker column of the matrix: who plays, with which strategy and parameters."""

    name: Name | None = None
    """Label in reports; defaults to the strategy name."""
    url: str | None = None
    """An attacker agent's URL; omit it (or say ``builtin``) for the built-in attacker."""
    strategy: str = "playbook"
    params: dict[str, ParamValue] = Field(default_factory=dict, max_length=32)
    converters: list[ConverterSpec] = Field(default_factory=list, max_length=MAX_CHAIN)
    """Re-encodings of every message the strategy sends, in order (``{name, params}`` each)."""

    @field_validator("converters", mode="before")
    @classmethod
    def _converter_shorthand(cls, value: object) -> object:
        # "base64" or "noise:sigma=0.3", as on the command line, for {name: ..., params: ...}.
        if not isinstance(value, list):
            return value
        try:
            return [parse_converter(item).model_dump() if isinstance(item, str) else item for item in value]
        except InvalidInputError as exc:
            raise ValueError(exc.message) from None

    @field_validator("converters")
    @classmethod
    def _valid_chain(cls, value: list[ConverterSpec]) -> list[ConverterSpec]:
        try:
            build_converters(value)
        except InvalidInputError as exc:
            raise ValueError(exc.message) from None
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None or value.strip().lower() == "builtin":
            return None
        return _http_url(value, "attacker url")

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        name = value.strip()
        if name not in BUILTIN_STRATEGY_NAMES:
            raise ValueError(
                f"unknown strategy '{value}'; choose one of: {', '.join(BUILTIN_STRATEGY_NAMES)}"
            )
        return name

    @property
    def label(self) -> str:
        """The name shown in reports: the ``name``, else the strategy and its converters
        (``playbook+base64``)."""
        return self.name or "+".join([self.strategy, *(converter.name for converter in self.converters)])

    @property
    def label_field(self) -> str:
        """The field :attr:`label` comes from."""
        return "name" if self.name else ("converters" if self.converters else "strategy")


class TargetCredentials(_Spec):
    """How the attacker authenticates to a defender: by naming a variable, never a secret."""

    bearer_token_env: str = Field(pattern=TARGET_TOKEN_ENV_PATTERN)
    """An ``ARENA_TARGET_TOKEN_<NAME>`` variable set on the attacker; its value is sent as
    ``Authorization: Bearer ...``. Other variables (API keys) can never be named."""


class DefenderSpec(_Spec):
    """One defender row of the matrix: any A2A agent, by its URL."""

    name: Name
    url: str
    credentials: TargetCredentials | None = None
    max_concurrency: int | None = Field(default=None, ge=1, le=10_000)
    """Matches played against this defender at once, across all orchestrator replicas."""
    canaries: dict[CanarySlot, Annotated[str, Field(pattern=CANARY_ENV_PATTERN)]] = Field(
        default_factory=dict
    )
    """For a defender that takes no planted secrets: per slot (instructions, credential,
    customer), the ``ARENA_CANARY_*`` variable of the attacker that holds the secret its
    owner planted in it. Names only: a value never belongs in a campaign file."""

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value, "defender url")


class ObjectiveSpec(_Spec):
    """What the attackers try to make the defender do, and who judges it.

    Either inline (``phrase`` or ``rubric``, optionally ``pattern``) or one objective of the
    built-in catalogue by ``id``, judged by the catalogue's judge unless ``judge`` says
    otherwise. In a campaign's ``objectives`` list a plain string is a catalogue id, a set
    (``owasp-llm-2025``, ``owasp-agentic``, ``give-up``, ``canary``, ``all``) or an OWASP id
    (``LLM07:2025``, ``ASI01``), and stands for every objective it selects.
    """

    name: Name | None = None
    """Label in reports; defaults to the catalogue id, or ``phrase``/``rubric`` plus its position."""
    id: str | None = None
    """A catalogue objective (``arena objectives list``)."""
    ref: str | None = Field(default=None, max_length=100)
    """A string of the campaign's ``objectives`` list: an id, a set or an OWASP id. The campaign
    replaces it with the objectives it selects once every entry is valid."""
    phrase: str | None = Field(default=None, min_length=1, max_length=200)
    rubric: str | None = Field(default=None, min_length=3, max_length=2000)
    pattern: str | None = Field(default=None, min_length=1, max_length=500)
    ask: str | None = Field(default=None, min_length=3, max_length=2000)
    """The request as an attacker puts it (what the template families wrap; see
    ``docs/strategies.md``); rows of an ``objectives_from`` dataset set it."""
    decode: bool = False
    """Count a reply re-encoded (base64, leetspeak ...) too (phrase and pattern objectives)."""
    judge: str = "phrase"

    @model_validator(mode="before")
    @classmethod
    def _catalogue_judge(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("id"), str) and "judge" not in data:
            entry = CATALOGUE.get(data["id"].strip())
            if entry is not None:
                return {**data, "judge": entry.judge}
        return data

    @field_validator("ref")
    @classmethod
    def _known_ref(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                resolve_objectives(value)
            except ArenaError as exc:
                raise ValueError(exc.message) from exc
        return value

    @field_validator("id")
    @classmethod
    def _known_id(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value.strip() not in CATALOGUE:
            raise ValueError(
                f"unknown catalogue objective '{value[:80]}'; choose one of: {', '.join(CATALOGUE)}"
            )
        return value.strip()

    @field_validator("judge")
    @classmethod
    def _known_judge(cls, value: str) -> str:
        try:
            get_judge(value)
        except ArenaError as exc:
            raise ValueError(exc.message) from exc
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ObjectiveSpec:
        if self.ref is not None:
            return self  # expanded by the campaign
        if self.id and (self.phrase or self.rubric or self.pattern or self.ask or self.decode):
            raise ValueError(
                f"objective '{self.id}' comes from the catalogue: it takes only 'name' and 'judge' "
                "(write an inline objective with 'phrase' or 'rubric' instead)"
            )
        if self.phrase and self.rubric:
            raise ValueError("an objective has either 'phrase' or 'rubric', not both")
        try:
            get_judge(self.judge).check_objective(self.objective)
        except ArenaError as exc:
            raise _error_at(("judge",), "judge_cannot_decide", "{reason}", reason=exc.message) from exc
        return self

    @property
    def objective(self) -> Objective:
        """The wire objective sent to attackers."""
        if self.id:
            return CATALOGUE[self.id].objective
        if self.rubric:
            return Objective(kind="rubric", rubric=self.rubric, pattern=self.pattern, ask=self.ask)
        return Objective(
            phrase=self.phrase or DEFAULT_PHRASE, pattern=self.pattern, ask=self.ask, decode=self.decode
        )


class OverRefusalSpec(_Spec):
    """Over-refusal probes: harmless requests every defender should answer.

    Each request is sent once per repetition to every defender by the built-in attacker
    (``playbook``, one turn), before the attacks, and judged by ``helpful``; reports show each
    defender's false refusal rate beside its attack success rate.
    """

    requests: Literal["builtin"] | list[Annotated[str, Field(min_length=3, max_length=2000)]] = Field(
        default="builtin"
    )
    """``builtin`` (the built-in benign set, ``arena_core.benign_requests``) or your own texts."""
    repetitions: int = Field(default=1, ge=1, le=1000)

    @field_validator("requests")
    @classmethod
    def _some(cls, value: object) -> object:
        if isinstance(value, list) and not 1 <= len(value) <= 500:
            raise ValueError("over_refusal.requests takes 1 to 500 texts, or 'builtin'")
        return value

    def objectives(self) -> list[Objective]:
        """The benign objective of each request, in order."""
        if self.requests == "builtin":
            return [item.objective for item in BENIGN_REQUESTS]
        return [
            Objective(kind="benign", id=f"benign-{index}", title=f"Benign: {text[:80]}", request=text)
            for index, text in enumerate(self.requests, start=1)
        ]


def _as_in_probe_request(name: str) -> Any:
    """The field ``name`` of :class:`ProbeRequest` (its default and bounds), so the two agree."""
    return copy.copy(ProbeRequest.model_fields[name])


_ANY_TARGET = "http://127.0.0.1"
"""A target for validating check names alone with :class:`ProbeRequest`."""


class ProtocolProbesSpec(_Spec):
    """Protocol security probes of the defenders' A2A surface (``arena probe``, run by a campaign).

    One run per selected defender, after every attack, by the built-in attacker's ``probe``
    skill; its first caller is the defender's own ``credentials.bearer_token_env``. A run whose
    report has a finding at ``fail_on`` or above, or a check that errored, counts as failed:
    reports show it per defender, and ``arena campaign run`` exits 1. Runs are outside every
    attack success rate.
    """

    defenders: list[Name] | None = Field(default=None, min_length=1, max_length=1000)
    """The defenders to probe, by name; omitted: every defender."""
    only: list[str] = _as_in_probe_request("only")
    """Checks or categories to run (``card``, ``auth.malformed-token``); empty: all."""
    skip: list[str] = _as_in_probe_request("skip")
    fail_on: Severity = Severity.HIGH
    """A finding at this severity or above fails the run."""
    max_requests: int = _as_in_probe_request("max_requests")
    rate_per_s: float = _as_in_probe_request("rate_per_s")
    wait_s: float = _as_in_probe_request("wait_s")
    timeout_s: float = _as_in_probe_request("timeout_s")
    max_duration_s: float = _as_in_probe_request("max_duration_s")
    concurrent_tasks: int = _as_in_probe_request("concurrent_tasks")
    second_token_env: str | None = Field(default=None, pattern=TARGET_TOKEN_ENV_PATTERN)
    """An ``ARENA_TARGET_TOKEN_*`` variable of the attacker: the second caller of the isolation
    checks (the first is the defender's ``credentials.bearer_token_env``)."""

    @field_validator("only", "skip")
    @classmethod
    def _known_checks(cls, value: list[str], info: ValidationInfo) -> list[str]:
        # The same names, and the same message, as `arena probe` and the attacker's skill.
        try:
            ProbeRequest.model_validate({"target": _ANY_TARGET, str(info.field_name): value})
        except ValidationError as exc:
            ctx = exc.errors()[0].get("ctx") or {}
            raise ValueError(str(ctx.get("error", exc.errors()[0]["msg"]))) from None
        return value

    def request_for(self, defender: DefenderSpec) -> ProbeRequest:
        """The probe run of ``defender``: its URL, its token as the first caller."""
        return ProbeRequest(
            target=defender.url,
            only=list(self.only),
            skip=list(self.skip),
            fail_on=self.fail_on,
            max_requests=self.max_requests,
            rate_per_s=self.rate_per_s,
            timeout_s=self.timeout_s,
            max_duration_s=self.max_duration_s,
            wait_s=self.wait_s,
            concurrent_tasks=self.concurrent_tasks,
            target_token_env=defender.credentials.bearer_token_env if defender.credentials else None,
            second_token_env=self.second_token_env,
        )


class Budget(_Spec):
    """Upper bounds on what a campaign may spend."""

    max_matches: int | None = Field(default=None, ge=1)
    """The campaign is rejected when its matrix expands to more matches than this."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Once the results hold this many tokens (both sides), queued matches are skipped."""


class CampaignSpec(_Spec):
    """A whole campaign. See ``examples/campaign.yaml`` for every field with comments."""

    name: Name
    description: str = Field(default="", max_length=2000)
    attackers: list[AttackerSpec] = Field(min_length=1, max_length=100)
    defenders: list[DefenderSpec] = Field(min_length=1, max_length=1000)
    objectives: list[ObjectiveSpec] = Field(
        default_factory=lambda: [ObjectiveSpec()], min_length=1, max_length=MAX_OBJECTIVES
    )
    """Inline objectives and catalogue references (see :class:`ObjectiveSpec`); the client adds
    the rows of an ``objectives_from`` dataset here (``spec_loader.with_dataset_objectives``)."""
    repetitions: int = Field(default=1, ge=1, le=10_000)
    max_turns: int = Field(default=10, ge=1, le=10_000)
    concurrency: int = Field(default=8, ge=1, le=10_000)
    """Matches of this campaign played at once, across all orchestrator replicas."""
    match_timeout_s: float = Field(default=1800.0, gt=0, le=86_400)
    budget: Budget = Field(default_factory=Budget)
    over_refusal: OverRefusalSpec | None = None
    """Harmless requests played against every defender (``true`` for the built-in set)."""
    probes: ProtocolProbesSpec | None = None
    """Protocol security probes of the defenders' A2A surface (``true``: every defender, defaults)."""
    seed: int = Field(default=0, ge=0, le=2**53 - 1 - 10_000)
    """Repetition r of every cell uses seed + r, so cells are comparable."""

    @field_validator("over_refusal", mode="before")
    @classmethod
    def _over_refusal_shorthand(cls, value: object) -> object:
        if value is True:
            return {}
        if value is False:
            return None
        return value

    @field_validator("probes", mode="before")
    @classmethod
    def _probes_shorthand(cls, value: object) -> object:
        if value is True:
            return {}
        if value is False:
            return None
        return value

    @field_validator("objectives", mode="before")
    @classmethod
    def _references(cls, value: object) -> object:
        """A string stands for a reference, in place: problems keep the document's positions."""
        if not isinstance(value, list):
            return value
        return [{"ref": item} if isinstance(item, str) else item for item in value]

    @field_validator("objectives")
    @classmethod
    def _expand_references(cls, value: list[ObjectiveSpec]) -> list[ObjectiveSpec]:
        """Each reference becomes the catalogue objectives it selects, once: an objective that
        an entry of its own or an earlier reference already names is not added again."""
        if all(item.ref is None for item in value):
            return value
        named = {item.id for item in value if item.ref is None and item.id and not item.name}
        expanded: list[ObjectiveSpec] = []
        for item in value:
            if item.ref is None:
                expanded.append(item)
                continue
            for entry in resolve_objectives(item.ref):
                if entry.id not in named:
                    named.add(entry.id)
                    expanded.append(ObjectiveSpec(id=entry.id))
        return expanded

    @model_validator(mode="after")
    def _consistent(self) -> CampaignSpec:
        self._check_unique_labels()
        self._check_probed_defenders()
        self._check_budget()
        return self

    def _check_unique_labels(self) -> None:
        """Reports name each column and row by its label, so the second of two equal labels is refused."""
        for index, attacker in enumerate(self.attackers):
            for label, what in ((OVER_REFUSAL, "over-refusal probes"), (PROTOCOL_PROBES, "protocol probes")):
                if attacker.label == label:
                    raise _error_at(
                        ("attackers", index, attacker.label_field),
                        "reserved_label",
                        "'{label}' is reserved for {what}; give the attacker another 'name'",
                        label=label,
                        what=what,
                    )
        for what, labels in (
            ("attackers", [(a.label, a.label_field) for a in self.attackers]),
            ("defenders", [(d.name, "name") for d in self.defenders]),
            ("objectives", [(label, "name") for label in self.objective_labels()]),
        ):
            seen: set[str] = set()
            for index, (label, field_name) in enumerate(labels):
                if label in seen:
                    raise _error_at(
                        (what, index, field_name),
                        "duplicate_label",
                        "two {what} are called '{label}'; give each a distinct 'name'",
                        what=what,
                        label=label,
                    )
                seen.add(label)

    def _check_probed_defenders(self) -> None:
        """``probes.defenders`` names defenders of the campaign, each once."""
        if self.probes is None or self.probes.defenders is None:
            return
        names = [defender.name for defender in self.defenders]
        unknown = [(i, name) for i, name in enumerate(self.probes.defenders) if name not in names]
        if unknown:
            raise _error_at(
                ("probes", "defenders", unknown[0][0]),
                "unknown_defender",
                "no defender is called {unknown}; the campaign's defenders are: {defenders}",
                unknown=", ".join(f"'{name}'" for _, name in unknown),
                defenders=", ".join(names),
            )
        seen: set[str] = set()
        for index, name in enumerate(self.probes.defenders):
            if name in seen:
                raise _error_at(
                    ("probes", "defenders", index),
                    "duplicate_defender",
                    "'{name}' is named twice; each defender is probed once",
                    name=name,
                )
            seen.add(name)

    def _check_budget(self) -> None:
        """A matrix larger than ``budget.max_matches`` is refused before any match is queued."""
        if self.budget.max_matches is not None and self.match_count > self.budget.max_matches:
            raise _error_at(
                ("budget", "max_matches"),
                "over_budget",
                "the campaign expands to {matches} matches, above budget.max_matches ({max_matches})",
                matches=self.match_count,
                max_matches=self.budget.max_matches,
            )

    def objective_labels(self) -> list[str]:
        """The report label of each objective, in order."""
        labels = []
        for index, objective in enumerate(self.objectives, start=1):
            if objective.name or objective.id:
                labels.append(objective.name or str(objective.id))
            elif len(self.objectives) == 1:
                labels.append("rubric" if objective.rubric else "phrase")
            else:
                labels.append(f"{'rubric' if objective.rubric else 'phrase'}-{index}")
        return labels

    @property
    def attack_count(self) -> int:
        """How many attack matches the matrix expands to."""
        return len(self.attackers) * len(self.defenders) * len(self.objectives) * self.repetitions

    @property
    def probe_count(self) -> int:
        """How many over-refusal probes there are (0 without ``over_refusal``)."""
        if self.over_refusal is None:
            return 0
        return len(self.defenders) * len(self.over_refusal.objectives()) * self.over_refusal.repetitions

    def protocol_probe_defenders(self) -> list[DefenderSpec]:
        """The defenders ``probes:`` selects, in the order of ``defenders`` (none without it)."""
        if self.probes is None:
            return []
        selected = self.probes.defenders
        return [d for d in self.defenders if selected is None or d.name in selected]

    @property
    def protocol_probe_count(self) -> int:
        """How many protocol-probe runs there are: one per selected defender (0 without ``probes``)."""
        return len(self.protocol_probe_defenders())

    @property
    def match_count(self) -> int:
        """How many matches the campaign expands to: the over-refusal probes, the attacks, then
        the protocol-probe runs."""
        return self.probe_count + self.attack_count + self.protocol_probe_count

    @property
    def uses_builtin_attacker(self) -> bool:
        """True when some attacker has no URL, or probes are asked for (the orchestrator's own
        attacker plays them)."""
        return (
            self.over_refusal is not None
            or self.probes is not None
            or any(a.url is None for a in self.attackers)
        )


__all__ = [
    "FIELD_PATH",
    "MAX_OBJECTIVES",
    "NAME_PATTERN",
    "OVER_REFUSAL",
    "PROTOCOL_PROBES",
    "PROTOCOL_PROBE_OBJECTIVE",
    "AttackerSpec",
    "Budget",
    "CampaignSpec",
    "DefenderSpec",
    "ObjectiveSpec",
    "OverRefusalSpec",
    "ProtocolProbesSpec",
    "TargetCredentials",
]
