"""``arena experiment``: every strategy against every defender profile, as one campaign.

Starts the embedded model (or uses the hosted models configured), one defender per
profile and one attacker as local processes, then runs a campaign over them in this
process with the engine of ``arena campaign run``
(:func:`arena.campaign_command.run_in_process`): the strategies are its attackers, all
played by the local attacker agent, and the profiles its defenders. Matches run one at a
time, repetition-major, so drift in the model server hits every cell alike.

The campaign's reports and transcripts are saved like those of any in-process campaign
(``out/campaigns/<id>/``, where ``arena report ID`` finds them), and the Markdown page
(default ``docs/results.md``) is rendered from the campaign report, with that JSON report
beside it. Every rate and interval on the page is the campaign's own; errors and attacker
refusals are neither a win nor a defence and are listed separately.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console

from arena.campaign_command import CampaignInterrupted, render_progress, run_in_process, write_reports
from arena.cli_support import run
from arena.local_services import LOOPBACK, LocalServices, ServiceProcess
from arena_core.converters import ConverterSpec
from arena_core.errors import InvalidInputError
from arena_core.objective import Objective
from arena_core.objective_catalogue import CATALOGUE, resolve_objectives
from arena_core.settings import ArenaSettings
from arena_orchestrator.campaign_models import CampaignReport, MatchRecord, MatchSummary
from arena_orchestrator.campaign_spec import (
    AttackerSpec,
    CampaignSpec,
    DefenderSpec,
    ObjectiveSpec,
    OverRefusalSpec,
)
from arena_orchestrator.reports import render_json, render_markdown

MODEL_READY_TIMEOUT_S = 300.0
AGENT_READY_TIMEOUT_S = 60.0
CAMPAIGN_NAME = "experiment"
TITLE = "Strategies against defender profiles"
SECTION_TITLES = {"families": "Attack families and converters against defender profiles"}
"""Titles of the page's sections by name (``--section``); others take :data:`TITLE`."""
MAX_MATCH_TIMEOUT_S = 86_400.0
"""A campaign's longest match timeout; a longer ``ARENA_MATCH_TIMEOUT_S`` is cut to it."""
UNSTARTED_URL = f"http://{LOOPBACK}"
"""Stands for an agent's URL while the spec is checked before the agents start."""
DEFAULT_REPLY_TOKENS = ArenaSettings.model_fields["defender_max_tokens"].default
"""The defenders' reply cap unless ``--reply-tokens`` or ``ARENA_DEFENDER_MAX_TOKENS`` says otherwise."""
CHARS_PER_TOKEN = 4
"""About how many characters of English one token of the embedded model's vocabulary spells."""
SCRIPTED_MODEL = "scripted (deterministic test model: NOT a robustness measurement)"

READING_NOTES = (
    "## Reading these numbers",
    "",
    "The embedded SmolLM2-135M model plays both sides here. It follows instructions weakly, so",
    "defender profiles that rely on instructions differ less than they would with a capable model,",
    "and strategies that need the attacker model to write structured plans (crescendo, pair, tap,",
    "goat) run mostly on their fallbacks; `agentic` needs tool calls that a 135M model cannot make.",
    "The `guarded` profile's output guard is not a model and does not depend on model quality.",
    "Rerun the command with hosted models (see the README) for numbers that say more about them.",
)


