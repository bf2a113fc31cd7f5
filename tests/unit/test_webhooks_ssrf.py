"""The webhook SSRF guard: every refused address class, every IPv4 spelling, URL shapes."""

from __future__ import annotations

import ipaddress

import pytest

from pgqueue.errors import ValidationError
from pgqueue.ssrf import (
    AddressGuard,
    IPAddress,
    address_refusal,
    parse_ip_literal,
    parse_webhook_url,
)


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("192.0.2.10", "private"),
        ("198.18.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("fec0::1", "private"),
        ("2001:db8::1", "private"),
        ("ff02::1", "multicast"),
        ("::127.0.0.1", "reserved"),
        ("64:ff9b:1::1", "reserved"),
    ],
)
def test_non_public_addresses_are_refused_with_their_class(address: str, category: str) -> None:
    reason = address_refusal(ipaddress.ip_address(address))
    assert reason is not None
    assert f" {category} address" in reason


@pytest.mark.parametrize(
    ("address", "embedded"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("::ffff:169.254.169.254", "169.254.169.254"),
        ("64:ff9b::7f00:1", "127.0.0.1"),
        ("2002:c0a8:101::1", "192.168.1.1"),
    ],
)
def test_ipv6_addresses_that_embed_a_private_ipv4_address_are_refused(
    address: str, embedded: str
) -> None:
    reason = address_refusal(ipaddress.ip_address(address))
    assert reason is not None
    assert f"IPv4 {embedded} embedded in IPv6" in reason


@pytest.mark.parametrize(
    "address",
    ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
     "64:ff9b::808:808", "2002:808:808::1"],
)  # fmt: skip
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0X7F000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0177.0.0.01", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0xa.0.0.1", "10.0.0.1"),
        ("167772161", "10.0.0.1"),
        ("0", "0.0.0.0"),
        ("::1", "::1"),
        ("::ffff:7f00:1", "::ffff:127.0.0.1"),
        ("fe80::1%25eth0", "fe80::1%eth0"),
    ],
)
def test_ip_literals_are_read_in_every_spelling(host: str, address: str) -> None:
    assert parse_ip_literal(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize(
    "host", ["example.com", "1.2.3.4.5", "256.1.1.1", "08.1.1.1", "4294967296", "1.2.3.0x1g"]
)
def test_names_and_impossible_numbers_are_not_ip_literals(host: str) -> None:
    assert parse_ip_literal(host) is None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "Webhook URL is required"),
        (None, "Webhook URL is required"),
        (42, "Webhook URL is required"),
        ("https://example.com/" + "a" * 2048, "Webhook URL too long (max 2048 characters)"),
        ("not a url", "Invalid URL format"),
        ("http://", "Invalid URL format"),
        ("http://example.com:99999/", "Invalid URL format"),
        ("ftp://example.com/", "Webhook URL must use http or https protocol"),
        ("file:///etc/passwd", "Webhook URL must use http or https protocol"),
        ("gopher://example.com/", "Webhook URL must use http or https protocol"),
        ("http://[::1/", "Invalid URL format"),
        ("http://exa\nmple.com/", "Invalid URL format"),
    ],
)
def test_malformed_urls_are_refused_with_bunqueues_messages(url: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_webhook_url(url)
    assert caught.value.message == message
    assert caught.value.field == "url"


def test_a_url_is_taken_apart_with_its_default_port() -> None:
    target = parse_webhook_url("HTTPS://user:pw@Example.COM./a?b=1")
    assert (target.scheme, target.host, target.port, target.address) == (
        "https",
        "example.com",
        443,
        None,
    )
    assert parse_webhook_url("http://[::1]:8080/x").address == ipaddress.ip_address("::1")


def _fixed(*addresses: str, allow_private: bool = False) -> AddressGuard:
    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address(a) for a in addresses]

    return AddressGuard(allow_private, resolver)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://2130706433/", "2130706433 is a loopback address"),
        ("http://0x7f.1:8080/", "0x7f.1 is a loopback address"),
        ("http://[::1]/", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "a loopback address (IPv4 127.0.0.1 embedded in IPv6)"),
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
        ("http://localhost:8080/", "localhost is a loopback host name"),
        ("http://api.localhost/", "api.localhost is a loopback host name"),
        ("http://LOCALHOST./", "localhost is a loopback host name"),
    ],
)
async def test_registration_refuses_urls_that_reach_refused_addresses(
    url: str, reason: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        await _fixed("93.184.216.34").check_url(url)
    assert caught.value.message.startswith("Webhook URL is not allowed: ")
    assert reason in caught.value.message


async def test_a_name_is_refused_when_any_of_its_addresses_is_private() -> None:
    with pytest.raises(ValidationError, match=r"hooks\.example resolves to a private address"):
        await _fixed("93.184.216.34", "10.1.2.3").check_url("https://hooks.example/x")
    target = await _fixed("93.184.216.34", "2606:4700:4700::1111").check_url("https://h.example/")
    assert target.host == "h.example"


async def test_a_name_that_does_not_resolve_yet_is_accepted_at_registration() -> None:
    async def nowhere(host: str, port: int) -> list[IPAddress]:
        raise OSError("Name or service not known")

    target = await AddressGuard(resolver=nowhere).check_url("http://nowhere.example/")
    assert (target.host, target.address) == ("nowhere.example", None)


async def test_vet_returns_the_addresses_to_connect_to_and_raises_oserror_when_unresolved() -> None:
    assert await _fixed("93.184.216.34").vet("h.example", 80) == [
        ipaddress.ip_address("93.184.216.34")
    ]

    async def nowhere(host: str, port: int) -> list[IPAddress]:
        raise OSError("no")

    with pytest.raises(OSError, match="no"):
        await AddressGuard(resolver=nowhere).vet("h.example", 80)


async def test_allow_private_lets_every_address_through_but_not_other_schemes() -> None:
    guard = AddressGuard(allow_private=True)
    for url in ("http://127.0.0.1:9/", "http://localhost/", "http://[::1]/", "http://10.0.0.1/"):
        assert (await guard.check_url(url)).url == url
    assert await _fixed("127.0.0.1", allow_private=True).vet("h", 80) == [
        ipaddress.ip_address("127.0.0.1")
    ]
    with pytest.raises(ValidationError, match="must use http or https"):
        await guard.check_url("ftp://127.0.0.1/")
