"""A2A 0.3 HTTP+JSON messages a2a-sdk 1.3.0 cannot convert get a client error, not HTTP 500.

a2a-sdk serves 0.3 HTTP+JSON (``POST /rest/v1/message:send`` and ``:stream``) by
parsing the body into its 0.3 protobuf ``SendMessageRequest`` and converting that
to its 0.3 pydantic types (``a2a/compat/v0_3/proto_utils.py``, ``FromProto``)
before the request handler runs. Two kinds of part break that conversion, and
the SDK answers ``500 INTERNAL "unknown exception"``:

* a **file sent as bytes** (``{"file": {"fileWithBytes": "iVBORw0KGgo=", ...}}``):
  the conversion decodes the file's bytes as UTF-8 text (``UnicodeDecodeError``
  for a PNG) where it should base64-encode them, and a file that happens to be
  UTF-8 then fails base64 decoding (``binascii.Error``), or would be read as other
  bytes. No file sent as bytes is ever read right on this binding, and the
  task's history would echo it encoded twice;
* a **part with none of** ``text``, ``file``, ``data`` (``{"content": [{}]}``):
  ``ValueError("Unsupported part type")``.

:class:`V03RestMessageGuard` parses those two endpoints' bodies the way the SDK
does (protobuf JSON into the same 0.3 message) and answers what the request
deserves instead, with the SDK's own error bodies (``google.rpc.Status``, 400):

* a file sent as bytes whose ``mimeType`` the card's input modes do not declare
  gets ``CONTENT_TYPE_NOT_SUPPORTED`` from the SDK's own check
  (``a2a.utils.input_mode_validator.validate_input_modes``, what the request
  handler applies after the conversion, ``validate_input_modes=True``): the answer
  the 0.3 JSON-RPC binding (-32005) and both 1.0 bindings give the same message;
* any other file sent as bytes gets ``INVALID_PARAMS`` (400 ``INVALID_ARGUMENT``)
  naming the limitation and what works instead (``fileWithUri``, the 0.3 JSON-RPC
  binding or A2A 1.0, which read file bytes right);
* a part without content gets ``INVALID_PARAMS`` naming the part (the 0.3
  JSON-RPC binding answers -32602 for the same mistake).

Only ``POST`` to those two paths, read as A2A 0.3 (under another version the SDK
refuses the request before it reads the body), is parsed here; every other
request, and every body these rules do not refuse, reaches the SDK unchanged. A
body protobuf cannot parse is left to the SDK's own 400. The body is read whole,
so the guard must sit inside ``BodySizeLimit``, and inside ``TextBodyGuard``
(which answers bodies that are not UTF-8).
"""

from __future__ import annotations

import logging

from a2a.compat.v0_3 import a2a_v0_3_pb2 as pb2_v03
from a2a.types.a2a_pb2 import AgentCard, Message, Part
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError, ContentTypeNotSupportedError, InvalidParamsError
from a2a.utils.input_mode_validator import validate_input_modes
from google.protobuf import json_format
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a._asgi import RequestGuard, refuse_or_replay
from arena_core.a2a.protocol_versions import requested_version

logger = logging.getLogger(__name__)


def v03_message_problem(body: bytes, card: AgentCard) -> A2AError | None:
    """The error a 0.3 HTTP+JSON ``SendMessageRequest`` body gets here (see the module doc), or None
    when a2a-sdk converts it well (or cannot parse it, and answers that itself)."""
    request = pb2_v03.SendMessageRequest()
    try:
        json_format.Parse(body, request, ignore_unknown_fields=True)
    except (json_format.Error, ValueError, RecursionError):
        return None
    file_bytes: list[tuple[int, str]] = []
    for index, part in enumerate(request.request.content):
        kind = part.WhichOneof("part")
        if kind is None:
            field = f"message.content[{index}]"
            return InvalidParamsError(
                message=f"Invalid params: {field}: a part holds one of text, file or data",
                data={"field": field},
            )
        if kind == "file" and part.file.WhichOneof("file") == "file_with_bytes":
            file_bytes.append((index, part.file.mime_type))
    if not file_bytes:
        return None
    try:
        validate_input_modes(Message(parts=[Part(media_type=media) for _, media in file_bytes]), card)
    except ContentTypeNotSupportedError as exc:
        return exc
    field = f"message.content[{file_bytes[0][0]}].file.fileWithBytes"
    return InvalidParamsError(
        message=(
            f"Invalid params: {field}: this agent's A2A 0.3 HTTP+JSON binding cannot read a file sent "
            "as bytes (a2a-sdk 1.3.0 mis-decodes them); send the file by fileWithUri, or use the "
            "0.3 JSON-RPC binding or A2A 1.0"
        ),
        data={"field": field},
    )


class V03RestMessageGuard(RequestGuard):
    """Answers the 0.3 HTTP+JSON messages a2a-sdk 1.3.0 fails to convert with a client error
    (see the module doc). ``card`` is the agent's card: its input modes decide which file
    media types are supported, as they do in the request handler."""

    def __init__(self, app: ASGIApp, *, rest_prefix: str, card: AgentCard) -> None:
        super().__init__(app)
        self.paths = frozenset({f"{rest_prefix}/v1/message:send", f"{rest_prefix}/v1/message:stream"})
        self.card = card

    def applies(self, scope: Scope) -> bool:
        return scope["method"] == "POST" and scope["path"] in self.paths and requested_version(scope).is_v03

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        await refuse_or_replay(self.app, scope, receive, send, self._refusal)

    def _refusal(self, body: bytes) -> JSONResponse | None:
        problem = v03_message_problem(body, self.card)
        if problem is None:
            return None
        logger.debug("0.3 HTTP+JSON message refused: %s", problem.message)
        payload = build_rest_error_payload(problem)
        return JSONResponse(payload, status_code=payload["error"]["code"])


__all__ = ["V03RestMessageGuard", "v03_message_problem"]