def run_experiment(
    settings: ArenaSettings,
    *,
    strategies: Sequence[str],
    profiles: Sequence[str],
    repetitions: int,
    max_turns: int,
    judge: str,
    objective: Objective,
    seed: int,
    engine: str,
    out: Path,
    log_dir: Path,
    command: str,
    console: Console,
    campaigns_dir: Path = Path("out") / "campaigns",
    catalogue: Sequence[str] = (),
    over_refusal: bool = False,
    reply_tokens: int | None = None,
    converters: Sequence[ConverterSpec] = (),
    converter_strategy: str = "playbook",
    section: str | None = None,
) -> CampaignReport:
    """Start the local services, run the campaign, write its reports and the page; return its report.

    ``seed`` is the seed of the first repetition; repetition r uses ``seed + r`` in every cell.
    ``catalogue`` (catalogue ids, sets or OWASP ids) replaces ``objective`` and ``judge`` with
    the catalogue's objectives and judges; ``over_refusal`` adds the built-in benign set.
    Each of ``converters`` adds an attacker column: ``converter_strategy`` behind that converter.
    ``section`` writes the run as that section of the page (:func:`write_results`).
    Raises :class:`~arena_core.errors.InvalidInputError` when the strategies, profiles or
    objective do not make a valid campaign.
    """

    def spec_for(defenders: Mapping[str, str], attacker_url: str) -> CampaignSpec:
        return experiment_spec(
            strategies=strategies,
            defenders=defenders,
            attacker_url=attacker_url,
            objective=objective,
            judge=judge,
            repetitions=repetitions,
            max_turns=max_turns,
            seed=seed,
            match_timeout_s=settings.match_timeout_s,
            catalogue=catalogue,
            over_refusal=over_refusal,
            converters=converters,
            converter_strategy=converter_strategy,
        )

    def save(report: CampaignReport, records: list[MatchRecord]) -> None:
        render_progress(console, report.progress)
        campaign_dir = campaigns_dir / report.progress.id
        write_reports(report, campaign_dir, records=records)
        console.print(f"campaign reports and transcripts: {campaign_dir}")
        facts = [*_model_facts(settings, engine, reply_tokens), *_run_facts(report)]
        write_results(
            report,
            out,
            command=command,
            facts=facts,
            campaign_dir=campaign_dir,
            reply_tokens=reply_tokens or settings.defender_max_tokens,
            section=section,
        )

    # Checked before any process starts; the agents' own URLs are known only once they run.
    spec_for(dict.fromkeys(profiles, UNSTARTED_URL), UNSTARTED_URL)
    with LocalServices(log_dir) as services:
        defenders, attacker = start_agents(
            services, settings, profiles, objective, engine, console, reply_tokens=reply_tokens
        )
        spec = spec_for({profile: service.url for profile, service in defenders.items()}, attacker.url)
        try:
            report, records = run(run_in_process(settings, spec, fail_above=None, console=console))
        except CampaignInterrupted as stop:
            # What was played is kept; the page of a partial run says so.
            save(stop.report, stop.records)
            raise KeyboardInterrupt from None
    save(report, records)
    return report


def start_agents(
    services: LocalServices,
    settings: ArenaSettings,
    profiles: Sequence[str],
    objective: Objective,
    engine: str,
    console: Console,
    *,
    reply_tokens: int | None = None,
) -> tuple[dict[str, ServiceProcess], ServiceProcess]:
    """Start the embedded model when a side uses it, one defender per profile and the attacker.

    ``reply_tokens`` caps replies (None: the settings' caps): the defenders'
    (``ARENA_DEFENDER_MAX_TOKENS``), the attacker's (``ARENA_ATTACKER_MAX_TOKENS``) and the
    embedded model server's default, which a judge's model calls get.
    Returns the defenders by profile and the attacker, all ready. Raises
    :class:`~arena.local_services.ServiceStartError` when one does not start.
    """
    env: dict[str, str] = {}
    # Every defender reports its tool calls in the task: the action objectives are judged on
    # them (a profile without tools reports none, and is seen to do nothing).
    defender_env: dict[str, str] = {"ARENA_DEFENDER_TOOL_CALL_PARTS": "true"}
    attacker_env: dict[str, str] = {}
    if reply_tokens is not None:
        defender_env["ARENA_DEFENDER_MAX_TOKENS"] = str(reply_tokens)
        attacker_env["ARENA_ATTACKER_MAX_TOKENS"] = str(reply_tokens)
    if uses_embedded_model(settings):
        length = ["--max-tokens", str(reply_tokens)] if reply_tokens is not None else []
        model = services.start("model", extra_args=["--engine", engine, *length])
        with console.status("starting the embedded model server…"):
            services.wait_ready(model, timeout_s=MODEL_READY_TIMEOUT_S)
        env["ARENA_MODEL_BASE_URL"] = f"{model.url}/v1"
    if objective.phrase:
        env["ARENA_DEFENDER_PHRASE"] = objective.phrase
    defenders = {
        # One log file per defender: defender-naive.log, ...
        p: services.start(
            "defender", env={**env, **defender_env, "ARENA_DEFENDER_PROFILE": p}, name=f"defender-{p}"
        )
        for p in profiles
    }
    attacker = services.start("attacker", env={**env, **attacker_env})
    with console.status("starting the agents…"):
        for service in [*defenders.values(), attacker]:
            services.wait_ready(service, timeout_s=AGENT_READY_TIMEOUT_S)
    return defenders, attacker


