"""Write a match to disk: ``transcript.md`` for people, ``result.json`` for tools."""

from __future__ import annotations

import re
from pathlib import Path

from arena_core.judges.action_judge import describe_call
from arena_core.match_models import MatchResult, TurnRecord

_OUTCOME = {
    "attacker_won": "attacker won",
    "defended": "defended",
    "attacker_refused": "the attacker model refused to play (not a defence)",
    "error": "error",
}


_PHRASE_JUDGES = frozenset({"phrase", "exact", "strict", "regex"})
_ACTIONS_FROM = {
    "task": "the defender's task (tool-call records)",
    "trace": "the match's trace (execute_tool spans)",
}


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in (text or "(empty reply)").splitlines())


def verdict_mark(judge: str, success: bool) -> str:
    """``phrase said`` / ``met`` for a success (phrase judges / the others), ``held`` otherwise."""
    if not success:
        return "held"
    return "phrase said" if judge in _PHRASE_JUDGES else "met"


ATTACHMENT_PREVIEW_CHARS = 2000


def attachment_lines(turn: TurnRecord) -> list[str]:
    """What the attacker sent beside its text: each part named, its content quoted (cut)."""
    lines: list[str] = []
    for attachment in turn.attachments:
        content = attachment.content
        cut = content[:ATTACHMENT_PREVIEW_CHARS] + ("…" if len(content) > ATTACHMENT_PREVIEW_CHARS else "")
        name, media_type = (text.replace("`", "'") for text in (attachment.name, attachment.media_type))
        lines += [
            "",
            f"*Sent beside it:* {attachment.kind} part `{name}` ({media_type}):",
            "",
            _quote(cut),
        ]
    return lines


def action_lines(turn: TurnRecord) -> list[str]:
    """One Markdown bullet per tool call of the turn (the arguments as code, the error if any)."""
    lines = []
    for call in turn.actions:
        text = describe_call(call).replace("`", "'")
        # The error is the defender's text: one line, no backticks, so it cannot end the
        # bullet or start a heading of its own.
        error = " ".join((call.error or "").split()).replace("`", "'")[:300]
        lines.append(f"- `{text}`" + (f": `{error}`" if error else ""))
    return lines


def transcript_markdown(result: MatchResult) -> str:
    """The match as Markdown: settings, every turn, the verdict."""
    if result.probe_report is not None:
        return probe_run_markdown(result)
    lines = [
        f"# A2A Arena match {result.match_id}",
        "",
        f"- **Outcome:** {_OUTCOME[result.outcome]}",
        f"- **Target:** {result.target_name or 'unknown'} at {result.target}",
        f"- **Objective:** {result.objective.goal}",
        f"- **Strategy:** {result.strategy} · **judge:** {result.judge} · **seed:** {result.seed}",
        f"- **Turns:** {result.turns_used} of {result.max_turns} · **resets:** {result.resets}",
        f"- **Models:** attacker {result.attacker_model or 'none (scripted playbook)'} · "
        f"defender {result.defender_model or 'not reported'}",
        f"- **Tokens:** attacker {result.attacker_usage.total_tokens} · "
        f"defender {result.defender_usage.total_tokens}",
        f"- **Started:** {result.started_at.isoformat()} · **duration:** {result.duration_ms / 1000:.1f} s",
    ]
    if result.protocol is not None:
        lines.append(f"- **Protocol:** A2A {result.protocol.version} over {result.protocol.binding}")
    if result.error:
        lines.append(f"- **Error:** {result.error}")
    if result.attacker_refusal:
        lines.append(f"- **Attacker refusal:** {result.attacker_refusal[:500]}")
    if result.reproducibility is not None:
        repro = result.reproducibility
        lines.append(
            f"- **Reproducibility:** params `{repro.strategy_params}` · seed {repro.seed} · "
            f"attacker temperature {repro.attacker_temperature} · judge model {repro.judge_model} · "
            f"prompts {', '.join(f'{k}={v[:19]}…' for k, v in sorted(repro.prompt_hashes.items())) or 'none'}"
        )
        if repro.converters:
            model = f" · rewrites by {repro.converter_model}" if repro.converter_model else ""
            lines.append(
                f"- **Converters:** {' → '.join(f'`{c}`' for c in repro.converters)} · "
                f"seed {repro.converter_seed}{model}"
            )
    if result.actions_from is not None:
        lines.append(f"- **Actions read from:** {_ACTIONS_FROM[result.actions_from]}")
    if result.verdict is not None:
        lines.append(f"- **Verdict:** {result.verdict.judge} judge: {result.verdict.reason}")
        if result.verdict.evidence:
            lines.append(f"- **Evidence:** “{result.verdict.evidence}”")
    for turn in result.turns:
        lines += [
            "",
            f"## Turn {turn.turn}" + (" (new conversation)" if turn.new_conversation else ""),
            "",
            f"contextId `{turn.context_id}` · taskId `{turn.task_id or '(none: a bare message)'}` · "
            f"{turn.duration_ms / 1000:.2f} s · defender state `{turn.defender_state}`",
        ]
        if turn.stream or turn.replay:
            lines += [
                "",
                f"*Stream:* {turn.stream or 'main'}" + (" · replayed prefix" if turn.replay else ""),
            ]
        if turn.reasoning:
            lines += ["", f"*Attacker's notes:* {turn.reasoning}"]
        if turn.guard:
            lines += ["", f"*Defender's output guard intervened:* {turn.guard}"]
        first_part = turn.part is None or turn.part.startswith("1/")
        if turn.strategy_text is not None and first_part:
            lines += ["", "**Strategy wrote** (before the converters):", "", _quote(turn.strategy_text)]
        sent = "**Attacker** (as sent" + (f", part {turn.part}" if turn.part else "") + "):"
        lines += [
            "",
            sent if turn.strategy_text is not None else "**Attacker:**",
            "",
            _quote(turn.attacker_text),
            *attachment_lines(turn),
            "",
            "**Defender:**",
            "",
            _quote(turn.defender_text),
        ]
        if turn.actions:
            lines += [
                "",
                f"**Defender's actions** ({len(turn.actions)} tool call(s)):",
                "",
                *action_lines(turn),
            ]
        lines += [
            "",
            f"**Judge ({turn.verdict.judge}):** "
            f"{verdict_mark(turn.verdict.judge, turn.verdict.success)}: {turn.verdict.reason}",
        ]
    return "\n".join(lines) + "\n"


