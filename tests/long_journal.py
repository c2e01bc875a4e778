"""A long conversation written straight into a journal, as months of use would leave it (issue 38 item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QUESTIONS = (
    "What should I cook tonight with rice, two eggs and some spinach?",
    "How far is the moon from the earth, roughly?",
    "Can you remind me why the sky looks blue in the afternoon?",
    "Tell me one thing about the history of the bicycle.",
)
ANSWERS = (
    "Try a quick fried rice: scramble the eggs, wilt the spinach, then toss it all with the rice and soy sauce.",
    "About three hundred and eighty four thousand kilometres, give or take a little over the month.",
    "Sunlight scatters off the air, and blue light scatters the most, so the whole sky glows blue.",
    "The first pedal bicycles appeared in France in the eighteen sixties and were nicknamed boneshakers.",
)


def write_long_journal(path: Path, turns: int, *, sizes: list[int] | None = None) -> None:
    """`turns` completed turns; with `sizes`, turn n's question is padded to sizes[n] characters."""
    events: list[dict[str, Any]] = []
    for turn in range(1, turns + 1):
        said = QUESTIONS[turn % len(QUESTIONS)]
        if sizes is not None:
            said = (said + " ") * (sizes[turn - 1] // len(said) + 1)
            said = said[: sizes[turn - 1]]
        answer = ANSWERS[turn % len(ANSWERS)]
        events += [
            {"type": "turn/start", "turn": turn, "source": "text"},
            {"type": "user/message", "turn": turn, "text": f"({turn}) {said}"},
            {
                "type": "assistant/message",
                "turn": turn,
                "step": 1,
                "text": answer,
                "interrupted": False,
                "heard_ms": 4000.0,
                "generated_chars": len(answer),
            },
            {"type": "turn/end", "turn": turn, "outcome": "completed"},
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"seq": n, "time": 1000.0 + n, **e}) for n, e in enumerate(events, start=1)]
    path.write_text("\n".join(lines) + "\n")
