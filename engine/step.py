"""One step of a turn: send, stream, and recover through the single retry layer (SPEC §3)."""

from __future__ import annotations

import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

from adapters.contract import (
    CancelSignal,
    Finish,
    GenerateOptions,
    LlmAdapter,
    LlmError,
    LlmFailure,
    StreamChunk,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    stopped,
)
from adapters.contract.clock import Clock
from adapters.contract.llm import PROTOCOL, TIMEOUT
from engine.events import AttemptFailed, BackoffInfo, RetryScheduled, State, TextGenerated
from engine.history import past_turn_count
from engine.journal import Journal
from engine.prompt import PromptBuilder
from engine.reply_limit import reply_limit
from engine.retry import Backoff, Budgets, Fallback, GiveUp, Retry, Spent, TrimHistory, decide
from engine.speech import SpeechKey, SpeechOutput
from engine.tools import ToolRegistry
from engine.trim import carried_trim, next_trim, prompt_chars, turn_sizes
from engine.turn import Turn

Claim = Callable[[GenerateOptions, CancelSignal], Awaitable[AsyncGenerator[StreamChunk, None] | None]]


class StepFailed(Exception):
    """Every budget that applied is spent; the turn fails with this failure."""

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(failure.code)
        self.failure = failure


@dataclass
class StepText:
    """The text streamed by the attempt that is live (or succeeded) in a step, and how its stream ended."""

    attempt: int
    text: str = ""
    finish: str | None = None  # the provider's finish reason; "length" when the reply limit closed the stream
    limit_s: float | None = None  # the reply limit that closed the stream, if it did


@dataclass
class TurnRecord:
    """What a turn produced so far; the conversation finalises the journal from it."""

    steps: dict[int, StepText] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StepResult:
    text: str
    calls: tuple[ToolCall, ...]


@dataclass
class StepContext:
    """Everything a step needs, passed explicitly."""

    llm: LlmAdapter
    fallback: LlmAdapter | None
    journal: Journal
    prompt: PromptBuilder
    speech: SpeechOutput
    tools: ToolRegistry
    clock: Clock
    budgets: Budgets
    backoff: Backoff
    rng: random.Random
    publish: Callable[[Any], bool]
    set_state: Callable[[State, BackoffInfo | None], None]
    claim: Claim | None = None  # the turn's first request, if a speculation generated it ahead (engine.ahead)


class _Calls:
    """Accumulates tool-call fragments by index, keeping the argument text raw."""

    def __init__(self) -> None:
        self._parts: dict[int, list[str]] = {}
        self._ids: dict[int, str] = {}
        self._names: dict[int, str] = {}

    def add(self, delta: ToolCallDelta) -> None:
        self._parts.setdefault(delta.index, []).append(delta.arguments)
        if delta.call_id:
            self._ids[delta.index] = delta.call_id
        if delta.name:
            self._names[delta.index] = delta.name

    def calls(self, turn: int, step: int) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(self._ids.get(i, f"call_{turn}_{step}_{i}"), self._names.get(i, ""), "".join(parts))
            for i, parts in sorted(self._parts.items())
        )


@dataclass
class _Attempt:
    adapter: LlmAdapter
    number: int = 0
    spent: Spent = field(default_factory=Spent)
    drop_oldest: int = 0  # the oldest turns left out of the prompt (engine.trim)
    sent_chars: int = 0  # the size of the prompt last sent


async def run_step(ctx: StepContext, turn: Turn, step: int, record: TurnRecord) -> StepResult:
    """Send until an attempt succeeds or the policy gives up; every attempt and backoff is journaled."""
    state = _Attempt(ctx.llm, drop_oldest=carried_trim(ctx.journal.events, ctx.llm.provider, ctx.llm.model))
    while True:
        if turn.signal.cancelled:
            await stopped()
        state.number += 1
        outcome = await _send(ctx, turn, step, record, state)
        if isinstance(outcome, StepResult):
            return outcome
        await _recover(ctx, turn, step, record, state, outcome)


