"""``arena campaign run|status|list|cancel`` and ``arena report``.

With an orchestrator (``--orchestrator URL`` or ``ARENA_ORCHESTRATOR_URL``)
the CLI submits the spec and follows it over REST. Without one, the same
orchestrator code runs in this process (in-memory store and queue, one
worker); built-in attackers play in-process (the protocol probes of ``probes:``
run here too), attackers with a URL are asked over A2A. Reports of in-process campaigns are saved under
``out/campaigns/<id>/`` so ``arena report ID`` finds them later.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskProgressColumn, TextColumn
from rich.table import Table
from rich.text import Text

from arena.orchestrator_client import OrchestratorClient
from arena.transcript import write_match
from arena_attacker.match_runner import MatchRunner
from arena_attacker.strategies import validate_strategy
from arena_core.a2a.client.attacker import RemoteProbe
from arena_core.a2a.egress_guard import EgressGuard
from arena_core.errors import ArenaError, InvalidInputError, TargetUnreachableError
from arena_core.match_models import MatchResult
from arena_core.probes.request import ProbeRequest
from arena_core.probes.runner import run_probes
from arena_core.probes.surface import NoSurface
from arena_core.retry import Backoff, retryable_peer_failure
from arena_core.settings import ArenaSettings
from arena_orchestrator.app import worker_config
from arena_orchestrator.campaign_models import CampaignProgress, CampaignReport, MatchJob, MatchRecord
from arena_orchestrator.campaign_service import CampaignService
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.match_player import RemoteAttackerPlayer, probe_result
from arena_orchestrator.match_queue import MemoryMatchQueue
from arena_orchestrator.memory_campaign_store import MemoryCampaignStore
from arena_orchestrator.reports import render_html, render_report
from arena_orchestrator.spec_loader import load_campaign_spec
from arena_orchestrator.worker import CampaignWorker

POLL_S = 0.5
FOLLOW_PATIENCE_S = 60.0
FOLLOW_BACKOFF = Backoff(base_s=2 * POLL_S, cap_s=5.0)
"""Waits between failed polls: twice the poll interval, doubling, at most 5 s."""
PROGRESS_LINE_EVERY_S = 30.0
"""Without a terminal, progress is printed as a line at most this often (see :class:`ProgressLines`)."""
REPORT_FILES = {"html": "report.html", "json": "report.json", "junit": "junit.xml", "sarif": "report.sarif"}


def read_spec(path: Path, settings: ArenaSettings) -> tuple[CampaignSpec, str]:
    """Load and fully validate a spec file (strategy parameters too); return it and its text."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    spec = load_campaign_spec(
        raw, source=str(path), max_bytes=settings.orchestrator_max_spec_bytes, base_dir=path.parent
    )
    problems = []
    for index, attacker in enumerate(spec.attackers):
        for objective in spec.objectives:
            try:
                validate_strategy(attacker.strategy, attacker.params, objective.objective)
            except ArenaError as exc:
                problems.append(f"attackers[{index}] ({attacker.label}): {exc.message}")
    if problems:
        raise InvalidInputError(f"{path}: " + "; ".join(dict.fromkeys(problems)))
    if b"objectives_from" in raw:
        # The dataset was read here: an orchestrator gets its objectives inline, as JSON.
        inline = spec.model_dump_json()
        if len(inline.encode()) > settings.orchestrator_max_spec_bytes:
            raise InvalidInputError(
                f"{path}: with its dataset's objectives the campaign is {len(inline.encode())} bytes, over "
                f"the {settings.orchestrator_max_spec_bytes} an orchestrator takes "
                "(ARENA_ORCHESTRATOR_MAX_SPEC_BYTES): set objectives_from.limit"
            )
        return spec, inline
    return spec, raw.decode("utf-8")


