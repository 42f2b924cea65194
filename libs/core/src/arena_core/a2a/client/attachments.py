"""Parts an attacker sends beside a message's text: structured data and files.

An agent that processes documents is open to instructions hidden in them (indirect prompt
injection); the ``indirect`` strategy delivers its text that way: as a DataPart (a JSON object,
as a tool or another agent would pass it) or as a file part (the document's bytes, named, with
its media type). :class:`~arena_core.match_models.SentAttachment` is what a turn records of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from a2a.types.a2a_pb2 import Part
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Value

from arena_core.match_models import MAX_ATTACHMENT_CHARS, SentAttachment


@dataclass(frozen=True, slots=True)
class Attachment:
    """A DataPart (``data``) or a file part (``text``, sent as UTF-8 bytes under ``name``)."""

    name: str
    data: Mapping[str, Any] | None = None
    text: str | None = None
    media_type: str = "text/plain"

    def __post_init__(self) -> None:
        if (self.data is None) == (self.text is None):
            raise ValueError("an attachment holds either data or text")

    def as_part(self) -> Part:
        """The A2A part."""
        if self.data is not None:
            return Part(data=ParseDict(dict(self.data), Value()), media_type="application/json")
        assert self.text is not None
        return Part(raw=self.text.encode(), filename=self.name, media_type=self.media_type)

    def record(self) -> SentAttachment:
        """What a transcript shows of it."""
        if self.data is not None:
            content = json.dumps(dict(self.data), ensure_ascii=False, indent=2)
            kind: Literal["data", "file"] = "data"
            media_type = "application/json"
        else:
            content, kind, media_type = self.text or "", "file", self.media_type
        return SentAttachment(
            kind=kind, name=self.name, media_type=media_type, content=content[:MAX_ATTACHMENT_CHARS]
        )


__all__ = ["Attachment", "SentAttachment"]
