"""card.signature-invalid's work on one rendering of the card: read, fetch keys, judge, report.

Kept apart from :mod:`arena_core.probes.checks.card` (which registers the check) because it is
most of the check's code; the cryptography is in :mod:`arena_core.probes.signing`.
"""

from __future__ import annotations

from typing import Any

from arena_core.probes.base import CheckRun, ProbeContext
from arena_core.probes.model import Severity
from arena_core.probes.signing import (
    CanonicalizationError,
    JwksFetch,
    MalformedSignatureError,
    Verdict,
    fetch_jwks,
    judge,
    parse_signature,
    signed_payloads,
)
from arena_core.probes.wire import Exchange

MAX_SIGNATURES = 8
"""Signatures judged per rendering (a card may carry many; each may cost a key-set fetch)."""
MAX_JKU_FETCHES = 3


def rendering_name(card: dict[str, Any]) -> str:
    return "1.0" if "supportedInterfaces" in card else "0.3"


async def judge_rendering(
    ctx: ProbeContext,
    run: CheckRun,
    name: str,
    card: dict[str, Any],
    card_exchange: Exchange | None,
    fetched: dict[str, JwksFetch],
) -> int:
    """Judge one rendering's signatures; how many were judged (found valid, invalid or malformed)."""
    shown = [card_exchange] if card_exchange is not None else []
    entries = card["signatures"]
    if not isinstance(entries, list) or not entries:
        run.find(
            f"The {name} card's `signatures` is not a non-empty list of JWS objects: clients that "
            "require signed cards must reject it.",
            evidence=shown,
            severity=Severity.MEDIUM,
            title="The card carries a malformed signature",
        )
        return 1
    try:
        payloads = signed_payloads(card)
    except CanonicalizationError as exc:
        run.find(
            f"The {name} card has no JCS (RFC 8785) canonical form ({exc}), so none of its "
            f"{len(entries)} signature(s) can be verified by any client.",
            evidence=shown,
            severity=Severity.MEDIUM,
            title="The card carries a malformed signature",
        )
        return 1
    judged = 0
    verdicts: list[tuple[int, Verdict, list[Exchange], str]] = []
    for index, entry in enumerate(entries[:MAX_SIGNATURES]):
        label = f"signature {index + 1} of the {name} card"
        try:
            signature = parse_signature(entry)
        except MalformedSignatureError as exc:
            judged += 1
            run.find(
                f"{label.capitalize()} is malformed: {exc}. No client can verify it; a client that requires "
                "signed cards rejects the card, one that does not may take the broken signature for a "
                "check that passed.",
                evidence=shown,
                severity=Severity.MEDIUM,
                title="The card carries a malformed signature",
            )
            continue
        keys = list(ctx.options.card_keys)
        sources = ["the keys given to the run (--card-keys)"] if keys else []
        seen = list(shown)
        if signature.jku:
            jwks = await _jwks(ctx, signature.jku, fetched)
            keys += jwks.keys
            if jwks.keys:
                sources.append(f"the JWK Set at {jwks.url}")
            if jwks.exchange is not None:
                seen.append(jwks.exchange)
            if jwks.problem:
                run.note(f"{label}: {jwks.problem}")
        verdicts.append((index, judge(signature, payloads, keys), seen, " and ".join(sources)))
    any_valid = any(verdict.outcome == "valid" for _, verdict, _, _ in verdicts)
    judged += sum(1 for _, verdict, _, _ in verdicts if verdict.outcome not in ("no-key", "unsupported"))
    for index, verdict, seen, key_sources in verdicts:
        label = f"signature {index + 1} of the {name} card"
        if verdict.outcome == "valid":
            run.note(f"{label} {verdict.reason}")
        elif verdict.outcome in ("no-key", "unsupported"):
            run.note(f"{label} not verified: {verdict.reason}")
        elif verdict.outcome == "unsigned":
            run.find(
                f"{label.capitalize()} claims to be a signature but {verdict.reason}. A client that "
                "accepts it trusts a card nobody signed.",
                evidence=seen,
                title="The card's signature uses algorithm none",
            )
        else:
            also = (
                " Another signature of the same card verifies, so clients that accept any one valid "
                "signature still trust the card; this one is stale or forged."
                if any_valid
                else " The card was changed after it was signed, or signed with another key: a client "
                "that checks signatures must reject it, and one that does not cannot tell a forged card."
            )
            run.find(
                f"{label.capitalize()} (kid {verdict.kid or 'none'}) is invalid: {verdict.reason} (from "
                f"{key_sources}) over the JCS (RFC 8785) form of the card without `signatures`.{also}",
                evidence=seen,
                severity=Severity.MEDIUM if any_valid else None,
            )
    return judged


async def _jwks(ctx: ProbeContext, jku: str, fetched: dict[str, JwksFetch]) -> JwksFetch:
    if jku in fetched:
        return fetched[jku]
    if sum(1 for done in fetched.values() if done.exchange is not None) >= MAX_JKU_FETCHES:
        result = JwksFetch(jku, problem=f"its jku {jku} was not fetched (at most {MAX_JKU_FETCHES} per run)")
    else:
        result = await fetch_jwks(ctx.session, jku, base=ctx.surface.card_url)
    fetched[jku] = result
    return result


__all__ = ["MAX_JKU_FETCHES", "MAX_SIGNATURES", "judge_rendering", "rendering_name"]
