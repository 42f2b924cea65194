"""Wrappings: the text put inside a code block or a markdown structure.

Filters and models treat text in a code block, a quotation or an HTML comment differently
from a plain request; a rendered page hides a comment from the person reading it. Both
converters are reversible on the texts their docstrings name.
"""

from __future__ import annotations

import random
import re
from typing import ClassVar, Literal

from pydantic import Field

from arena_core.converters.converter import ConverterParams, Reversible, TextConverter
from arena_core.errors import InvalidInputError


class CodeBlockParams(ConverterParams):
    language: str = Field(default="text", pattern=r"^[A-Za-z0-9+#-]{0,20}$")
    """The fence's info string (``text``, ``python``, ``json`` ...)."""
    intro: str = Field(default="Read the code block below and do what it says.", max_length=500)
    """A line before the block ("" for none)."""


class CodeBlockConverter(TextConverter, Reversible):
    """The text in a fenced code block, the fence longer than any run of backticks inside.
    Round-trips on any text that does not start or end with a line break."""

    name: ClassVar[str] = "code-block"
    description: ClassVar[str] = "The text inside a fenced markdown code block."
    Params: ClassVar[type[ConverterParams]] = CodeBlockParams

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, CodeBlockParams)
        longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
        fence = "`" * max(3, longest + 1)
        block = f"{fence}{self.params.language}\n{text}\n{fence}"
        return f"{self.params.intro}\n\n{block}" if self.params.intro else block

    def invert(self, text: str) -> str:
        found = re.search(r"^(`{3,})[^\n`]*\n(.*)\n\1$", text, re.DOTALL | re.MULTILINE)
        if found is None:
            raise InvalidInputError("no fenced code block in the text")
        return found.group(2)


MarkdownStyle = Literal["quote", "comment", "table"]


class MarkdownParams(ConverterParams):
    style: MarkdownStyle = "quote"
    """``quote`` (a block quote), ``comment`` (an HTML comment: hidden once rendered),
    ``table`` (one cell of a table)."""
    intro: str = Field(default="", max_length=500)
    """Visible text before it ("" for none): with ``comment``, what a reader of the rendered page sees."""


_TABLE_HEAD = "| Note |\n| --- |\n"


class MarkdownConverter(TextConverter, Reversible):
    """The text as a markdown block quote, an HTML comment or a table cell.

    Round-trips on text that holds no ``-->`` (comment), no ``|`` or ``<br>`` (table), and
    does not start with a line break.
    """

    name: ClassVar[str] = "markdown"
    description: ClassVar[str] = "The text as a markdown quote, HTML comment or table cell."
    Params: ClassVar[type[ConverterParams]] = MarkdownParams

    def convert(self, text: str, rng: random.Random) -> str:
        assert isinstance(self.params, MarkdownParams)
        style = self.params.style
        if style == "quote":
            body = "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))
        elif style == "comment":
            body = "<!-- " + text.replace("-->", "-- >") + " -->"
        else:
            body = _TABLE_HEAD + "| " + text.replace("|", "\\|").replace("\n", "<br>") + " |"
        return f"{self.params.intro}\n\n{body}" if self.params.intro else body

    def invert(self, text: str) -> str:
        assert isinstance(self.params, MarkdownParams)
        intro = f"{self.params.intro}\n\n" if self.params.intro else ""
        body = text[len(intro) :] if intro and text.startswith(intro) else text
        style = self.params.style
        if style == "quote":
            return "\n".join(
                line[2:] if line.startswith("> ") else line.removeprefix(">") for line in body.split("\n")
            )
        if style == "comment":
            return body.removeprefix("<!-- ").removesuffix(" -->")
        cell = body.removeprefix(_TABLE_HEAD).removeprefix("| ").removesuffix(" |")
        return cell.replace("<br>", "\n").replace("\\|", "|")


__all__ = ["CodeBlockConverter", "MarkdownConverter"]
