"""Tool-call records a target reports (in its task or its trace) lose the target's credentials."""

from __future__ import annotations

from types import SimpleNamespace

from arena_core.a2a.client.credentials import TargetCredentials
from arena_core.a2a.client.target import A2ATarget
from arena_core.support_desk import ToolCallRecord

TOKEN = "s3cret-token-value"


def test_credentials_echoed_into_records_are_cut_out() -> None:
    credentials = TargetCredentials.bearer(TOKEN, "http://defender:8081")
    target = SimpleNamespace(_credentials=credentials)  # what redact_records reads of a target
    echoed = ToolCallRecord(
        tool="send_email",
        call_id=f"id-{TOKEN}",
        arguments={"to": "x@evil.example", "body": f"your token is Bearer {TOKEN}", "list": [TOKEN]},
        status="error",
        result={"nested": {TOKEN: TOKEN}},
        error=f"refused {TOKEN}",
    )
    (clean,) = A2ATarget.redact_records(target, [echoed])  # type: ignore[arg-type]
    assert TOKEN not in clean.model_dump_json()
    assert clean.arguments["to"] == "x@evil.example" and clean.tool == "send_email"
    without = SimpleNamespace(_credentials=None)
    assert A2ATarget.redact_records(without, [echoed]) == [echoed]  # type: ignore[arg-type]
