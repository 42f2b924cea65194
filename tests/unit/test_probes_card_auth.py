"""The card and auth probes' pure parts: JCS (RFC 8785), card signature verification, answer reading.

The JCS vectors are RFC 8785's own (section 3.2.2's example, section 3.2.3's sorting example and
Appendix B's numbers); signatures are made here with fresh keys of every supported algorithm.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from arena_core.probes.base import ProbeOptions
from arena_core.probes.checks._credentials import UNKNOWN_TASK, got_through, status_text
from arena_core.probes.checks.auth import QUERY_NAMES, bad_credentials, push_config_id
from arena_core.probes.checks.card import host_of, loopback
from arena_core.probes.model import CheckResult, Severity
from arena_core.probes.runner import run_probes
from arena_core.probes.signing import (
    CanonicalizationError,
    MalformedSignatureError,
    ParsedSignature,
    b64url_encode,
    canonicalize,
    fetch_jwks,
    judge,
    key_fits,
    keys_in,
    number_text,
    parse_signature,
    signed_payloads,
    verify,
)
from arena_core.probes.wire import Exchange, Interface, Limits, ProbeSession

JSONRPC_10 = Interface("http://agent.test/", "1.0", "jsonrpc")
REST_03 = Interface("http://agent.test/rest", "0.3", "http+json")
CARD = {
    "name": "Card Agent",
    "description": "Signs its card. Ünïcödé € too.",
    "version": "1.0.0",
    "supportedInterfaces": [
        {"url": "http://agent.test/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ],
    "capabilities": {"streaming": True},
    "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}],
    "rating": 4.5,
}

# -- JCS: RFC 8785 ------------------------------------------------------------------------------


def test_rfc8785_section_3_2_2_example() -> None:
    # The input exactly as section 3.2.2 writes it (JSON text), parsed the way a card is parsed.
    text = (
        '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
        ' "literals": [null, true, false]}'
    )
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonicalize(json.loads(text)) == expected


def test_rfc8785_section_3_2_3_sorts_keys_by_utf16_code_units() -> None:
    text = (
        '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh",'
        ' "1": "One", "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control",'
        ' "\\u00f6": "Latin Small Letter O With Diaeresis"}'
    )
    canonical = canonicalize(json.loads(text))
    keys = [key for key, _ in json.loads(canonical, object_pairs_hook=list)]
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    # Code point order would put the emoji (U+1F600) last; UTF-16 puts it before U+FB33.
    assert canonical.startswith('{"\\r":"Carriage Return","1":"One","\u0080":"Control"')


@pytest.mark.parametrize(
    ("ieee", "expected"),
    [
        ("0000000000000000", "0"),
        ("8000000000000000", "0"),
        ("0000000000000001", "5e-324"),
        ("8000000000000001", "-5e-324"),
        ("7fefffffffffffff", "1.7976931348623157e+308"),
        ("ffefffffffffffff", "-1.7976931348623157e+308"),
        ("4340000000000000", "9007199254740992"),
        ("c340000000000000", "-9007199254740992"),
        ("4430000000000000", "295147905179352830000"),
        ("44b52d02c7e14af5", "9.999999999999997e+22"),
        ("44b52d02c7e14af6", "1e+23"),
        ("44b52d02c7e14af7", "1.0000000000000001e+23"),
        ("444b1ae4d6e2ef4e", "999999999999999700000"),
        ("444b1ae4d6e2ef4f", "999999999999999900000"),
        ("444b1ae4d6e2ef50", "1e+21"),
        ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
        ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555553", "333333333.3333332"),
        ("41b3de4355555554", "333333333.33333325"),
        ("41b3de4355555555", "333333333.3333333"),
        ("41b3de4355555556", "333333333.3333334"),
        ("41b3de4355555557", "333333333.33333343"),
        ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
    ],
)
def test_rfc8785_appendix_b_numbers(ieee: str, expected: str) -> None:
    value = struct.unpack(">d", bytes.fromhex(ieee))[0]
    assert number_text(value) == expected
    assert canonicalize([value]) == f"[{expected}]"


@pytest.mark.parametrize("ieee", ["7fffffffffffffff", "7ff0000000000000", "fff0000000000000"])
def test_nan_and_infinity_have_no_canonical_form(ieee: str) -> None:
    with pytest.raises(CanonicalizationError):
        canonicalize({"x": struct.unpack(">d", bytes.fromhex(ieee))[0]})


def test_integers_are_written_as_they_are() -> None:
    assert (
        canonicalize({"big": 2**64, "n": -12, "f": 1.0, "t": True})
        == '{"big":18446744073709551616,"f":1,"n":-12,"t":true}'
    )


def test_strings_escape_only_quote_backslash_and_controls() -> None:
    assert canonicalize("a\x00\x1f\x7f/é\u2028") == '"a\\u0000\\u001f\x7f/é\u2028"'
    assert canonicalize("\b\f\n\r\t") == '"\\b\\f\\n\\r\\t"'


@pytest.mark.parametrize(
    "value",
    [{1: "non-string key"}, "\ud800 lone surrogate", {"\udc00": 1}, {"set": {1, 2}}],
)
def test_values_without_a_canonical_form_are_refused(value: Any) -> None:
    with pytest.raises(CanonicalizationError):
        canonicalize(value)


def test_hostile_nesting_is_refused_not_a_crash() -> None:
    deep: Any = []
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(CanonicalizationError, match="nesting"):
        canonicalize(deep)


# -- signatures ---------------------------------------------------------------------------------


def _b64(number: int, size: int) -> str:
    return b64url_encode(number.to_bytes(size, "big"))


def _ec_jwk(key: ec.EllipticCurvePrivateKey, kid: str, crv: str, size: int) -> dict[str, Any]:
    numbers = key.public_key().public_numbers()
    return {"kty": "EC", "crv": crv, "x": _b64(numbers.x, size), "y": _b64(numbers.y, size), "kid": kid}


def _rsa_jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    numbers = key.public_key().public_numbers()
    return {"kty": "RSA", "n": _b64(numbers.n, 256), "e": _b64(numbers.e, 3), "kid": kid}


def _ed_jwk(key: ed25519.Ed25519PrivateKey, kid: str) -> dict[str, Any]:
    raw = key.public_key().public_bytes_raw()
    return {"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(raw), "kid": kid}


Signer = Callable[[bytes], bytes]


def _ec_signer(key: ec.EllipticCurvePrivateKey, hash_: hashes.HashAlgorithm, size: int) -> Signer:
    def sign(data: bytes) -> bytes:
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hash_)))
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")

    return sign


P256 = ec.generate_private_key(ec.SECP256R1())
P384 = ec.generate_private_key(ec.SECP384R1())
RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)
ED = ed25519.Ed25519PrivateKey.generate()
KEYS: dict[str, tuple[Signer, dict[str, Any]]] = {
    "ES256": (_ec_signer(P256, hashes.SHA256(), 32), _ec_jwk(P256, "ec256", "P-256", 32)),
    "ES384": (_ec_signer(P384, hashes.SHA384(), 48), _ec_jwk(P384, "ec384", "P-384", 48)),
    "RS256": (lambda data: RSA.sign(data, padding.PKCS1v15(), hashes.SHA256()), _rsa_jwk(RSA, "rsa")),
    "PS256": (
        lambda data: RSA.sign(data, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256()),
        _rsa_jwk(RSA, "rsa"),
    ),
    "EdDSA": (ED.sign, _ed_jwk(ED, "ed")),
}


def _sign(card: dict[str, Any], alg: str, *, kid: str | None = None, **header: Any) -> dict[str, Any]:
    """``card``'s detached JWS as an A2A ``signatures`` entry."""
    signer, jwk = KEYS[alg]
    protected = b64url_encode(json.dumps({"alg": alg, "kid": kid or jwk["kid"], **header}).encode())
    payload = b64url_encode(canonicalize({k: v for k, v in card.items() if k != "signatures"}).encode())
    return {"protected": protected, "signature": b64url_encode(signer(f"{protected}.{payload}".encode()))}


