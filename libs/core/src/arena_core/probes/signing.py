"""Agent card signatures: JCS (RFC 8785) and detached JWS (RFC 7515) verification.

An A2A card is signed as a JWS with a detached payload: the payload is the JCS
canonical form of the card without its ``signatures`` member, and each entry of
``signatures`` holds the ``protected`` header (base64url JSON), the ``signature``
(base64url) and optionally an unprotected ``header``. The signing input is
``protected + "." + base64url(payload)``.

Verification here is deliberately narrow, as a security check's must be:

* only ES256, ES384, RS256, PS256 and EdDSA (Ed25519, Ed448); ``none`` is reported as an
  unsigned signature, symmetric (``HS*``) and other algorithms as not checkable;
* only *fitting* keys: the JWK's ``kid`` equals the header's (when the header names one),
  its ``kty``/``crv`` suit the algorithm, and its own ``alg``, ``use`` and ``key_ops``
  (when present) allow it; a key embedded in the header (``jwk``, ``x5c``) is never trusted;
* keys come from the caller (``arena probe --card-keys``) or from the ``jku`` of the protected header,
  fetched through the probe session (:func:`fetch_jwks`) and only on the target's origin;
* a malformed signature object is an outcome of its own (:class:`MalformedSignatureError`),
  never a crash.

Numbers in JCS follow RFC 8785 section 3.2.2.3 (ECMAScript ``Number::toString``) for
floats; integers are written as they are (a JSON integer the card carries is kept exact).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

import httpx
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from arena_core.probes.wire import Exchange, ProbeSession

MAX_DEPTH = 128
"""The deepest nesting :func:`canonicalize` accepts (a hostile card must not exhaust the stack)."""
MAX_KEYS_PER_SET = 50
SUPPORTED_ALGORITHMS = ("ES256", "ES384", "RS256", "PS256", "EdDSA")

Outcome = Literal["valid", "invalid", "no-key", "unsupported", "unsigned"]


class CanonicalizationError(ValueError):
    """The value has no RFC 8785 canonical form (NaN, a non-string key, a lone surrogate, too deep)."""


class MalformedSignatureError(ValueError):
    """A ``signatures`` entry is not a JWS a verifier can read; the message says what is wrong."""


# -- JCS ----------------------------------------------------------------------------------------

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TO_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def canonicalize(value: Any) -> str:
    """``value`` (parsed JSON: dict, list, str, int, float, bool, None) in its RFC 8785 form.

    The canonical bytes are this text in UTF-8 (:func:`canonical_bytes`). Raises
    :class:`CanonicalizationError` for anything without a canonical form.
    """
    out: list[str] = []
    _write(value, out, 0)
    text = "".join(out)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = "the value holds text that is not valid Unicode (a lone surrogate)"
        raise CanonicalizationError(msg) from exc
    return text


def canonical_bytes(value: Any) -> bytes:
    return canonicalize(value).encode("utf-8")


def _write(value: Any, out: list[str], depth: int) -> None:
    if isinstance(value, dict | list | tuple) and depth >= MAX_DEPTH:
        msg = f"nesting deeper than {MAX_DEPTH}"
        raise CanonicalizationError(msg)
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            msg = "an object key is not a string"
            raise CanonicalizationError(msg)
        try:
            # RFC 8785 3.2.3: sorted by UTF-16 code units, which big-endian UTF-16 bytes compare as.
            items = sorted(value.items(), key=lambda item: item[0].encode("utf-16-be"))
        except UnicodeEncodeError as exc:
            msg = "an object key is not valid Unicode (a lone surrogate)"
            raise CanonicalizationError(msg) from exc
        out.append("{")
        for index, (key, member) in enumerate(items):
            out.append("," if index else "")
            out.append(_string(key))
            out.append(":")
            _write(member, out, depth + 1)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, member in enumerate(value):
            out.append("," if index else "")
            _write(member, out, depth + 1)
        out.append("]")
    elif value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(number_text(value))
    elif isinstance(value, str):
        out.append(_string(value))
    else:
        msg = f"a {type(value).__name__} is no JSON value"
        raise CanonicalizationError(msg)


def _string(text: str) -> str:
    """RFC 8785 3.2.2.2: only ``"``, ``\\`` and C0 controls are escaped; the rest is literal."""
    return '"' + _TO_ESCAPE.sub(lambda found: _ESCAPES.get(found[0], f"\\u{ord(found[0]):04x}"), text) + '"'