class InProcessPlayer:
    """Plays built-in attacker matches in this process and asks attacker URLs over A2A."""

    def __init__(self, settings: ArenaSettings) -> None:
        self._runner = MatchRunner(settings)
        self._remote = RemoteAttackerPlayer(None, guard=EgressGuard(settings.target_policy()))

    async def play(self, job: MatchJob) -> MatchResult:
        if job.probe is not None:
            started = datetime.now(UTC)
            return probe_result(job, await self._probe(job.probe), started)
        if job.attacker_url:
            return await self._remote.play(job)
        return await self._runner.run(job.request)

    async def _probe(self, request: ProbeRequest) -> RemoteProbe:
        """A protocol-probe run here, as the attacker's ``probe`` skill makes it: the tokens are
        this process's ``ARENA_TARGET_TOKEN_*`` variables, scoped alike, through its egress guard."""
        runner = self._runner
        try:
            token = (
                runner.target_token(request.target_token_env, request.target)
                if request.target_token_env
                else None
            )
            second = (
                runner.target_token(request.second_token_env, request.target)
                if request.second_token_env
                else None
            )
            report = await run_probes(
                request.target, request.options(), token=token, second_token=second, guard=runner.guard
            )
        except NoSurface as exc:
            return RemoteProbe(None, TargetUnreachableError.kind, f"nothing to probe: {exc}")
        except ArenaError as exc:
            return RemoteProbe(None, exc.kind, exc.message)
        return RemoteProbe(report)


class _RateColumn(ProgressColumn):
    """Success rate so far, errors and ETA from the latest progress."""

    def __init__(self, latest: Callable[[], CampaignProgress | None]) -> None:
        super().__init__()
        self._latest = latest

    def render(self, task: Task) -> Text:
        progress = self._latest()
        return Text("") if progress is None else Text(_rate_text(progress))


def _rate_text(progress: CampaignProgress) -> str:
    asr = progress.asr
    rate = "n/a" if asr.rate is None else f"{asr.rate:.0%} [{asr.low:.0%}, {asr.high:.0%}]"
    eta = "" if progress.eta_s is None else f"  ETA {_duration(progress.eta_s)}"
    running = f"running {progress.running}{eta}"
    return f"success {rate}  errors {progress.counts.error}  {running}  [{progress.status}]"


class ProgressLines:
    """Progress as plain lines where a live bar shows nothing (a pipe, a CI log, a file).

    A line when the number of matches done changed, at most every ``every_s`` seconds, and
    always the line of the finished campaign (also when its last match was counted before its
    status turned final). On a terminal it prints nothing: the bar does.
    """

    def __init__(
        self,
        console: Console,
        *,
        every_s: float = PROGRESS_LINE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console
        self._every_s = every_s
        self._clock = clock
        self._shown: tuple[int, bool] | None = None
        self._at: float | None = None

    def update(self, progress: CampaignProgress) -> None:
        """Print ``progress`` as a line if it is news and the last line is old enough."""
        if self._console.is_terminal or (progress.done, progress.finished) == self._shown:
            return
        now = self._clock()
        if not progress.finished and self._at is not None and now - self._at < self._every_s:
            return
        self._shown, self._at = (progress.done, progress.finished), now
        self._console.print(
            Text(f"{progress.name}: {progress.done}/{progress.total} matches  {_rate_text(progress)}"),
            highlight=False,
            soft_wrap=True,  # one line per update in a log, whatever the console's width
        )


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def follow(
    fetch: Callable[[], CampaignProgress],
    console: Console,
    *,
    sleep: Callable[[float], None] = time.sleep,
    patience_s: float = FOLLOW_PATIENCE_S,
) -> CampaignProgress:
    """Show a live progress bar until the campaign is finished; return the last progress.

    A failed poll (a replica restarting, a network blip: a failure
    :func:`~arena_core.retry.retryable_peer_failure` accepts) is retried with
    :data:`FOLLOW_BACKOFF` for up to ``patience_s`` seconds before its error is raised.
    """
    latest: CampaignProgress | None = None
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(text_format="{task.completed:.0f}/{task.total:.0f}"),
        _RateColumn(lambda: latest),
    )
    lines = ProgressLines(console)
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("campaign", total=None)
        failing_since: float | None = None
        failures = 0
        while True:
            try:
                latest = fetch()
            except ArenaError as exc:
                now = time.monotonic()
                failing_since = failing_since or now
                if not retryable_peer_failure(exc) or now - failing_since > patience_s:
                    raise
                failures += 1
                sleep(FOLLOW_BACKOFF.delay(failures))
                continue
            failing_since, failures = None, 0
            bar.update(task, description=escape(latest.name), total=latest.total, completed=latest.done)
            lines.update(latest)
            if latest.finished:
                return latest
            sleep(POLL_S)