@pytest.mark.parametrize("alg", sorted(KEYS))
def test_a_good_signature_verifies_with_its_key(alg: str) -> None:
    entry = _sign(CARD, alg)
    verdict = judge(parse_signature(entry), signed_payloads({**CARD, "signatures": [entry]}), [KEYS[alg][1]])
    assert verdict.outcome == "valid", verdict.reason
    assert verdict.kid == KEYS[alg][1]["kid"]


@pytest.mark.parametrize("alg", sorted(KEYS))
def test_a_changed_card_does_not_verify(alg: str) -> None:
    entry = _sign(CARD, alg)
    changed = {**CARD, "description": "Changed after signing.", "signatures": [entry]}
    verdict = judge(parse_signature(entry), signed_payloads(changed), [KEYS[alg][1]])
    assert verdict.outcome == "invalid"
    assert "does not verify" in verdict.reason


def test_a_flipped_signature_byte_does_not_verify() -> None:
    entry = _sign(CARD, "ES256")
    raw = bytearray(base64.urlsafe_b64decode(entry["signature"] + "=="))
    raw[10] ^= 1
    flipped = {**entry, "signature": b64url_encode(bytes(raw))}
    assert judge(parse_signature(flipped), signed_payloads(CARD), [KEYS["ES256"][1]]).outcome == "invalid"