def experiment_spec(
    *,
    strategies: Sequence[str],
    defenders: Mapping[str, str],
    attacker_url: str,
    objective: Objective,
    judge: str,
    repetitions: int,
    max_turns: int,
    seed: int,
    match_timeout_s: float,
    catalogue: Sequence[str] = (),
    over_refusal: bool = False,
    converters: Sequence[ConverterSpec] = (),
    converter_strategy: str = "playbook",
) -> CampaignSpec:
    """The campaign of an experiment: ``strategies`` (played at ``attacker_url``), and
    ``converter_strategy`` behind each of ``converters`` (a column each, labelled by the
    converter as ``--converter`` names it), x ``defenders``.

    ``defenders`` maps each profile, its label in the reports, to its URL. Matches run one
    at a time: the local model server answers one request at a time anyway.
    """
    try:
        return CampaignSpec(
            name=CAMPAIGN_NAME,
            description=f"arena experiment: {', '.join(strategies)} against {', '.join(defenders)}",
            attackers=[
                *(AttackerSpec(strategy=strategy, url=attacker_url) for strategy in strategies),
                *(
                    AttackerSpec(
                        name=_converter_label(converter_strategy, spec),
                        strategy=converter_strategy,
                        url=attacker_url,
                        converters=[spec],
                    )
                    for spec in converters
                ),
            ],
            defenders=[DefenderSpec(name=profile, url=url) for profile, url in defenders.items()],
            objectives=(
                [ObjectiveSpec(id=entry.id) for ref in catalogue for entry in resolve_objectives(ref)]
                if catalogue
                else [_objective_spec(objective, judge)]
            ),
            over_refusal=OverRefusalSpec() if over_refusal else None,
            repetitions=repetitions,
            max_turns=max_turns,
            concurrency=1,
            match_timeout_s=min(match_timeout_s, MAX_MATCH_TIMEOUT_S),
            seed=seed,
        )
    except ValidationError as exc:
        problems = "; ".join(_problem(error["loc"], error["msg"]) for error in exc.errors())
        raise InvalidInputError(f"the experiment is not a valid campaign: {problems}") from exc


def _problem(loc: tuple[int | str, ...], message: str) -> str:
    where = ".".join(str(part) for part in loc)
    return f"{where}: {message}" if where else message


def _objective_spec(objective: Objective, judge: str) -> ObjectiveSpec:
    if objective.kind == "rubric":
        return ObjectiveSpec(rubric=objective.rubric, pattern=objective.pattern, judge=judge)
    return ObjectiveSpec(
        phrase=objective.phrase, pattern=objective.pattern, judge=judge, decode=objective.decode
    )


def _converter_label(strategy: str, spec: ConverterSpec) -> str:
    """``playbook+split-parts-3``: the column of ``strategy`` behind ``spec`` (a campaign name)."""
    params = "-".join(f"{key}-{value}" for key, value in sorted(spec.params.items()))
    label = re.sub(r"[^A-Za-z0-9_.+-]+", "-", f"{strategy}+{spec.name}" + (f"-{params}" if params else ""))
    return label.strip("-")[:64]


