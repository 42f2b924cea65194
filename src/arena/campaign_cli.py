"""The campaign commands: ``arena campaign run|status|list|cancel`` and ``arena report``.

Exit codes: 0 success, 1 ``--fail-above`` exceeded (or a protocol-probe run of ``probes:``
met its ``fail_on`` or ended in an error), 2 invalid spec or input
(unknown id included), 3 the orchestrator cannot be reached, 130 interrupted.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from arena.cli_support import console, err_console, interrupt_on_sigterm, print_error, run, start_telemetry
from arena_core.errors import InvalidInputError
from arena_core.service_runner import settings_from_environment
from arena_core.settings import ArenaSettings

if TYPE_CHECKING:
    from arena.orchestrator_client import OrchestratorClient

campaign_app = typer.Typer(
    help="Campaigns: attackers x defenders x objectives x repetitions, with honest numbers.",
    no_args_is_help=True,
)


OrchestratorOpt = Annotated[
    str | None,
    typer.Option(help="Orchestrator URL (default: ARENA_ORCHESTRATOR_URL; unset: run in this process)."),
]
FailAboveOpt = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Exit 1 when any defender's attack success rate is above RATE (0..1), for CI gates.",
    ),
]
FailAboveCategoryOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-above-category",
        metavar="CATEGORY=RATE",
        help=(
            "Exit 1 when a defender's attack success rate in an OWASP category is above RATE, e.g. "
            "LLM07:2025=0 (repeatable; the JUnit report fails that category's case)."
        ),
    ),
]


def _category_thresholds(items: list[str] | None) -> dict[str, float]:
    from arena_core.owasp import parse_category_threshold

    return dict(parse_category_threshold(item) for item in items or [])


def _orchestrator(url: str | None, settings: ArenaSettings) -> str | None:
    return url or settings.orchestrator_url


def _client(url: str, settings: ArenaSettings) -> OrchestratorClient:
    from arena.orchestrator_client import OrchestratorClient

    return OrchestratorClient(url, token=settings.outbound_token("orchestrator"))


def _required_client(url: str | None) -> OrchestratorClient:
    """A client of the orchestrator ``--orchestrator`` or ``ARENA_ORCHESTRATOR_URL`` names."""
    settings = settings_from_environment()
    found = _orchestrator(url, settings)
    if not found:
        raise InvalidInputError("no orchestrator: pass --orchestrator URL or set ARENA_ORCHESTRATOR_URL")
    return _client(found, settings)


@campaign_app.command("run")
def campaign_run(
    file: Annotated[Path, typer.Argument(help="Campaign spec, YAML or JSON (see examples/campaign.yaml).")],
    orchestrator: OrchestratorOpt = None,
    wait: Annotated[
        bool, typer.Option(help="Follow the campaign to its end (always, when running in-process).")
    ] = False,
    fail_above: FailAboveOpt = None,
    fail_above_category: FailAboveCategoryOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help=(
                "Write report.html, report.json, junit.xml and report.sarif here "
                "(in-process default: out/campaigns/ID)."
            )
        ),
    ] = None,
) -> None:
    """Run a campaign: submit it to an orchestrator, or play it in this process."""

    # Before the campaign engine (and with it a2a-sdk) is imported (see arena_core.telemetry).
    start_telemetry("cli")
    from arena.campaign_command import (
        CampaignInterrupted,
        fail_above_problems,
        follow,
        protocol_probe_problems,
        read_spec,
        render_progress,
        run_in_process,
        write_reports,
    )
    from arena_orchestrator.campaign_models import CampaignReport

    interrupt_on_sigterm()
    settings = settings_from_environment()
    categories = _category_thresholds(fail_above_category)
    spec, text = read_spec(file, settings)
    url = _orchestrator(orchestrator, settings)
    if url is None:
        try:
            report, records = run(
                run_in_process(
                    settings,
                    spec,
                    fail_above=fail_above,
                    console=err_console,
                    fail_above_categories=categories,
                )
            )
        except CampaignInterrupted as stop:
            # What was played is kept: the reports of the canceled campaign are written.
            stopped_dir = out or Path("out") / "campaigns" / stop.report.progress.id
            for path in write_reports(stop.report, stopped_dir, records=stop.records):
                console.print(f"wrote {path}")
            err_console.print("interrupted: the campaign was canceled")
            raise typer.Exit(130) from None
        except KeyboardInterrupt:
            err_console.print("interrupted: the campaign was canceled")
            raise typer.Exit(130) from None
        progress = report.progress
        out_dir: Path | None = out or Path("out") / "campaigns" / progress.id
        match_url = None
    else:
        as_json = file.suffix.lower() == ".json" or text.lstrip().startswith("{")
        media_type = "application/json" if as_json else "application/yaml"
        with _client(url, settings) as client:
            progress = client.submit(text, media_type=media_type)
            console.print(f"campaign {progress.id} queued: {progress.total} matches on {url}")
            if not wait and fail_above is None and not categories and out is None:
                console.print(f"follow it with: arena campaign status {progress.id} --orchestrator {url}")
                return
            try:
                progress = follow(lambda: client.progress(progress.id), err_console)
            except KeyboardInterrupt:
                err_console.print(
                    f"stopped following; the campaign goes on (arena campaign cancel {progress.id})"
                )
                raise typer.Exit(130) from None
            report = None
            records = []
            base = url.rstrip("/")

            def match_url(match_id: str) -> str:
                return f"{base}/v1/matches/{match_id}"

            if out is not None:
                raw = client.report(
                    progress.id, "json", fail_above=fail_above, fail_above_categories=categories
                )
                report = CampaignReport.model_validate_json(raw)
        out_dir = out
    render_progress(console, progress)
    if out_dir is not None and report is not None:
        for path in write_reports(report, out_dir, match_url=match_url, records=records):
            console.print(f"wrote {path}")
    problems = fail_above_problems(progress, fail_above, categories) + protocol_probe_problems(progress)
    for line in problems:
        print_error(line)
    if problems:
        raise typer.Exit(1)


@campaign_app.command("status")
def campaign_status(
    campaign_id: Annotated[str, typer.Argument(help="The campaign id (c-...).")],
    orchestrator: OrchestratorOpt = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the progress as JSON.")] = False,
) -> None:
    """Show a campaign's progress and attack success rates."""
    from arena.campaign_command import render_progress

    with _required_client(orchestrator) as client:
        progress = client.progress(campaign_id)
    if json_output:
        print(progress.model_dump_json(indent=2))  # noqa: T201 - machine-readable output
    else:
        render_progress(console, progress)


