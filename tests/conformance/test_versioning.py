"""Version negotiation: the ``A2A-Version`` service parameter (1.0 3.6, 3.2.6, 9.2, 11.2).

An agent MUST process a request with the semantics of the version it names
(Major.Minor; patch numbers are not considered), MUST answer VersionNotSupportedError
for a version its interface does not support, and MUST read an empty or missing
header as 0.3. The defender serves 1.0 and 0.3 on both bindings, so a 0.3 request is
answered in 0.3 and a 1.0 request in 1.0; checks on 0.3 wires are the 1.0 rules,
marked ``(1.0)``: 0.3 itself has no version header.
"""

from __future__ import annotations

import pytest

from conformance.spec import Requirement, on_wires
from conformance.wire import (
    METHOD_NOT_FOUND,
    TASK_NOT_FOUND,
    V03_WIRES,
    V10_JSONRPC,
    V10_REST,
    V10_WIRES,
    VERSION_HEADER,
    VERSION_NOT_SUPPORTED,
    Agent,
    Exchange,
    Wire,
    error_seen,
    expect_error,
    explain,
)

pytestmark = pytest.mark.system

UNKNOWN = "no-such-task-conformance"


def get_unknown_task(agent: Agent, headers: dict[str, str], *, v03_method: bool = False) -> Exchange:
    """GetTask / tasks/get of an unknown task with exactly ``headers``: TaskNotFound shows it was served."""
    wire = agent.wire
    v03 = v03_method or wire.version == "0.3"
    if wire.jsonrpc:
        return agent.rpc("tasks/get" if v03 else "GetTask", {"id": UNKNOWN}, headers=headers)
    path = f"/v1/tasks/{UNKNOWN}" if v03 else f"/tasks/{UNKNOWN}"
    return agent.request("GET", agent.endpoints.rest.rstrip("/") + path, headers=headers)


def served_in(agent: Agent, exchange: Exchange) -> bool:
    """Whether the request was served (it reached the task store: TaskNotFound)."""
    seen = error_seen(agent.wire, exchange)
    if seen is None:
        return False
    if agent.wire.jsonrpc:
        return seen.jsonrpc_code == TASK_NOT_FOUND.jsonrpc_code
    return seen.http_status == TASK_NOT_FOUND.http_status


CASE_INSENSITIVE = Requirement("the A2A-Version header name is case-insensitive", "MUST", "3.2.6")


@on_wires(CASE_INSENSITIVE, V10_WIRES)
def test_version_header_name_is_case_insensitive(agent: Agent) -> None:
    exchange = get_unknown_task(agent, {"a2A-vERSION": "1.0"})
    assert served_in(agent, exchange), explain("a2A-vERSION: 1.0 is the A2A-Version header", exchange)


SERVED_IN_V10 = Requirement(
    "a request naming A2A-Version 1.0 is processed with 1.0 semantics", "MUST", "3.6.2"
)


@on_wires(SERVED_IN_V10, V10_WIRES)
def test_version_1_0_gets_1_0(agent: Agent, wire: Wire) -> None:
    exchange = agent.say("hello")
    task = agent.task_of(exchange)
    assert task["status"]["state"] == wire.state("completed") or task["status"]["state"] == wire.state(
        "input-required"
    ), explain("1.0 semantics: ProtoJSON enum names (TASK_STATE_...)", exchange)
    assert all("kind" not in part for part in task["status"]["message"]["parts"]), explain(
        "1.0 semantics: parts without the 0.3 kind discriminator", exchange
    )


EXPLICIT_V03 = Requirement(
    "a request naming A2A-Version 0.3 is processed with 0.3 semantics", "MUST", v03="3.6.2(1.0)"
)


@on_wires(EXPLICIT_V03, V03_WIRES)
def test_version_0_3_gets_0_3(agent: Agent, wire: Wire) -> None:
    message = agent.message("hello")
    if wire.jsonrpc:
        exchange = agent.rpc("message/send", {"message": message}, headers={VERSION_HEADER: "0.3"})
    else:
        url = agent.endpoints.rest.rstrip("/") + "/v1/message:send"
        exchange = agent.request("POST", url, body={"message": message}, headers={VERSION_HEADER: "0.3"})
    task = agent.task_of(exchange, "A2A-Version: 0.3 must be served as 0.3")
    assert agent.state_of(task) in {"completed", "input-required"}, explain("a 0.3 task state", exchange)


MISSING_IS_V03 = Requirement(
    "a request without A2A-Version, or with an empty one, is processed as 0.3", "MUST", v03="3.6.2(1.0)"
)


@on_wires(MISSING_IS_V03, V03_WIRES)
def test_missing_or_empty_version_means_0_3(agent: Agent) -> None:
    for headers in ({}, {VERSION_HEADER: ""}):
        exchange = get_unknown_task(agent, headers)
        assert served_in(agent, exchange), explain(
            f"headers {headers}: a 0.3 request must be served", exchange
        )


