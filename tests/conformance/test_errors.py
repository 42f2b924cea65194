"""Errors on the wire: JSON-RPC's standard errors, A2A's errors and their HTTP+JSON mapping.

1.0 5.4 maps each A2A error to a JSON-RPC code and an HTTP status; 9.5 and 11.6 give
each binding's error shape. 0.3 8.1/8.2 list the same JSON-RPC codes (servers SHOULD
use the A2A-specific ones); its HTTP+JSON binding MUST use the corresponding HTTP
status codes (0.3 3.2.3).
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.spec import Requirement, on_wires
from conformance.wire import (
    ALL_WIRES,
    CONTENT_TYPE_NOT_SUPPORTED,
    ERROR_INFO,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSONRPC_WIRES,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PUSH_NOT_SUPPORTED,
    REST_WIRES,
    TASK_NOT_FOUND,
    UNSUPPORTED_OPERATION,
    V10_WIRES,
    Agent,
    Wire,
    error_seen,
    expect_error,
    explain,
)

pytestmark = pytest.mark.system

PARSE = Requirement("a body that is not JSON gets Parse error (-32700) with a null id", "MUST", "9.5", "8.1")


@on_wires(PARSE, JSONRPC_WIRES)
def test_parse_error(agent: Agent, wire: Wire) -> None:
    headers = dict(wire.headers) | {"Content-Type": "application/json"}
    truncated = b'{"jsonrpc": "2.0", "id": 1, "method": '
    exchange = agent.request("POST", agent.endpoints.jsonrpc, content=truncated, headers=headers)
    expect_error(wire, exchange, PARSE_ERROR, "invalid JSON")
    assert exchange.json().get("id", "absent") is None, explain(
        "the id could not be read, so the response id MUST be null (JSON-RPC 2.0 5; 0.3 6.11.2)", exchange
    )


REST_PARSE = Requirement(
    "an HTTP+JSON body that is not JSON gets 400 with an error body", "MUST", "11.6", "3.2.3"
)


@on_wires(REST_PARSE, REST_WIRES)
def test_rest_body_not_json(agent: Agent, wire: Wire) -> None:
    url = agent.endpoints.rest.rstrip("/") + ("/v1" if wire.version == "0.3" else "") + "/message:send"
    headers = dict(wire.headers) | {"Content-Type": "application/json"}
    exchange = agent.request("POST", url, content=b'{"message": ', headers=headers)
    seen = error_seen(wire, exchange)
    assert seen is not None and seen.http_status == 400, explain("400 Bad Request expected", exchange)
    assert isinstance(seen.message, str) and seen.message, explain(
        "the error body carries a message (google.rpc.Status, 1.0 11.6)", exchange
    )


INVALID_REQUEST_REQ = Requirement(
    "a request that is not JSON-RPC 2.0 gets Invalid Request (-32600)", "MUST", "9.5", "8.1"
)


@on_wires(INVALID_REQUEST_REQ, JSONRPC_WIRES)
def test_invalid_request(agent: Agent, wire: Wire) -> None:
    method = "GetTask" if wire.version == "1.0" else "tasks/get"
    envelope = {"jsonrpc": "1.0", "id": 5, "method": method, "params": {"id": "x"}}
    exchange = agent.request("POST", agent.endpoints.jsonrpc, body=envelope)
    expect_error(wire, exchange, INVALID_REQUEST, '"jsonrpc" must be exactly "2.0"')


METHOD_NOT_FOUND_REQ = Requirement("an unknown method gets Method not found (-32601)", "MUST", "9.5", "8.1")


@on_wires(METHOD_NOT_FOUND_REQ, JSONRPC_WIRES)
def test_method_not_found(agent: Agent, wire: Wire) -> None:
    method = "ConformanceNoSuchMethod" if wire.version == "1.0" else "tasks/conformanceNoSuchMethod"
    expect_error(wire, agent.rpc(method, {}), METHOD_NOT_FOUND, f"method {method!r} does not exist")


REST_NOT_FOUND = Requirement(
    "an HTTP+JSON path no operation has gets 404 with an error body", "MUST", "11.6", "3.2.3"
)


@on_wires(REST_NOT_FOUND, REST_WIRES)
def test_rest_unknown_path(agent: Agent, wire: Wire) -> None:
    url = agent.endpoints.rest.rstrip("/") + ("/v1" if wire.version == "0.3" else "") + "/conformance:nothing"
    exchange = agent.request("GET", url)
    seen = error_seen(wire, exchange)
    assert seen is not None and seen.http_status == 404, explain("404 expected", exchange)
    assert isinstance(seen.message, str) and seen.message, explain("a google.rpc.Status body", exchange)


INVALID_PARAMS_TYPE = Requirement(
    "params of the wrong type get Invalid params (-32602; HTTP+JSON 400)", "MUST", "3.3.2", "8.1"
)


@on_wires(INVALID_PARAMS_TYPE, ALL_WIRES)
def test_invalid_params_wrong_type(agent: Agent, wire: Wire) -> None:
    if wire.jsonrpc:
        exchange = agent.rpc("SendMessage" if wire.version == "1.0" else "message/send", {"message": 42})
    else:
        url = agent.endpoints.rest.rstrip("/") + ("/v1" if wire.version == "0.3" else "") + "/message:send"
        exchange = agent.request("POST", url, body={"message": 42})
    expect_error(wire, exchange, INVALID_PARAMS, "message must be an object")


INVALID_PARAMS_MISSING = Requirement(
    "a message without its required parts gets Invalid params (-32602; HTTP+JSON 400)", "MUST", "3.3.2", "8.1"
)


@on_wires(INVALID_PARAMS_MISSING, ALL_WIRES)
def test_invalid_params_missing_parts(agent: Agent, wire: Wire) -> None:
    message = agent.message("x")
    message[wire.message_parts_key] = []
    if wire.jsonrpc:
        exchange = agent.rpc("SendMessage" if wire.version == "1.0" else "message/send", {"message": message})
    else:
        exchange = agent.send(message)
    expect_error(wire, exchange, INVALID_PARAMS, "a message needs at least one part (1.0 5.7; 0.3 6.4)")


ERROR_DETAILS = Requirement(
    "A2A errors carry an ErrorInfo (reason, domain a2a-protocol.org) in error data / details",
    "SHOULD",
    "9.5",
)


@on_wires(ERROR_DETAILS, V10_WIRES)
def test_a2a_errors_carry_error_info(agent: Agent, wire: Wire) -> None:
    """9.5: JSON-RPC SHOULD use google.rpc.ErrorInfo in error.data; 11.6: HTTP+JSON MUST."""
    exchange = agent.get_task("no-such-task-conformance")
    seen = expect_error(wire, exchange, TASK_NOT_FOUND, "GetTask of an unknown id")
    details = seen.envelope.get("data" if wire.jsonrpc else "details")
    assert isinstance(details, list) and all(isinstance(d, dict) and "@type" in d for d in details), explain(
        "each error detail object MUST have an @type (3.3.2)", exchange
    )
    assert (seen.reason, seen.domain) == ("TASK_NOT_FOUND", "a2a-protocol.org"), explain(
        f"expected a {ERROR_INFO} with reason TASK_NOT_FOUND", exchange
    )


PUSH = Requirement(
    "push notification config operations get PushNotificationNotSupportedError (capability false)",
    "MUST",
    "3.3.4",
    "7.5",
    level_v03="SHOULD",
)


@on_wires(PUSH, ALL_WIRES)
def test_push_notifications_not_supported(agent: Agent, wire: Wire) -> None:
    card = agent.http.get(
        agent.endpoints.jsonrpc.rstrip("/") + "/.well-known/agent-card.json", headers=wire.headers
    ).json()
    assert card.get("capabilities", {}).get("pushNotifications") is not True, (
        "the defender does not declare push notifications"
    )
    task = agent.task_of(agent.say("hello"))
    for operation, exchange in agent.push_config_operations(task["id"]):
        expect_error(
            wire, exchange, PUSH_NOT_SUPPORTED, f"{operation} while pushNotifications is not declared"
        )


EXTENDED_CARD = Requirement(
    "GetExtendedAgentCard without the extendedAgentCard capability gets UnsupportedOperationError",
    "MUST",
    "3.3.4",
    "7.10",
)


@on_wires(EXTENDED_CARD, ALL_WIRES)
def test_extended_card_not_offered(agent: Agent, wire: Wire) -> None:
    exchange = agent.extended_card()
    if wire.version == "1.0":
        expect_error(wire, exchange, UNSUPPORTED_OPERATION, "capabilities.extendedAgentCard is not declared")
    else:
        assert error_seen(wire, exchange) is not None, explain(
            "0.3 7.10: the method is available only with supportsAuthenticatedExtendedCard", exchange
        )


def file_message(agent: Agent, media_type: str, data: str) -> dict[str, Any]:
    """A message with one file part carrying ``data`` (base64), spelled for the wire."""
    message = agent.message("look at this")
    wire = agent.wire
    if wire.version == "1.0":
        message["parts"] = [{"raw": data, "mediaType": media_type, "filename": "x.bin"}]
    elif wire.jsonrpc:
        message["parts"] = [
            {"kind": "file", "file": {"bytes": data, "mimeType": media_type, "name": "x.bin"}}
        ]
    else:
        message["content"] = [{"file": {"fileWithBytes": data, "mimeType": media_type, "name": "x.bin"}}]
    return message


PNG = "iVBORw0KGgo="
"""The PNG signature: bytes that are not UTF-8."""

BINARY_FILE = Requirement(
    "a binary file part gets an answer (a task or an A2A error), never an internal error",
    "MUST",
    "3.3.2",
    "3.2.3",
)


@on_wires(BINARY_FILE, ALL_WIRES)
def test_binary_file_part_is_not_a_server_error(agent: Agent, wire: Wire) -> None:
    exchange = agent.send(file_message(agent, "image/png", PNG))
    seen = error_seen(wire, exchange)
    internal = seen is not None and (seen.http_status >= 500 or seen.jsonrpc_code == -32603)
    assert not internal, explain(
        "a well-formed file part is the client's input: answer it or refuse it with a client error "
        "(1.0 3.3.2: servers MUST return appropriate errors; 0.3 3.2.3: appropriate HTTP status codes)",
        exchange,
    )


CONTENT_TYPE = Requirement(
    "a part whose media type the agent does not accept gets ContentTypeNotSupportedError",
    "MUST",
    "3.1.1",
    "8.2",
    level_v03="SHOULD",
)


@on_wires(CONTENT_TYPE, ALL_WIRES)
def test_unsupported_media_type_is_refused(agent: Agent, wire: Wire) -> None:
    """The card's defaultInputModes (and the skill's inputModes) list text/plain and application/json."""
    exchange = agent.send(file_message(agent, "image/png", PNG))
    expect_error(wire, exchange, CONTENT_TYPE_NOT_SUPPORTED, "image/png is not among the input modes")