def test_a_signature_of_the_wrong_length_is_invalid_not_a_crash() -> None:
    entry = {**_sign(CARD, "ES256"), "signature": b64url_encode(b"\x01" * 63)}
    assert judge(parse_signature(entry), signed_payloads(CARD), [KEYS["ES256"][1]]).outcome == "invalid"


def test_another_keys_signature_is_invalid_with_the_fitting_key() -> None:
    # Signed by a fresh P-256 key that names the kid of the published one.
    stranger = ec.generate_private_key(ec.SECP256R1())
    protected = b64url_encode(json.dumps({"alg": "ES256", "kid": "ec256"}).encode())
    payload = b64url_encode(canonicalize(CARD).encode())
    signature = _ec_signer(stranger, hashes.SHA256(), 32)(f"{protected}.{payload}".encode())
    entry = {"protected": protected, "signature": b64url_encode(signature)}
    assert judge(parse_signature(entry), signed_payloads(CARD), [KEYS["ES256"][1]]).outcome == "invalid"


@pytest.mark.parametrize(
    ("alg", "key"),
    [
        ("ES256", {**KEYS["ES256"][1], "kid": "someone-else"}),  # kid does not match
        ("ES256", KEYS["ES384"][1] | {"kid": "ec256"}),  # right kid, wrong curve
        ("ES256", KEYS["RS256"][1] | {"kid": "ec256"}),  # right kid, wrong key type
        ("ES256", {**KEYS["ES256"][1], "alg": "ES384"}),  # the key is for another algorithm
        ("ES256", {**KEYS["ES256"][1], "use": "enc"}),  # an encryption key
        ("ES256", {**KEYS["ES256"][1], "key_ops": ["encrypt"]}),
        ("RS256", KEYS["EdDSA"][1] | {"kid": "rsa"}),
    ],
)
def test_unfitting_keys_are_not_used(alg: str, key: dict[str, Any]) -> None:
    signature = parse_signature(_sign(CARD, alg))
    assert not key_fits(signature, key)
    verdict = judge(signature, signed_payloads(CARD), [key])
    assert verdict.outcome == "no-key"


def test_without_a_kid_every_fitting_key_is_tried() -> None:
    signer, jwk = KEYS["EdDSA"]
    protected = b64url_encode(json.dumps({"alg": "EdDSA"}).encode())
    payload = b64url_encode(canonicalize(CARD).encode())
    entry = {"protected": protected, "signature": b64url_encode(signer(f"{protected}.{payload}".encode()))}
    other = _ed_jwk(ed25519.Ed25519PrivateKey.generate(), "other")
    keyless = {k: v for k, v in jwk.items() if k != "kid"}
    verdict = judge(parse_signature(entry), signed_payloads(CARD), [other, keyless, KEYS["ES256"][1]])
    assert verdict.outcome == "valid"