@campaign_app.command("list")
def campaign_list(
    orchestrator: OrchestratorOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="How many, newest first.")] = 20,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the orchestrator's campaigns, newest first."""
    import json

    from rich.table import Table

    with _required_client(orchestrator) as client:
        campaigns = client.list(limit)
    if json_output:
        print(json.dumps([c.model_dump(mode="json") for c in campaigns], indent=2))  # noqa: T201
        return
    table = Table()
    for column in ("id", "name", "status", "done", "ASR", "errors", "created"):
        table.add_column(column)
    for c in campaigns:
        rate = "n/a" if c.asr.rate is None else f"{c.asr.rate:.0%}"
        table.add_row(
            c.id,
            Text(c.name),
            c.status,
            f"{c.done}/{c.total}",
            rate,
            str(c.counts.error),
            f"{c.created_at:%Y-%m-%d %H:%M}",
        )
    console.print(table)


@campaign_app.command("cancel")
def campaign_cancel(
    campaign_id: Annotated[str, typer.Argument(help="The campaign id (c-...).")],
    orchestrator: OrchestratorOpt = None,
) -> None:
    """Cancel a campaign: queued matches are not played, running ones are stopped."""

    with _required_client(orchestrator) as client:
        progress = client.cancel(campaign_id)
    console.print(
        f"campaign {progress.id}: {progress.status} ({progress.done}/{progress.total} accounted for)"
    )


class ReportFormat(StrEnum):
    """Report formats."""

    html = "html"
    json = "json"
    junit = "junit"
    sarif = "sarif"


def report(
    campaign_id: Annotated[str, typer.Argument(help="The campaign id (c-...).")],
    format: Annotated[ReportFormat, typer.Option(help="html, json, junit or sarif.")] = ReportFormat.html,  # noqa: A002
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="File to write (default: stdout).")
    ] = None,
    orchestrator: OrchestratorOpt = None,
    fail_above: FailAboveOpt = None,
    fail_above_category: FailAboveCategoryOpt = None,
    out_root: Annotated[
        Path, typer.Option(help="Where in-process campaigns saved their reports (no orchestrator).")
    ] = Path("out"),
) -> None:
    """Write a campaign's report (from the orchestrator, or saved by an in-process run)."""
    from arena.campaign_command import fail_above_problems, protocol_probe_problems
    from arena_orchestrator.campaign_models import CampaignReport
    from arena_orchestrator.reports import render_report

    settings = settings_from_environment()
    categories = _category_thresholds(fail_above_category)
    url = _orchestrator(orchestrator, settings)
    if url is not None:
        with _client(url, settings) as client:
            body = client.report(
                campaign_id, format.value, fail_above=fail_above, fail_above_categories=categories
            )
            saved = CampaignReport.model_validate_json(client.report(campaign_id, "json"))
    else:
        saved_path = out_root / "campaigns" / campaign_id / "report.json"
        if not saved_path.is_file():
            raise InvalidInputError(
                "no orchestrator given (--orchestrator or ARENA_ORCHESTRATOR_URL) and no saved report "
                f"at {saved_path}"
            )
        try:
            saved = CampaignReport.model_validate_json(saved_path.read_bytes())
        except ValueError as exc:
            raise InvalidInputError(f"{saved_path} is not a campaign report: {exc}") from exc
        saved = saved.model_copy(update={"fail_above": fail_above, "fail_above_categories": categories})
        body = render_report(saved, format.value)[0].encode("utf-8")
    if output is None:
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(body)
        err_console.print(f"wrote {output}")
    problems = fail_above_problems(saved.progress, fail_above, categories) + protocol_probe_problems(
        saved.progress
    )
    for line in problems:
        print_error(line)
    if problems:
        raise typer.Exit(1)


__all__ = ["campaign_app", "report"]
