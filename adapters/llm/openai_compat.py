"""OpenAI-compatible streaming chat completions over raw httpx (OpenAI, DeepSeek, Ollama, llama.cpp, vLLM...).

One `stream()` call is one HTTP attempt on a client of its own: no retries at any level, and when the
call ends (finish, failure, idle timeout, cancel, or a consumer walking away) its socket is closed.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace
from typing import Never, cast
from urllib.parse import urlsplit, urlunsplit

import httpx

from adapters.contract import CancelSignal, GenerateOptions, LlmError, LlmFailure, StreamChunk
from adapters.contract.llm import ABORTED, INVALID_REQUEST, PROTOCOL, TRANSPORT, FailureCode
from adapters.llm.failures import body_info, describe, request_id, scrub, status_failure
from adapters.llm.openai_wire import StreamState, WireError, build_body
from adapters.llm.proxy import ProxyChoice, ProxySettingError, proxy_for
from adapters.llm.secret import Secret
from adapters.llm.sse import SseDecoder, SseError, SseEvent
from adapters.llm.transport import CancelRequested, next_bytes, transport_failure, until_cancelled

log = logging.getLogger(__name__)
MAX_ERROR_BODY = 64 * 1024


class OpenAICompatAdapter:
    """An LlmAdapter for any server speaking OpenAI's streaming /chat/completions."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: Secret | None,
        *,
        connect_timeout: float = 5.0,
        idle_timeout: float = 20.0,
        provider: str = "openai",
        max_tokens: int | None = None,
    ) -> None:
        """`max_tokens`: sent with every request that does not set its own (a voice-sized reply)."""
        self._url = endpoint(base_url, "chat/completions")
        self._where = (provider, _shown(self._url))
        self._model = model
        self._key = api_key
        self._provider = provider
        self._idle_timeout = idle_timeout
        self._timeout = httpx.Timeout(
            connect=connect_timeout, read=idle_timeout, write=idle_timeout, pool=connect_timeout
        )
        self._ssl: ssl.SSLContext | None = None
        self._max_tokens = max_tokens
        self.active_generations = 0  # streams open now: the provider is working (`--fast` must not skip ahead)

    def __repr__(self) -> str:
        key = "set" if self._key else "none"
        where = f"provider={self._provider!r}, model={self._model!r}, url={self._where[1]!r}"
        return f"OpenAICompatAdapter({where}, api_key={key})"

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model(self) -> str:
        return self._model

    async def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        """Yield the provider's chunks; transport/protocol failures and cancel are raised as LlmError."""
        body = self._prepare(options, signal)
        route = self._route()
        self.active_generations += 1
        try:
            async with self._client(route.proxy) as client, aclosing(self._chunks(client, body, signal)) as chunks:
                async for chunk in chunks:
                    yield chunk
        except httpx.HTTPError as exc:
            via = f"; tried {route.shown}" if route.proxy else ""
            raise LlmError(self._scrub(transport_failure(exc, self._where, self._idle_timeout, via))) from None
        except CancelRequested:
            raise LlmError(
                LlmFailure(describe(*self._where, "cancelled; the connection was closed"), ABORTED)
            ) from None
        finally:
            self.active_generations -= 1

    def _prepare(self, options: GenerateOptions, signal: CancelSignal) -> bytes:
        """Everything that can fail before a request exists fails here, without an attempt."""
        if signal.cancelled:
            raise LlmError(LlmFailure(describe(*self._where, "cancelled before sending"), ABORTED))
        if not self._url.lower().startswith(("http://", "https://")):
            self._fail(INVALID_REQUEST, "the base URL must start with http:// or https://")
        if options.max_tokens is None and self._max_tokens is not None:
            options = replace(options, max_tokens=self._max_tokens)
        try:
            return build_body(options, self._model)
        except WireError as exc:
            self._fail(INVALID_REQUEST, str(exc))

    def _route(self) -> ProxyChoice:
        """The proxy the environment names for this URL (an explicit transport would ignore it), or direct."""
        try:
            route = proxy_for(self._url)
        except ProxySettingError as exc:
            self._fail(INVALID_REQUEST, str(exc))
        except httpx.InvalidURL as exc:
            self._fail(INVALID_REQUEST, f"the base URL is not valid ({exc})")
        log.debug("%s: %s", self._provider, route.shown)  # never the proxy's credentials
        return route

    def _client(self, proxy: str | None) -> httpx.AsyncClient:
        """One attempt, no retries: retries=0 on the one transport, and no environment lookups behind our back."""
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()  # loading CA certificates is slow: once per adapter
        transport = httpx.AsyncHTTPTransport(retries=0, verify=self._ssl, proxy=proxy)
        return httpx.AsyncClient(transport=transport, timeout=self._timeout, follow_redirects=False, trust_env=False)

    async def _chunks(
        self, client: httpx.AsyncClient, body: bytes, signal: CancelSignal
    ) -> AsyncGenerator[StreamChunk, None]:
        log.debug("%s: POST %s", self._provider, self._where[1])  # never the headers: they hold the key
        request = client.build_request("POST", self._url, content=body, headers=self._headers())
        response = await until_cancelled(client.send(request, stream=True), signal)
        try:
            await self._check(response, signal)
            async with aclosing(self._events(response, signal)) as events:
                async for chunk in events:
                    yield chunk
        finally:
            await response.aclose()

    async def _events(self, response: httpx.Response, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        """Network reads → SSE events → chunks, until [DONE], an error event, or the end of the body."""
        state = StreamState(where=" at ".join(self._where), request_id=request_id(response.headers))
        decoder = SseDecoder()
        async with aclosing(cast(AsyncGenerator[bytes, None], response.aiter_bytes())) as body:
            while not state.finished:
                data = await until_cancelled(next_bytes(body), signal)
                for chunk in self._apply(state, self._decode(decoder, data)):
                    yield chunk
                if data is None:
                    break
        if not state.ended_cleanly:
            self._fail(TRANSPORT, "the stream ended before the provider finished it")
        for chunk in state.ending():
            yield chunk

    def _apply(self, state: StreamState, events: list[SseEvent]) -> list[StreamChunk]:
        chunks: list[StreamChunk] = []
        for event in events:
            if state.finished:
                break
            if event.data.strip() == "[DONE]":
                state.done = True
                continue
            try:
                chunks.extend(state.on_payload(json.loads(event.data), error_event=event.event == "error"))
            except (ValueError, WireError) as exc:
                self._fail(PROTOCOL, f"malformed stream event ({type(exc).__name__}: {str(exc)[:80]})")
        return chunks

    def _decode(self, decoder: SseDecoder, data: bytes | None) -> list[SseEvent]:
        try:
            return decoder.feed(data) if data is not None else decoder.close()
        except SseError as exc:
            self._fail(PROTOCOL, f"malformed event stream ({exc})")

    async def _check(self, response: httpx.Response, signal: CancelSignal) -> None:
        """A non-2xx status, or a 200 that is not an event stream, is raised before any chunk."""
        if not 200 <= response.status_code < 300:
            raw = await self._error_body(response, signal)
            info = body_info(raw, response.headers.get("content-type", ""))
            failure = status_failure(
                response.status_code,
                response.reason_phrase,
                response.headers,
                info,
                where=self._where,
                keyed=self._key is not None,
            )
            raise LlmError(self._scrub(failure))
        content_type = response.headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "text/event-stream":
            what = f"HTTP {response.status_code} is not an event stream (content-type {content_type or 'missing'!r})"
            message = describe(*self._where, what)
            raise LlmError(LlmFailure(message, PROTOCOL, response.status_code, None, request_id(response.headers)))

    async def _error_body(self, response: httpx.Response, signal: CancelSignal) -> bytes:
        """At most MAX_ERROR_BODY bytes of an error body: enough for the provider's message, never a dump."""
        raw = b""
        async with aclosing(cast(AsyncGenerator[bytes, None], response.aiter_bytes())) as body:
            while len(raw) < MAX_ERROR_BODY and (data := await until_cancelled(next_bytes(body), signal)) is not None:
                raw += data
        return raw[:MAX_ERROR_BODY]

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._key is not None:
            headers["authorization"] = f"Bearer {self._key.reveal()}"
        return headers

    def _scrub(self, failure: LlmFailure) -> LlmFailure:
        return scrub(failure, self._key)

    def _fail(self, code: FailureCode, what: str) -> Never:
        raise LlmError(self._scrub(LlmFailure(describe(*self._where, what), code)))


def endpoint(base_url: str, name: str) -> str:
    """`name` under the base URL's path; a query the base URL carries (e.g. Azure's api-version) stays a query."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return base_url.rstrip("/") + "/" + name  # unparsable: the request fails later with a clear message
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + name))


def _shown(url: str) -> str:
    """The URL as messages show it: no user info, no query (either may carry a credential)."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return url.split("?")[0].rpartition("@")[2][:200]
    return str(parsed.copy_with(username=None, password=None, query=None))
