"""ARENA_REDIS_URL: a single Redis or a Redis Cluster by its seed nodes, refused with a reason."""

from __future__ import annotations

import pytest

from arena_core.errors import ConfigError
from arena_core.redis_url import check_redis_url, cluster_nodes, is_cluster_url
from arena_core.settings import load_settings


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "rediss://:pw@redis.example:6380/2",
        "unix:///run/redis.sock?db=0",
        "redis+cluster://127.0.0.1:7000",
        "rediss+cluster://user:p%40ss@a:7000,b:7001/0?ssl_cert_reqs=none",
    ],
)
def test_accepted_urls(url: str) -> None:
    assert check_redis_url(url) == url


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("127.0.0.1:6379", "looks like redis://"),
        ("http://redis:6379", "unknown Redis URL scheme 'http://'"),
        ("redis+cluster://node", "every seed node needs its port"),
        ("redis+cluster://a:7000,b", "every seed node needs its port"),
        ("redis+cluster://a:port", "is not host:port"),
        ("redis+cluster://a:7000/1", "only database 0"),
    ],
)
def test_refused_urls_say_why(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        check_redis_url(url)


def test_cluster_seeds_and_the_node_url_keep_credentials_and_options() -> None:
    node_url, seeds = cluster_nodes("rediss+cluster://u:p%40ss@a:7000,[::1]:7001?ssl_cert_reqs=none")
    assert node_url == "rediss://u:p%40ss@a:7000/0?ssl_cert_reqs=none"
    assert seeds == [("a", 7000), ("::1", 7001)]
    assert is_cluster_url("REDIS+CLUSTER://a:1") and not is_cluster_url("redis://a:1")


def test_settings_refuse_a_bad_url_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_REDIS_URL", "redis+cluster://nowhere")
    with pytest.raises(ConfigError, match=r"ARENA_REDIS_URL: .*every seed node needs its port"):
        load_settings()
    monkeypatch.setenv("ARENA_REDIS_URL", " redis+cluster://a:7000 ")
    assert load_settings().redis_url == "redis+cluster://a:7000"
