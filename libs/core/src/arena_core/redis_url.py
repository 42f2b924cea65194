"""What ``ARENA_REDIS_URL`` may say: a single Redis, or a Redis Cluster by its seed nodes.

* ``redis://[user:password@]host:port/db`` and ``rediss://...`` (TLS): one Redis, as redis-py
  reads it; ``unix:///path/redis.sock?db=0`` for a socket.
* ``redis+cluster://[user:password@]host:port[,host:port...]`` and ``rediss+cluster://...``: a
  Redis Cluster. The seeds are where the client starts; it learns every node and slot from
  them and follows the cluster through failovers, so one seed is enough and more survive one
  being down. A cluster has only database 0. Query options (``?ssl_cert_reqs=none``...) apply
  to every node.

Kept free of redis-py so that the settings can check a URL without importing a client.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""URL schemes naming a Redis Cluster, and the scheme of its nodes."""

SINGLE_SCHEMES = ("redis", "rediss", "unix")
"""URL schemes naming one Redis."""


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` names a Redis Cluster (``redis+cluster://`` or ``rediss+cluster://``)."""
    return url.partition("://")[0].lower() in CLUSTER_SCHEMES


def cluster_nodes(url: str) -> tuple[str, list[tuple[str, int]]]:
    """The node URL (``redis://`` or ``rediss://`` with the credentials and options of
    ``url``, on its first seed) and every seed node of a cluster URL.

    Raises ``ValueError`` with a reason for a URL that is not a usable cluster URL.
    """
    scheme, _, rest = url.partition("://")
    node_scheme = CLUSTER_SCHEMES.get(scheme.lower())
    if node_scheme is None:
        raise ValueError("a cluster URL starts with redis+cluster:// or rediss+cluster://")
    authority, _, tail = rest.partition("/")
    path, _, query = tail.partition("?")
    if "?" in authority:
        authority, _, query = authority.partition("?")
    if path not in ("", "0"):
        raise ValueError(f"a Redis Cluster has only database 0, not '{path}'")
    credentials, at, hosts = authority.rpartition("@")
    seeds: list[tuple[str, int]] = []
    for host_port in hosts.split(","):
        parsed = urlsplit(f"{node_scheme}://{host_port}")
        try:
            port = parsed.port
        except ValueError as exc:
            raise ValueError(f"'{host_port}' is not host:port") from exc
        if not parsed.hostname or port is None:
            raise ValueError(f"'{host_port}' is not host:port (every seed node needs its port)")
        seeds.append((unquote(parsed.hostname), port))
    first = hosts.split(",")[0]
    node_url = f"{node_scheme}://{credentials}{at}{first}/0" + (f"?{query}" if query else "")
    return node_url, seeds


def check_redis_url(url: str) -> str:
    """``url`` if it names a single Redis or a cluster; else ``ValueError`` saying why."""
    scheme, sep, _ = url.partition("://")
    if not sep:
        raise ValueError("a Redis URL looks like redis://host:6379/0 or redis+cluster://host:7000")
    if scheme.lower() in CLUSTER_SCHEMES:
        cluster_nodes(url)
    elif scheme.lower() not in SINGLE_SCHEMES:
        known = ", ".join(f"{name}://" for name in (*SINGLE_SCHEMES, *CLUSTER_SCHEMES))
        raise ValueError(f"unknown Redis URL scheme '{scheme}://' (one of {known})")
    return url


__all__ = ["CLUSTER_SCHEMES", "SINGLE_SCHEMES", "check_redis_url", "cluster_nodes", "is_cluster_url"]
