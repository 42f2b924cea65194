"""ARENA_TARGET_ALLOWLIST: parsing and decisions of the egress policy (pure logic)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena_core.egress_policy import BLOCKED_NETWORKS, EgressPolicy, IPAddress
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
    ],
)
def test_the_deny_list_applies_by_default_and_with_an_allowlist(address: str) -> None:
    for policy in (None, "*", "0.0.0.0/0,::/0", "metadata.internal"):
        problem = refused(policy, address)
        assert problem is not None and "blocked range" in problem, (policy, problem)
        # Also when a name resolves there, even a name on the allowlist.
        problem = refused(policy, "metadata.internal", address)
        assert problem is not None and "blocked range" in problem, (policy, problem)


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


def _blocked(address: IPAddress) -> bool:
    return any(address.version == net.version and address in net for net, _ in BLOCKED_NETWORKS)


@given(address=st.one_of(ipv4, ipv6))
def test_by_default_exactly_the_deny_list_is_refused(address: IPAddress) -> None:
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    problem = EgressPolicy.parse(None).refusal(str(address), [])
    assert (problem is not None) == _blocked(address)


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
    blocked_ranges = [net for net, _ in BLOCKED_NETWORKS if net.version == cidr.version]
    explicit = any(cidr.subnet_of(net) for net in blocked_ranges)  # type: ignore[arg-type]
    assert (problem is None) == (not _blocked(address) or explicit)
    top = int(cidr.broadcast_address)
    if top < 2**cidr.max_prefixlen - 1:
        outside = type(address)(top + 1)
        assert policy.refusal(str(outside), []) is not None


@given(entries=st.lists(st.one_of(ipv4, ipv6).map(str), max_size=5))
def test_parsing_is_stable(entries: list[str]) -> None:
    text = ",".join(entries)
    policy = EgressPolicy.parse(text)
    assert EgressPolicy.parse(policy.source) == policy
