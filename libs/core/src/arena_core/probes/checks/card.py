"""Card checks: what the agent card promises (origin, transport, security, signatures) and what holds.

The card is read in both renderings the surface fetched (1.0 and 0.3). Interfaces the card
lists on another origin are reported from the card and never contacted; requests go to the
target's own interfaces only, a few per interface, and reuse what other checks already
learnt (:mod:`arena_core.probes.checks._credentials`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import httpx

from arena_core.origin import Origin
from arena_core.probes.base import CheckRun, ProbeContext, Skip, check, read_answer, task_in
from arena_core.probes.checks._card_signatures import judge_rendering, rendering_name
from arena_core.probes.checks._credentials import anonymous_send, guarded, rendering, status_text
from arena_core.probes.model import Severity
from arena_core.probes.signing import JwksFetch
from arena_core.probes.wire import Exchange, Interface

# -- card.foreign-interface ----------------------------------------------------------------------


@check(
    "card.foreign-interface",
    "card",
    "The card sends clients to another origin",
    Severity.HIGH,
    remediation=(
        "List only interfaces on the card's own origin (scheme, host and port), or serve the card from "
        "the origin of the interfaces. If an interface really lives elsewhere (an API host), sign the "
        "card (A2A card signatures) so clients can tell the listing is genuine, and serve it over HTTPS."
    ),
)
async def foreign_interface(ctx: ProbeContext, run: CheckRun) -> None:
    """Every interface either rendering of the card declares (1.0 ``supportedInterfaces``, 0.3
    ``url`` and ``additionalInterfaces``) is compared with the card's origin. An interface on
    another host is a finding (HIGH): a client that trusts the card sends its messages and its
    bearer token there. One on the same host but another port or scheme is a finding too, at
    MEDIUM. A scheme-less ``host:port`` (gRPC) counts as foreign only on another host. Foreign
    interfaces are never contacted."""
    surface = ctx.surface
    target = ctx.session.origin
    target_host = host_of(ctx.session.target) or target.host
    grouped: dict[str, list[str]] = {}
    for url, version, binding in surface.declared:
        grouped.setdefault(url, []).append(f"{version or '?'} {binding or '?'}")
    for url, kinds in grouped.items():
        if ctx.session.same_origin(url):
            continue
        spoken = ", ".join(kinds)
        origin = Origin.of_web(url)
        host = host_of(url)
        if host is None:
            run.note(f"{url!r} ({spoken}) is no URL the probe can read; not checked")
            continue
        if origin is None and host == target_host:
            run.note(f"{url} ({spoken}): another protocol on the target's own host; not probed")
            continue
        if host == target_host:
            run.find(
                f"The card lists the interface {url} ({spoken}) on {origin or url}, the card's own host but "
                f"not its origin {target} (another port or scheme). Clients send messages and their "
                "credentials there; whatever listens on that port is trusted with them. The probe did "
                "not contact it.",
                evidence=surface.exchanges,
                severity=Severity.MEDIUM,
            )
            continue
        run.find(
            f"The card at {surface.card_url} lists the interface {url} ({spoken}) on {origin or host}, "
            f"another origin than the card's ({target}). A client that trusts the card sends its "
            "messages, and the bearer token the card's security scheme asks for, to that host; "
            "anyone who can change the card (or this listing) can redirect them. The probe did not "
            "contact it.",
            evidence=surface.exchanges,
        )
    run.note(f"{len(grouped)} declared interface URL(s) compared with {target}")


_HOST = re.compile(r"^[a-z0-9.:-]+$")


def host_of(url: str) -> str | None:
    """The host a declared interface URL names: ``http(s)://``, another scheme (``grpc://``) or a
    scheme-less ``host:port`` (how gRPC interfaces are often written); None for anything else."""
    try:
        host = httpx.URL(url if "://" in url else f"//{url}").raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeDecodeError):
        return None
    return host if host and _HOST.match(host) else None


# -- card.plain-http --------------------------------------------------------------------------------


@check(
    "card.plain-http",
    "card",
    "The card or an interface is served over plain HTTP",
    Severity.MEDIUM,
    remediation=(
        "Serve the card and every interface over HTTPS (TLS 1.2 or later) and list https:// URLs in "
        "the card; redirect http:// to https:// and send Strict-Transport-Security. Plain HTTP is fine "
        "only on loopback."
    ),
)
async def plain_http(ctx: ProbeContext, run: CheckRun) -> None:
    """The card's own URL and every interface either rendering declares are read for their scheme.
    A plain ``http://`` URL on a host that is not loopback (``localhost``, ``127.0.0.0/8``,
    ``::1``) is a finding: anyone on the network path can read the bearer tokens and messages,
    and can rewrite the card itself (its interfaces and security schemes). No request is sent."""
    surface = ctx.surface
    probed = {interface.url: interface for interface in ctx.interfaces}
    urls = [surface.card_url, *dict.fromkeys(url for url, _, _ in surface.declared)]
    looked = 0
    for url in urls:
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL:
            continue
        if parsed.scheme != "http" or not parsed.host:
            continue
        looked += 1
        if loopback(parsed.host):
            run.note(f"{url}: plain HTTP on loopback")
            continue
        what = "the agent card itself" if url == surface.card_url else "an interface"
        consequence = (
            "Anyone on the network path can rewrite the card: point clients at another endpoint or "
            "drop its security requirements."
            if url == surface.card_url
            else "Anyone on the network path reads the messages and the bearer token of every client "
            "that uses it, and can change the answers."
        )
        run.find(
            f"{what.capitalize()} is served over plain HTTP on a host that is not loopback: {url}. "
            f"{consequence}",
            evidence=surface.exchanges[:1] if url == surface.card_url else surface.exchanges,
            interface=probed.get(url),
        )
    run.note(f"{len(urls)} URL(s) read, {looked} plain HTTP")


def loopback(host: str) -> bool:
    """``localhost`` (and ``*.localhost``), 127.0.0.0/8 or ::1."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


