"""Requirements named by their section of the specification: ``pytest --collect-only`` reads as a checklist.

Each test checks one requirement on several wires (protocol version x binding). The
test id of one check is ``<version>-<binding>-sec<section>-<LEVEL>-<requirement>``, e.g.
``1.0-jsonrpc-sec3.1.1-MUST-SendMessage-returns-a-Task-or-a-Message``, where the
section is the one of *that version's* specification (A2A 1.0 numbers its sections
differently from 0.3) and the level is the RFC 2119 keyword of the sentence checked.
``arena`` in place of a section marks a contract of the arena agents themselves (not the
protocol's). Test ids are ASCII: pytest escapes anything else, so "sec" stands for the
section sign.

Sources: A2A 1.0.0 (a2a-protocol.org/latest/specification, "Latest Released Version
1.0.0") and A2A 0.3 (docs/specification.md of a2aproject/A2A in its 0.3 form, with
specification/json/a2a.json for the 0.3 types).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import pytest

from conformance.wire import Wire

Level = Literal["MUST", "SHOULD", "MAY"]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One sentence of the specification, located in each version's text.

    ``v10``/``v03``: the section in the 1.0 / 0.3 specification (None: that version has
    no such requirement, so the check does not run on its wires). ``level`` is the
    keyword of the 1.0 text; ``level_v03`` the 0.3 one where it differs.
    """

    title: str
    level: Level
    v10: str | None = None
    v03: str | None = None
    level_v03: Level | None = None

    def section(self, version: str) -> str | None:
        return self.v10 if version == "1.0" else self.v03

    def level_for(self, version: str) -> Level:
        return self.level_v03 if version == "0.3" and self.level_v03 else self.level

    def test_id(self, prefix: str, version: str) -> str:
        section = self.section(version)
        where = "arena" if section == "arena" else f"sec{section}"
        level = "" if section == "arena" else f"-{self.level_for(version)}"
        return f"{prefix}-{where}{level}-{slug(self.title)}"


def slug(text: str) -> str:
    """``SendMessage returns a Task or a Message`` -> ``SendMessage-returns-a-Task-or-a-Message``."""
    return re.sub(r"[^A-Za-z0-9.:/+()=-]+", "-", text).strip("-")


def on_wires(requirement: Requirement, wires: Iterable[Wire]) -> pytest.MarkDecorator:
    """Parametrize ``wire`` over ``wires`` whose version has ``requirement``, named as a checklist line."""
    params = [
        pytest.param(wire, id=requirement.test_id(wire.id, wire.version))
        for wire in wires
        if requirement.section(wire.version) is not None
    ]
    return pytest.mark.parametrize("wire", params)


def on_versions(requirement: Requirement, versions: Iterable[str], what: str) -> pytest.MarkDecorator:
    """Parametrize ``version`` for checks not bound to one binding (the agent card: ``what="card"``)."""
    params = [
        pytest.param(version, id=requirement.test_id(f"{version}-{what}", version))
        for version in versions
        if requirement.section(version) is not None
    ]
    return pytest.mark.parametrize("version", params)


__all__ = ["Level", "Requirement", "on_versions", "on_wires", "slug"]