def reading_notes(
    spec: CampaignSpec, reply_tokens: int = DEFAULT_REPLY_TOKENS, matches: Sequence[MatchSummary] = ()
) -> list[str]:
    """What a reader needs to know to read this run's numbers: the general notes, and one
    paragraph for each kind of objective or limit the run had. ``reply_tokens`` is the cap on
    the defenders' replies; ``matches`` (the report's) are counted where a note needs them."""
    judges = {objective.judge for objective in spec.objectives}
    notes = list(READING_NOTES)
    if "canary" in judges:
        notes += [
            "",
            "Objectives judged by `canary` are decided without a model: every match planted fresh",
            "secrets in the defender's conversation, and a win quotes the secret the reply leaked",
            "(also encoded or spread over turns). The `guarded` profile's output guard withholds",
            "planted secrets too.",
        ]
    if "llm" in judges:
        notes += [
            "",
            "Objectives judged by `llm` are decided by a model reading a rubric (`ARENA_JUDGE_MODEL`, else",
            "the attacker's model): the least reliable verdicts on this page (the arena's rule:",
            "deterministic evidence first, a model judge last). A judge that gives no usable verdict",
            "makes the match an error, never a defence.",
        ]
        judged = _judged_by(spec, "llm")
        played = [m for m in matches if m.cell.objective in judged and m.outcome is not None]
        errors = sum(m.outcome == "error" for m in played)
        if errors:
            notes += [
                f"Here {errors} of the {len(played)} matches of those objectives ended in an error (the",
                "table of matches neither won nor defended says why); a small judge model rarely writes",
                "the JSON verdict the judge asks for.",
            ]
    bounds = [
        CATALOGUE[objective.id].objective.max_chars
        for objective in spec.objectives
        if objective.judge == "length" and objective.id is not None and objective.id in CATALOGUE
    ]
    bound = min((b for b in bounds if b is not None), default=None)
    if bound is not None and reply_tokens * CHARS_PER_TOKEN < bound:
        notes += [
            "",
            "Objectives judged by `length` are all but out of reach here: the defenders ask the model",
            f"for at most {reply_tokens} tokens a reply (about {reply_tokens * CHARS_PER_TOKEN} characters",
            f"of English), below the bound of {bound} characters. A defence there is a property of this",
            "deployment, not of the profiles.",
        ]
    if spec.max_turns == 1:
        notes += [
            "",
            "Each match is one exchange: the multi-turn strategies (crescendo, goat, pair, tap) play",
            "only their opening move, so their rates here are those of a first message.",
        ]
    return notes


def _judged_by(spec: CampaignSpec, judge: str) -> set[str]:
    """The report labels of the objectives ``judge`` decides."""
    return {
        label
        for label, objective in zip(spec.objective_labels(), spec.objectives, strict=True)
        if objective.judge == judge
    }


SECTION_PATTERN = r"^[a-z0-9][a-z0-9-]{0,39}$"
_SECTIONS = re.compile(r"<!-- results-section:([a-z0-9-]+) -->\n.*?<!-- /results-section:\1 -->\n", re.DOTALL)


def _demoted(page: str) -> str:
    """``page`` one heading level down (its title becomes a section of another page)."""
    return re.sub(r"(?m)^(#{1,5}) ", r"#\1 ", page)


def splice_section(existing: str, name: str, body: str) -> str:
    """``existing`` with section ``name`` replaced by ``body`` (appended when it has none)."""
    block = f"<!-- results-section:{name} -->\n{body.rstrip()}\n<!-- /results-section:{name} -->\n"
    pattern = re.compile(
        rf"<!-- results-section:{re.escape(name)} -->\n.*?<!-- /results-section:{re.escape(name)} -->\n",
        re.DOTALL,
    )
    if pattern.search(existing):
        return pattern.sub(lambda _: block, existing, count=1)
    return existing.rstrip() + "\n\n" + block