def render_progress(console: Console, progress: CampaignProgress) -> None:
    """The per-cell table and totals of a campaign."""
    console.print(
        Text.assemble(
            ("campaign ", "bold"),
            progress.name,
            f" ({progress.id}): {progress.status}, {progress.done}/{progress.total} matches, "
            f"{progress.tokens.total_tokens} tokens",
        )
    )
    table = Table(show_lines=False, caption="ASR: won / (won + defended), Wilson 95% interval")
    for column in ("attacker", "defender", "objective"):
        table.add_column(column, overflow="fold")
    for column in ("won", "defended", "refused", "error", "not played"):
        table.add_column(column, justify="right", max_width=8, overflow="fold")
    table.add_column("ASR", no_wrap=True)
    for cell in progress.cells:
        counts = cell.counts
        table.add_row(
            Text(cell.cell.attacker),
            Text(cell.cell.defender),
            Text(cell.cell.objective),
            str(counts.attacker_won),
            str(counts.defended),
            str(counts.attacker_refused),
            str(counts.error),
            str(counts.canceled + counts.skipped),
            _rate(cell.asr.rate, cell.asr.low, cell.asr.high),
        )
    console.print(table)
    for row in progress.protocol_probes:
        found = ", ".join(f"{count} {name}" for name, count in row.findings.items() if count) or "no finding"
        if row.counts.error:
            found = "the run ended in an error"
        errored = f", {row.errored_checks} check(s) errored" if row.errored_checks else ""
        verdict = "FAIL" if row.failed else ("pass" if row.counts.defended else "not run")
        line = f"protocol probes of {row.defender}: {found}{errored} (fail_on {row.fail_on.value}): {verdict}"
        console.print(Text(line, style="red" if row.failed else ""))
    for error in progress.errors[:5]:
        console.print(Text(f"error in {error.match_id}: {error.error_kind}: {error.error}", style="red"))


def _rate(rate: float | None, low: float, high: float) -> str:
    return "n/a" if rate is None else f"{rate:.0%} [{low:.0%}, {high:.0%}]"


def fail_above_problems(
    progress: CampaignProgress, threshold: float | None, categories: Mapping[str, float] | None = None
) -> list[str]:
    """One line per defender whose attack success rate is above ``threshold``, and per defender
    and OWASP category whose rate is above that category's threshold in ``categories``."""
    problems = []
    if threshold is not None:
        problems += [
            f"defender {d.defender}: attack success rate {_rate(d.asr.rate, d.asr.low, d.asr.high)} "
            f"is above {threshold:g}"
            for d in progress.defenders
            if d.asr.rate is not None and d.asr.rate > threshold
        ]
    for category, limit in (categories or {}).items():
        rows = [row for row in progress.categories if row.category == category]
        if not any(row.asr.trials for row in rows):
            # A gate that measured nothing must not pass: no objective of the campaign maps to
            # the category, or every match of it ended without a win or a defence.
            problems.append(f"{category}: no attack in this category was measured, so its gate cannot pass")
            continue
        problems += [
            f"defender {row.defender}, {row.title}: attack success rate "
            f"{_rate(row.asr.rate, row.asr.low, row.asr.high)} is above {limit:g}"
            for row in rows
            if row.asr.rate is not None and row.asr.rate > limit
        ]
    return problems


def protocol_probe_problems(progress: CampaignProgress) -> list[str]:
    """One line per protocol-probe run (``probes:``) that fails a CI gate: a finding at its
    ``fail_on`` or above or a check that broke, a run that ended in an error, or, once the
    campaign is final, a run that never ran (a gate that measured nothing must not pass)."""
    problems = []
    for row in progress.protocol_probes:
        if row.threshold_met:
            found = (
                ", ".join(f"{count} {name}" for name, count in row.findings.items() if count) or "no finding"
            )
            errored = f", {row.errored_checks} check(s) broke" if row.errored_checks else ""
            problems.append(
                f"defender {row.defender}: the protocol probes found {found}{errored} "
                f"(fail_on {row.fail_on.value})"
            )
        elif row.counts.error:
            problems.append(f"defender {row.defender}: the protocol-probe run ended in an error")
        elif progress.finished and not row.counts.defended:
            problems.append(
                f"defender {row.defender}: the protocol probes did not run (campaign {progress.status})"
            )
    return problems


