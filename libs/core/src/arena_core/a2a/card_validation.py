"""Check an agent card against the A2A 1.0 card schema.

The check is strict: the JSON must parse as the 1.0 ``AgentCard`` message with
no unknown fields (so 0.3 legacy fields such as ``url`` or
``protocolVersion`` are reported), every field the specification marks
REQUIRED must be present, and every interface must name a protocol version.
"""

from __future__ import annotations

from typing import Any

from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf.json_format import ParseDict, ParseError

LEGACY_V03_FIELDS = ("url", "preferredTransport", "protocolVersion", "additionalInterfaces")


def card_problems_v1(raw: dict[str, Any]) -> list[str]:
    """Return what keeps ``raw`` from being a strict A2A 1.0 card ([] if valid)."""
    problems: list[str] = []
    legacy = [name for name in LEGACY_V03_FIELDS if name in raw]
    if legacy:
        problems.append(
            f"has A2A 0.3 legacy fields {', '.join(legacy)} (fine for 0.3 clients, not strict 1.0)"
        )
    strict = {key: value for key, value in raw.items() if key not in LEGACY_V03_FIELDS}
    card = AgentCard()
    try:
        ParseDict(strict, card, ignore_unknown_fields=False)
    except ParseError as exc:
        problems.append(f"does not match the 1.0 AgentCard schema: {exc}")
        return problems
    try:
        validate_proto_required_fields(card)
    except InvalidParamsError as exc:
        details = exc.data.get("errors", []) if isinstance(exc.data, dict) else []
        fields = ", ".join(str(d.get("field")) for d in details if isinstance(d, dict))
        problems.append(f"misses required fields: {fields or exc}")
    reported = " ".join(problems)
    for index, interface in enumerate(card.supported_interfaces):
        if not interface.protocol_version and "protocol_version" not in reported:
            problems.append(f"supportedInterfaces[{index}] names no protocolVersion")
    return problems


__all__ = ["LEGACY_V03_FIELDS", "card_problems_v1"]
