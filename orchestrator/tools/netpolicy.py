"""Which network addresses `fetch` may reach: public http(s) only, unless the configuration says otherwise.

Pure classification plus one resolver call. Hostnames are resolved first and *every* address they resolve to is
checked, so a name pointing at 127.0.0.1 or the cloud metadata address (169.254.169.254) is refused like the literal.
Cloud metadata and control addresses (Azure's WireServer 168.63.129.16 among them, which is public address
space) are refused by name, from `knowledge/cloud_addresses.yaml`.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import anyio

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchRefused(Exception):
    """A URL was refused by policy before any connection; the message is the one-line reason."""


# IPv6 prefixes whose low 32 bits (or, for 6to4, bits 16..48) name an IPv4 address that a translator or tunnel on
# the path will connect to: the embedded address is what must be checked (Python's `is_global` calls most of these
# public). NAT64 well-known (RFC 6052) and local-use (RFC 8215) prefixes, IPv4-compatible (::/96, deprecated) and
# IPv4-translated (::ffff:0:0:0/96, SIIT) forms.
_EMBEDS_IPV4_LOW32 = [
    ipaddress.ip_network("64:ff9b::/96"),
    ipaddress.ip_network("64:ff9b:1::/48"),
    ipaddress.ip_network("::/96"),
    ipaddress.ip_network("::ffff:0:0:0/96"),
]
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if ip in _SIX_TO_FOUR:
        return ip.sixtofour
    for net in _EMBEDS_IPV4_LOW32:
        if ip in net and int(ip) & 0xFFFFFFFF > 1:  # ::, ::1 keep their own meaning
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _cloud_service(ip: IPAddress) -> str | None:
    """The cloud metadata/control service at `ip` (knowledge/cloud_addresses.yaml), or None."""
    from orchestrator import knowledge

    for entry in knowledge.cloud_addresses():
        net = ipaddress.ip_network(entry.network)
        if ip.version == net.version and ip in net:
            return entry.service
    return None


def address_refusal(ip: IPAddress) -> str | None:
    """Why `ip` may not be fetched from, or None when it is a public address."""
    reason = _class_refusal(ip)
    service = _cloud_service(ip)
    if service is None:
        return reason
    # Azure's WireServer (168.63.129.16) is public address space that Python calls global: refused by name
    return f"{reason}: {service}" if reason else f"{ip} is a cloud metadata/control address: {service}"


def _class_refusal(ip: IPAddress) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            reason = address_refusal(embedded)
            return f"{ip} embeds {embedded} ({reason})" if reason else None
        if ip in _SITE_LOCAL:
            return f"{ip} is a site-local address"
    if ip.is_unspecified:
        return f"{ip} is an unspecified address"
    if ip.is_loopback:
        return f"{ip} is a loopback address"
    if ip.is_link_local:
        return f"{ip} is a link-local address (cloud metadata services live there)"
    if ip.is_multicast:
        return f"{ip} is a multicast address"
    if ip.is_private:
        return f"{ip} is a private address"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


def split_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; anything else is refused."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise FetchRefused(f"not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchRefused(f"scheme {scheme + ':' if scheme else '(none)'} is not allowed; only http and https")
    if not parts.hostname:
        raise FetchRefused("URL has no host")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80)


def _allowed_by_list(host: str, ip: IPAddress, allow: list[str]) -> bool:
    for entry in allow:
        if entry.lower() == host.lower():
            return True
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


async def resolve_checked(host: str, port: int, *, allow_private: bool, allow: list[str] | None = None) -> IPAddress:
    """Resolve `host` and return the address to connect to; refuse if any address it resolves to is forbidden."""
    try:
        literal: IPAddress | None = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise OSError(f"cannot resolve host {host!r} ({exc.strerror})") from None
        addresses = []
        for info in infos:
            addr = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if addr not in addresses:
                addresses.append(addr)
        if not addresses:
            raise OSError(f"host {host!r} resolved to no address")
    if not allow_private:
        for addr in addresses:
            reason = address_refusal(addr)
            if reason and not _allowed_by_list(host, addr, allow or []):
                shown = host if literal is not None else f"{host} resolves to {addr}, which"
                raise FetchRefused(reason if literal is not None else f"{shown} {reason.split(' ', 1)[1]}")
    return addresses[0]
