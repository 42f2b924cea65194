"""ARENA_TARGET_ALLOWLIST: parsing and decisions of the egress policy (pure logic)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena_core.egress_policy import BLOCKED_NETWORKS, EgressPolicy, IPAddress, IPNetwork
from arena_core.errors import ConfigError
from arena_core.settings import load_settings


def ip(text: str) -> IPAddress:
    return ipaddress.ip_address(text)


def refused(policy: str | None, host: str, *addresses: str) -> str | None:
    return EgressPolicy.parse(policy).refusal(host, [ip(a) for a in addresses])


# --- parsing -------------------------------------------------------------------------------


def test_every_kind_of_entry_is_parsed() -> None:
    policy = EgressPolicy.parse(
        " Agent.Example.com. , *.Agents.example.org,10.1.2.3, 10.20.0.0/16,fd00::/8,[::1],* "
    )
    assert policy.restricted
    assert policy.names == {"agent.example.com"}
    assert policy.suffixes == ("agents.example.org",)
    assert [str(n) for n in policy.networks] == ["10.1.2.3/32", "10.20.0.0/16", "fd00::/8", "::1/128"]
    assert policy.any_address


@pytest.mark.parametrize("text", [None, "", "  ", ",", " , ,"])
def test_unset_or_empty_is_unrestricted(text: str | None) -> None:
    policy = EgressPolicy.parse(text)
    assert not policy.restricted
    assert policy.describe() == "ARENA_TARGET_ALLOWLIST is not set"


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("http://agent.example.com", "without scheme"),
        ("agent.example.com:8080", "without scheme, port"),
        ("10.0.0.1:80", "without scheme, port"),
        ("10.0.0.1/8", "host bits set"),
        ("10.0.0.0/33", "not a valid CIDR"),
        ("agent.example.com/path", "not a valid CIDR"),
        ("*example.com", "wildcard"),
        ("agent.*.com", "wildcard"),
        ("**", "wildcard"),
        ("*.", "wildcard"),
        ("bad..name", "not a host name"),
        ("-bad.example", "not a host name"),
        ("spa ce", "not a host name"),
    ],
)
def test_bad_entries_are_refused_with_their_text(entry: str, says: str) -> None:
    with pytest.raises(ValueError, match="'") as caught:
        EgressPolicy.parse(f"ok.example, {entry}")
    assert entry in str(caught.value)
    assert says in str(caught.value)


def test_every_bad_entry_is_named_at_once() -> None:
    with pytest.raises(ValueError, match="x:1") as caught:
        EgressPolicy.parse("x:1,ok,y:2")
    assert "'x:1'" in str(caught.value) and "'y:2'" in str(caught.value)


def test_a_bad_allowlist_is_a_settings_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"ARENA_TARGET_ALLOWLIST: .*'http://x'"):
        load_settings(target_allowlist="127.0.0.1,http://x")


def test_settings_give_the_parsed_policy() -> None:
    assert not load_settings().target_policy().restricted
    assert not load_settings(target_allowlist=" ").target_policy().restricted
    policy = load_settings(target_allowlist="localhost,10.0.0.0/8").target_policy()
    assert policy.names == {"localhost"}


# --- decisions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "addresses"),
    [
        ("127.0.0.1", ()),
        ("127.0.0.2", ()),
        ("10.1.2.3", ()),
        ("192.168.1.1", ()),
        ("::1", ()),
        ("8.8.8.8", ()),
        ("defender", ("172.18.0.5",)),
        ("agent.example.com", ("93.184.216.34", "2606:2800:220:1::1")),
    ],
)
def test_by_default_loopback_private_and_public_addresses_pass(host: str, addresses: tuple[str, ...]) -> None:
    assert refused(None, host, *addresses) is None


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",
        "169.254.0.1",
        "fe80::1",
        "fd00:ec2::254",
        "0.0.0.0",
        "0.1.2.3",
        "::",
        "224.0.0.1",
        "239.255.255.250",
        "ff02::1",
        "255.255.255.255",
        "::ffff:169.254.169.254",
        # Cloud metadata and platform services outside link-local.
        "100.100.100.200",
        "168.63.129.16",
        "::ffff:100.100.100.200",
        # IPv6 that carries a blocked IPv4 address.
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b::100.100.100.200",
        "64:ff9b::168.63.129.16",
        "64:ff9b::0.0.0.0",
        "64:ff9b::e000:1",  # 224.0.0.1
        "2002:a9fe:a9fe::",  # 6to4
        "2002:a9fe:a9fe:1::1",
        "2002:6464:64c8::1",  # 100.100.100.200
        "2001:0:a9fe:a9fe::1",  # Teredo, its server
        "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo, its client (stored inverted)
        # IPv6 forms refused outright.
        "::a9fe:a9fe",  # IPv4-compatible
        "::8.8.8.8",
        "::2",
        "::ffff:0:a9fe:a9fe",  # SIIT
        "::ffff:0:808:808",
        "64:ff9b:1::a9fe:a9fe",  # local-use NAT64
        "64:ff9b:1:ffff::1",
    ],
)
def test_the_deny_list_applies_by_default_and_with_an_allowlist(address: str) -> None:
    for policy in (None, "*", "0.0.0.0/0,::/0", "::/0,metadata.internal", "*.internal"):
        problem = refused(policy, address)
        assert problem is not None and "blocked range" in problem, (policy, problem)
        # Also when a name resolves there, even a name on the allowlist.
        problem = refused(policy, "metadata.internal", address)
        assert problem is not None and "blocked range" in problem, (policy, problem)


@pytest.mark.parametrize(
    "address",
    [
        "::1",  # the IPv6 loopback is not an IPv4-compatible address
        "::ffff:8.8.8.8",
        "64:ff9b::8.8.8.8",
        "64:ff9b::10.0.0.1",
        "2002:808:808::1",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo: server 65.54.227.120, client 192.0.2.45
        "2001:db8::1",  # documentation, not Teredo
        "64:ff9c::a9fe:a9fe",  # next to the NAT64 prefix, not in it
    ],
)
def test_ipv6_carrying_an_unblocked_ipv4_address_passes_by_default(address: str) -> None:
    assert refused(None, address) is None
    assert refused("*", address) is None
    assert refused("agent.example.com", "agent.example.com", address) is None


def test_an_embedded_address_is_named_in_the_message() -> None:
    assert refused(None, "64:ff9b::a9fe:a9fe") == (
        "64:ff9b::a9fe:a9fe embeds 169.254.169.254 (NAT64 64:ff9b::/96) in the blocked range "
        "169.254.0.0/16 (link-local, where cloud metadata services live); name 169.254.169.254 or a "
        "range inside 169.254.0.0/16 in ARENA_TARGET_ALLOWLIST to allow it"
    )
    assert refused("agent.example.com", "agent.example.com", "10.0.0.1", "2002:a9fe:a9fe::1") == (
        "agent.example.com resolves to 2002:a9fe:a9fe::1, which embeds 169.254.169.254 (6to4 2002::/16) "
        "in the blocked range 169.254.0.0/16 (link-local, where cloud metadata services live); name "
        "169.254.169.254 or a range inside 169.254.0.0/16 in ARENA_TARGET_ALLOWLIST to allow it"
    )
    problem = refused(None, "2001:0:4136:e378:8000:63bf:5601:5601")
    assert problem is not None and "embeds 169.254.169.254 (Teredo 2001::/32, its client)" in problem


def test_only_an_ipv4_entry_inside_the_blocked_range_lifts_the_block_of_an_embedding() -> None:
    nat64 = "64:ff9b::a9fe:a9fe"
    assert refused("*,169.254.169.254", nat64) is None
    assert refused("*,169.254.0.0/16", nat64) is None
    assert refused("169.254.169.254,64:ff9b::/96", nat64) is None
    # The IPv4 entry lifts the deny list, not the allowlist: the IPv6 address must be on it too.
    problem = refused("169.254.169.254", nat64)
    assert problem is not None and "is not on the target allowlist" in problem
    # An IPv6 network holding it is not "inside" the IPv4 blocked range; nor is another address.
    for policy in ("64:ff9b::/96", "64:ff9b::a9fe:a9fe", "*,169.254.169.253", "2002::/16"):
        problem = refused(policy, nat64)
        assert problem is not None and "blocked range 169.254.0.0/16" in problem, policy


@pytest.mark.parametrize(
    ("entry", "address"),
    [
        ("::a9fe:a9fe", "::a9fe:a9fe"),
        ("::ffff:0:0:0/96", "::ffff:0:808:808"),
        ("64:ff9b:1::/48", "64:ff9b:1::5"),
        ("100.100.100.200", "100.100.100.200"),
        ("168.63.129.16/32", "168.63.129.16"),
        ("fd00:ec2::254", "fd00:ec2::254"),
    ],
)
def test_a_range_refused_outright_can_be_listed(entry: str, address: str) -> None:
    assert refused(entry, address) is None
    assert refused("*", address) is not None


def test_a_listed_name_is_held_to_the_deny_list_but_not_to_the_address_entries() -> None:
    # "agent.internal" passes at any address but the deny list's...
    policy = "agent.internal,10.0.0.0/8"
    assert refused(policy, "agent.internal", "192.0.2.7", "2001:db8::7") is None
    # ...which applies to every address it resolves to, in any form.
    for address in ("169.254.169.254", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "fe80::1"):
        problem = refused(policy, "agent.internal", "192.0.2.7", address)
        assert problem is not None and "blocked range" in problem, address
    # An explicit address or range inside the blocked range lifts it, for a listed name too.
    assert refused("agent.internal,169.254.169.254", "agent.internal", "169.254.169.254") is None
    assert refused("agent.internal,169.254.169.254", "agent.internal", "169.254.169.1") is not None


def test_the_module_doc_says_the_deny_list_binds_listed_names() -> None:
    import arena_core.egress_policy as module

    doc = " ".join((module.__doc__ or "").split())
    assert "whatever it resolves to" not in doc
    assert "except those on the deny list" in doc
    assert "listed names and wildcards included" in doc


def test_the_metadata_message_says_what_and_how_to_allow() -> None:
    problem = refused(None, "169.254.169.254")
    assert problem == (
        "169.254.169.254 is in the blocked range 169.254.0.0/16 (link-local, where cloud metadata "
        "services live); name that address or range in ARENA_TARGET_ALLOWLIST to allow it"
    )


@pytest.mark.parametrize("entry", ["169.254.169.254", "169.254.169.0/24", "169.254.0.0/16"])
def test_an_entry_inside_a_blocked_range_allows_it(entry: str) -> None:
    assert refused(entry, "169.254.169.254") is None
    assert refused(f"{entry},metadata.internal", "metadata.internal", "169.254.169.254") is None
    assert refused(entry, "::ffff:169.254.169.254") is None


def test_an_entry_inside_a_blocked_range_allows_only_itself() -> None:
    assert refused("169.254.169.254", "169.254.169.253") is not None
    assert refused("fe80::1", "fe80::2") is not None
    assert refused("fe80::1", "fe80::1") is None


def test_an_allowlist_admits_only_its_entries() -> None:
    policy = "127.0.0.1,10.20.0.0/16,fd00::/8,agent.example.com,*.agents.example.org"
    assert refused(policy, "127.0.0.1") is None
    assert refused(policy, "10.20.255.1") is None
    assert refused(policy, "fd00::1234") is None
    problem = refused(policy, "127.0.0.2")
    assert problem == f"127.0.0.2 is not on the target allowlist (ARENA_TARGET_ALLOWLIST={policy})"
    assert refused(policy, "10.21.0.1") is not None
    assert refused(policy, "fe00::1") is not None


def test_names_and_wildcards_match_by_name_whatever_they_resolve_to() -> None:
    policy = "agent.example.com,*.agents.example.org"
    assert refused(policy, "Agent.Example.COM.", "203.0.113.7") is None
    assert refused(policy, "a.agents.example.org", "10.0.0.1", "::1") is None
    assert refused(policy, "x.y.agents.example.org", "10.0.0.1") is None
    # A wildcard is for subdomains only; a name is exact.
    assert refused(policy, "agents.example.org", "10.0.0.1") is not None
    assert refused(policy, "evilagents.example.org", "10.0.0.1") is not None
    assert refused(policy, "sub.agent.example.com", "10.0.0.1") is not None
    assert refused(policy, "agent.example.com.evil.test", "10.0.0.1") is not None


def test_a_name_off_the_list_passes_only_when_all_its_addresses_are_on_it() -> None:
    assert refused("127.0.0.1", "rebind.test", "127.0.0.1") is None
    problem = refused("127.0.0.1", "rebind.test", "127.0.0.1", "127.0.0.2")
    assert problem is not None and problem.startswith(
        "rebind.test resolves to 127.0.0.2, which is not on the target allowlist"
    )
    assert refused("127.0.0.1", "nowhere.test") == "nowhere.test resolves to no address"


def test_a_name_refused_by_name_needs_no_resolution() -> None:
    policy = EgressPolicy.parse("agent.example.com")
    assert not policy.needs_addresses("evil.test")
    assert policy.needs_addresses("agent.example.com")
    assert policy.needs_addresses("10.0.0.1")
    assert EgressPolicy.parse("10.0.0.0/8").needs_addresses("evil.test")
    assert EgressPolicy.parse(None).needs_addresses("evil.test")
    assert refused("agent.example.com", "evil.test") == (
        "evil.test is not on the target allowlist (ARENA_TARGET_ALLOWLIST=agent.example.com)"
    )


def test_star_allows_any_address_but_the_deny_list() -> None:
    assert refused("*", "203.0.113.9") is None
    assert refused("*", "anything.test", "10.0.0.1") is None
    assert refused("*", "169.254.169.254") is not None


def test_a_long_allowlist_is_shortened_in_messages() -> None:
    long = ",".join(f"host{i}.example.com" for i in range(40))
    problem = refused(long, "10.0.0.1")
    assert problem is not None and problem.endswith("...)") and len(problem) < 200


# --- properties ----------------------------------------------------------------------------

ipv4 = st.ip_addresses(v=4)
ipv6 = st.ip_addresses(v=6)


NAT64 = ipaddress.ip_network("64:ff9b::/96")
LOOPBACK6 = ipaddress.ip_address("::1")


def _first_block(address: IPAddress) -> IPNetwork | None:
    """The deny-list range holding ``address`` itself (first match), as the docs list them."""
    if address == LOOPBACK6:
        return None
    for net, _ in BLOCKED_NETWORKS:
        if address.version == net.version and address in net:
            return net
    return None


def _carried(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses NAT64, 6to4 and Teredo put in an IPv6 address (worked out here anew)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    bits = int(address)
    if address in NAT64:
        return [ipaddress.IPv4Address(bits & 0xFFFFFFFF)]
    if bits >> 112 == 0x2002:
        return [ipaddress.IPv4Address((bits >> 80) & 0xFFFFFFFF)]
    if bits >> 96 == 0x20010000:
        server = (bits >> 64) & 0xFFFFFFFF
        return [ipaddress.IPv4Address(server), ipaddress.IPv4Address(~bits & 0xFFFFFFFF)]
    return []


def _unmapped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _blocked(address: IPAddress) -> bool:
    address = _unmapped(address)
    return _first_block(address) is not None or any(_first_block(v4) is not None for v4 in _carried(address))


@given(address=st.one_of(ipv4, ipv6))
def test_by_default_exactly_the_deny_list_is_refused(address: IPAddress) -> None:
    problem = EgressPolicy.parse(None).refusal(str(address), [])
    assert (problem is not None) == _blocked(address)


@given(address=ipv4)
def test_nat64_and_6to4_forms_are_refused_exactly_when_their_ipv4_address_is(
    address: ipaddress.IPv4Address,
) -> None:
    policy = EgressPolicy.parse(None)
    blocked = policy.refusal(str(address), []) is not None
    nat64 = ipaddress.IPv6Address(int(NAT64.network_address) | int(address))
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80) | 1)
    mapped = ipaddress.IPv6Address((0xFFFF << 32) | int(address))
    for form in (nat64, sixtofour, mapped):
        assert (policy.refusal(str(form), []) is not None) == blocked, form
    # SIIT and IPv4-compatible forms are refused whatever they carry.
    siit = ipaddress.IPv6Address((0xFFFF << 48) | int(address))
    assert policy.refusal(str(siit), []) is not None
    if int(address) > 1:
        assert policy.refusal(str(ipaddress.IPv6Address(int(address))), []) is not None


@given(
    network=st.one_of(ipv4, ipv6).flatmap(lambda a: st.tuples(st.just(a), st.integers(0, a.max_prefixlen)))
)
def test_an_address_in_an_allowed_network_passes_unless_blocked(network: tuple[IPAddress, int]) -> None:
    address, prefix = network
    if address.version == 6 and address.ipv4_mapped is not None:
        return
    cidr = ipaddress.ip_network(f"{address}/{prefix}", strict=False)
    policy = EgressPolicy.parse(str(cidr))
    problem = policy.refusal(str(address), [])
    # The entry lifts the block of the range holding the address when it lies inside that range;
    # an IPv6 entry never lifts the block of an IPv4 address the address carries.
    block = _first_block(address)
    lifted = block is not None and cidr.subnet_of(block)  # type: ignore[arg-type]
    carried_blocked = any(_first_block(v4) is not None for v4 in _carried(address))
    assert (problem is None) == ((block is None or lifted) and not carried_blocked)
    top = int(cidr.broadcast_address)
    if top < 2**cidr.max_prefixlen - 1:
        outside = type(address)(top + 1)
        assert policy.refusal(str(outside), []) is not None


@given(entries=st.lists(st.one_of(ipv4, ipv6).map(str), max_size=5))
def test_parsing_is_stable(entries: list[str]) -> None:
    text = ",".join(entries)
    policy = EgressPolicy.parse(text)
    assert EgressPolicy.parse(policy.source) == policy
