"""Which hosts the arena may connect to on a user's say-so: ``ARENA_TARGET_ALLOWLIST``.

Pure logic, no I/O: :class:`EgressPolicy` parses the allowlist and decides on a
host name and the addresses it resolved to. The transport that enforces it
(resolving, pinning the checked address) is :mod:`arena_core.a2a.egress_guard`.

Entries (comma-separated, case-insensitive):

* ``agent.example.com``: that host name exactly, at any address it resolves to
  except those on the deny list (below);
* ``*.example.com``: any subdomain of ``example.com`` (not ``example.com`` itself),
  on the same terms as a name;
* ``10.1.2.3``, ``fd00::1``: that address;
* ``10.0.0.0/8``, ``fd00::/8``: any address in that network;
* ``*``: any address (but the deny list).

Unset or empty allows any address but the deny list. A name not on the list
passes only when every address it resolves to is on it (as an address or in a
network); a listed name passes at any address but the deny list's.

The deny list (:data:`BLOCKED_NETWORKS`: link-local, where most clouds serve
metadata, and the other cloud metadata and platform addresses; unspecified,
multicast, broadcast; IPv6 forms that hide an IPv4 address) always applies, to
literal addresses and to every address a name resolves to, listed names and
wildcards included. Only an address or network entry *inside* a blocked range
lifts it, for the addresses it covers (``169.254.169.254`` or ``169.254.0.0/16``;
``0.0.0.0/0``, ``*`` or a listed name do not).

IPv6 addresses that carry an IPv4 address:

* IPv4-mapped ``::ffff:a.b.c.d`` *is* ``a.b.c.d``: it is judged as the IPv4
  address (deny list and allowlist alike);
* NAT64 ``64:ff9b::/96`` (well-known prefix), 6to4 ``2002::/16`` and Teredo
  ``2001::/32`` (its server and its client address) are refused when the IPv4
  address they carry is on the deny list, unless an IPv4 entry inside the
  blocked range covers that IPv4 address; otherwise they are judged as IPv6
  addresses (a restrictive allowlist must list them, or a network holding them);
* IPv4-compatible ``::a.b.c.d`` (``::/96`` but ``::1``; deprecated), SIIT
  ``::ffff:0:a.b.c.d`` (``::ffff:0:0:0/96``) and the local-use NAT64 prefix
  ``64:ff9b:1::/48`` (where its IPv4 address sits depends on the network) are
  on the deny list themselves.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

SETTING = "ARENA_TARGET_ALLOWLIST"

BLOCKED_NETWORKS: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(cidr), why)
    for cidr, why in (
        ("169.254.0.0/16", "link-local, where cloud metadata services live"),
        ("fe80::/10", "IPv6 link-local"),
        ("fd00:ec2::254/128", "the AWS IPv6 metadata service"),
        ("100.100.100.200/32", "the Alibaba Cloud metadata service"),
        ("168.63.129.16/32", "the Azure WireServer, a platform and metadata service"),
        ("0.0.0.0/8", "unspecified ('this host')"),
        ("::/128", "the IPv6 unspecified address"),
        ("::/96", "IPv4-compatible IPv6, deprecated"),  # but ::1: see _NOT_BLOCKED
        ("::ffff:0:0:0/96", "SIIT IPv4-translated IPv6"),
        ("64:ff9b:1::/48", "local-use NAT64, whose IPv4 address cannot be located"),
        ("224.0.0.0/4", "multicast"),
        ("ff00::/8", "IPv6 multicast"),
        ("255.255.255.255/32", "broadcast"),
    )
)
"""Refused unless an allowlist entry inside the range names it: (network, why), first match wins."""

_NOT_BLOCKED = frozenset({ipaddress.IPv6Address("::1")})
"""Inside a blocked range but not refused: the IPv6 loopback is not an IPv4-compatible address."""

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*$")
_MAX_SHOWN = 120


def normalise_address(address: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address (``::ffff:a.b.c.d``) as the IPv4 address it is."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.scope_id:
            return ipaddress.IPv6Address(str(address).split("%", 1)[0])
    return address


def embedded_ipv4(address: IPAddress) -> tuple[tuple[ipaddress.IPv4Address, str], ...]:
    """The IPv4 addresses an IPv6 address carries to be reached at: ``(address, how)`` pairs.

    NAT64 (well-known prefix), 6to4 and Teredo (server and client); nothing for
    other addresses. (IPv4-mapped addresses are normalised to IPv4 instead.)
    """
    if not isinstance(address, ipaddress.IPv6Address):
        return ()
    if address in _NAT64:
        return ((ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), f"NAT64 {_NAT64}"),)
    if address.sixtofour is not None:
        return ((address.sixtofour, "6to4 2002::/16"),)
    if address.teredo is not None:
        server, client = address.teredo
        return ((server, "Teredo 2001::/32, its server"), (client, "Teredo 2001::/32, its client"))
    return ()


def parse_address(host: str) -> IPAddress | None:
    """``host`` as an IP address (brackets and IPv6 zone allowed), or None for a name."""
    text = host.strip().strip("[]")
    try:
        return normalise_address(ipaddress.ip_address(text))
    except ValueError:
        return None


def normalise_host(host: str) -> str:
    """Lower case, without brackets or one trailing dot: how names are compared."""
    text = host.strip().strip("[]").lower()
    return text[:-1] if text.endswith(".") else text


def _parse_entry(entry: str) -> tuple[str, str | IPNetwork | None]:
    """``(kind, value)`` with kind ``any``, ``name``, ``suffix`` or ``network``; raises ValueError."""
    text = entry.strip().lower()
    if text == "*":
        return "any", None
    if "://" in text or text.count(":") == 1:
        raise ValueError(
            f"'{entry}' is not a host, *.domain, IP address or CIDR (write hosts without scheme, "
            "port or path)"
        )
    if "/" in text:
        try:
            return "network", ipaddress.ip_network(text.strip("[]"), strict=True)
        except ValueError as exc:
            raise ValueError(
                f"'{entry}' is not a valid CIDR network ({exc}; write hosts without a path)"
            ) from exc
    address = parse_address(text)
    if address is not None:
        return "network", ipaddress.ip_network(address)
    if text.startswith("*."):
        suffix = normalise_host(text[2:])
        if not _HOSTNAME.match(suffix):
            raise ValueError(f"'{entry}' is not a valid *.domain wildcard")
        return "suffix", suffix
    name = normalise_host(text)
    if "*" in text or not _HOSTNAME.match(name):
        raise ValueError(
            f"'{entry}' is not a host name, *.domain wildcard, IP address or CIDR network "
            "(a wildcard may only be '*' or lead as '*.')"
        )
    return "name", name


@dataclass(frozen=True, slots=True)
class _Block:
    """Why the deny list refuses an address: its range, and the IPv4 address that put it there."""

    network: IPNetwork
    why: str
    carried: ipaddress.IPv4Address | None = None
    via: str = ""

    def problem(self) -> str:
        if self.carried is None:
            return (
                f"is in the blocked range {self.network} ({self.why}); name that address or range in "
                f"{SETTING} to allow it"
            )
        return (
            f"embeds {self.carried} ({self.via}) in the blocked range {self.network} ({self.why}); "
            f"name {self.carried} or a range inside {self.network} in {SETTING} to allow it"
        )


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """A parsed ``ARENA_TARGET_ALLOWLIST``: who may be connected to.

    ``restricted`` is False when no allowlist is set (any address but the deny
    list). Build it with :meth:`parse`.
    """

    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()
    any_address: bool = False
    restricted: bool = False
    source: str = ""

    @classmethod
    def parse(cls, text: str | None) -> EgressPolicy:
        """Parse the allowlist; raises ValueError naming every bad entry."""
        entries = [entry.strip() for entry in (text or "").split(",") if entry.strip()]
        names: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        any_address = False
        problems: list[str] = []
        for entry in entries:
            try:
                kind, value = _parse_entry(entry)
            except ValueError as exc:
                problems.append(str(exc))
                continue
            if kind == "any":
                any_address = True
            elif kind == "name" and isinstance(value, str):
                names.add(value)
            elif kind == "suffix" and isinstance(value, str):
                suffixes.append(value)
            elif isinstance(value, ipaddress.IPv4Network | ipaddress.IPv6Network):
                networks.append(value)
        if problems:
            raise ValueError("; ".join(problems))
        return cls(
            names=frozenset(names),
            suffixes=tuple(dict.fromkeys(suffixes)),
            networks=tuple(dict.fromkeys(networks)),
            any_address=any_address,
            restricted=bool(entries),
            source=",".join(entries),
        )

    def describe(self) -> str:
        """The allowlist as set, for messages (shortened when long)."""
        if not self.restricted:
            return f"{SETTING} is not set"
        shown = self.source if len(self.source) <= _MAX_SHOWN else self.source[: _MAX_SHOWN - 3] + "..."
        return f"{SETTING}={shown}"

    def name_allowed(self, host: str) -> bool:
        """True when ``host`` (a name) is on the allowlist by name: any address it resolves to
        may pass, but those the deny list refuses (:meth:`address_refusal` still applies)."""
        if not self.restricted or self.any_address:
            return True
        name = normalise_host(host)
        return name in self.names or any(name.endswith("." + suffix) for suffix in self.suffixes)

    def needs_addresses(self, host: str) -> bool:
        """False when ``host`` is refused whatever it resolves to (so it need not be resolved)."""
        return parse_address(host) is not None or self.name_allowed(host) or bool(self.networks)

    def _block(self, address: IPAddress) -> _Block | None:
        """The deny-list range refusing ``address``, or None (not in it, or explicitly allowed);
        for an IPv6 address embedding an IPv4 one (NAT64, 6to4, Teredo), maybe the IPv4 range."""
        address = normalise_address(address)
        block = self._listed_block(address)
        if block is not None:
            return block
        for carried, via in embedded_ipv4(address):
            inner = self._listed_block(carried)
            if inner is not None:
                return _Block(inner.network, inner.why, carried, via)
        return None

    def _listed_block(self, address: IPAddress) -> _Block | None:
        if address in _NOT_BLOCKED:
            return None
        for network, why in BLOCKED_NETWORKS:
            if address.version == network.version and address in network:
                explicit = any(
                    entry.version == network.version and address in entry and entry.subnet_of(network)  # type: ignore[arg-type]
                    for entry in self.networks
                )
                return None if explicit else _Block(network, why)
        return None

    def address_refusal(self, address: IPAddress, *, by_name: bool = False) -> str | None:
        """Why ``address`` is refused, or None when allowed.

        ``by_name``: the host name it was resolved from is on the allowlist (the
        deny list applies all the same).
        """
        problem = self._address_problem(address, by_name=by_name)
        return None if problem is None else f"{normalise_address(address)} {problem}"

    def _address_problem(self, address: IPAddress, *, by_name: bool) -> str | None:
        block = self._block(address)
        if block is not None:
            return block.problem()
        if by_name or not self.restricted or self.any_address:
            return None
        address = normalise_address(address)
        if any(address.version == net.version and address in net for net in self.networks):
            return None
        return f"is not on the target allowlist ({self.describe()})"

    def refusal(self, host: str, addresses: Sequence[IPAddress]) -> str | None:
        """Why connecting to ``host`` (resolved to ``addresses``) is refused, or None.

        An IP literal is judged as an address. A name passes when every address
        it resolves to passes: each must be off the deny list, and, unless the
        name itself is on the allowlist, on the allowlist as an address.
        """
        literal = parse_address(host)
        if literal is not None:
            return self.address_refusal(literal)
        by_name = self.name_allowed(host)
        if not by_name and not self.networks:
            return f"{normalise_host(host)} is not on the target allowlist ({self.describe()})"
        if not addresses:
            return f"{normalise_host(host)} resolves to no address"
        for address in addresses:
            problem = self._address_problem(address, by_name=by_name)
            if problem is not None:
                return f"{normalise_host(host)} resolves to {normalise_address(address)}, which {problem}"
        return None


__all__ = [
    "BLOCKED_NETWORKS",
    "SETTING",
    "EgressPolicy",
    "IPAddress",
    "IPNetwork",
    "embedded_ipv4",
    "normalise_address",
    "normalise_host",
    "parse_address",
]
