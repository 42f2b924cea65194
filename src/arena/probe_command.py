"""``arena probe --target URL``: check an A2A agent's protocol surface for security problems.

The checks (:mod:`arena_core.probes`) read the agent's card, then speak raw A2A to the
interfaces it declares on its own origin: credentials, isolation between callers, push
webhooks, resource bounds, input handling and error leaks. docs/probes.md describes each one.

Tokens never appear on the command line: ``--token-env NAME`` names the environment variable
that holds one. The egress allowlist (``ARENA_TARGET_ALLOWLIST``) applies to every request.

Exit codes: 0 no finding at or above ``--fail-on`` and no check broke; 1 a finding at or above
it, or a check broke (a broken check is never a pass); 2 invalid options (an unknown check,
a token variable that is not set, an unreadable ``--card-keys``, an unknown ``--out`` suffix);
3 nothing to probe (no agent card, no interface on the target's origin, the target refused by
the egress allowlist or gone before its card was read); 130 interrupted.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from arena.cli_support import console, err_console, fail, interrupt_on_sigterm, run
from arena_core.probes.model import Severity

if TYPE_CHECKING:
    from arena_core.probes.base import ProbeOptions
    from arena_core.probes.model import CheckResult, ProbeReport

EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_NOTHING_TO_PROBE = 3
EXIT_INTERRUPTED = 130

MAX_CARD_KEYS_BYTES = 1_048_576
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_STATUS_STYLE = {"passed": "green", "failed": "bold red", "skipped": "dim", "error": "bold magenta"}


def _token(name: str | None, option: str) -> str | None:
    """The token in the environment variable ``name``; exits 2 when it is not set."""
    if name is None:
        return None
    if not _ENV_NAME.fullmatch(name):
        # Never echo it: it may be the token itself, given by mistake.
        fail(f"{option} takes the NAME of an environment variable holding the token, never the token", 2)
    token = os.environ.get(name, "").strip()
    if not token:
        fail(f"the environment variable {name} ({option}) is not set or empty", 2)
    return token


def _card_keys(path: Path | None) -> tuple[dict[str, Any], ...]:
    """The JWKs of a JWKS file (``{"keys": [...]}``); exits 2 when it cannot be read or is not one."""
    if path is None:
        return ()
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_CARD_KEYS_BYTES + 1)
    except OSError as exc:
        fail(f"cannot read --card-keys {path}: {exc.strerror or exc}", 2)
    if len(raw) > MAX_CARD_KEYS_BYTES:
        fail(f"--card-keys {path} is larger than {MAX_CARD_KEYS_BYTES} bytes", 2)
    try:
        document = json.loads(raw)
    except ValueError as exc:
        fail(f"--card-keys {path} is not JSON: {exc}", 2)
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list) or not keys:
        fail(f'--card-keys {path} is not a JWK set: expected {{"keys": [...]}} with at least one key', 2)
    for number, key in enumerate(keys, start=1):
        if not isinstance(key, dict) or not isinstance(key.get("kty"), str):
            fail(f"--card-keys {path}: key {number} is not a JWK (an object with a 'kty')", 2)
    return tuple(keys)


def _names(values: list[str] | None, option: str) -> frozenset[str]:
    from arena_core.probes.runner import unknown_names

    names = frozenset(value.strip() for value in values or [] if value.strip())
    unknown = unknown_names(names)
    if unknown:
        shown = ", ".join(repr(name[:60]) for name in unknown[:5])
        fail(f"unknown check or category in {option}: {shown}; `arena probe --list` shows them", 2)
    return names


def list_checks(*, json_output: bool) -> None:
    """Print the catalogue: id, category, severity, title (as JSON with ``json_output``)."""
    from arena_core.probes.runner import catalogue

    checks = catalogue()
    if json_output:
        rows = [
            {
                "id": d.id,
                "category": d.category,
                "severity": d.severity.value,
                "title": d.title,
                "description": d.description,
                "remediation": d.remediation,
            }
            for d in checks
        ]
        print(json.dumps(rows, indent=2))  # noqa: T201 - machine-readable output
        return
    table = Table(title=f"{len(checks)} checks", title_justify="left")
    for column in ("id", "category", "severity", "title"):
        table.add_column(column)
    for d in checks:
        table.add_row(Text(d.id), Text(d.category), Text(d.severity.value), Text(d.title))
    console.print(table)


def _progress(result: CheckResult) -> None:
    line = Text.assemble(
        (f"{result.status:>7} ", _STATUS_STYLE.get(result.status, "")),
        result.check_id,
    )
    if result.findings:
        line.append(f"  {len(result.findings)} finding(s)", style="red")
    elif result.status in ("skipped", "error") and result.reason:
        reason = re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", result.reason)
        line.append(f"  {reason[:100]}", style="dim")
    err_console.print(line, highlight=False)


def _probe(
    target: str,
    options: ProbeOptions,
    *,
    token: str | None,
    second_token: str | None,
    show_progress: bool,
) -> ProbeReport:
    from arena_core.errors import TargetNotAllowedError
    from arena_core.probes.runner import NoSurface, run_probes
    from arena_core.probes.wire import ProbeStopped
    from arena_core.service_runner import settings_from_environment

    settings = settings_from_environment()
    try:
        return run(
            run_probes(
                target,
                options,
                token=token,
                second_token=second_token,
                policy=settings.target_policy(),
                progress=_progress if show_progress else None,
            )
        )
    except NoSurface as exc:
        fail(str(exc), EXIT_NOTHING_TO_PROBE)
    except TargetNotAllowedError as exc:
        fail(exc.message, EXIT_NOTHING_TO_PROBE)
    except ProbeStopped as exc:
        fail(f"the run stopped before the agent card was read: {exc}", EXIT_NOTHING_TO_PROBE)


def probe(
    target: Annotated[
        str | None,
        typer.Option(
            metavar="URL", help="Base URL of the A2A agent (or its card's URL); required unless --list."
        ),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Environment variable holding the first caller's bearer token (never the token).",
        ),
    ] = None,
    second_token_env: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Environment variable holding a second caller's token (the isolation checks).",
        ),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(metavar="ID|CATEGORY", help="Run only this check or category (repeatable)."),
    ] = None,
    skip: Annotated[
        list[str] | None,
        typer.Option(metavar="ID|CATEGORY", help="Do not run this check or category (repeatable)."),
    ] = None,
    fail_on: Annotated[
        Severity, typer.Option(help="Exit 1 on a finding at or above this severity.", case_sensitive=False)
    ] = Severity.HIGH,
    max_requests: Annotated[
        int, typer.Option(metavar="N", min=1, max=10_000, help="Most requests the whole run sends.")
    ] = 400,
    rate: Annotated[
        float, typer.Option(metavar="R", min=0, max=1000, help="Most requests per second (above 0).")
    ] = 20.0,
    timeout: Annotated[
        float, typer.Option(metavar="S", min=0.1, max=600, help="Seconds to wait for one answer.")
    ] = 10.0,
    max_duration: Annotated[
        float, typer.Option(metavar="S", min=1, max=86_400, help="Seconds the whole run may take.")
    ] = 300.0,
    wait: Annotated[
        float,
        typer.Option(
            metavar="S",
            min=0,
            max=600,
            help="Seconds to wait for something to happen (a task to expire, a webhook).",
        ),
    ] = 5.0,
    concurrent_tasks: Annotated[
        int, typer.Option(metavar="N", min=1, max=100, help="Tasks the concurrency check opens at once.")
    ] = 10,
    card_keys: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help='JWKS file ({"keys": [...]}): keys that may have signed the card.'),
    ] = None,
    out: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="FILE",
            help="Also write the report here (repeatable): .json, .html, .xml (JUnit), .sarif.",
        ),
    ] = None,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print the JSON report (or the catalogue) instead of the console view."),
    ] = False,
    list_: Annotated[bool, typer.Option("--list", help="Print the checks and exit.")] = False,
) -> None:
    """Probe any A2A agent for protocol security problems: auth, isolation, push, input, leaks."""
    from arena_core.origin import Origin
    from arena_core.probes.base import ProbeOptions
    from arena_core.probes.reports import render_console, report_format, to_json, write_report

    if list_:
        list_checks(json_output=json_output)
        return
    if target is None:
        fail("--target is required (or --list to see the checks)", 2)
    if Origin.of_web(target) is None:
        fail(f"--target must be an http(s) URL with a host, not {target[:200]!r}", 2)
    if rate <= 0:
        fail("--rate must be above 0", 2)
    if second_token_env is not None and token_env is None:
        fail("--second-token-env needs --token-env (the first caller's token)", 2)
    for path in out or []:
        try:
            report_format(path)
        except ValueError as exc:
            fail(f"--out: {exc}", 2)
    options = ProbeOptions(
        only=_names(only, "--only"),
        skip=_names(skip, "--skip"),
        fail_on=fail_on,
        max_requests=max_requests,
        rate_per_s=rate,
        timeout_s=timeout,
        max_duration_s=max_duration,
        wait_s=wait,
        concurrent_tasks=concurrent_tasks,
        card_keys=_card_keys(card_keys),
    )
    token = _token(token_env, "--token-env")
    second_token = _token(second_token_env, "--second-token-env")
    if token is not None and token == second_token:
        fail(
            "--token-env and --second-token-env hold the same token: the isolation checks need two callers", 2
        )

    interrupt_on_sigterm()
    if not json_output:
        err_console.print(Text.assemble(("probing ", "bold"), target), highlight=False)
    try:
        report = _probe(
            target, options, token=token, second_token=second_token, show_progress=not json_output
        )
    except KeyboardInterrupt:
        fail("interrupted: the probe run was stopped", EXIT_INTERRUPTED)
    if json_output:
        print(to_json(report), end="")  # noqa: T201 - machine-readable output
    else:
        render_console(report, console)
    for path in out or []:
        try:
            write_report(report, path)
        except OSError as exc:
            fail(f"cannot write {path}: {exc.strerror or exc}", 2)
        err_console.print(Text(f"wrote {path}"), highlight=False)
    if report.fails(fail_on):
        above = [finding for finding in report.findings if finding.severity >= fail_on]
        broke = [result.check_id for result in report.errored()]
        why = [f"{len(above)} finding(s) at or above {fail_on.value}"] if above else []
        why += [f"{len(broke)} check(s) broke ({', '.join(broke)})"] if broke else []
        err_console.print(Text("failing: " + "; ".join(why), style="bold red"), highlight=False)
        raise typer.Exit(EXIT_FINDINGS)


__all__ = ["list_checks", "probe"]
