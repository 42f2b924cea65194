"""The attacker's ``probe`` skill: protocol security probes of a target, as an A2A task.

Input: a DataPart (or JSON text) ``{"probe": {...}}``, a
:class:`~arena_core.probes.request.ProbeRequest`. The task streams one ``working`` status per
check (a text line plus the :class:`~arena_core.probes.model.CheckResult` as a DataPart), adds
the :class:`~arena_core.probes.model.ProbeReport` as the ``probe-report`` artifact and ends
``completed``, whatever the findings (they are the result, not a failure). It ends ``failed``
when the run could not start: a token variable not set or not scoped to the target, the
target refused by ``ARENA_TARGET_ALLOWLIST``, no agent card or no interface to probe.

Tokens never travel: the request names this attacker's ``ARENA_TARGET_TOKEN_*`` variables,
resolved and scoped exactly as a match's ``target_token_env``
(:meth:`~arena_attacker.match_runner.MatchRunner.target_token`).
"""

from __future__ import annotations

from a2a.helpers import new_data_part
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, TaskState

from arena_attacker.match_runner import MatchRunner
from arena_core.errors import ArenaError, TargetNotAllowedError
from arena_core.probes.model import PROBE_REPORT_MEDIA_TYPE, CheckResult, ProbeReport
from arena_core.probes.request import ProbeRequest
from arena_core.probes.runner import run_probes
from arena_core.probes.surface import NoSurface

PROBE_CHECK_MEDIA_TYPE = "application/vnd.a2a-arena.probe-check+json"


def check_line(result: CheckResult) -> str:
    """One status line per finished check."""
    line = f"{result.check_id}: {result.status}"
    if result.findings:
        worst = max(finding.severity for finding in result.findings)
        line += f" ({len(result.findings)} finding(s), worst {worst.value})"
    elif result.status in ("skipped", "error") and result.reason:
        line += f" ({result.reason[:200]})"
    return line


def report_summary(report: ProbeReport) -> str:
    """The final status line of a probe run."""
    counts = ", ".join(f"{count} {name}" for name, count in report.counts().items() if count)
    skipped = sum(result.status == "skipped" for result in report.results)
    errored = len(report.errored())
    line = f"probed {len(report.interfaces)} interface(s) with {report.requests} request(s): "
    line += f"{len(report.findings)} finding(s)" + (f" ({counts})" if counts else "")
    line += f", {skipped} check(s) skipped, {errored} errored"
    return line + (f"; stopped early: {report.stopped}" if report.stopped else "")


async def run_probe_task(request: ProbeRequest, runner: MatchRunner, updater: TaskUpdater) -> None:
    """Run ``request`` in the task of ``updater`` (see the module doc)."""
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
    except ArenaError as exc:
        await updater.failed(_text(updater, exc.message, exc.kind))
        return
    await updater.start_work(_text(updater, f"probing the A2A surface of {request.target}", None))

    async def on_check(result: CheckResult) -> None:
        await updater.update_status(
            TaskState.TASK_STATE_WORKING,
            message=updater.new_agent_message(
                parts=[
                    Part(text=check_line(result)),
                    new_data_part(result.model_dump(mode="json"), media_type=PROBE_CHECK_MEDIA_TYPE),
                ]
            ),
        )

    try:
        report = await run_probes(
            request.target,
            request.options(),
            token=token,
            second_token=second,
            guard=runner.guard,
            progress=on_check,
        )
    except TargetNotAllowedError as exc:
        await updater.failed(_text(updater, exc.message, exc.kind))
        return
    except NoSurface as exc:
        await updater.failed(_text(updater, f"nothing to probe: {exc}", "target_unreachable"))
        return
    await updater.add_artifact(
        [new_data_part(report.model_dump(mode="json"), media_type=PROBE_REPORT_MEDIA_TYPE)],
        name="probe-report",
    )
    await updater.complete(_text(updater, report_summary(report), None))


def _text(updater: TaskUpdater, text: str, error_kind: str | None) -> Message:
    metadata = {"arena": {"error": error_kind}} if error_kind else None
    return updater.new_agent_message(parts=[Part(text=text)], metadata=metadata)


__all__ = ["PROBE_CHECK_MEDIA_TYPE", "check_line", "report_summary", "run_probe_task"]
