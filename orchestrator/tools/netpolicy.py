"""Which network addresses `fetch` may reach: public http(s) only, unless the configuration says otherwise.

Pure classification plus one resolver call. Hostnames are resolved first and *every* address they resolve to is
checked, so a name pointing at 127.0.0.1 or the cloud metadata address (169.254.169.254) is refused like the literal.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import anyio

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchRefused(Exception):
    """A URL was refused by policy before any connection; the message is the one-line reason."""


def address_refusal(ip: IPAddress) -> str | None:
    """Why `ip` may not be fetched from, or None when it is a public address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
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
