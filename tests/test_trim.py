"""Issue 38 item 3: a conversation of any length is answered at every turn. Overflow recovery trims the oldest turns
until the prompt fits (keeping the system prompt and the newest turns, recording what was left out), the next turn
starts from that trim, and the sends of a step stay within 1 + the sum of the budgets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.contract import CancelSignal, Finish, GenerateOptions, LlmError, LlmFailure, StreamChunk, TextDelta, Usage
from adapters.contract.llm import CONTEXT_WINDOW_EXCEEDED
from engine.invariants import violations
from engine.journal import read_events
from engine.retry import Budgets
from engine.trim import next_trim
from tests.engine_kit import Kit, kit
from tests.long_journal import write_long_journal

pytestmark = pytest.mark.anyio
REPLY_ROOM = 64  # tokens a reply may take, as the prompt must leave them free


class WindowedLlm:
    """A provider with a context window of `window` tokens (a token is 4 characters): a longer prompt is refused
    with CONTEXT_WINDOW_EXCEEDED, saying the sizes only if `says_sizes` (as an OpenAI server may not)."""

    def __init__(self, window: int, *, says_sizes: bool = True) -> None:
        self.window = window
        self.says_sizes = says_sizes
        self.calls: list[GenerateOptions] = []

    provider = "windowed"
    model = "w-1"

    @staticmethod
    def tokens(options: GenerateOptions) -> int:
        return sum(len(m.content) + 16 for m in options.messages) // 4

    async def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        self.calls.append(options)
        used = self.tokens(options)
        if used + REPLY_ROOM > self.window:
            sizes: dict[str, Any] = {"prompt_tokens": used, "context_tokens": self.window} if self.says_sizes else {}
            raise LlmError(LlmFailure(f"{used} tokens", CONTEXT_WINDOW_EXCEEDED, status=400, **sizes))
        yield TextDelta(f"Answer {len(self.calls)}.")
        yield Usage(used, 3)
        yield Finish("stop")


async def _talk(k: Kit, first_turn: int, texts: list[str]) -> None:
    for n, text in enumerate(texts):
        k.submit(text)
        await k.until_turn_ended(first_turn + n)


def _requests(k: Kit, turn: int) -> list[dict[str, Any]]:
    return k.of_type("llm/request", turn)


@pytest.mark.parametrize("says_sizes", [True, False], ids=["sizes-said", "sizes-unknown"])
async def test_a_200_turn_conversation_is_answered_at_every_new_turn(tmp_path: Path, says_sizes: bool) -> None:
    write_long_journal(tmp_path / "journal.jsonl", 200)
    llm = WindowedLlm(2048, says_sizes=says_sizes)
    async with kit(tmp_path, adapter=llm) as k:
        new = ["What was the first thing I asked?", "And the moon?", "Thanks!", "One more?", "Bye."]
        await _talk(k, 201, new)
        budgets = Budgets()
        for turn in range(201, 206):
            assert k.of_type("turn/end", turn)[0]["outcome"] == "completed"
            assert 1 <= len(_requests(k, turn)) <= budgets.max_sends
        answered = [call for call in llm.calls if llm.tokens(call) + REPLY_ROOM <= llm.window]
        assert len(answered) == 5
        for call, said in zip(answered, new, strict=True):
            assert call.messages[0].role == "system"
            assert (call.messages[-1].role, call.messages[-1].content) == ("user", said)
        kept = [len([m for m in call.messages if m.role == "user"]) for call in answered]
        assert kept == sorted(kept), "turns are left out oldest first, and the conversation grows back"
        trimmed = [r["trimmed_turns"] for r in k.of_type("llm/request")]
        assert trimmed[0] == 0
        assert trimmed[-1] > 0, "what was left out is on the record"
        if says_sizes:  # one overflow for the first new turn; the others start from its trim
            assert [len(_requests(k, t)) for t in range(201, 206)] == [2, 1, 1, 1, 1]
            assert llm.tokens(answered[0]) <= llm.window * 0.6
            assert all(n > 10 for n in kept), "the latest turns are kept"
            assert all(call.messages[-2].role == "assistant" for call in answered), "whole turns"
        assert violations(read_events(k.journal.path)) == []


async def test_reopening_the_conversation_keeps_its_trim(tmp_path: Path) -> None:
    write_long_journal(tmp_path / "journal.jsonl", 150)
    async with kit(tmp_path, adapter=WindowedLlm(1024)) as k:
        await _talk(k, 151, ["Hello again."])
        trim = _requests(k, 151)[-1]["trimmed_turns"]
    llm = WindowedLlm(1024)
    async with kit(tmp_path, adapter=llm) as k:  # the window reopens the conversation at its next start
        await _talk(k, 152, ["Still there?"])
        (request,) = _requests(k, 152)
        assert request["trimmed_turns"] == trim
        assert k.of_type("turn/end", 152)[0]["outcome"] == "completed"


async def test_a_newest_turn_too_long_on_its_own_fails_within_the_budget(tmp_path: Path) -> None:
    write_long_journal(tmp_path / "journal.jsonl", 30)
    async with kit(tmp_path, adapter=WindowedLlm(512)) as k:
        await _talk(k, 31, ["word " * 2000])
        end = k.of_type("turn/end", 31)[0]
        assert end["outcome"] == "failed"
        assert end["failure"]["code"] == "CONTEXT_WINDOW_EXCEEDED"
        requests = _requests(k, 31)
        assert len(requests) <= 1 + Budgets().overflow_trims
        assert requests[-1]["trimmed_turns"] == 30, "gave up only once every earlier turn was left out"


def test_each_trim_leaves_out_more_and_never_the_newest_turn() -> None:
    failure = LlmFailure("too long", CONTEXT_WINDOW_EXCEEDED, prompt_tokens=4000, context_tokens=2000)
    sizes = [400] * 40
    first = next_trim(sizes, 0, failure, fixed=300, last=False)
    assert 0 < first < 39
    assert 300 + sum(sizes[first:]) <= 16_000 * 0.5 * 2000 / 4000 * 1.01
    assert next_trim(sizes, first, failure, fixed=300, last=False) > first
    assert next_trim(sizes, first, failure, fixed=300, last=True) == 39
    unknown = LlmFailure("too long", CONTEXT_WINDOW_EXCEEDED)
    assert next_trim(sizes, 0, unknown, fixed=300, last=False) == 19
    assert next_trim([10], 0, failure, fixed=300, last=False) == 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(20, 3000), min_size=1, max_size=120),
    window=st.integers(600, 6000),
    says_sizes=st.booleans(),
    trims=st.integers(1, 3),
)
def test_whenever_the_newest_turn_fits_it_is_answered_within_the_budget(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], window: int, says_sizes: bool, trims: int
) -> None:
    budgets = Budgets(retries=0, overflow_trims=trims)

    async def scenario() -> None:
        path = tmp_path_factory.mktemp("long")
        write_long_journal(path / "journal.jsonl", len(sizes), sizes=sizes)
        llm = WindowedLlm(window, says_sizes=says_sizes)
        async with kit(path, adapter=llm, budgets=budgets) as k:
            await _talk(k, len(sizes) + 1, ["And now?"])
            requests = _requests(k, len(sizes) + 1)
            assert 1 <= len(requests) <= budgets.max_sends
            alone = [m for m in llm.calls[-1].messages if m.role == "system"]
            newest = GenerateOptions((*alone, llm.calls[-1].messages[-1]))
            if llm.tokens(newest) + REPLY_ROOM <= window:
                assert k.of_type("turn/end")[-1]["outcome"] == "completed"

    asyncio.run(scenario())