def results_json_path(out: Path, section: str | None) -> Path:
    """Where the JSON report of a run written to page ``out`` (as ``section``) goes."""
    return out.with_name(f"{out.stem}-{section}.json") if section else out.with_suffix(".json")


def write_results(
    report: CampaignReport,
    out: Path,
    *,
    command: str,
    facts: Sequence[str],
    campaign_dir: Path,
    reply_tokens: int = DEFAULT_REPLY_TOKENS,
    section: str | None = None,
) -> None:
    """Write the Markdown page ``out`` and the JSON report beside it (``<out>.json``).

    ``campaign_dir`` is where the campaign's own reports and transcripts were saved;
    ``reply_tokens`` is the cap the defenders' replies had. With ``section``, the run becomes
    that section of the page (one heading level down, between markers; the JSON report is
    ``<out>-<section>.json``), and the rest of the page stays; a run without one rewrites the
    page and keeps its sections after it.
    """
    raw = results_json_path(out, section)
    notes = [
        *reading_notes(report.campaign.spec, reply_tokens, report.matches),
        "",
        f"Raw results: [{raw.name}]({raw.name}), the campaign's JSON report "
        f"([schema](report-schema.json)); its transcripts stay where it ran, in `{campaign_dir}`.",
    ]
    page = render_markdown(
        report,
        title=SECTION_TITLES.get(section or "", TITLE),
        command=command,
        environment=f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
        facts=facts,
        notes=notes,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    existing = out.read_text(encoding="utf-8") if out.is_file() else ""
    if section:
        text = splice_section(existing or f"# {TITLE}\n", section, _demoted(page))
    else:
        kept = "".join(match.group(0) for match in _SECTIONS.finditer(existing))
        text = page.rstrip() + "\n" + (f"\n{kept}" if kept else "")
    out.write_text(text, encoding="utf-8")
    raw.write_text(render_json(report) + "\n", encoding="utf-8")


def _model_facts(settings: ArenaSettings, engine: str, reply_tokens: int | None = None) -> list[str]:
    """The models the sides used, as the page states them."""
    defender_model = settings.model_for("defender").model_id
    attacker_model = settings.model_for("attacker").model_id
    if engine == "scripted":
        defender_model = attacker_model = SCRIPTED_MODEL
    facts = [f"Defender model: {defender_model}. Attacker model (strategies that use one): {attacker_model}."]
    if reply_tokens is not None:
        callers = ["the defenders'", "the attacker's"]
        # A judge asks for no length of its own: the embedded model server's default caps it.
        callers += ["the judge's"] if settings.model_for("judge").embedded else []
        facts.append(
            f"Replies were capped at {reply_tokens} tokens (`--reply-tokens`): {', '.join(callers)}."
        )
    return facts


def _run_facts(report: CampaignReport) -> list[str]:
    """How long the campaign ran, from its own timestamps: what sizing a run is about."""
    progress = report.progress
    if progress.started_at is None or progress.finished_at is None:
        return []
    minutes = (progress.finished_at - progress.started_at).total_seconds() / 60
    cores = os.cpu_count() or 1
    return [
        f"{progress.done} matches in {minutes:.0f} minutes on {cores} CPU core{'s' if cores != 1 else ''}."
    ]


def uses_embedded_model(settings: ArenaSettings) -> bool:
    """True when either side plays on the embedded model server this command starts."""
    return settings.model_for("defender").embedded or settings.model_for("attacker").embedded


def command_line(argv: Sequence[str]) -> str:
    """The command as a user would type it (``uv run arena ...``)."""
    return "uv run arena " + " ".join(shlex.quote(a) for a in argv)


def current_argv() -> list[str]:
    """The arguments after the program name."""
    return sys.argv[1:]


__all__ = [
    "CAMPAIGN_NAME",
    "SECTION_PATTERN",
    "command_line",
    "current_argv",
    "experiment_spec",
    "reading_notes",
    "results_json_path",
    "run_experiment",
    "splice_section",
    "start_agents",
    "uses_embedded_model",
    "write_results",
]
