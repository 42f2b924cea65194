"""Converters: re-encodings of what a strategy sends (base64, leetspeak, homoglyphs, invisible
characters, wrappings, payload splitting, translation ...), composable in order.

See :mod:`arena_core.converters.converter` for the interface and
:mod:`arena_core.converters.chain` for how a match applies them.
"""

from arena_core.converters.chain import (
    MAX_CONVERTED_CHARS,
    ConvertedMessage,
    ConverterChain,
    Rewrite,
    converter_seed_of,
)
from arena_core.converters.converter import (
    Converter,
    ConverterParams,
    ConverterSpec,
    ModelConverter,
    Reversible,
    SplittingConverter,
    TextConverter,
)
from arena_core.converters.registry import (
    CONVERTER_NAMES,
    CONVERTERS,
    MAX_CHAIN,
    build_converters,
    converter_class,
    parse_converter,
)

__all__ = [
    "CONVERTERS",
    "CONVERTER_NAMES",
    "MAX_CHAIN",
    "MAX_CONVERTED_CHARS",
    "ConvertedMessage",
    "Converter",
    "ConverterChain",
    "ConverterParams",
    "ConverterSpec",
    "ModelConverter",
    "Reversible",
    "Rewrite",
    "SplittingConverter",
    "TextConverter",
    "build_converters",
    "converter_class",
    "converter_seed_of",
    "parse_converter",
]