def test_an_embedded_header_key_is_never_trusted() -> None:
    entry = _sign(CARD, "ES256", kid="attacker", jwk=KEYS["ES256"][1])
    verdict = judge(parse_signature(entry), signed_payloads(CARD), [])
    assert verdict.outcome == "no-key"
    assert "not trusted" in verdict.reason


def test_alg_none_is_reported_as_unsigned() -> None:
    protected = b64url_encode(b'{"alg":"none"}')
    verdict = judge(parse_signature({"protected": protected, "signature": "AA"}), signed_payloads(CARD), [])
    assert verdict.outcome == "unsigned"


@pytest.mark.parametrize(
    ("header", "words"), [({"alg": "HS256"}, "shared-secret"), ({"alg": "ES512"}, "ES512")]
)
def test_algorithms_the_probe_does_not_check_are_unsupported(header: dict[str, Any], words: str) -> None:
    protected = b64url_encode(json.dumps(header).encode())
    verdict = judge(
        parse_signature({"protected": protected, "signature": "AAAA"}), [b"{}"], [KEYS["ES256"][1]]
    )
    assert verdict.outcome == "unsupported"
    assert words in verdict.reason


def test_unknown_critical_extensions_are_unsupported() -> None:
    entry = _sign(CARD, "ES256", crit=["b64"], b64=False)
    assert judge(parse_signature(entry), signed_payloads(CARD), [KEYS["ES256"][1]]).outcome == "unsupported"


def test_a_key_that_cannot_be_read_does_not_verify() -> None:
    signature = parse_signature(_sign(CARD, "ES256"))
    broken = {**KEYS["ES256"][1], "x": "AAAA"}  # not a point on the curve
    assert not verify(signature, canonicalize(CARD).encode(), broken)
    assert not verify(signature, canonicalize(CARD).encode(), {**KEYS["ES256"][1], "y": 12})


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("a string", "not an object"),
        ([], "array"),
        ({"signature": "AAAA"}, "no `protected`"),
        ({"protected": "eyJhbGciOiJFUzI1NiJ9"}, "no `signature`"),
        ({"protected": "not base64!", "signature": "AAAA"}, "not base64url-encoded JSON"),
        ({"protected": b64url_encode(b"[1, 2]"), "signature": "AAAA"}, "not a JSON object"),
        ({"protected": b64url_encode(b"{}"), "signature": "AAAA"}, "no algorithm"),
        (
            {"protected": b64url_encode(b'{"alg":"ES256"}'), "signature": "A+/="},
            "`signature` is not base64url",
        ),
        ({"protected": b64url_encode(b'{"alg":"ES256"}'), "signature": "AAAA", "header": [1]}, "unprotected"),
        (
            {
                "protected": b64url_encode(b'{"alg":"ES256","kid":"a"}'),
                "signature": "AAAA",
                "header": {"kid": "b"},
            },
            "both hold kid",
        ),
        (
            {"protected": b64url_encode(b'{"alg":"ES256","kid":7}'), "signature": "AAAA"},
            "`kid` is not a string",
        ),
        (
            {"protected": b64url_encode(b'{"alg":"ES256","jku":7}'), "signature": "AAAA"},
            "`jku` is not a string",
        ),
    ],
)
def test_malformed_signature_entries_are_named_not_a_crash(entry: Any, words: str) -> None:
    with pytest.raises(MalformedSignatureError, match=words):
        parse_signature(entry)


def test_the_jku_comes_from_the_protected_header_only() -> None:
    protected = b64url_encode(json.dumps({"alg": "ES256", "kid": "k"}).encode())
    parsed = parse_signature(
        {"protected": protected, "signature": "AAAA", "header": {"jku": "http://x.test/"}}
    )
    assert parsed.jku is None
    assert isinstance(parsed, ParsedSignature)


