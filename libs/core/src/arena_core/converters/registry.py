"""Converter names, their classes, and parsing of ``--converter NAME[:k=v,...]``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from arena_core.converters.converter import (
    MAX_CHAIN,
    Converter,
    ConverterParamValue,
    ConverterSpec,
    SplittingConverter,
)
from arena_core.converters.encodings import Base64Converter, HexConverter, ReverseConverter, Rot13Converter
from arena_core.converters.model_rewrites import ParaphraseConverter, TranslateConverter
from arena_core.converters.obfuscation import (
    HomoglyphConverter,
    LeetspeakConverter,
    NoiseConverter,
    RandomCapsConverter,
    SpacingConverter,
    TagSmugglingConverter,
    ZeroWidthConverter,
)
from arena_core.converters.split import SplitConverter
from arena_core.converters.wrapping import CodeBlockConverter, MarkdownConverter
from arena_core.errors import InvalidInputError

CONVERTERS: Mapping[str, type[Converter]] = MappingProxyType(
    {
        converter.name: converter
        for converter in (
            Base64Converter,
            HexConverter,
            Rot13Converter,
            ReverseConverter,
            LeetspeakConverter,
            HomoglyphConverter,
            SpacingConverter,
            TagSmugglingConverter,
            ZeroWidthConverter,
            RandomCapsConverter,
            NoiseConverter,
            CodeBlockConverter,
            MarkdownConverter,
            SplitConverter,
            TranslateConverter,
            ParaphraseConverter,
        )
    }
)
CONVERTER_NAMES: tuple[str, ...] = tuple(CONVERTERS)


def converter_class(name: str) -> type[Converter]:
    """The class of converter ``name``; :class:`InvalidInputError` lists the valid names."""
    converter = CONVERTERS.get(name)
    if converter is None:
        raise InvalidInputError(f"unknown converter '{name}'; choose one of: {', '.join(CONVERTER_NAMES)}")
    return converter


def build_converters(specs: Sequence[ConverterSpec]) -> list[Converter]:
    """The converters of a chain, validated: known names, valid params, at most
    :data:`MAX_CHAIN`, ``split`` only last. Raises :class:`InvalidInputError`."""
    if len(specs) > MAX_CHAIN:
        raise InvalidInputError(f"at most {MAX_CHAIN} converters in a chain, not {len(specs)}")
    converters = []
    for index, spec in enumerate(specs):
        cls = converter_class(spec.name)
        if issubclass(cls, SplittingConverter) and index != len(specs) - 1:
            raise InvalidInputError(
                f"converter '{spec.name}' turns a message into several turns: put it last"
            )
        converters.append(cls(cls.parse_params(spec.params)))
    return converters


def parse_converter(text: str) -> ConverterSpec:
    """``NAME`` or ``NAME:k=v,k=v`` as a spec; each value read as its parameter's type says
    (``hex:separator=:`` keeps a text, ``noise:sigma=0.3`` a number). A value cannot hold a comma.

    Raises :class:`InvalidInputError` for an unknown name or a malformed or invalid parameter.
    """
    name, _, rest = text.strip().partition(":")
    raw: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))) if rest else ():
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InvalidInputError(f"converter '{text}': parameter '{item}' is not key=value")
        raw[key.strip()] = value.strip()
    cls = converter_class(name)
    parsed = cls.parse_params(raw)  # lax: "0.3" becomes a float where the field is one
    params: dict[str, ConverterParamValue] = {key: getattr(parsed, key) for key in raw}
    return ConverterSpec(name=name, params=params)


__all__ = [
    "CONVERTERS",
    "CONVERTER_NAMES",
    "MAX_CHAIN",
    "build_converters",
    "converter_class",
    "parse_converter",
]