# -- card.security-not-enforced -------------------------------------------------------------------


@check(
    "card.security-not-enforced",
    "card",
    "The card declares security that the agent does not enforce",
    Severity.HIGH,
    remediation=(
        "Enforce the card's security requirements on every interface: authenticate each A2A request "
        "before it is dispatched (one middleware in front of every route and binding) and answer 401 "
        "with WWW-Authenticate when credentials are missing. Only the public agent card may be served "
        "without them."
    ),
)
async def security_not_enforced(ctx: ProbeContext, run: CheckRun) -> None:
    """Only when the card declares security (a scheme and a requirement). On each interface an
    unauthenticated SendMessage is sent; when a token was given, an unauthenticated GetTask of a
    task the first caller made is sent as well. Either served (a Task in the answer) is a
    finding: the card tells clients the agent is protected while anyone can use it."""
    surface = ctx.surface
    if not surface.declares_security:
        raise Skip("the card declares no security requirement")
    schemes = ", ".join(list(surface.security_schemes)[:5])
    for interface in ctx.interfaces:
        sent = await anonymous_send(ctx, interface)
        answer = read_answer(interface, sent)
        if answer.served:
            run.find(
                f"The card declares the security scheme(s) {schemes} and requires them, but "
                f"{interface.label} served a SendMessage that carried no credentials (no Authorization "
                "header): it answered "
                f"with {_what(interface, answer.payload)}. Anyone who can reach the agent can use it, while "
                "clients reading the card believe it is protected.",
                evidence=[sent, *ctx.surface.exchanges[:1]],
                interface=interface,
            )
            continue
        if ctx.first.token is not None:
            try:
                own = await ctx.own_task(interface)
            except Skip:
                own = None
            if own is not None:
                read = await ctx.session.get_task(interface, own.task_id)
                if read_answer(interface, read).served:
                    run.find(
                        f"The card declares the security scheme(s) {schemes} and requires them, but "
                        f"{interface.label} served a GetTask without credentials: the first caller's task "
                        f"{own.task_id} (history and replies included) was returned to a client that sent "
                        "no Authorization header.",
                        evidence=[read, own.exchange, *ctx.surface.exchanges[:1]],
                        interface=interface,
                    )
                    continue
        run.note(f"{interface.label}: unauthenticated SendMessage refused ({status_text(sent)})")