def test_a_signature_over_the_card_without_empty_members_verifies() -> None:
    # a2a-sdk's signer drops empty strings, lists and objects before it canonicalises.
    card = {**CARD, "iconUrl": "", "securitySchemes": {}, "tags": []}
    signer, jwk = KEYS["ES256"]
    protected = b64url_encode(json.dumps({"alg": "ES256", "kid": "ec256"}).encode())
    payload = b64url_encode(canonicalize(CARD).encode())
    entry = {"protected": protected, "signature": b64url_encode(signer(f"{protected}.{payload}".encode()))}
    payloads = signed_payloads({**card, "signatures": [entry]})
    assert payloads[0] == canonicalize(card).encode()
    assert judge(parse_signature(entry), payloads, [jwk]).outcome == "valid"


def test_keys_in_reads_a_jwk_set_only() -> None:
    assert keys_in({"keys": [{"kty": "EC"}, "junk", 3]}) == [{"kty": "EC"}]
    assert keys_in({"kty": "EC"}) == []
    assert keys_in([{"kty": "EC"}]) == []
    assert len(keys_in({"keys": [{"kty": "EC"}] * 500})) == 50


def test_a_jku_is_fetched_through_the_session_and_only_on_the_targets_origin() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={"keys": [KEYS["ES256"][1]]})

    async def go() -> None:
        session = ProbeSession(
            "http://agent.test/", limits=Limits(rate_per_s=1000), transport=httpx.MockTransport(answer)
        )
        try:
            card_url = "http://agent.test/.well-known/agent-card.json"
            elsewhere = await fetch_jwks(session, "https://keys.example/jwks.json", base=card_url)
            assert elsewhere.keys == [] and elsewhere.exchange is None
            assert "another origin" in (elsewhere.problem or "")
            relative = await fetch_jwks(session, "/.well-known/jwks.json", base=card_url)
            assert relative.keys == [KEYS["ES256"][1]] and relative.problem is None
            assert session.requests == 1
        finally:
            await session.aclose()

    asyncio.run(go())
    assert seen == ["http://agent.test/.well-known/jwks.json"]


def test_a_jku_without_keys_says_why() -> None:
    async def go() -> list[str | None]:
        answers = iter([httpx.Response(404, text="nope"), httpx.Response(200, json={"keys": []})])
        session = ProbeSession(
            "http://agent.test/",
            limits=Limits(rate_per_s=1000),
            transport=httpx.MockTransport(lambda _: next(answers)),
        )
        try:
            base = "http://agent.test/card.json"
            return [(await fetch_jwks(session, "/jwks", base=base)).problem for _ in range(2)]
        finally:
            await session.aclose()

    missing, empty = asyncio.run(go())
    assert "HTTP 404" in (missing or "")
    assert "no JWK Set with keys" in (empty or "")


# -- reading answers ----------------------------------------------------------------------------


def _exchange(status: int | None, body: Any = None, *, media: str = "application/json") -> Exchange:
    text = body if isinstance(body, str) else json.dumps(body) if body is not None else ""
    return Exchange(
        "POST", "http://agent.test/", {}, "", status=status, headers={"content-type": media}, body=text
    )


def _rpc_error(code: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "x"}}


@pytest.mark.parametrize(
    ("interface", "exchange", "unknown", "expected"),
    [
        (JSONRPC_10, _exchange(401, _rpc_error(-32000)), True, None),
        (JSONRPC_10, _exchange(403, "Forbidden", media="text/plain"), True, None),
        (JSONRPC_10, _exchange(200, {"jsonrpc": "2.0", "id": 1, "result": {"id": "t"}}), False, "served"),
        (JSONRPC_10, _exchange(200, _rpc_error(-32001)), True, "reached"),
        (JSONRPC_10, _exchange(200, _rpc_error(-32001)), False, None),  # about a real task: no
        (JSONRPC_10, _exchange(200, _rpc_error(-32002)), False, "reached"),  # TaskNotCancelable
        (JSONRPC_10, _exchange(200, _rpc_error(-32000)), True, None),  # an agent's own auth error
        (JSONRPC_10, _exchange(None), True, None),
        (REST_03, _exchange(404, {"error": {"code": 404, "status": "NOT_FOUND"}}), True, "reached"),
        (REST_03, _exchange(404, "Not Found", media="text/plain"), True, None),  # a missing route
        (REST_03, _exchange(200, {"id": "t", "status": {}}), False, "served"),
        (REST_03, _exchange(200, "<html>login</html>", media="text/html"), False, None),
    ],
)
def test_what_got_through_without_credentials(
    interface: Interface, exchange: Exchange, unknown: bool, expected: str | None
) -> None:
    assert got_through(interface, exchange, unknown_id=unknown) == expected


