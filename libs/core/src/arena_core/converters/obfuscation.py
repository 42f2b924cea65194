"""Obfuscations that keep the text readable to a model and unreadable to a naive filter.

Leetspeak, look-alike letters from other scripts, spacing between characters, invisible
Unicode (tag characters, zero-width characters), random capitalisation, and the character
noise of Best-of-N jailbreaking (Hughes et al. 2024, arXiv:2412.03556, appendix A.1: scramble
the middle of words of four letters or more with probability sigma^(1/2), capitalise each
character with probability sigma^(1/2), move a printable ASCII character one code point up or
down with probability sigma^3; sigma = 0.4 in the paper).

``rate`` parameters are the share of eligible characters changed, drawn from the seeded
generator: with ``rate: 1`` the output does not depend on the seed.
"""

from __future__ import annotations

import random
from typing import ClassVar

from pydantic import Field

from arena_core.converters.converter import ConverterParams, Reversible, TextConverter


class RateParams(ConverterParams):
    rate: float = Field(default=1.0, ge=0.0, le=1.0)
    """The share of eligible characters changed."""


def _rated(text: str, table: dict[str, str], rate: float, rng: random.Random) -> str:
    out = []
    for ch in text:
        replacement = table.get(ch)
        # Draw for every eligible character, also at rate 1, so the stream stays aligned.
        if replacement is not None and (rate >= 1.0 or rng.random() < rate):
            out.append(replacement)
        else:
            out.append(ch)
    return "".join(out)


LEET = {"a": "4", "b": "8", "e": "3", "g": "6", "i": "1", "o": "0", "s": "5", "t": "7", "z": "2"}
"""Lower and upper case letters alike; the digits are distinct, so the table reads back."""
_LEET_TABLE = LEET | {letter.upper(): digit for letter, digit in LEET.items()}
UNLEET = {digit: letter for letter, digit in LEET.items()}


class LeetspeakConverter(TextConverter):
    """Letters written as the digits that look like them (``a`` as 4, ``e`` as 3, ``o`` as 0 ...).

    Not reversible: case is lost, and a digit of the original would read back as a letter.
    """

    name: ClassVar[str] = "leetspeak"
    description: ClassVar[str] = "Letters as look-alike digits (a=4, e=3, i=1, o=0, s=5, t=7 ...)."
    Params: ClassVar[type[ConverterParams]] = RateParams
    seeded: ClassVar[bool] = True

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, RateParams)
        return _rated(text, _LEET_TABLE, self.params.rate, rng)


HOMOGLYPHS = {
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "i": "\u0456", "j": "\u0458", "o": "\u043e",
    "p": "\u0440", "s": "\u0455", "x": "\u0445", "y": "\u0443", "A": "\u0410", "B": "\u0412",
    "C": "\u0421", "E": "\u0415", "H": "\u041d", "I": "\u0406", "K": "\u041a", "M": "\u041c",
    "O": "\u041e", "P": "\u0420", "S": "\u0405", "T": "\u0422", "X": "\u0425", "Y": "\u04ae",
}  # fmt: skip
"""Latin letters and the Cyrillic letters drawn like them (one to one)."""
LATIN_OF_HOMOGLYPH = {glyph: latin for latin, glyph in HOMOGLYPHS.items()}


class HomoglyphConverter(TextConverter, Reversible):
    """Latin letters swapped for the Cyrillic letters drawn like them: the same to a reader,
    other code points to a filter. Round-trips on text without those Cyrillic letters."""

    name: ClassVar[str] = "homoglyphs"
    description: ClassVar[str] = "Latin letters as look-alike Cyrillic letters."
    Params: ClassVar[type[ConverterParams]] = RateParams
    seeded: ClassVar[bool] = True

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, RateParams)
        return _rated(text, HOMOGLYPHS, self.params.rate, rng)

    def invert(self, text: str) -> str:
        return "".join(LATIN_OF_HOMOGLYPH.get(ch, ch) for ch in text)


class SpacingParams(ConverterParams):
    separator: str = Field(default=" ", min_length=1, max_length=3, pattern=r"^[^\n\r\w]{1,3}$")
    """Put between the characters of a word (no line break, letter or digit: the text reads back)."""


class SpacingConverter(TextConverter, Reversible):
    """The characters of every word apart (``I G i v e``); words three separators apart.

    Round-trips on text whose words are one space apart and hold no separator.
    """

    name: ClassVar[str] = "spacing"
    description: ClassVar[str] = "A separator between the characters of every word."
    Params: ClassVar[type[ConverterParams]] = SpacingParams

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, SpacingParams)
        sep = self.params.separator
        return "\n".join(
            (sep * 3).join(sep.join(word) for word in line.split(" ")) for line in text.split("\n")
        )

    def invert(self, text: str) -> str:
        assert isinstance(self.params, SpacingParams)
        sep = self.params.separator
        return "\n".join(
            " ".join(word.replace(sep, "") for word in line.split(sep * 3)) for line in text.split("\n")
        )


TAG_BASE = 0xE0000
"""Unicode tag characters (U+E0020..U+E007E) mirror printable ASCII and are drawn as nothing."""


class TagParams(ConverterParams):
    cover: str = Field(default="", max_length=500)
    """Visible text before the hidden message (a reader sees only this)."""


