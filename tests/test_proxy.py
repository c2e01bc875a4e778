"""Proxies from the environment (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY): which one a URL takes, that the
OpenAI-compatible adapter really goes through it (one attempt, no retries), and what `parley doctor` says.

The proxy is a tiny forward proxy on 127.0.0.1 (tests/http_proxy.py) in front of the fault server.
"""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import replace

import pytest

from adapters.contract import CancelSignal, GenerateOptions, LlmError, LlmFailure, Message, StreamChunk, TextDelta
from adapters.contract.llm import INVALID_REQUEST, SERVER_ERROR, TRANSPORT
from adapters.llm.openai_compat import OpenAICompatAdapter
from adapters.llm.proxy import ProxySettingError, proxy_for
from adapters.llm.secret import Secret
from desktop.config import Config, LlmConfig
from desktop.doctor import doctor
from tests import fault_behaviours as faults
from tests.fault_server import FaultServer
from tests.fault_server import running as serving
from tests.http_proxy import ForwardProxy, running

PASSWORD = "pr0xy-s3cret"
OPTIONS = GenerateOptions(messages=(Message("user", "Hello"),))


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with serving() as started:
        yield started


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    with running() as started:
        yield started


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The proxy variables of this test only (conftest clears the machine's)."""
    return monkeypatch


# Which proxy a URL takes (pure).

ROUTES = [
    ({}, "http://api.example/v1", None, ""),
    ({"HTTP_PROXY": "http://p:1"}, "http://api.example/v1", "http://p:1", "HTTP_PROXY"),
    ({"HTTP_PROXY": "http://p:1"}, "https://api.example/v1", None, ""),
    ({"HTTPS_PROXY": "http://p:2"}, "https://api.example/v1", "http://p:2", "HTTPS_PROXY"),
    ({"https_proxy": "http://low:2", "HTTPS_PROXY": "http://up:2"}, "https://a.example", "http://low:2", "https_proxy"),
    ({"ALL_PROXY": "http://all:3"}, "https://api.example/v1", "http://all:3", "ALL_PROXY"),
    ({"ALL_PROXY": "http://all:3", "HTTPS_PROXY": "http://p:2"}, "https://a.example", "http://p:2", "HTTPS_PROXY"),
    ({"HTTPS_PROXY": "proxy.corp:3128"}, "https://a.example", "http://proxy.corp:3128", "HTTPS_PROXY"),
    ({"HTTPS_PROXY": "http://p:2", "NO_PROXY": "a.example"}, "https://a.example/v1", None, "NO_PROXY"),
    ({"HTTPS_PROXY": "http://p:2", "NO_PROXY": ".example"}, "https://api.a.example/v1", None, "NO_PROXY"),
    ({"HTTPS_PROXY": "http://p:2", "NO_PROXY": "example"}, "https://a.example/v1", None, "NO_PROXY"),
    ({"HTTPS_PROXY": "http://p:2", "NO_PROXY": "example"}, "https://badexample/v1", "http://p:2", "HTTPS_PROXY"),
    ({"HTTPS_PROXY": "http://p:2", "no_proxy": "*"}, "https://a.example/v1", None, "no_proxy"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "x, 10.0.0.0/8"}, "http://10.1.2.3:8080/v1", None, "NO_PROXY"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "127.0.0.1"}, "http://127.0.0.1:8080/v1", None, "NO_PROXY"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "::1"}, "http://[::1]:8080/v1", None, "NO_PROXY"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "a.example:8080"}, "http://a.example:8080/v1", None, "NO_PROXY"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "a.example:9"}, "http://a.example:8080/v1", "http://p:1", "HTTP_PROXY"),
]


@pytest.mark.parametrize(("variables", "url", "proxy", "because"), ROUTES)
def test_the_environment_decides_the_route(
    variables: dict[str, str], url: str, proxy: str | None, because: str
) -> None:
    choice = proxy_for(url, variables)
    assert (choice.proxy, choice.because) == (proxy, because)


def test_the_route_in_words_never_shows_the_proxy_password() -> None:
    choice = proxy_for("https://a.example", {"HTTPS_PROXY": f"http://me:{PASSWORD}@proxy.corp:3128"})
    assert choice.proxy == f"http://me:{PASSWORD}@proxy.corp:3128"
    assert choice.shown == "through proxy http://proxy.corp:3128 (from HTTPS_PROXY)"


@pytest.mark.parametrize("value", ["ftp://p:21", "http://:3128", "http://p:port"])
def test_an_unusable_proxy_setting_names_the_variable(value: str) -> None:
    with pytest.raises(ProxySettingError, match=r"^HTTPS_PROXY") as caught:
        proxy_for("https://a.example", {"HTTPS_PROXY": value})
    assert "\n" not in str(caught.value)


def test_a_socks_proxy_works_only_with_socksio() -> None:
    variables = {"ALL_PROXY": f"socks5://me:{PASSWORD}@127.0.0.1:1080"}
    if importlib.util.find_spec("socksio") is not None:
        assert proxy_for("https://a.example", variables).proxy == variables["ALL_PROXY"]
        return
    with pytest.raises(ProxySettingError, match="install socksio") as caught:
        proxy_for("https://a.example", variables)
    assert PASSWORD not in str(caught.value)


# The adapter, through a real proxy.