def test_status_text_names_the_error() -> None:
    assert status_text(_exchange(401, _rpc_error(-32000))) == "HTTP 401, error -32000"
    assert (
        status_text(_exchange(404, {"error": {"code": 404, "status": "NOT_FOUND"}})) == "HTTP 404 NOT_FOUND"
    )
    assert status_text(_exchange(401, "no", media="text/plain")) == "HTTP 401"
    assert status_text(Exchange("GET", "http://agent.test/", {}, "", error="ConnectError")) == "ConnectError"


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"taskId": "t", "id": "c1", "url": "https://x"}, "c1"),  # 1.0
        ({"taskId": "t", "pushNotificationConfig": {"id": "c2", "url": "https://x"}}, "c2"),  # 0.3 JSON-RPC
        (
            {"name": "tasks/t/pushNotificationConfigs/c3", "pushNotificationConfig": {"url": "https://x"}},
            "c3",
        ),
        ({"taskId": "t"}, None),
        ("c4", None),
    ],
)
def test_push_config_ids_in_every_shape(payload: Any, expected: str | None) -> None:
    assert push_config_id(payload) == expected


def test_bad_credentials_are_fresh_and_never_empty() -> None:
    first, second = bad_credentials(), bad_credentials()
    assert [what for what, _ in first] == [what for what, _ in second]
    assert first[0][1].token != second[0][1].token  # a random unknown token each run
    header, _claims, signature = (first[1][1].token or "..").split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "none", "typ": "JWT"}
    assert signature == ""
    assert all(identity.token for _, identity in first)
    assert QUERY_NAMES == ("access_token", "token", "api_key")
    assert UNKNOWN_TASK


# -- the card's URLs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", True),
        ("api.localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("[::1]", True),
        ("::1", True),
        ("10.0.0.1", False),
        ("agent.example.net", False),
        ("localhost.example.net", False),
    ],
)
def test_loopback_hosts(host: str, expected: bool) -> None:
    assert loopback(host) is expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.2:9/", "127.0.0.2"),
        ("https://Agent.Example.NET/a2a", "agent.example.net"),
        ("grpc.example.com:443", "grpc.example.com"),
        ("grpc://Host:1", "host"),
        ("[::1]:50051", "::1"),
        ("http://bücher.example/x", "xn--bcher-kva.example"),
        ("/relative/path", None),
        ("not a url", None),
        ("", None),
    ],
)
def test_the_host_a_declared_interface_names(url: str, expected: str | None) -> None:
    assert host_of(url) == expected


def test_a_card_signed_and_served_by_a2a_sdk_verifies() -> None:
    # The SDK signs its AgentCard model but serves it with 0.3 members merged in, which the
    # signature does not cover: the plain JCS of the served card cannot verify, the SDK's form does.
    pytest.importorskip("jwt")
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from a2a.utils.signing import create_agent_card_signer

    interfaces = [
        AgentInterface(url="http://agent.test/", protocol_binding="JSONRPC", protocol_version=version)
        for version in ("1.0", "0.3")
    ]
    card = AgentCard(
        name="SDK agent",
        description="Signed by a2a-sdk.",
        version="1",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name="S", description="d", tags=["t"])],
    )
    sign = create_agent_card_signer(P256, {"alg": "ES256", "kid": "ec256", "jku": None, "typ": "JOSE"})
    served = agent_card_to_dict(sign(card))
    signature = parse_signature(served["signatures"][0])
    payloads = signed_payloads(served)
    assert judge(signature, payloads[:1], [KEYS["ES256"][1]]).outcome == "invalid"
    assert judge(signature, payloads, [KEYS["ES256"][1]]).outcome == "valid"


