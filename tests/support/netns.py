"""A private network of hosts made of Linux network namespaces (root only).

:class:`VirtualNetwork` gives each host its own network namespace with one address on a
bridge (the bridge lives in a namespace of its own: nothing is added to the machine's own
network), and a hosts file that ``ip netns exec`` lays over ``/etc/hosts`` inside that host
(see ip-netns(8)), so host names resolve per host exactly as on a Compose network. Several
hosts may share a name (replicas). Addresses come from 198.18.0.0/15, the range set aside for
network tests (RFC 2544); traffic never leaves the namespaces. Everything is removed by
:meth:`VirtualNetwork.down`, also after a failure.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNET = 0x40000000
NETNS_ETC = Path("/etc/netns")


def netns_unavailable() -> str | None:
    """Why this process cannot build namespaces, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    probe = f"arena-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return None


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@dataclass
class Host:
    """One host: its namespace, address and the names it answers to."""

    key: str
    namespace: str
    address: str
    names: tuple[str, ...]


@dataclass
class VirtualNetwork:
    """Hosts on one bridge; call :meth:`add` for each, then :meth:`up`, finally :meth:`down`."""

    # Random, so a namespace left by a killed run never blocks the next one.
    prefix: str = field(default_factory=lambda: f"arena{secrets.token_hex(3)}")
    subnet: str = "198.18.0"
    hosts: dict[str, Host] = field(default_factory=dict)
    _created: list[str] = field(default_factory=list)

    @property
    def hub(self) -> str:
        return f"{self.prefix}-hub"

    def add(self, key: str, names: tuple[str, ...]) -> Host:
        """A host called ``key`` (unique) answering to ``names`` (shared by replicas)."""
        if key in self.hosts:
            raise ValueError(f"host {key} exists")
        number = len(self.hosts) + 2
        host = Host(key, f"{self.prefix}-{number}", f"{self.subnet}.{number}", names)
        self.hosts[key] = host
        return host

    def hosts_file(self) -> str:
        lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
        lines += [f"{host.address} {' '.join(host.names)}" for host in self.hosts.values()]
        return "\n".join(lines) + "\n"

    def up(self) -> None:
        try:
            self._up()
        except BaseException:
            self.down()
            raise

    def _up(self) -> None:
        _ip("netns", "add", self.hub)
        self._created.append(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        hosts_text = self.hosts_file()
        for index, host in enumerate(self.hosts.values()):
            _ip("netns", "add", host.namespace)
            self._created.append(host.namespace)
            inner, outer = f"eth{index}", f"veth{index}"
            # Both ends are created straight inside their namespaces.
            _ip(
                "link",
                "add",
                inner,
                "netns",
                host.namespace,
                "type",
                "veth",
                "peer",
                "name",
                outer,
                "netns",
                self.hub,
            )
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", inner)
            _ip("-n", host.namespace, "link", "set", inner, "up")
            _ip("-n", host.namespace, "link", "set", "lo", "up")
            _ip("-n", self.hub, "link", "set", outer, "master", "br0", "up")
            etc = NETNS_ETC / host.namespace
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts_text)

    def exec_prefix(self, key: str) -> list[str]:
        """Argv prefix that runs a command on host ``key``."""
        return ["ip", "netns", "exec", self.hosts[key].namespace]

    @contextmanager
    def entered(self, key: str) -> Iterator[None]:
        """Run this thread on host ``key`` while inside (sockets made here stay on that host)."""
        libc = ctypes.CDLL(None, use_errno=True)
        with (
            open("/proc/thread-self/ns/net") as own,
            open(f"/run/netns/{self.hosts[key].namespace}") as target,
        ):
            if libc.setns(target.fileno(), CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns into the host's namespace failed")
            try:
                yield
            finally:
                if libc.setns(own.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back failed")

    def down(self) -> None:
        """Delete every namespace (their veths go with them) and hosts file made by :meth:`up`."""
        for namespace in reversed(self._created):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)
            shutil.rmtree(NETNS_ETC / namespace, ignore_errors=True)
        self._created.clear()


__all__ = ["Host", "VirtualNetwork", "netns_unavailable"]
