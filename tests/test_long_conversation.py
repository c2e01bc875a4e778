"""Issue 38 item 3 on the embedded model: a 200-turn conversation (SmolLM2-135M, a 2048-token window) is answered at
every new turn. The journal is written straight away (as months of use would leave it); the turns after it are
real ones, through the engine, on llama.cpp."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.llm.local import LocalLlamaAdapter
from adapters.runtime.workers import Worker
from engine.invariants import violations
from engine.journal import read_events
from tests.engine_kit import kit
from tests.long_journal import write_long_journal

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(600)]
NEW = ["What did I ask you first today?", "How far away is the moon?", "Thank you, goodbye."]


async def test_a_200_turn_conversation_on_the_embedded_model_is_answered_at_every_turn(tmp_path: Path) -> None:
    write_long_journal(tmp_path / "journal.jsonl", 200)
    local = LocalLlamaAdapter(n_ctx=2048, max_tokens=48, worker=Worker("test-long-conversation"))
    await local.load()
    async with kit(tmp_path, adapter=local) as k:
        for n, text in enumerate(NEW, start=201):
            started = time.perf_counter()
            k.submit(text)
            await k.until(lambda n=n: bool(k.of_type("turn/end", n)), f"turn {n}")
            print(f"\nturn {n}: {time.perf_counter() - started:.1f} s, requests {len(k.of_type('llm/request', n))}")
    events = read_events(tmp_path / "journal.jsonl")
    for turn in range(201, 204):
        (end,) = [e for e in events if e["type"] == "turn/end" and e["turn"] == turn]
        assert end["outcome"] == "completed", end
        replies = [e for e in events if e["type"] == "assistant/message" and e["turn"] == turn]
        assert replies
        assert replies[0]["text"].strip()
    first = [e for e in events if e["type"] == "llm/request" and e["turn"] == 201]
    failed = [e for e in events if e["type"] == "assistant/attempt" and e["turn"] == 201]
    assert [f["failure"]["code"] for f in failed] == ["CONTEXT_WINDOW_EXCEEDED"]
    assert failed[0]["failure"]["context_tokens"] == 2048
    assert failed[0]["failure"]["prompt_tokens"] > 2048
    assert first[-1]["trimmed_turns"] > 0
    later = [e for e in events if e["type"] == "llm/request" and e["turn"] in (202, 203)]
    assert [e["trimmed_turns"] for e in later] == [first[-1]["trimmed_turns"]] * 2, "one request each, same trim"
    assert violations(events) == []
