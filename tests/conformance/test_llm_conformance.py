"""SPEC §2 obligations 1-8, proven for every LLM adapter (fakes included)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import aclosing
from typing import Any, TypeVar

import pytest

from adapters.contract import (
    CancelSignal,
    Finish,
    LlmAdapter,
    LlmError,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    Usage,
    User,
)
from adapters.contract.llm import CONTEXT_WINDOW_EXCEEDED, EMPTY_RESPONSE, TIMEOUT, GenerateOptions, Message
from tests.conformance.llm_harness import (
    EMPTY,
    HANG,
    OVERFLOW,
    PROVIDER_ERROR,
    STALL,
    TEXT,
    TOOL,
    TRANSPORT_ERROR,
    Case,
    LlmHarness,
)

pytestmark = pytest.mark.anyio
F = TypeVar("F", bound=Callable[..., Any])
OPTIONS = GenerateOptions(messages=(Message("user", "Hello"),))


def cases(*kinds: str) -> Callable[[F], F]:
    def mark(fn: F) -> F:
        fn.llm_cases = kinds  # type: ignore[attr-defined]  # read by conftest.pytest_generate_tests
        return fn

    return mark


async def collect(adapter: LlmAdapter, signal: CancelSignal | None = None) -> list[StreamChunk]:
    chunks: list[StreamChunk] = []
    async with aclosing(adapter.stream(OPTIONS, signal or CancelSignal())) as stream:
        async for chunk in stream:
            chunks.append(chunk)
    return chunks


@cases(TEXT, TOOL, PROVIDER_ERROR, EMPTY)
async def test_usage_comes_before_finish_and_nothing_after(harness: LlmHarness, case_kind: str) -> None:
    chunks = await collect(harness.arrange(Case(case_kind)))
    finishes = [i for i, chunk in enumerate(chunks) if isinstance(chunk, Finish)]
    assert finishes == [len(chunks) - 1], chunks
    usages = [i for i, chunk in enumerate(chunks) if isinstance(chunk, Usage)]
    assert usages, "usage must be reported"
    assert max(usages) < finishes[0]


@cases(TEXT)
async def test_text_arrives_as_deltas_and_finishes_cleanly(harness: LlmHarness, case_kind: str) -> None:
    chunks = await collect(harness.arrange(Case(case_kind)))
    text = "".join(chunk.text for chunk in chunks if isinstance(chunk, TextDelta))
    assert text.strip()
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.failure is None


@cases(TOOL)
async def test_tool_call_arguments_stay_raw_json_byte_for_byte(harness: LlmHarness, case_kind: str) -> None:
    case = Case(case_kind)
    chunks = await collect(harness.arrange(case))
    deltas = [chunk for chunk in chunks if isinstance(chunk, ToolCallDelta)]
    assert all(isinstance(delta.arguments, str) for delta in deltas)
    assert "".join(delta.arguments for delta in deltas if delta.index == 0) == case.tool_arguments
    assert deltas[0].name
    assert deltas[0].call_id


@cases(PROVIDER_ERROR)
async def test_an_error_inside_the_stream_ends_it_with_a_failing_finish(harness: LlmHarness, case_kind: str) -> None:
    chunks = await collect(harness.arrange(Case(case_kind)))
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.failure is not None
    assert finish.failure.code
    assert finish.failure.message


@cases(TRANSPORT_ERROR)
async def test_a_transport_error_is_raised_as_llm_failure(harness: LlmHarness, case_kind: str) -> None:
    with pytest.raises(LlmError) as caught:
        await collect(harness.arrange(Case(case_kind)))
    assert caught.value.failure.code


@cases(TEXT, TOOL, PROVIDER_ERROR, TRANSPORT_ERROR, EMPTY, STALL, OVERFLOW)
async def test_one_call_is_exactly_one_provider_attempt(harness: LlmHarness, case_kind: str) -> None:
    adapter = harness.arrange(Case(case_kind))
    before = harness.attempts()
    try:
        await collect(adapter)
    except LlmError:
        pass
    assert harness.attempts() - before == 1


@cases(OVERFLOW)
async def test_context_overflow_has_the_canonical_code(harness: LlmHarness, case_kind: str) -> None:
    failure = await _failure_of(harness.arrange(Case(case_kind)))
    assert failure.code == CONTEXT_WINDOW_EXCEEDED


@cases(EMPTY)
async def test_a_finish_without_content_is_an_empty_response_failure(harness: LlmHarness, case_kind: str) -> None:
    failure = await _failure_of(harness.arrange(Case(case_kind)))
    assert failure.code == EMPTY_RESPONSE


@cases(STALL)
async def test_an_idle_stall_times_out_and_really_closes_the_transport(harness: LlmHarness, case_kind: str) -> None:
    failure = await _failure_of(harness.arrange(Case(case_kind)))
    assert failure.code == TIMEOUT
    assert await harness.released()


@cases(HANG)
async def test_cancel_mid_stream_returns_promptly_and_releases_everything(harness: LlmHarness, case_kind: str) -> None:
    signal = CancelSignal()
    adapter = harness.arrange(Case(case_kind))
    seen: list[StreamChunk] = []

    async def consume() -> None:
        async with aclosing(adapter.stream(OPTIONS, signal)) as stream:
            async for chunk in stream:
                seen.append(chunk)
                if isinstance(chunk, TextDelta):
                    started.set()

    started = asyncio.Event()
    task = asyncio.create_task(consume())
    await started.wait()
    cancelled_at = time.monotonic()
    signal.set(User())
    await asyncio.wait({task})
    error = task.exception()
    assert error is None or (isinstance(error, LlmError) and error.failure.code == "ABORTED")
    assert time.monotonic() - cancelled_at < 2.0
    assert not any(isinstance(chunk, Finish) and chunk.failure is None for chunk in seen)
    assert await harness.released()


@cases(HANG)
async def test_a_consumer_that_walks_away_closes_the_stream(harness: LlmHarness, case_kind: str) -> None:
    adapter = harness.arrange(Case(case_kind))
    started = asyncio.Event()

    async def consume() -> None:
        async with aclosing(adapter.stream(OPTIONS, CancelSignal())) as stream:
            async for chunk in stream:
                if isinstance(chunk, TextDelta):
                    started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled()
    assert await harness.released()


async def _failure_of(adapter: LlmAdapter) -> Any:
    try:
        chunks = await collect(adapter)
    except LlmError as error:
        return error.failure
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.failure is not None, "expected a failure"
    return finish.failure