async def _send(
    ctx: StepContext, turn: Turn, step: int, record: TurnRecord, state: _Attempt
) -> StepResult | LlmFailure:
    messages = await ctx.prompt.build(ctx.journal.events, turn.signal, drop_oldest=state.drop_oldest)
    if turn.signal.cancelled:  # cancelled while the prompt was assembled: send nothing
        await stopped()
    options = GenerateOptions(messages=messages, tools=ctx.tools.specs())
    state.sent_chars = prompt_chars(messages)
    ctx.journal.append(
        "llm/request",
        turn=turn.id,
        step=step,
        attempt=state.number,
        provider=state.adapter.provider,
        model=state.adapter.model,
        trimmed_turns=state.drop_oldest,
    )
    record.steps[step] = StepText(state.number)
    try:
        return await _stream(ctx, turn, step, record, state, options)
    except LlmError as error:
        return error.failure


async def _stream(
    ctx: StepContext, turn: Turn, step: int, record: TurnRecord, state: _Attempt, options: GenerateOptions
) -> StepResult | LlmFailure:
    """Stream one attempt; at the reply limit the stream is closed and the step ends with what was said."""
    key = SpeechKey(turn.id, step, state.number)
    calls = _Calls()
    sent_at = ctx.clock.now()
    async with reply_limit(turn, ctx.clock, ctx.budgets.reply_s) as limit:
        ahead = await _claim(ctx, state, key, options, limit.signal)
        try:
            async with aclosing(ahead or state.adapter.stream(options, limit.signal)) as stream:
                async for chunk in stream:
                    if isinstance(chunk, Finish):
                        return _finished(record, step, chunk, calls.calls(turn.id, step))
                    if isinstance(chunk, TextDelta) and chunk.text:
                        await _speak(ctx, turn, key, record, chunk.text, sent_at)
                        if limit.check_speech(ctx.speech.report(turn.id), key):
                            break
                    elif isinstance(chunk, ToolCallDelta):
                        calls.add(chunk)
        except LlmError:
            if not limit.reached:
                raise
    if turn.signal.cancelled:
        await stopped()
    if limit.reached:
        return _limited(record, step, limit.seconds, state.adapter.provider)
    return LlmFailure(f"{state.adapter.provider} ended the stream without a finish", PROTOCOL)


async def _claim(
    ctx: StepContext, state: _Attempt, key: SpeechKey, options: GenerateOptions, signal: CancelSignal
) -> AsyncGenerator[StreamChunk, None] | None:
    """The first attempt of a turn's first step may be a reply the model began ahead, on exactly this request."""
    if ctx.claim is None or key.step != 1 or state.number != 1 or state.adapter is not ctx.llm:
        return None
    return await ctx.claim(options, signal)


def _finished(record: TurnRecord, step: int, chunk: Finish, calls: tuple[ToolCall, ...]) -> StepResult | LlmFailure:
    if chunk.failure is not None:
        return chunk.failure
    record.steps[step].finish = chunk.reason
    return StepResult(record.steps[step].text, calls)


def _limited(record: TurnRecord, step: int, seconds: float | None, provider: str) -> StepResult | LlmFailure:
    """The reply limit closed the stream: the words said so far are the reply; a half-streamed tool call is dropped.

    With nothing said at all the attempt failed like a timeout (the retry layer decides what follows).
    """
    text = record.steps[step]
    if not text.text.strip():
        return LlmFailure(
            f"{provider} said nothing within the reply limit of {seconds:g} s; the stream was closed", TIMEOUT
        )
    text.finish, text.limit_s = "length", seconds
    return StepResult(text.text, ())


