"""The target's surface as its card describes it: interfaces, security, capabilities.

The card is fetched twice, as each protocol version's clients fetch it: with
``A2A-Version: 1.0`` (its ``supportedInterfaces``) and without the header (0.3: ``url``,
``preferredTransport``, ``additionalInterfaces``). Interfaces on the card's origin are
probed (at most :data:`MAX_INTERFACES`); interfaces elsewhere are kept to be reported
(:mod:`arena_core.probes.checks_card`), never contacted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from arena_core.probes.wire import VERSION_HEADER, Exchange, Interface, ProbeSession

CARD_PATH = "/.well-known/agent-card.json"
MAX_INTERFACES = 8
_BINDINGS = {"JSONRPC": "jsonrpc", "HTTP+JSON": "http+json"}


class NoSurface(Exception):  # noqa: N818 - the name reads as the CLI says it
    """The target has no agent card, or no interface on its origin that the probes speak."""


@dataclass
class Surface:
    """What the card says, in both renderings, and the interfaces to probe."""

    card_url: str
    card: dict[str, Any]
    """The card as a 1.0 client fetched it (the 0.3 rendering when the agent has no 1.0 one)."""
    card_v03: dict[str, Any] | None
    exchanges: list[Exchange]
    interfaces: list[Interface] = field(default_factory=list)
    """On the card's origin, the ones the probes speak: what the checks use."""
    declared: list[tuple[str, str, str]] = field(default_factory=list)
    """Every interface declared in either rendering: (url, version, binding as written)."""

    @property
    def name(self) -> str | None:
        name = self.card.get("name")
        return name if isinstance(name, str) else None

    def capability(self, name: str) -> bool:
        capabilities = self.card.get("capabilities")
        if isinstance(capabilities, dict) and capabilities.get(name) is True:
            return True
        legacy = self.card_v03 or {}
        legacy_caps = legacy.get("capabilities")
        return isinstance(legacy_caps, dict) and legacy_caps.get(name) is True

    @property
    def streaming(self) -> bool:
        return self.capability("streaming")

    @property
    def push(self) -> bool:
        return self.capability("pushNotifications")

    @property
    def extended_card(self) -> bool:
        if self.capability("extendedAgentCard"):
            return True
        return any(
            isinstance(card, dict) and card.get("supportsAuthenticatedExtendedCard") is True
            for card in (self.card, self.card_v03)
        )

    @property
    def security_schemes(self) -> dict[str, Any]:
        for card in (self.card, self.card_v03 or {}):
            schemes = card.get("securitySchemes")
            if isinstance(schemes, dict) and schemes:
                return schemes
        return {}

    @property
    def declares_security(self) -> bool:
        """The card names a scheme and requires one (1.0 ``securityRequirements``, 0.3 ``security``)."""
        if not self.security_schemes:
            return False
        for card in (self.card, self.card_v03 or {}):
            required = card.get("securityRequirements", card.get("security"))
            if isinstance(required, list) and required:
                return True
        return False

    @property
    def signatures(self) -> list[Any]:
        signatures = self.card.get("signatures")
        return signatures if isinstance(signatures, list) else []


def _declared(card: dict[str, Any], version_hint: str) -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    interfaces = card.get("supportedInterfaces")
    for item in interfaces if isinstance(interfaces, list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            found.append(
                (item["url"], str(item.get("protocolVersion", "")), str(item.get("protocolBinding", "")))
            )
    if isinstance(card.get("url"), str):
        version = str(card.get("protocolVersion", version_hint))
        found.append(
            (
                card["url"],
                "0.3" if version.startswith("0.") else version,
                str(card.get("preferredTransport", "JSONRPC")),
            )
        )
    extra = card.get("additionalInterfaces")
    for item in extra if isinstance(extra, list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            found.append((item["url"], "0.3", str(item.get("transport", ""))))
    return found


async def discover(session: ProbeSession) -> Surface:
    """Fetch the card both ways and choose the interfaces to probe; raises NoSurface."""
    target = httpx.URL(session.target)
    path = target.path if target.path.endswith(".json") else CARD_PATH
    card_url = str(target.copy_with(path=path, query=None, fragment=None))
    v10 = await session.request("GET", card_url, headers={VERSION_HEADER: "1.0"}, content_type=None)
    v03 = await session.request("GET", card_url, content_type=None)
    cards = [exchange.json() if exchange.status == 200 else None for exchange in (v10, v03)]
    card_10 = cards[0] if isinstance(cards[0], dict) else None
    card_03 = cards[1] if isinstance(cards[1], dict) else None
    if card_10 is None and card_03 is None:
        answer = v10.error or f"HTTP {v10.status}"
        msg = f"no agent card at {card_url} ({answer})"
        raise NoSurface(msg)
    card = card_10 if card_10 is not None else card_03
    assert card is not None
    declared: list[tuple[str, str, str]] = []
    for rendering, hint in ((card_10, "1.0"), (card_03, "0.3")):
        for entry in _declared(rendering or {}, hint):
            if entry not in declared:
                declared.append(entry)
    interfaces: list[Interface] = []
    for url, version, binding in declared:
        kind = _BINDINGS.get(binding.upper())
        if kind is None or version not in ("1.0", "0.3") or not session.same_origin(url):
            continue
        interface = Interface(url, version, kind)  # type: ignore[arg-type]
        if interface not in interfaces:
            interfaces.append(interface)
    interfaces = interfaces[:MAX_INTERFACES]
    surface = Surface(card_url, card, card_03, [v10, v03], interfaces, declared)
    if not interfaces:
        msg = (
            f"the card at {card_url} declares no JSONRPC or HTTP+JSON interface (A2A 1.0 or 0.3) on "
            f"the target's origin {session.origin}: nothing to probe"
        )
        raise NoSurface(msg)
    return surface


__all__ = ["CARD_PATH", "MAX_INTERFACES", "NoSurface", "Surface", "discover"]