class TagSmugglingConverter(TextConverter, Reversible):
    """Printable ASCII written as invisible Unicode tag characters ("ASCII smuggling"): a
    screen shows nothing (or ``cover``), a tokenizer still reads the text. Other characters
    (line breaks, non-ASCII) stay as they are. Round-trips on text without tag characters."""

    name: ClassVar[str] = "tags"
    description: ClassVar[str] = (
        "Printable ASCII as invisible Unicode tag characters, after optional visible cover text."
    )
    Params: ClassVar[type[ConverterParams]] = TagParams

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, TagParams)
        hidden = "".join(chr(TAG_BASE + ord(ch)) if 0x20 <= ord(ch) <= 0x7E else ch for ch in text)
        return self.params.cover + hidden

    def invert(self, text: str) -> str:
        assert isinstance(self.params, TagParams)
        cover = self.params.cover
        body = text[len(cover) :] if cover and text.startswith(cover) else text
        return untag(body)


def untag(text: str) -> str:
    """Tag characters back to the ASCII they mirror; everything else kept."""
    return "".join(chr(ord(ch) - TAG_BASE) if 0xE0020 <= ord(ch) <= 0xE007E else ch for ch in text)


ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060")
"""Zero-width space, non-joiner, joiner, word joiner."""


class ZeroWidthConverter(TextConverter, Reversible):
    """Zero-width characters between characters (``rate``: the share of gaps that get one,
    each drawn from :data:`ZERO_WIDTH`): the text looks the same and matches no keyword.
    Round-trips on text without zero-width characters."""

    name: ClassVar[str] = "zero-width"
    description: ClassVar[str] = "Invisible zero-width characters between characters."
    Params: ClassVar[type[ConverterParams]] = RateParams
    seeded: ClassVar[bool] = True

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, RateParams)
        out = []
        for index, ch in enumerate(text):
            out.append(ch)
            if index < len(text) - 1:
                mark = rng.choice(ZERO_WIDTH)
                if self.params.rate >= 1.0 or rng.random() < self.params.rate:
                    out.append(mark)
        return "".join(out)

    def invert(self, text: str) -> str:
        return strip_zero_width(text)


def strip_zero_width(text: str) -> str:
    """``text`` without the characters of :data:`ZERO_WIDTH`."""
    return text.translate({ord(ch): None for ch in ZERO_WIDTH})


class CapsParams(ConverterParams):
    rate: float = Field(default=0.5, ge=0.0, le=1.0)
    """The chance of each letter to be upper case (the others are lower case)."""


class RandomCapsConverter(TextConverter):
    """Every letter upper case with probability ``rate``, lower case otherwise."""

    name: ClassVar[str] = "random-caps"
    description: ClassVar[str] = "Random capitalisation of every letter."
    Params: ClassVar[type[ConverterParams]] = CapsParams
    seeded: ClassVar[bool] = True

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, CapsParams)
        return "".join(
            (ch.upper() if rng.random() < self.params.rate else ch.lower()) if ch.isalpha() else ch
            for ch in text
        )


class NoiseParams(ConverterParams):
    sigma: float = Field(default=0.4, ge=0.0, le=1.0)
    """Strength: scramble and capitalise with probability sigma^(1/2), noise with sigma^3."""
    scramble: bool = True
    caps: bool = True
    noise: bool = True


class NoiseConverter(TextConverter):
    """Best-of-N's text augmentations (see the module): scrambled word middles, random
    capitals, printable characters one code point off. Each draw is from the seeded generator,
    so Best-of-N samples differ by their message index and repeat with the seed."""

    name: ClassVar[str] = "noise"
    description: ClassVar[str] = "Best-of-N augmentations: scrambled words, random capitals, character noise."
    Params: ClassVar[type[ConverterParams]] = NoiseParams
    seeded: ClassVar[bool] = True

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, NoiseParams)
        sigma = self.params.sigma
        if self.params.scramble:
            text = " ".join(_scramble(word, sigma**0.5, rng) for word in text.split(" "))
        if self.params.caps:
            text = "".join(ch.upper() if rng.random() < sigma**0.5 else ch for ch in text)
        if self.params.noise:
            text = "".join(_noised(ch, sigma**3, rng) for ch in text)
        return text


def _scramble(word: str, probability: float, rng: random.Random) -> str:
    if len(word) < 4 or rng.random() >= probability:
        return word
    middle = list(word[1:-1])
    rng.shuffle(middle)
    return word[0] + "".join(middle) + word[-1]


def _noised(ch: str, probability: float, rng: random.Random) -> str:
    code = ord(ch)
    if not 32 <= code <= 126 or rng.random() >= probability:
        return ch
    step = rng.choice((-1, 1))
    return chr(min(126, max(32, code + step)))


__all__ = [
    "HOMOGLYPHS",
    "LEET",
    "UNLEET",
    "ZERO_WIDTH",
    "HomoglyphConverter",
    "LeetspeakConverter",
    "NoiseConverter",
    "RandomCapsConverter",
    "SpacingConverter",
    "TagSmugglingConverter",
    "ZeroWidthConverter",
    "strip_zero_width",
    "untag",
]
