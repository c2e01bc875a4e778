"""Turns end to end on the fakes and a virtual clock: the retry layer's rules as seen in the journal."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.contract import User
from engine.events import State, TextGenerated
from engine.journal import read_events
from engine.retry import Budgets
from engine.testing import FakeLlm, empty_reply, failure, reply, stream_failure, tool_reply
from tests.engine_kit import kit

pytestmark = pytest.mark.anyio


async def test_a_plain_turn_completes_with_the_whole_reply_heard(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("Hello there, friend.")]) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        (message,) = k.of_type("assistant/message")
        assert message["text"] == "Hello there, friend."
        assert message["interrupted"] is False
        assert message["generated_chars"] == len("Hello there, friend.")
        assert k.of_type("turn/end")[0]["outcome"] == "completed"
        assert State.SPEAKING in k.states
        assert k.conversation.state is State.IDLE


async def test_journal_has_increasing_seq_and_the_spec_fields(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("One."), reply("Two.")]) as k:
        k.submit("a")
        k.submit("b")
        await k.until_turn_ended(2)
    events = read_events(tmp_path / "journal.jsonl")
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(events) + 1))
    assert events[0]["type"] == "session/start"
    assert all(isinstance(e["time"], float) for e in events)
    (request, _) = [e for e in events if e["type"] == "llm/request"]
    assert {"turn", "step", "attempt", "provider", "model"} <= request.keys()
    assert [e["source"] for e in events if e["type"] == "turn/start"] == ["text", "text"]


async def test_rate_limited_then_success_journals_attempt_retry_and_completes(tmp_path: Path) -> None:
    async with kit(tmp_path, [failure("RATE_LIMITED", retry_after_ms=1500), reply("Fine.")]) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert len(k.of_type("llm/request")) == 2
        (attempt,) = k.of_type("assistant/attempt")
        assert attempt["failure"]["code"] == "RATE_LIMITED"
        assert attempt["failure"]["retry_after_ms"] == 1500
        (retry,) = k.of_type("llm/retry")
        assert (retry["retry"], retry["delay_ms"], retry["failure"]["code"]) == (1, 1500, "RATE_LIMITED")
        assert State.BACKING_OFF in k.states
        assert k.of_type("turn/end")[0]["outcome"] == "completed"


async def test_llm_retry_is_on_disk_before_the_backoff_sleep_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    async with kit(tmp_path, [failure("SERVER_ERROR"), reply("Back.")], autojump=False) as k:
        k.submit("Hi")
        await k.until_state(State.BACKING_OFF)
        on_disk = [e["type"] for e in read_events(tmp_path / "journal.jsonl")]
        assert on_disk[-1] == "llm/retry"
        assert synced, "llm/retry must be fsync'd"
        assert k.conversation.backoff is not None
        assert 450 <= k.conversation.backoff.delay_ms <= 550
        assert len(k.llm.calls) == 1
        await k.clock.advance(0.6)
        await k.until(lambda: len(k.llm.calls) == 2, "the retry")
        await k.clock.advance(1.0)
        await k.until_turn_ended(1)


async def test_retry_after_above_the_cap_fails_the_turn_once_and_keeps_the_delay(tmp_path: Path) -> None:
    async with kit(tmp_path, [failure("RATE_LIMITED", retry_after_ms=60_000)]) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert len(k.llm.calls) == 1
        assert not k.of_type("llm/retry")
        (end,) = k.of_type("turn/end")
        assert end["outcome"] == "failed"
        assert end["failure"]["code"] == "RATE_LIMITED"
        assert end["failure"]["retry_after_ms"] == 60_000


async def test_empty_response_is_retried(tmp_path: Path) -> None:
    async with kit(tmp_path, [empty_reply(), reply("Now with words.")]) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert k.of_type("assistant/attempt")[0]["failure"]["code"] == "EMPTY_RESPONSE"
        assert k.of_type("turn/end")[0]["outcome"] == "completed"


@pytest.mark.parametrize("code", ["AUTH", "QUOTA", "INVALID_REQUEST"])
async def test_permanent_failures_make_one_request_and_fail_the_turn(tmp_path: Path, code: str) -> None:
    async with kit(tmp_path, [failure(code)]) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert len(k.of_type("llm/request")) == 1
        assert not k.of_type("llm/retry")
        assert [e["failure"]["code"] for e in k.of_type("turn/end")] == [code]


async def test_a_failed_attempt_writes_no_message_dispatches_no_tool_and_stops_its_audio(tmp_path: Path) -> None:
    scripts = [stream_failure("SERVER_ERROR", after="Half a sen"), tool_reply("nope", ['{"a":1}'])]
    async with kit(tmp_path, [*scripts, reply("Done.")]) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert [m["text"] for m in k.of_type("assistant/message")] == ["Done."]
        assert len(k.of_type("tool/call")) == 1  # only from the successful second attempt
        failed = [s for s in k.speech.report(1) if s.key.attempt == 1] if k.speech.report(1) else []
        assert all(s.played_ms < s.duration_ms for s in failed)


async def test_the_final_failure_is_recorded_once_in_turn_end(tmp_path: Path) -> None:
    async with kit(tmp_path, [failure("SERVER_ERROR")] * 4) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert len(k.of_type("llm/request")) == 4
        assert len(k.of_type("assistant/attempt")) == 4
        assert len(k.of_type("llm/retry")) == 3
        assert len(k.of_type("turn/end")) == 1
        delays = [r["delay_ms"] for r in k.of_type("llm/retry")]
        assert all(n * 0.9 <= d <= n * 1.1 for d, n in zip(delays, [500, 1000, 2000], strict=True)), delays


async def test_context_overflow_trims_the_oldest_history_and_resends(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("A."), reply("B."), failure("CONTEXT_WINDOW_EXCEEDED"), reply("C.")]) as k:
        for text in ("first", "second", "third"):
            k.submit(text)
        await k.until_turn_ended(3)
        first_try, trimmed = k.llm.calls[2], k.llm.calls[3]
        assert [m.content for m in first_try.messages if m.role == "user"] == ["first", "second", "third"]
        assert [m.content for m in trimmed.messages if m.role == "user"] == ["second", "third"]
        assert k.of_type("llm/request", 3)[1]["trimmed_turns"] == 1
        assert k.of_type("turn/end", 3)[0]["outcome"] == "completed"


async def test_fallback_provider_takes_over_when_its_budget_allows(tmp_path: Path) -> None:
    secondary = FakeLlm([reply("From the backup.")], provider="backup")
    budgets = Budgets(retries=0, fallbacks=1)
    async with kit(tmp_path, [failure("SERVER_ERROR")], budgets=budgets, fallback=secondary) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert [r["provider"] for r in k.of_type("llm/request")] == ["fake", "backup"]
        assert k.of_type("assistant/message")[0]["text"] == "From the backup."


async def test_cancel_during_backoff_ends_the_sleep_and_sends_nothing_more(tmp_path: Path) -> None:
    async with kit(tmp_path, [failure("SERVER_ERROR"), reply("never")], autojump=False) as k:
        k.submit("Hi")
        await k.until_state(State.BACKING_OFF)
        await k.conversation.cancel(User())
        assert len(k.llm.calls) == 1
        await k.clock.advance(30)
        assert len(k.llm.calls) == 1
        assert k.of_type("turn/end")[0]["outcome"] == "aborted"


FAILURES = st.sampled_from(
    ["RATE_LIMITED", "SERVER_ERROR", "TIMEOUT", "TRANSPORT", "EMPTY_RESPONSE", "AUTH", "CONTEXT_WINDOW_EXCEEDED"]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(codes=st.lists(FAILURES, max_size=12), retries=st.integers(0, 4), trims=st.integers(0, 2))
def test_sends_per_step_never_exceed_one_plus_the_budgets(
    tmp_path_factory: pytest.TempPathFactory, codes: list[str], retries: int, trims: int
) -> None:
    budgets = Budgets(retries=retries, overflow_trims=trims, fallbacks=1)
    scripts = [reply("Earlier.")] + [empty_reply() if c == "EMPTY_RESPONSE" else failure(c) for c in codes]

    async def scenario() -> None:
        secondary = FakeLlm([failure(c) for c in codes] + [reply("ok")], provider="backup")
        path = tmp_path_factory.mktemp("prop")
        async with kit(path, [*scripts, reply("Finally.")], budgets=budgets, fallback=secondary) as k:
            k.submit("earlier")
            k.submit("now")
            await k.until_turn_ended(2)
            requests = k.of_type("llm/request", 2)
            assert 1 <= len(requests) <= budgets.max_sends
            assert len(k.of_type("turn/end", 2)) == 1

    asyncio.run(scenario())


async def test_work_left_running_when_the_answer_ends_is_disposed_and_the_turn_still_completes(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("Done.")]) as k:
        leftover_cancelled = asyncio.Event()

        async def leftover() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                leftover_cancelled.set()

        def start_once(event: object) -> None:
            turn = k.conversation.live_turn
            if isinstance(event, TextGenerated) and turn is not None and "turn1:leftover" not in turn.pending():
                turn.start(leftover, name="leftover")

        k.conversation.subscribe(start_once)
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert leftover_cancelled.is_set()
        assert k.of_type("turn/end")[0]["outcome"] == "completed"
