"""Provider I/O raced against the turn's cancel signal, and httpx errors named as failure facts.

A losing read is cancelled *and waited for* (SPEC §5): httpcore then closes that connection,
so nothing is left half-read in a pool or running unseen.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import httpx

from adapters.contract.llm import INVALID_REQUEST, PROTOCOL, TIMEOUT, TRANSPORT, LlmFailure
from adapters.llm.failures import describe

T = TypeVar("T")


class CancelRequested(Exception):
    """The turn's signal fired while we were waiting on the provider."""


async def settle(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait until it has really ended; a cancel of our own is re-raised afterwards."""
    task.cancel()
    interrupted = False
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            interrupted = True  # finish waiting first (quiescence), then pass the cancel on
    if not task.cancelled():
        task.exception()  # retrieved: the loser's error (e.g. the closed connection) is expected
    if interrupted:
        raise asyncio.CancelledError


async def race(work: Awaitable[T], waiter: asyncio.Future[Any]) -> T:
    """The result of `work`, unless `waiter` (the cancel signal) completes first."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            await settle(task)
    if waiter.done():
        await _discard(task)
        raise CancelRequested
    return task.result()


async def next_bytes(body: AsyncIterator[bytes]) -> bytes | None:
    """The next piece of the body, or None at its end (a coroutine, so it can run as a task)."""
    try:
        return await anext(body)
    except StopAsyncIteration:
        return None


async def _discard(task: asyncio.Future[Any]) -> None:
    if task.cancelled() or task.exception() is not None:
        return
    result = task.result()
    if isinstance(result, httpx.Response):
        await result.aclose()


def transport_failure(exc: httpx.HTTPError, where: tuple[str, str], idle_timeout: float, via: str = "") -> LlmFailure:
    """Name what broke below the protocol (and the proxy it went through); never quote a request (its headers
    hold the key)."""
    code, what = _classify(exc, idle_timeout)
    return LlmFailure(message=describe(*where, what + via), code=code)


def _classify(exc: httpx.HTTPError, idle_timeout: float) -> tuple[str, str]:
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