def _what(interface: Interface, payload: Any) -> str:
    task = task_in(interface, payload)
    if task is not None and isinstance(task.get("id"), str):
        return f"a Task (id {task['id']})"
    return "a result"


# -- card.security-undeclared ---------------------------------------------------------------------


@check(
    "card.security-undeclared",
    "card",
    "The agent requires credentials the card does not declare",
    Severity.LOW,
    remediation=(
        "Declare how to authenticate in the card: `securitySchemes` (e.g. an HTTP bearer scheme) and "
        "`securityRequirements` (A2A 1.0) / `security` (0.3) naming it, in every rendering of the card "
        "the agent serves."
    ),
)
async def security_undeclared(ctx: ProbeContext, run: CheckRun) -> None:
    """On each interface an unauthenticated GetTask (the one every check shares) tells whether the
    interface refuses clients without credentials (401/403). Where it does, the rendering of the
    card that interface's clients read (1.0 or 0.3) must declare a security scheme and require
    it; a refusal with nothing declared is a finding: clients cannot learn from the card how to
    authenticate, so they fail or get credentials configured out of band."""
    refusing = 0
    for interface in ctx.interfaces:
        refusal = await guarded(ctx, interface)
        if refusal is None:
            run.note(f"{interface.label}: answers without credentials")
            continue
        refused = refusal.exchange
        refusing += 1
        card, name = rendering(ctx, interface)
        schemes = card.get("securitySchemes")
        required = card.get("securityRequirements", card.get("security"))
        names = list(schemes)[:5] if isinstance(schemes, dict) else []
        has_schemes = bool(names)
        has_required = isinstance(required, list) and bool(required)
        if has_schemes and has_required:
            run.note(f"{interface.label}: refuses without credentials; the {name} card declares it")
            continue
        missing = (
            "declares no security scheme (`securitySchemes` is empty or missing)"
            if not has_schemes
            else f"declares the scheme(s) {', '.join(names)} but requires none "
            f"(`{'securityRequirements' if interface.version == '1.0' else 'security'}` is empty or missing)"
        )
        run.find(
            f"{interface.label} refuses requests without credentials ({status_text(refused)}), but the "
            f"{name} card its clients read {missing}. A client cannot learn from the card that it must "
            "authenticate, nor how.",
            evidence=[refused, *ctx.surface.exchanges[:1]],
            interface=interface,
        )
    if not refusing:
        raise Skip("no interface refuses requests without credentials")


# -- card.signature-invalid -----------------------------------------------------------------------


