"""One probe run: discover the surface, run the selected checks in order, report.

Checks run one at a time, in :data:`CATEGORY_ORDER` (error leaks last: they read every
response of the run), each inside the session's bounds. A check that raises
:class:`Skip` is ``skipped`` with its reason; once the session stops (budget, time, the
target gone) every remaining check is skipped with that reason; any other exception is
an ``error`` (its type and message, redacted), never a pass.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import httpx

from arena_core.a2a.egress_guard import EgressGuard
from arena_core.egress_policy import EgressPolicy
from arena_core.errors import TargetNotAllowedError
from arena_core.probes import checks  # noqa: F401 - registers the checks
from arena_core.probes.base import CHECKS, CheckDef, CheckRun, ProbeContext, ProbeOptions, Skip
from arena_core.probes.model import CATEGORY_ORDER, CheckResult, ProbeReport
from arena_core.probes.surface import NoSurface, discover
from arena_core.probes.wire import ANONYMOUS, Identity, Limits, ProbeSession, ProbeStopped

logger = logging.getLogger(__name__)

Progress = Callable[[CheckResult], Awaitable[None] | None]


def catalogue() -> list[CheckDef]:
    """Every check, in the order a run takes them."""
    order = {category: index for index, category in enumerate(CATEGORY_ORDER)}
    return sorted(CHECKS, key=lambda definition: order[definition.category])


def unknown_names(names: frozenset[str]) -> list[str]:
    """Names in ``--only``/``--skip`` that are neither a check nor a category."""
    known = {definition.id for definition in CHECKS} | set(CATEGORY_ORDER)
    return sorted(name for name in names if name not in known)


async def run_probes(
    target: str,
    options: ProbeOptions | None = None,
    *,
    token: str | None = None,
    second_token: str | None = None,
    policy: EgressPolicy | None = None,
    guard: EgressGuard | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    progress: Progress | None = None,
) -> ProbeReport:
    """Probe ``target`` (an agent's base URL or its card's URL).

    Raises NoSurface when there is no card or no interface to probe on the target's
    origin, TargetNotAllowedError when the egress allowlist refuses the target.
    """
    options = options or ProbeOptions()
    limits = Limits(options.max_requests, options.rate_per_s, options.timeout_s, options.max_duration_s)
    started = datetime.now(UTC)
    session = ProbeSession(target, limits=limits, policy=policy, guard=guard, transport=transport)
    for secret in (token, second_token):
        session.redact.add(secret)
    listener = None
    try:
        try:
            surface = await discover(session)
        except ProbeStopped as stopped:
            raise NoSurface(f"stopped before the agent card was read: {stopped}") from None
        first = Identity("first", token) if token else ANONYMOUS
        if second_token:
            second: Identity | None = Identity("second", second_token)
        elif token is None:
            second = Identity("second")  # two anonymous clients
        else:
            second = None
        context = ProbeContext(session, surface, options, first, second)
        selected = [d for d in catalogue() if options.selects(d.id, d.category)]
        if surface.push and any(d.category == "push" for d in selected):
            from arena_core.probes.listener import WebhookListener

            listener = WebhookListener()
            await listener.start()
            context.listener = listener
        results: list[CheckResult] = []
        for definition in selected:
            result = await _run_one(definition, context)
            results.append(result)
            if progress is not None:
                outcome = progress(result)
                if outcome is not None:
                    await outcome
        return ProbeReport(
            target=session.redact(target),
            agent_name=surface.name[:300] if surface.name else None,
            started_at=started,
            finished_at=datetime.now(UTC),
            interfaces=[interface.described() for interface in surface.interfaces],
            identities=0 if second is None and token is None else (2 if second is not None else 1),
            results=results,
            requests=session.requests,
            stopped=session.stopped,
        )
    finally:
        if listener is not None:
            await listener.stop()
        await session.aclose()


async def _run_one(definition: CheckDef, context: ProbeContext) -> CheckResult:
    run = CheckRun(definition, context.session)
    if context.session.stopped:
        return run.result("skipped", f"not run: {context.session.stopped}")
    try:
        await definition.run(context, run)
    except Skip as skipped:
        if run.findings:
            return run.result()
        return run.result("skipped", str(skipped))
    except ProbeStopped as stopped:
        if run.findings:
            return run.result()
        return run.result("skipped", f"not finished: {stopped}")
    except TargetNotAllowedError as refused:
        return run.result("error", refused.message if hasattr(refused, "message") else str(refused))
    except Exception as exc:
        logger.warning("probe check %s broke", definition.id, exc_info=True)
        return run.result("error", f"the check broke: {type(exc).__name__}: {exc}")
    return run.result()


__all__ = ["NoSurface", "Progress", "catalogue", "run_probes", "unknown_names"]
