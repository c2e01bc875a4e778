"""Which models a provider offers, and which servers on this computer answer: Ollama lists its models at
/api/tags, LM Studio and llama.cpp's server (like any OpenAI-compatible server) at /v1/models.

Blocking (httpx), with short timeouts: a server on 127.0.0.1 answers at once or is not there. The app calls these
from a worker thread; `detect_local` asks every server at once, each in its own thread, and waits for all.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from adapters.llm.openai_compat import endpoint
from adapters.llm.proxy import ProxySettingError, proxy_for
from adapters.llm.secret import Secret, redact_url
from desktop.providers.table import PROVIDERS, Provider

DETECT_CONNECT_S = 0.3  # a server on this computer accepts at once; a filtered port must not hold the dialog
DETECT_READ_S = 2.0  # listing models is instant, but a busy server may take a moment


class NotListed(Exception):
    """The provider's model list could not be had; the message is one line naming the URL and why."""


@dataclass(frozen=True)
class Detected:
    """A server found on this computer and the models it offers."""

    provider: Provider
    base_url: str
    models: tuple[str, ...]


def list_url(provider: Provider, base_url: str) -> str:
    """Where `provider`'s model list is: {root}/api/tags for Ollama (its native API, beside /v1), else {base}/models."""
    if provider.listing != "ollama":
        return endpoint(base_url, "models")
    parts = urlsplit(base_url)
    root = parts.path.rstrip("/").removesuffix("/v1")
    return urlunsplit(parts._replace(path=root + "/api/tags", query=""))


def list_models(
    provider: Provider, base_url: str, *, key: Secret | None = None, connect_s: float = 5.0, read_s: float = 10.0
) -> tuple[str, ...]:
    """The model names the server offers, in its order (blocking); NotListed says in one line why not."""
    url = list_url(provider, base_url)
    shown = redact_url(url)
    headers = {"Authorization": f"Bearer {key.reveal()}"} if key is not None and provider.sends_key else {}
    try:
        route = proxy_for(url)
        timeout = httpx.Timeout(connect=connect_s, read=read_s, write=read_s, pool=connect_s)
        response = httpx.get(url, headers=headers, timeout=timeout, proxy=route.proxy, trust_env=False)
    except (ProxySettingError, httpx.InvalidURL) as error:
        raise NotListed(f"{shown} not asked: {error}") from None
    except httpx.HTTPError as error:
        raise NotListed(f"{shown} cannot be reached ({type(error).__name__})") from None
    if response.status_code in (401, 403):
        raise NotListed(f"{shown} refused the API key (HTTP {response.status_code})")
    if response.status_code == 404:
        raise NotListed(f"nothing answers at {shown} (HTTP 404)")
    if response.status_code != 200:
        raise NotListed(f"{shown} answered HTTP {response.status_code}")
    try:
        return _names(response.json(), provider.listing)
    except (ValueError, TypeError, KeyError, AttributeError):
        raise NotListed(f"{shown} answered, but not with a {provider.label} model list") from None


def _names(body: Any, listing: str) -> tuple[str, ...]:
    """Model names from /api/tags ({"models": [{"name": ...}]}) or /v1/models ({"data": [{"id": ...}]})."""
    if listing == "ollama":
        return tuple(str(model["name"]) for model in body["models"])
    return tuple(str(model["id"]) for model in body["data"])


def detect_local(where: Mapping[str, str] | None = None, *, connect_s: float = DETECT_CONNECT_S) -> list[Detected]:
    """The servers on this computer that answer with a model list (blocking, all asked at once). `where` puts a
    provider at another URL than its default (a test's server, a changed port)."""
    servers = [p for p in PROVIDERS if p.local_server]
    with ThreadPoolExecutor(max_workers=len(servers), thread_name_prefix="parley-detect") as pool:
        asked = [pool.submit(_detect, p, (where or {}).get(p.name, p.base_url), connect_s) for p in servers]
    return [d for d in (future.result() for future in asked) if d is not None]


def _detect(provider: Provider, base_url: str, connect_s: float) -> Detected | None:
    try:
        models = list_models(provider, base_url, connect_s=connect_s, read_s=DETECT_READ_S)
    except NotListed:
        return None
    return Detected(provider, base_url, models)