def number_text(value: float) -> str:
    """A double as ECMAScript's ``Number::toString`` writes it (RFC 8785 3.2.2.3).

    ``repr`` gives the shortest digits that round-trip (what ECMAScript asks for); only
    the layout differs: ``1e+21`` not ``1e21``, ``100`` not ``100.0``, ``1e-7`` not ``1e-07``.
    """
    if math.isnan(value) or math.isinf(value):
        msg = f"{value} is not a JSON number"
        raise CanonicalizationError(msg)
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    decimal = Decimal(repr(abs(value))).normalize()
    exponent = decimal.as_tuple().exponent
    assert isinstance(exponent, int)
    digits = "".join(str(digit) for digit in decimal.as_tuple().digits)
    k = len(digits)
    n = k + exponent  # the value is 0.<digits> x 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + text


# -- the signed payload -----------------------------------------------------------------------


def signed_payloads(card: Mapping[str, Any]) -> list[bytes]:
    """The payloads a signer may have signed for ``card``, the spec's own first.

    1. JCS of the card as served, without ``signatures`` (the A2A specification);
    2. the same with empty strings, lists and objects dropped (a2a-sdk's signer drops them);
    3. the card as a2a-sdk reads it (its AgentCard model, unknown members dropped) and signs it:
       the SDK serves 1.0 cards with 0.3 members merged in, which its signature does not cover.

    Raises :class:`CanonicalizationError` when even the first has no canonical form.
    """
    unsigned = {key: value for key, value in card.items() if key != "signatures"}
    payloads = [canonical_bytes(unsigned)]
    for candidate in (_without_empty(unsigned), _sdk_form(unsigned)):
        if candidate is None:
            continue
        try:
            payload = canonical_bytes(candidate)
        except CanonicalizationError:
            continue
        if payload not in payloads:
            payloads.append(payload)
    return payloads


def _without_empty(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, dict):
        kept = {k: v for k, member in value.items() if (v := _without_empty(member, depth + 1)) is not None}
        return kept or None
    if isinstance(value, list):
        items = [v for member in value if (v := _without_empty(member, depth + 1)) is not None]
        return items or None
    return None if value == "" else value


def _sdk_form(card: Mapping[str, Any]) -> Any:
    try:
        from a2a.types import AgentCard
        from google.protobuf.json_format import MessageToDict, ParseDict
    except ImportError:  # pragma: no cover - a2a-sdk is a dependency; the form is only a courtesy
        return None
    try:
        parsed = ParseDict(dict(card), AgentCard(), ignore_unknown_fields=True)
        document = MessageToDict(parsed)
    except Exception:  # noqa: BLE001 - any card the SDK cannot read simply has no SDK form
        return None
    document.pop("signatures", None)
    return _without_empty(document)


# -- signatures ---------------------------------------------------------------------------------

_B64URL = re.compile(r"^[A-Za-z0-9_-]*={0,2}$")


def b64url_decode(text: str) -> bytes:
    """Base64url as JWS writes it (no padding; padding tolerated); raises ValueError."""
    if not _B64URL.match(text):
        msg = "not base64url"
        raise ValueError(msg)
    stripped = text.rstrip("=")
    try:
        return base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
    except binascii.Error as exc:
        msg = "not base64url"
        raise ValueError(msg) from exc


def b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


@dataclass(frozen=True, slots=True)
class ParsedSignature:
    """One ``signatures`` entry, read."""

    protected: str
    """The protected header exactly as the card holds it (it is part of the signing input)."""
    header: dict[str, Any]
    """The protected header, decoded."""
    unprotected: dict[str, Any]
    signature: bytes
    alg: str
    kid: str | None
    jku: str | None
    """Only from the protected header: an unprotected ``jku`` could be swapped by anyone."""

    def describe(self) -> str:
        kid = f"kid {self.kid!r}" if self.kid is not None else "no kid"
        return f"{self.alg}, {kid}" + (f", jku {self.jku}" if self.jku else "")


