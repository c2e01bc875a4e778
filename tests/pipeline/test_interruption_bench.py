"""The answers_after_interruption harness tells an answer from a copy of the cut story, and sends the note."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from adapters.contract import CancelSignal, GenerateOptions, StreamChunk
from desktop.bench.interruptions import QUESTIONS, answers_after_interruption, repeated
from engine.history import CUT_NOTE
from engine.testing import FakeLlm, reply

STORY = " ".join(["Once upon a time a dragon cooked soup in a cave by the sea."] * 8)
pytestmark = pytest.mark.anyio
ANSWERS = {question: expected[0].capitalize() + "." for question, expected in QUESTIONS}


class Storyteller(FakeLlm):
    """Tells a story when asked for one; to anything else it answers right, or (`copies`) tells the cut story
    again, as SmolLM2 did after an interruption."""

    def __init__(self, *, copies: bool) -> None:
        super().__init__()
        self.copies = copies

    async def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        asked = str(options.messages[-1].content)
        cut = [m.content for m in options.messages if m.role == "assistant"]
        question = asked.removesuffix(f"\n{CUT_NOTE}")
        text = STORY if asked.startswith("Tell me") else (cut[-1] if self.copies else ANSWERS[question])
        self._scripts = [reply(text)]
        async for chunk in super().stream(options, signal):
            yield chunk


async def test_an_answer_counts_and_the_question_carries_the_note(tmp_path: Path) -> None:
    llm = Storyteller(copies=False)
    cuts = await answers_after_interruption(llm, tmp_path, 3)
    assert len(cuts) == 3
    assert all(c.answered and not c.repeated for c in cuts), cuts
    questions = [str(call.messages[-1].content) for call in llm.calls if "Tell me" not in call.messages[-1].content]
    assert len(questions) == 3
    assert all(q.endswith(f"\n{CUT_NOTE}") for q in questions)


async def test_a_copy_of_the_cut_story_is_no_answer(tmp_path: Path) -> None:
    cuts = await answers_after_interruption(Storyteller(copies=True), tmp_path, 3)
    assert len(cuts) == 3
    assert all(c.repeated and not c.answered for c in cuts), cuts


def test_a_reply_ending_as_a_cut_one_was_shown_is_a_copy() -> None:
    assert repeated("Seven days. \u2014", [])
    assert not repeated("Seven days.", ["Once upon a time"])