def write_reports(
    report: CampaignReport,
    out_dir: Path,
    *,
    match_url: Callable[[str], str] | None = None,
    records: Sequence[MatchRecord] = (),
) -> list[Path]:
    """Write report.html, report.json, junit.xml and report.sarif into ``out_dir``.

    ``records`` with results also get ``matches/<id>/transcript.md`` (and ``result.json``),
    which the HTML report then links to; otherwise matches link to ``match_url``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for record in records:
        if record.result is not None:
            write_match(record.result, out_dir / "matches" / record.summary.match_id)
    if records:
        match_url = _transcript_link
    bodies = {
        "html": render_html(report, match_url=match_url),
        "json": render_report(report, "json")[0],
        "junit": render_report(report, "junit")[0],
        "sarif": render_report(report, "sarif")[0],
    }
    for fmt, name in REPORT_FILES.items():
        path = out_dir / name
        path.write_text(bodies[fmt], encoding="utf-8")
        written.append(path)
    return written


def _transcript_link(match_id: str) -> str:
    return f"matches/{match_id}/transcript.md"


async def run_in_process(
    settings: ArenaSettings,
    spec: CampaignSpec,
    *,
    fail_above: float | None,
    console: Console,
    fail_above_categories: Mapping[str, float] | None = None,
) -> tuple[CampaignReport, list[MatchRecord]]:
    """Run a whole campaign in this process, with a live progress bar.

    Returns its report and every match record (transcripts included). Interrupted (Ctrl-C, which
    cancels the running task), it cancels the campaign and raises :class:`CampaignInterrupted`
    with the matches played so far.
    """
    # The in-process player is the built-in attacker, so it is always available here.
    service = CampaignService(
        MemoryCampaignStore(),
        MemoryMatchQueue(),
        max_campaign_matches=settings.orchestrator_max_campaign_matches,
        builtin_attacker=True,
    )
    worker = CampaignWorker(service, InProcessPlayer(settings), worker_config(settings))
    created = await service.submit(spec)
    worker_task = asyncio.create_task(worker.run())
    latest = created

    async def poll() -> None:
        nonlocal latest
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(text_format="{task.completed:.0f}/{task.total:.0f}"),
            _RateColumn(lambda: latest),
        )
        lines = ProgressLines(console)
        with Progress(*columns, console=console) as bar:
            task = bar.add_task(escape(spec.name), total=created.total)
            while True:
                latest = await service.progress(created.id)
                bar.update(task, completed=latest.done)
                lines.update(latest)
                if latest.finished:
                    return
                if worker_task.done():
                    worker_task.result()
                    return
                await asyncio.sleep(POLL_S)

    interrupted = False
    try:
        await poll()
    except asyncio.CancelledError:
        await service.cancel(created.id)
        interrupted = True
    finally:
        worker.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await worker_task
    report = await service.report(
        created.id, fail_above=fail_above, fail_above_categories=fail_above_categories
    )
    records = [await service.match(summary.match_id) for summary in report.matches]
    if interrupted:
        raise CampaignInterrupted(report, records)
    return report, records


class CampaignInterrupted(Exception):  # noqa: N818 - an interrupt with what was played, not an error
    """Ctrl-C stopped an in-process campaign: it is canceled, and this carries what was played
    (the report of the canceled campaign and its match records), so nothing played is lost."""

    def __init__(self, report: CampaignReport, records: list[MatchRecord]) -> None:
        super().__init__(f"campaign {report.progress.id} interrupted")
        self.report = report
        self.records = records


__all__ = [
    "CampaignInterrupted",
    "InProcessPlayer",
    "OrchestratorClient",
    "ProgressLines",
    "fail_above_problems",
    "follow",
    "protocol_probe_problems",
    "read_spec",
    "render_progress",
    "run_in_process",
    "write_reports",
]