def parse_signature(entry: Any) -> ParsedSignature:
    """Read a ``signatures`` entry; raises :class:`MalformedSignatureError` saying what is wrong."""
    if not isinstance(entry, dict):
        raise MalformedSignatureError(f"the entry is a JSON {_json_type(entry)}, not an object")
    protected, signature = entry.get("protected"), entry.get("signature")
    if not isinstance(protected, str) or not protected:
        raise MalformedSignatureError("it has no `protected` header (a base64url string)")
    if not isinstance(signature, str) or not signature:
        raise MalformedSignatureError("it has no `signature` (a base64url string)")
    unprotected = entry.get("header", {})
    if unprotected is None:
        unprotected = {}
    if not isinstance(unprotected, dict):
        raise MalformedSignatureError("its unprotected `header` is not a JSON object")
    try:
        header = json.loads(b64url_decode(protected).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedSignatureError("its `protected` header is not base64url-encoded JSON") from exc
    if not isinstance(header, dict):
        raise MalformedSignatureError("its `protected` header is not a JSON object")
    try:
        raw = b64url_decode(signature)
    except ValueError as exc:
        raise MalformedSignatureError("its `signature` is not base64url") from exc
    both = sorted(set(header) & set(unprotected))
    if both:
        raise MalformedSignatureError(
            f"the protected and unprotected headers both hold {', '.join(both)} (RFC 7515 4)"
        )
    alg = header.get("alg", unprotected.get("alg"))
    if not isinstance(alg, str) or not alg:
        raise MalformedSignatureError("its header names no algorithm (`alg`)")
    kid = header.get("kid", unprotected.get("kid"))
    if kid is not None and not isinstance(kid, str):
        raise MalformedSignatureError("its `kid` is not a string")
    jku = header.get("jku")
    if jku is not None and not isinstance(jku, str):
        raise MalformedSignatureError("its `jku` is not a string")
    return ParsedSignature(protected, header, unprotected, raw, alg, kid, jku)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number" if isinstance(value, int | float) else type(value).__name__


@dataclass(frozen=True, slots=True)
class _Algorithm:
    kty: str
    curves: tuple[str, ...] = ()
    hash: type[hashes.HashAlgorithm] | None = None
    pss: bool = False


_ALGORITHMS = {
    "ES256": _Algorithm("EC", ("P-256",), hashes.SHA256),
    "ES384": _Algorithm("EC", ("P-384",), hashes.SHA384),
    "RS256": _Algorithm("RSA", (), hashes.SHA256),
    "PS256": _Algorithm("RSA", (), hashes.SHA256, pss=True),
    "EdDSA": _Algorithm("OKP", ("Ed25519", "Ed448")),
}
_CURVES: dict[str, tuple[ec.EllipticCurve, int]] = {
    "P-256": (ec.SECP256R1(), 32),
    "P-384": (ec.SECP384R1(), 48),
}
_UNTRUSTED_HEADER_KEYS = ("jwk", "x5c", "x5u")


def key_fits(signature: ParsedSignature, jwk: Mapping[str, Any]) -> bool:
    """Whether ``jwk`` may verify ``signature``: kid, kty/crv, and the key's own alg/use/key_ops."""
    algorithm = _ALGORITHMS.get(signature.alg)
    if algorithm is None:
        return False
    if signature.kid is not None and jwk.get("kid") != signature.kid:
        return False
    if jwk.get("kty") != algorithm.kty:
        return False
    if algorithm.curves and jwk.get("crv") not in algorithm.curves:
        return False
    if "alg" in jwk and jwk["alg"] != signature.alg:
        return False
    if "use" in jwk and jwk["use"] != "sig":
        return False
    operations = jwk.get("key_ops")
    return not (operations is not None and (not isinstance(operations, list) or "verify" not in operations))


def verify(signature: ParsedSignature, payload: bytes, jwk: Mapping[str, Any]) -> bool:
    """Whether ``signature`` over the detached ``payload`` verifies with ``jwk``.

    False for a bad signature and for a key that cannot be read (a fitting key is assumed:
    see :func:`key_fits`); never raises for hostile input.
    """
    algorithm = _ALGORITHMS.get(signature.alg)
    if algorithm is None:
        return False
    data = f"{signature.protected}.{b64url_encode(payload)}".encode("ascii", "replace")
    try:
        return _verify(algorithm, signature.signature, data, jwk)
    except (InvalidSignature, ValueError, TypeError, UnsupportedAlgorithm, OverflowError):
        return False


def _verify(algorithm: _Algorithm, raw: bytes, data: bytes, jwk: Mapping[str, Any]) -> bool:
    if algorithm.kty == "EC":
        assert algorithm.hash is not None
        curve, size = _CURVES[str(jwk["crv"])]
        numbers = ec.EllipticCurvePublicNumbers(_integer(jwk["x"]), _integer(jwk["y"]), curve)
        if len(raw) != 2 * size:
            return False  # JWS writes r || s, each the curve's size (RFC 7518 3.4)
        der = encode_dss_signature(int.from_bytes(raw[:size], "big"), int.from_bytes(raw[size:], "big"))
        numbers.public_key().verify(der, data, ec.ECDSA(algorithm.hash()))
        return True
    if algorithm.kty == "RSA":
        assert algorithm.hash is not None
        key = rsa.RSAPublicNumbers(_integer(jwk["e"]), _integer(jwk["n"])).public_key()
        chosen = algorithm.hash()
        scheme: padding.AsymmetricPadding = (
            padding.PSS(mgf=padding.MGF1(chosen), salt_length=chosen.digest_size)
            if algorithm.pss
            else padding.PKCS1v15()
        )
        key.verify(raw, data, scheme, chosen)
        return True
    public = b64url_decode(str(jwk["x"]))
    okp: ed25519.Ed25519PublicKey | ed448.Ed448PublicKey = (
        ed25519.Ed25519PublicKey.from_public_bytes(public)
        if jwk["crv"] == "Ed25519"
        else ed448.Ed448PublicKey.from_public_bytes(public)
    )
    okp.verify(raw, data)
    return True


def _integer(member: Any) -> int:
    if not isinstance(member, str):
        msg = "a JWK number must be a base64url string"
        raise TypeError(msg)
    return int.from_bytes(b64url_decode(member), "big")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one signature came to, and in words why."""

    outcome: Outcome
    reason: str
    kid: str | None = None
    """The kid of the key that verified it or was tried."""


def judge(
    signature: ParsedSignature, payloads: Sequence[bytes], keys: Iterable[Mapping[str, Any]]
) -> Verdict:
    """Verify ``signature`` over any of ``payloads`` with the fitting ones of ``keys``."""
    if signature.alg.lower() == "none":
        return Verdict("unsigned", "its algorithm is `none`: it signs nothing, anyone can write it")
    if signature.alg not in _ALGORITHMS:
        kind = (
            "a shared-secret (HMAC) algorithm" if signature.alg.upper().startswith("HS") else "an algorithm"
        )
        checked = ", ".join(SUPPORTED_ALGORITHMS)
        return Verdict(
            "unsupported", f"it uses {kind} the probe does not check ({signature.alg}; checked: {checked})"
        )
    critical = signature.header.get("crit")
    if critical is not None:
        return Verdict(
            "unsupported", f"its header marks extensions the probe does not know as critical: {critical!r}"
        )
    fitting = [key for key in keys if isinstance(key, Mapping) and key_fits(signature, key)]
    if not fitting:
        embedded = [
            name
            for name in _UNTRUSTED_HEADER_KEYS
            if name in signature.header or name in signature.unprotected
        ]
        hint = f" (the key embedded in its header, {', '.join(embedded)}, is not trusted)" if embedded else ""
        return Verdict("no-key", f"no fitting key ({signature.describe()}){hint}")
    for key in fitting:
        if any(verify(signature, payload, key) for payload in payloads):
            kid = key.get("kid")
            return Verdict(
                "valid", f"verifies with key {kid or '(no kid)'}", kid if isinstance(kid, str) else None
            )
    tried = ", ".join(str(key.get("kid", "(no kid)")) for key in fitting)
    first = fitting[0].get("kid")
    return Verdict(
        "invalid",
        f"it does not verify with the fitting key{'s' if len(fitting) > 1 else ''} {tried}",
        first if isinstance(first, str) else None,
    )


# -- keys from a jku --------------------------------------------------------------------------------


@dataclass
class JwksFetch:
    """The keys a ``jku`` gave (none when it was not fetched or held none; ``problem`` says why)."""

    url: str
    keys: list[dict[str, Any]] = field(default_factory=list)
    exchange: Exchange | None = None
    problem: str | None = None


def keys_in(document: Any) -> list[dict[str, Any]]:
    """The JWKs of a JWK Set (``{"keys": [...]}``), at most :data:`MAX_KEYS_PER_SET`."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        return []
    return [key for key in document["keys"] if isinstance(key, dict)][:MAX_KEYS_PER_SET]


async def fetch_jwks(session: ProbeSession, jku: str, *, base: str) -> JwksFetch:
    """The keys at ``jku`` (resolved against ``base``, the card's URL), fetched through ``session``.

    Only a ``jku`` on the target's origin is fetched: a card naming keys elsewhere must not
    make the probe leave the origin (and a key anywhere else proves nothing about the card).
    """
    try:
        url = str(httpx.URL(base).join(jku))
    except httpx.InvalidURL:
        return JwksFetch(jku, problem=f"its jku {jku!r} is not a URL")
    if not session.same_origin(url):
        return JwksFetch(
            url, problem=f"its jku {url} is on another origin than the target; it was not fetched"
        )
    exchange = await session.request(
        "GET", url, headers={"Accept": "application/jwk-set+json, application/json"}, content_type=None
    )
    if exchange.status != 200:
        answer = exchange.error or f"HTTP {exchange.status}"
        return JwksFetch(url, exchange=exchange, problem=f"its jku {url} gave no key set ({answer})")
    keys = keys_in(exchange.json())
    if not keys:
        return JwksFetch(url, exchange=exchange, problem=f"its jku {url} holds no JWK Set with keys")
    return JwksFetch(url, keys, exchange)


__all__ = [
    "MAX_DEPTH",
    "SUPPORTED_ALGORITHMS",
    "CanonicalizationError",
    "JwksFetch",
    "MalformedSignatureError",
    "Outcome",
    "ParsedSignature",
    "Verdict",
    "b64url_decode",
    "b64url_encode",
    "canonical_bytes",
    "canonicalize",
    "fetch_jwks",
    "judge",
    "key_fits",
    "keys_in",
    "number_text",
    "parse_signature",
    "signed_payloads",
    "verify",
]