async def _speak(ctx: StepContext, turn: Turn, key: SpeechKey, record: TurnRecord, text: str, sent_at: float) -> None:
    step_text = record.steps[key.step]
    if not step_text.text:
        record.metrics.setdefault("llm_ttft_ms", round((ctx.clock.now() - sent_at) * 1000, 1))
        ctx.set_state(State.SPEAKING, None)
    step_text.text += text
    ctx.publish(TextGenerated(turn.id, key.step, key.attempt, text))
    await ctx.speech.say(key, text, turn.signal)


async def _recover(
    ctx: StepContext, turn: Turn, step: int, record: TurnRecord, state: _Attempt, failure: LlmFailure
) -> None:
    """Journal the failed attempt, then retry, trim, fall back or give up as the policy says."""
    _journal_attempt(ctx, turn, step, state.number, failure)
    ctx.speech.discard(SpeechKey(turn.id, step, state.number))
    del record.steps[step]
    past = past_turn_count(ctx.journal.events) - state.drop_oldest
    decision = decide(
        failure,
        state.spent,
        ctx.budgets,
        can_trim=past > 0,
        has_fallback=ctx.fallback is not None,
        rng=ctx.rng,
        backoff=ctx.backoff,
    )
    if isinstance(decision, Retry):
        await _back_off(ctx, turn, step, decision, failure)
        state.spent = replace(state.spent, retries=decision.retry)
    elif isinstance(decision, TrimHistory):
        state.spent = replace(state.spent, overflow_trims=state.spent.overflow_trims + 1)
        state.drop_oldest = _trimmed(ctx, state, failure)
    elif isinstance(decision, Fallback) and ctx.fallback is not None:
        state.adapter = ctx.fallback
        state.spent = replace(state.spent, fallbacks=state.spent.fallbacks + 1)
    else:
        assert isinstance(decision, GiveUp | Fallback)
        raise StepFailed(failure)


def _trimmed(ctx: StepContext, state: _Attempt, failure: LlmFailure) -> int:
    """The oldest turns to leave out now: enough for the prompt to fit; all but the newest on the last trim."""
    sizes = turn_sizes(ctx.journal.events)
    fixed = max(0, state.sent_chars - sum(sizes[state.drop_oldest :]))
    last = state.spent.overflow_trims >= ctx.budgets.overflow_trims
    return next_trim(sizes, state.drop_oldest, failure, fixed=fixed, last=last)


def _journal_attempt(ctx: StepContext, turn: Turn, step: int, attempt: int, failure: LlmFailure) -> None:
    ctx.journal.append("assistant/attempt", turn=turn.id, step=step, attempt=attempt, failure=failure_fields(failure))
    ctx.publish(AttemptFailed(turn.id, step, attempt, failure))


async def _back_off(ctx: StepContext, turn: Turn, step: int, decision: Retry, failure: LlmFailure) -> None:
    """The journal entry is on disk before the sleep starts; the sleep ends at once on cancel."""
    ctx.journal.commit()  # backing off is shown to the user: the turn is no longer provisional
    ctx.journal.append(
        "llm/retry",
        turn=turn.id,
        step=step,
        retry=decision.retry,
        delay_ms=decision.delay_ms,
        failure=failure_fields(failure),
    )
    info = BackoffInfo(decision.delay_ms, failure.code, ctx.clock.now() + decision.delay_ms / 1000, decision.retry)
    ctx.publish(RetryScheduled(turn.id, step, info))
    ctx.set_state(State.BACKING_OFF, info)
    await ctx.clock.sleep(decision.delay_ms / 1000)
    ctx.set_state(State.THINKING, None)


def failure_fields(failure: LlmFailure) -> dict[str, Any]:
    """The journal's shape of a failure (no secrets: adapters never put keys in messages)."""
    fields: dict[str, Any] = {
        "code": failure.code,
        "message": failure.message,
        "status": failure.status,
        "retry_after_ms": failure.provider_retry_after_ms,
        "request_id": failure.request_id,
    }
    if failure.prompt_tokens is not None and failure.context_tokens is not None:
        fields.update(prompt_tokens=failure.prompt_tokens, context_tokens=failure.context_tokens)
    return fields
