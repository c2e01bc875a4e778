"""Provider I/O raced against the turn's cancel signal, and httpx errors named as failure facts.

A read the signal interrupts is cancelled where it waits and waited for (SPEC §5): httpcore then closes that
connection, so nothing is left half-read in a pool or running unseen.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import anyio
import httpx

from adapters.contract.cancel import CancelSignal
from adapters.contract.llm import INVALID_REQUEST, PROTOCOL, TIMEOUT, TRANSPORT, FailureCode, LlmFailure
from adapters.llm.failures import describe
from adapters.runtime.workers import real_work

T = TypeVar("T")


class CancelRequested(Exception):
    """The turn's signal fired while we were waiting on the provider."""


async def until_cancelled(work: Awaitable[T], signal: CancelSignal) -> T:
    """The result of `work`, unless `signal` fires first: then `work` is cancelled where it waits (httpcore closes
    that connection), and CancelRequested is raised once it has ended. The wait is real work for a fast clock."""
    with anyio.CancelScope() as scope:
        unsubscribe = signal.on_cancel(lambda _cause: scope.cancel())
        try:
            with real_work():
                return await work
        finally:
            unsubscribe()
    raise CancelRequested


async def next_bytes(body: AsyncIterator[bytes]) -> bytes | None:
    """The next piece of the body, or None at its end (a coroutine, so it can run as a task)."""
    try:
        return await anext(body)
    except StopAsyncIteration:
        return None


def transport_failure(exc: httpx.HTTPError, where: tuple[str, str], idle_timeout: float, via: str = "") -> LlmFailure:
    """Name what broke below the protocol (and the proxy it went through); never quote a request (its headers
    hold the key)."""
    code, what = _classify(exc, idle_timeout)
    return LlmFailure(message=describe(*where, what + via), code=code)


def _classify(exc: httpx.HTTPError, idle_timeout: float) -> tuple[FailureCode, str]:
    detail = str(exc) or str(exc.__context__ or "") or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return TIMEOUT, "could not connect in time (connect timeout)"
    if isinstance(exc, httpx.ReadTimeout):
        return TIMEOUT, f"no data for {idle_timeout:g} s (idle timeout); the connection was closed"
    if isinstance(exc, httpx.TimeoutException):
        return TIMEOUT, f"timed out ({type(exc).__name__})"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return INVALID_REQUEST, "the URL scheme is not supported; use http:// or https://"
    if isinstance(exc, httpx.LocalProtocolError):
        return INVALID_REQUEST, "the request could not be encoded as HTTP"
    if isinstance(exc, httpx.ProxyError):
        return TRANSPORT, f"the proxy refused or failed ({detail}); check HTTP(S)_PROXY, ALL_PROXY and NO_PROXY"
    if isinstance(exc, httpx.ConnectError):
        return TRANSPORT, f"cannot connect ({detail})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return TRANSPORT, f"the connection broke mid-response ({detail})"
    if isinstance(exc, httpx.DecodingError):
        return PROTOCOL, f"the response body could not be decoded ({detail})"
    return TRANSPORT, f"the connection failed ({detail})"