# -- the signature check on a served card (in process) ------------------------------------------


def _signature_run(card: dict[str, Any], **options: Any) -> tuple[CheckResult, list[str]]:
    """card.signature-invalid against an agent serving ``card`` (and, with a jku, EC P-256's key set)."""
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path == "/.well-known/agent-card.json":
            return httpx.Response(200, json=card)
        if request.url.path == "/.well-known/jwks.json":
            return httpx.Response(200, json={"keys": [KEYS["ES256"][1]]})
        return httpx.Response(404)

    selected = ProbeOptions(only=frozenset({"card.signature-invalid"}), rate_per_s=1000, **options)
    report = asyncio.run(run_probes("http://agent.test/", selected, transport=httpx.MockTransport(answer)))
    return report.results[0], seen


def test_a_malformed_signature_is_a_finding_of_its_own_kind() -> None:
    good = _sign(CARD, "ES256")
    result, _ = _signature_run({**CARD, "signatures": ["junk", good]}, card_keys=(KEYS["ES256"][1],))
    assert result.status == "failed"
    [finding] = result.findings
    assert finding.title == "The card carries a malformed signature"
    assert finding.severity is Severity.MEDIUM
    assert "Signature 1 of the 1.0 card is malformed: the entry is a JSON string" in finding.detail


def test_a_signature_that_does_not_verify_names_its_key_and_where_it_came_from() -> None:
    entry = _sign(CARD, "ES256", jku="/.well-known/jwks.json")
    result, seen = _signature_run({**CARD, "description": "Changed.", "signatures": [entry]})
    [finding] = result.findings
    assert finding.severity is Severity.HIGH
    assert (
        "kid ec256" in finding.detail
        and "the JWK Set at http://agent.test/.well-known/jwks.json" in finding.detail
    )
    assert seen.count("/.well-known/jwks.json") == 1


def test_a_stale_signature_next_to_a_valid_one_is_medium() -> None:
    stale = _sign({**CARD, "version": "0.9"}, "EdDSA")
    result, _ = _signature_run(
        {**CARD, "signatures": [_sign(CARD, "ES256"), stale]}, card_keys=(KEYS["ES256"][1], KEYS["EdDSA"][1])
    )
    [finding] = result.findings
    assert finding.severity is Severity.MEDIUM
    assert "Another signature of the same card verifies" in finding.detail


def test_alg_none_on_a_card_is_high() -> None:
    protected = b64url_encode(b'{"alg":"none","kid":"x"}')
    result, _ = _signature_run({**CARD, "signatures": [{"protected": protected, "signature": "AA"}]})
    [finding] = result.findings
    assert (finding.severity, finding.title) == (Severity.HIGH, "The card's signature uses algorithm none")


def test_no_fitting_key_and_a_foreign_jku_are_noted_and_never_fetched() -> None:
    entry = _sign(CARD, "ES256", kid="unknown", jku="https://keys.example/jwks.json")
    result, seen = _signature_run({**CARD, "signatures": [entry]}, card_keys=(KEYS["ES256"][1],))
    assert result.status == "skipped"
    assert "another origin" in (result.reason or "") and "no fitting key" in (result.reason or "")
    assert "/jwks.json" not in seen


def test_an_unsigned_card_is_skipped() -> None:
    result, _ = _signature_run(CARD)
    assert (result.status, result.reason) == ("skipped", "the card carries no signatures")


def test_an_event_stream_opened_without_credentials_got_through() -> None:
    opened = _exchange(200, media="text/event-stream")
    opened.events, opened.closed = [], False
    assert got_through(JSONRPC_10, opened, unknown_id=False) == "reached"
    refused = _exchange(200, media="text/event-stream")
    refused.events = [json.dumps(_rpc_error(-32000))]
    assert got_through(JSONRPC_10, refused, unknown_id=True) is None