@check(
    "card.signature-invalid",
    "card",
    "The card's signature does not verify",
    Severity.HIGH,
    remediation=(
        "Re-sign the card after every change and publish the signing key: sign the JCS (RFC 8785) form "
        "of the card without `signatures` as a detached JWS (ES256, RS256, PS256 or EdDSA) with a `kid`, "
        "and serve the public key in a JWK Set at the `jku` URL on the agent's own origin. Remove "
        "signatures made with retired keys."
    ),
)
async def signature_invalid(ctx: ProbeContext, run: CheckRun) -> None:
    """Each signature in the card (both renderings; at most 8) is read as a detached JWS over the
    JCS (RFC 8785) form of the card without ``signatures``. Keys are the ones given to the run
    (``--card-keys``) and the JWK Set at the protected header's ``jku`` when that is on the
    target's origin (fetched once; a ``jku`` elsewhere is never fetched); only fitting keys are
    used (kid, key type, curve and algorithm match). A signature that does not verify with a
    fitting key is a finding (HIGH; MEDIUM when another signature of the same card verifies);
    algorithm ``none`` is a finding; a malformed signature entry is a finding of its own kind
    (MEDIUM). A signature with no fitting key, or with an algorithm the probe does not check,
    is noted, not a finding; when no signature could be judged at all the check is skipped."""
    surface = ctx.surface
    renderings: list[tuple[str, dict[str, Any], Exchange | None]] = [
        (rendering_name(surface.card), surface.card, surface.exchanges[0])
    ]
    if surface.card_v03 is not None and surface.card_v03 != surface.card:
        second = surface.exchanges[1] if len(surface.exchanges) > 1 else None
        renderings.append((rendering_name(surface.card_v03), surface.card_v03, second))
    signed = [(name, card, exchange) for name, card, exchange in renderings if "signatures" in card]
    if not signed:
        raise Skip("the card carries no signatures")
    fetched: dict[str, JwksFetch] = {}
    judged = 0
    for name, card, exchange in signed:
        judged += await judge_rendering(ctx, run, name, card, exchange, fetched)
    if not judged:
        raise Skip("no signature could be verified: " + "; ".join(run.looked))


# -- card.extended-unauthenticated ----------------------------------------------------------------


@check(
    "card.extended-unauthenticated",
    "card",
    "The extended card is served without credentials",
    Severity.MEDIUM,
    remediation=(
        "Serve the extended agent card (GetExtendedAgentCard, agent/getAuthenticatedExtendedCard, "
        "GET /extendedAgentCard, GET /v1/card) only to authenticated clients, with the same check as the "
        "other A2A methods; put nothing in it that the public card may not show."
    ),
)
async def extended_unauthenticated(ctx: ProbeContext, run: CheckRun) -> None:
    """Only when the card offers an extended card. On each interface that otherwise refuses
    clients without credentials, the extended card is asked for without any; served is a
    finding: the card meant for authenticated clients (often more skills, internal endpoints)
    is public. Interfaces that ask no credentials at all are noted, not judged."""
    if not ctx.surface.extended_card:
        raise Skip("the card offers no extended card")
    public = _skill_ids(ctx.surface.card)
    judged = 0
    for interface in ctx.interfaces:
        refusal = await guarded(ctx, interface)
        if refusal is None:
            run.note(f"{interface.label}: asks no credentials at all; an open extended card is expected")
            continue
        refused = refusal.exchange
        judged += 1
        exchange = await ctx.session.extended_card(interface)
        answer = read_answer(interface, exchange)
        if not answer.served:
            run.note(
                f"{interface.label}: extended card refused without credentials ({status_text(exchange)})"
            )
            continue
        extra = sorted(_skill_ids(answer.payload) - public)
        more = (
            f" It lists skills the public card does not: {', '.join(extra[:10])}."
            if extra
            else " It lists no skill beyond the public card's, but anything added to it later is public too."
        )
        run.find(
            f"{interface.label} serves the extended agent card to a client without credentials, although "
            f"it refuses other requests without them ({status_text(refused)}).{more}",
            evidence=[exchange, refused],
            interface=interface,
        )
    if not judged:
        raise Skip("no interface refuses requests without credentials: an open extended card is expected")


def _skill_ids(card: Any) -> set[str]:
    document = card.get("card", card) if isinstance(card, dict) else None
    skills = document.get("skills") if isinstance(document, dict) else None
    return {
        str(skill.get("id") or skill.get("name"))
        for skill in (skills if isinstance(skills, list) else [])
        if isinstance(skill, dict)
    }


__all__ = [
    "extended_unauthenticated",
    "foreign_interface",
    "plain_http",
    "security_not_enforced",
    "security_undeclared",
    "signature_invalid",
]