MISSING_IS_NOT_V10 = Requirement(
    "a 1.0 operation without A2A-Version is read as 0.3, not served as 1.0", "MUST", "3.6.2"
)


@on_wires(MISSING_IS_NOT_V10, V10_WIRES)
def test_missing_version_is_not_1_0(agent: Agent, wire: Wire) -> None:
    exchange = get_unknown_task(agent, {})
    seen = error_seen(wire, exchange)
    if wire.jsonrpc:
        # With 0.3 semantics "GetTask" is no method; the SDK answers VersionNotSupported. Either is right.
        assert seen is not None and seen.jsonrpc_code in {
            VERSION_NOT_SUPPORTED.jsonrpc_code,
            METHOD_NOT_FOUND.jsonrpc_code,
        }, explain("no header means 0.3: GetTask must not be served as 1.0", exchange)
    else:
        expect_error(
            wire, exchange, VERSION_NOT_SUPPORTED, "no header means 0.3: the 1.0 route must refuse it"
        )


UNSUPPORTED = Requirement("an unsupported A2A-Version gets VersionNotSupportedError", "MUST", "3.6.2")


@pytest.mark.parametrize("version", ["2.0", "0.5"])
@on_wires(UNSUPPORTED, V10_WIRES)
def test_unsupported_version(agent: Agent, wire: Wire, version: str) -> None:
    exchange = get_unknown_task(agent, {VERSION_HEADER: version})
    expect_error(
        wire, exchange, VERSION_NOT_SUPPORTED, f"A2A-Version {version} is not supported (example 6.4)"
    )


UNSUPPORTED_MINOR = Requirement(
    "an unsupported minor version (1.1) gets VersionNotSupportedError", "MUST", "3.6.2"
)


@on_wires(UNSUPPORTED_MINOR, V10_WIRES)
def test_unsupported_minor_version(agent: Agent, wire: Wire) -> None:
    exchange = get_unknown_task(agent, {VERSION_HEADER: "1.1"})
    expect_error(
        wire,
        exchange,
        VERSION_NOT_SUPPORTED,
        "versions match on Major.Minor; the card offers 1.0 and 0.3, not 1.1",
    )


PATCH = Requirement("a patch number in A2A-Version is not considered (1.0.1 is 1.0)", "MUST", "3.6")


@on_wires(PATCH, V10_WIRES)
def test_patch_version_is_ignored(agent: Agent) -> None:
    exchange = get_unknown_task(agent, {VERSION_HEADER: "1.0.1"})
    assert served_in(agent, exchange), explain("1.0.1 must be served as 1.0", exchange)


V03_METHOD_UNDER_V10 = Requirement(
    "a 0.3 method under A2A-Version 1.0 gets 1.0 semantics (method not found), not an internal error",
    "MUST",
    "3.6.2",
)


@on_wires(V03_METHOD_UNDER_V10, (V10_JSONRPC,))
def test_v03_method_named_with_version_1_0(agent: Agent, wire: Wire) -> None:
    exchange = get_unknown_task(agent, {VERSION_HEADER: "1.0"}, v03_method=True)
    seen = error_seen(wire, exchange)
    assert seen is not None and seen.jsonrpc_code in {
        METHOD_NOT_FOUND.jsonrpc_code,
        VERSION_NOT_SUPPORTED.jsonrpc_code,
    }, explain("tasks/get is no 1.0 method: -32601 (or -32009) expected, not -32603 Internal error", exchange)


UNSUPPORTED_V03_METHOD = Requirement(
    "an unsupported A2A-Version on a 0.3 method gets VersionNotSupportedError", "MUST", "3.6.2"
)


@on_wires(UNSUPPORTED_V03_METHOD, V10_WIRES)
def test_unsupported_version_on_a_0_3_method(agent: Agent, wire: Wire) -> None:
    exchange = get_unknown_task(agent, {VERSION_HEADER: "2.0"}, v03_method=True)
    expect_error(
        wire, exchange, VERSION_NOT_SUPPORTED, "A2A-Version 2.0 is not supported, whatever the method"
    )


QUERY_PARAMETER = Requirement("A2A-Version sent as a request parameter is honoured", "MAY", "3.6.1")


@on_wires(QUERY_PARAMETER, (V10_JSONRPC, V10_REST))
def test_version_as_query_parameter(agent: Agent, wire: Wire) -> None:
    """3.6.1: clients MAY send ``?A2A-Version=1.0`` instead of the header; the agent must then read it."""
    if wire.jsonrpc:
        envelope = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": UNKNOWN}}
        exchange = agent.request(
            "POST", agent.endpoints.jsonrpc, body=envelope, headers={}, params={VERSION_HEADER: "1.0"}
        )
    else:
        url = agent.endpoints.rest.rstrip("/") + f"/tasks/{UNKNOWN}"
        exchange = agent.request("GET", url, headers={}, params={VERSION_HEADER: "1.0"})
    assert served_in(agent, exchange), explain("?A2A-Version=1.0 must be read as the 1.0 version", exchange)
