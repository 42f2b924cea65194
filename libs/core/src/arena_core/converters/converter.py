"""The converter interface: how a message is re-encoded between a strategy and the target.

A converter takes the text a strategy wrote and returns what is sent instead: base64 of it,
the same words in leetspeak, a document with the text hidden in a comment. Defenders that
block plain English and let the same request through in another form look stronger than they
are; converters show it. Converters compose in order (:mod:`arena_core.converters.chain`).

Every converter is a pure function of its text, its parameters and a random generator seeded
per message (:class:`TextConverter`), so a seed makes a match's messages identical from run to
run; except the model-driven ones (:class:`ModelConverter`: translation, paraphrase), which
record the model they used. A converter with an inverse (:class:`Reversible`) round-trips:
``invert(convert(text)) == text`` for the texts its docstring names. One converter,
``split``, turns one message into several turns (:class:`SplittingConverter`); it comes last.
"""

from __future__ import annotations

import abc
import random
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena_core.errors import InvalidInputError

ConverterParamValue = bool | int | float | str
NAME_PATTERN = r"^[a-z][a-z0-9-]{1,31}$"
MAX_CHAIN = 8
"""Converters a chain may hold."""


class ConverterParams(BaseModel):
    """Base of every converter's parameters: frozen, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ConverterSpec(BaseModel):
    """One step of a chain as a campaign or a match request names it: ``{name, params}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN)
    params: dict[str, ConverterParamValue] = Field(default_factory=dict, max_length=16)

    @property
    def label(self) -> str:
        """``name`` or ``name:k=v,k=v`` (the form ``--converter`` takes)."""
        if not self.params:
            return self.name
        return self.name + ":" + ",".join(f"{key}={value}" for key, value in sorted(self.params.items()))


class Converter(abc.ABC):
    """One re-encoding of a message."""

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[ConverterParams]] = ConverterParams
    seeded: ClassVar[bool] = False
    """True when the output depends on the random generator (else it is ignored)."""

    def __init__(self, params: ConverterParams) -> None:
        self.params = params

    @classmethod
    def parse_params(cls, raw: Mapping[str, Any]) -> ConverterParams:
        """Validate ``raw`` for this converter; :class:`InvalidInputError` names every problem."""
        try:
            return cls.Params.model_validate(dict(raw))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}" for err in exc.errors()
            )
            raise InvalidInputError(f"invalid params for converter '{cls.name}': {problems}") from exc


class Reversible(abc.ABC):
    """A converter with an inverse: :meth:`invert` undoes its conversion, for the texts its
    docstring names (a mixin beside :class:`TextConverter` or :class:`SplittingConverter`)."""

    @abc.abstractmethod
    def invert(self, text: str) -> str:
        """The text before the conversion."""


class TextConverter(Converter):
    """A pure function of the text, the parameters and ``rng``."""

    @abc.abstractmethod
    def convert(self, text: str, rng: random.Random) -> str:
        """The converted text; the same inputs (and ``rng`` state) give the same output."""


class ModelConverter(Converter):
    """A converter that asks a model (the attacker's) to rewrite the text; its model is recorded."""

    @abc.abstractmethod
    def instructions(self) -> tuple[str, str]:
        """``(system prompt, template)``: the template's ``{text}`` is the message."""


class SplittingConverter(Converter):
    """Turns one message into several, sent as consecutive turns (the last step of a chain)."""

    @abc.abstractmethod
    def split(self, text: str, rng: random.Random) -> list[str]:
        """The messages to send in order (joined back by ``invert`` where it is :class:`Reversible`)."""


__all__ = [
    "MAX_CHAIN",
    "NAME_PATTERN",
    "Converter",
    "ConverterParamValue",
    "ConverterParams",
    "ConverterSpec",
    "ModelConverter",
    "Reversible",
    "SplittingConverter",
    "TextConverter",
]
