"""Which proxy a provider URL goes through, read from HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY.

The adapter builds its transport with this choice (an explicit httpx transport ignores the environment),
and `parley doctor` reports the same choice, so what doctor says is what a call does. Conventions follow
curl and Python: lowercase names win over uppercase, a value without a scheme is an http:// proxy,
NO_PROXY holds host names (suffix match, a leading dot optional), IP addresses or networks (CIDR), each
optionally with a port, or `*` for every host.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

SCHEMES = ("http", "https", "socks5", "socks5h")


class ProxySettingError(ValueError):
    """A proxy variable holds something no transport can use; the message names the variable and the fix."""


@dataclass(frozen=True)
class ProxyChoice:
    """How a URL is reached: through `proxy` (credentials included, for the transport only) or directly."""

    proxy: str | None
    because: str  # the variable that decided, e.g. "HTTPS_PROXY", "NO_PROXY", or "" when none is set

    @property
    def shown(self) -> str:
        """The choice in words ("through proxy http://proxy:3128 (from HTTPS_PROXY)"), never with credentials."""
        if self.proxy is None:
            return f"directly ({self.because} matches the host)" if self.because else "directly (no proxy set)"
        return f"through proxy {without_credentials(self.proxy)} (from {self.because})"


def proxy_for(url: str, env: Mapping[str, str] = os.environ) -> ProxyChoice:
    """The proxy for `url` under the environment's proxy variables; a malformed setting raises."""
    target = httpx.URL(url)
    found = _variable(env, f"{target.scheme}_proxy") or _variable(env, "all_proxy")
    if found is None:
        return ProxyChoice(None, "")
    bypass = _variable(env, "no_proxy")
    if bypass is not None and _bypassed(target, bypass[1]):
        return ProxyChoice(None, bypass[0])
    name, value = found
    return ProxyChoice(_checked(name, value), name)


def without_credentials(proxy: str) -> str:
    try:
        return str(httpx.URL(proxy).copy_with(username=None, password=None))
    except httpx.InvalidURL:
        return "(an invalid URL)"


def _variable(env: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(the name as set, its value) for `name` in lowercase or, failing that, uppercase; empty means unset."""
    for spelled in (name, name.upper()):
        value = env.get(spelled, "").strip()
        if value:
            return spelled, value
    return None


def _checked(name: str, value: str) -> str:
    proxy = value if "://" in value else f"http://{value}"
    try:
        parsed = httpx.URL(proxy)
    except httpx.InvalidURL:
        raise ProxySettingError(f"{name} is not a valid proxy URL; e.g. {name}=http://proxy.example:3128") from None
    if parsed.scheme not in SCHEMES or not parsed.host:
        raise ProxySettingError(
            f"{name}={without_credentials(proxy)}: use an http://, https:// or socks5:// proxy with a host"
        )
    if parsed.scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        raise ProxySettingError(
            f"{name}={without_credentials(proxy)} is a SOCKS proxy: install socksio (pip install 'httpx[socks]')"
            " or set an HTTP proxy"
        )
    return proxy


def _bypassed(target: httpx.URL, no_proxy: str) -> bool:
    host = target.host.lower().rstrip(".")
    port = target.port or (443 if target.scheme == "https" else 80)
    return any(_matches(host, port, entry.strip().lower()) for entry in no_proxy.split(","))


def _matches(host: str, port: int, entry: str) -> bool:
    if not entry:
        return False
    if entry == "*":
        return True
    name, entry_port = _split_port(entry)
    if entry_port is not None and entry_port != port:
        return False
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(name, strict=False)
    except ValueError:
        pass  # not an address and a network: compare as names
    name = name.lstrip(".").rstrip(".")
    return bool(name) and (host == name or host.endswith("." + name))


def _split_port(entry: str) -> tuple[str, int | None]:
    """'host:8080' -> ('host', 8080); '[::1]:80' -> ('::1', 80); an address or CIDR alone keeps its colons."""
    if entry.startswith("["):
        address, _, rest = entry[1:].partition("]")
        return address, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    name, colon, port = entry.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        return name, int(port)
    return entry, None