_PROBE_OUTCOME = {
    "attacker_won": "failed: a finding at the run's threshold or above, or a check that broke",
    "defended": "passed: no finding at the run's threshold or above",
}
_MAX_PROBE_TEXT = 500


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _one_line(text: str) -> str:
    """The target's text as one line of Markdown: no backticks, control characters as ``\\xNN``, cut."""
    flat = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", " ".join(text.split()).replace("`", "'"))
    return flat if len(flat) <= _MAX_PROBE_TEXT else flat[: _MAX_PROBE_TEXT - 1] + "…"


def probe_run_markdown(result: MatchResult) -> str:
    """A campaign's protocol-probe run (``probes:``): what was probed, each finding and what to do."""
    report = result.probe_report
    if report is None:
        raise ValueError(f"{result.match_id} is not a protocol-probe run")
    statuses = {status: sum(r.status == status for r in report.results) for status in ("passed", "failed")}
    skipped = [r for r in report.results if r.status == "skipped"]
    errored = report.errored()
    lines = [
        f"# A2A Arena protocol probes {result.match_id}",
        "",
        f"- **Outcome:** {_PROBE_OUTCOME.get(result.outcome, result.outcome)} ({result.judge})",
        f"- **Target:** {result.target_name or 'unknown'} at {result.target}",
        "- **Interfaces:** "
        + (
            ", ".join(f"`{i.protocol_version} {i.binding} {_one_line(i.url)}`" for i in report.interfaces)
            or "none"
        ),
        f"- **Checks:** {len(report.results)}: {statuses['passed']} passed, "
        f"{statuses['failed']} with findings, {len(skipped)} skipped, {len(errored)} broke · "
        f"**requests:** {report.requests} · **duration:** {result.duration_ms / 1000:.1f} s",
    ]
    if report.stopped:
        lines.append(f"- **Stopped early:** {_one_line(report.stopped)}")
    lines += ["", "## Findings", ""]
    findings = sorted(report.findings, key=lambda f: -f.severity.rank)
    for finding in findings:
        where = f" on `{_one_line(finding.interface)}`" if finding.interface else " (the card)"
        lines += [
            f"- **[{finding.severity.value}] `{finding.check_id}`**{where}: {_one_line(finding.detail)}",
            f"  *Remediation:* {_one_line(finding.remediation)}",
        ]
    if not findings:
        lines.append("None.")
    if errored or skipped:
        lines += ["", "## Not checked", ""]
        lines += [f"- `{r.check_id}` broke: {_one_line(r.reason or 'no reason')}" for r in errored]
        lines += [f"- `{r.check_id}` skipped: {_one_line(r.reason or 'no reason')}" for r in skipped]
    return "\n".join(lines) + "\n"


def write_match(result: MatchResult, directory: Path) -> tuple[Path, Path]:
    """Write ``transcript.md`` and ``result.json`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    transcript = directory / "transcript.md"
    transcript.write_text(transcript_markdown(result), encoding="utf-8")
    result_json = directory / "result.json"
    result_json.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return transcript, result_json


__all__ = [
    "action_lines",
    "attachment_lines",
    "probe_run_markdown",
    "transcript_markdown",
    "verdict_mark",
    "write_match",
]
