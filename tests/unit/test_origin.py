"""Origin: the one value for "the origin of a URL" (token scopes, rate limits, messages)."""

from __future__ import annotations

import httpx
import pytest

from arena_core.a2a.egress_guard import display_origin
from arena_core.credential_scope import display, origin_of
from arena_core.origin import DEFAULT_PORTS, Origin
from arena_core.rate_limit import target_origin


@pytest.mark.parametrize(
    ("url", "origin", "shown"),
    [
        ("http://Defender:8081/rest/v1?x=1", ("http", "defender", 8081), "http://defender:8081"),
        ("HTTP://defender/", ("http", "defender", 80), "http://defender:80"),
        (
            "https://user:pw@agent.example.com/a2a#f",
            ("https", "agent.example.com", 443),
            "https://agent.example.com:443",
        ),
        ("http://[::1]:9000/", ("http", "::1", 9000), "http://[::1]:9000"),
        ("http://[2001:DB8::1]/", ("http", "2001:db8::1", 80), "http://[2001:db8::1]:80"),
        ("http://xn--BCHER-kva.de", ("http", "bücher.de", 80), "http://bücher.de:80"),
        ("http://a:0/", ("http", "a", 80), "http://a:80"),
        ("ftp://Host", ("ftp", "host", 0), "ftp://host"),
        ("ftp://host:2121", ("ftp", "host", 2121), "ftp://host:2121"),
        ("unix:/tmp/socket", ("unix", "", 0), "unix://"),
    ],
)
def test_of_and_its_display_form(url: str, origin: tuple[str, str, int], shown: str) -> None:
    found = Origin.of(url)
    assert found == origin
    assert (found.scheme, found.host, found.port) == origin
    assert str(found) == shown
    assert Origin.of(httpx.URL(url)) == found
    # Every helper that shows or keys an origin shows this one.
    assert display_origin(url) == target_origin(url) == shown


def test_text_that_is_no_url_raises_in_of_and_is_none_in_of_web() -> None:
    with pytest.raises(httpx.InvalidURL):
        Origin.of("http://ﬀ.de")
    assert Origin.of_web("http://ﬀ.de") is None


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Host:8443/x", ("https", "host", 8443)),
        ("http://[FE80::1]/", ("http", "fe80::1", 80)),
        ("ftp://host", None),
        ("http:///path", None),
        ("not a url", None),
    ],
)
def test_of_web_is_http_or_https_with_a_host(url: str, origin: tuple[str, str, int] | None) -> None:
    assert Origin.of_web(url) == origin
    assert origin_of(url) == origin


def test_origins_compare_and_hash_as_the_plain_tuples_settings_write() -> None:
    origin = Origin("http", "a", 80)
    assert origin == ("http", "a", 80)
    assert origin in {("http", "a", 80)}
    assert Origin.of("http://A/") == Origin.of("http://a:80/x")
    assert Origin.of("http://a") != Origin.of("https://a") != Origin.of("http://a:81")
    assert display(("http", "::1", 9)) == str(Origin("http", "::1", 9)) == "http://[::1]:9"


def test_one_default_port_table() -> None:
    assert DEFAULT_PORTS == {"http": 80, "https": 443}