async def run(server: FaultServer) -> tuple[list[StreamChunk], LlmFailure | None]:
    """One call of the adapter: its chunks, and the failure it raised if any."""
    adapter = OpenAICompatAdapter(server.base_url, "fault-1", Secret("sk-proxy-test"), provider="testprov")
    chunks: list[StreamChunk] = []
    try:
        async with aclosing(adapter.stream(OPTIONS, CancelSignal())) as stream:
            chunks += [chunk async for chunk in stream]
    except LlmError as error:
        return chunks, error.failure
    return chunks, None


@pytest.mark.anyio
async def test_a_call_goes_through_the_proxy_with_its_credentials(
    server: FaultServer, proxy: ForwardProxy, env: pytest.MonkeyPatch
) -> None:
    env.setenv("HTTP_PROXY", proxy.url(f"me:{PASSWORD}"))
    server.push(faults.text_stream("Hello through the proxy."))
    chunks, failure = await run(server)
    assert failure is None
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "Hello through the proxy."
    (forwarded,) = proxy.requests
    assert (forwarded.method, forwarded.uri) == ("POST", f"{server.base_url}/chat/completions")
    assert forwarded.headers["proxy-authorization"].startswith("Basic ")
    (reached,) = server.requests
    assert reached.path == "/v1/chat/completions"
    assert "proxy-authorization" not in reached.headers  # the proxy's credentials stop at the proxy
    assert await server.until_closed(0)


@pytest.mark.anyio
async def test_no_proxy_goes_direct(server: FaultServer, proxy: ForwardProxy, env: pytest.MonkeyPatch) -> None:
    env.setenv("HTTP_PROXY", proxy.url())
    env.setenv("NO_PROXY", "localhost,127.0.0.1")
    server.push(faults.text_stream())
    _, failure = await run(server)
    assert failure is None
    assert proxy.requests == []
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_one_call_through_a_proxy_is_one_attempt(
    server: FaultServer, proxy: ForwardProxy, env: pytest.MonkeyPatch
) -> None:
    env.setenv("HTTP_PROXY", proxy.url())
    server.push(faults.server_error(503), faults.text_stream())
    _, failure = await run(server)
    assert failure is not None
    assert (failure.code, failure.status) == (SERVER_ERROR, 503)
    assert len(proxy.requests) == 1
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_a_dead_proxy_is_a_transport_failure_that_names_it(server: FaultServer, env: pytest.MonkeyPatch) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # closed again before the call: nothing listens there
    env.setenv("HTTP_PROXY", f"http://me:{PASSWORD}@127.0.0.1:{port}")
    _, failure = await run(server)
    assert failure is not None
    assert failure.code == TRANSPORT
    assert f"tried through proxy http://127.0.0.1:{port} (from HTTP_PROXY)" in failure.message
    assert PASSWORD not in failure.message
    assert server.requests == []


@pytest.mark.anyio
async def test_a_proxy_that_wants_credentials_answers_407(server: FaultServer, env: pytest.MonkeyPatch) -> None:
    with running(credentials=("me", PASSWORD)) as proxy:
        env.setenv("HTTP_PROXY", proxy.url())
        _, failure = await run(server)
        assert failure is not None
        assert failure.status == 407
        env.setenv("HTTP_PROXY", proxy.url(f"me:{PASSWORD}"))
        server.push(faults.text_stream())
        assert (await run(server))[1] is None
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_an_unusable_proxy_setting_fails_before_any_attempt(server: FaultServer, env: pytest.MonkeyPatch) -> None:
    env.setenv("HTTP_PROXY", "ftp://proxy.corp:21")
    _, failure = await run(server)
    assert failure is not None
    assert failure.code == INVALID_REQUEST
    assert "HTTP_PROXY" in failure.message
    assert server.requests == []


# What doctor says.


def _doctor(server: FaultServer) -> dict[str, tuple[bool, str]]:
    config = replace(Config(), llm=LlmConfig(provider="openai", base_url=server.base_url, connect_timeout=2))
    return {c.name: (c.ok, c.detail) for c in doctor(config)}


def test_doctor_names_the_proxy_it_uses_without_its_password(
    server: FaultServer, proxy: ForwardProxy, env: pytest.MonkeyPatch
) -> None:
    env.setenv("HTTP_PROXY", proxy.url(f"me:{PASSWORD}"))
    server.push(faults.status(200, {"data": []}))
    checks = _doctor(server)
    assert checks["LLM proxy"] == (True, f"{server.base_url} is reached through proxy {proxy.url()} (from HTTP_PROXY)")
    assert checks["LLM provider"] == (True, f"{server.base_url}/models answered (HTTP 200); no API key was sent")
    assert [r.uri for r in proxy.requests] == [f"{server.base_url}/models"]
    assert PASSWORD not in repr(checks)


def test_doctor_says_when_no_proxy_sends_it_direct(
    server: FaultServer, proxy: ForwardProxy, env: pytest.MonkeyPatch
) -> None:
    env.setenv("HTTP_PROXY", proxy.url())
    env.setenv("no_proxy", "127.0.0.1")
    server.push(faults.status(200, {"data": []}))
    checks = _doctor(server)
    assert checks["LLM proxy"] == (True, f"{server.base_url} is reached directly (no_proxy matches the host)")
    assert checks["LLM provider"][0]
    assert proxy.requests == []


def test_doctor_says_a_proxy_wants_credentials(server: FaultServer, env: pytest.MonkeyPatch) -> None:
    with running(credentials=("me", PASSWORD)) as proxy:
        env.setenv("HTTP_PROXY", proxy.url())
        ok, detail = _doctor(server)["LLM provider"]
    assert not ok
    assert "the proxy wants credentials; set HTTP_PROXY to http://user:password@host:port" in detail
