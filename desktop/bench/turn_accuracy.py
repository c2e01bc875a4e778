"""How well the end-of-turn model alone hears the fixtures: "incomplete" at each pause, "complete" at each end.

.venv/bin/python -m desktop.bench.turn_accuracy
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from adapters.contract.cancel import CancelSignal
from adapters.contract.turn import EndOfTurnModel
from adapters.turn.smart_turn import SmartTurn
from desktop.bench.turn_clips import TurnClip, turn_clips

SILENCES_S = (0.2, 0.3, 0.5)  # silence after the speech when the model is asked


@dataclass(frozen=True)
class Accuracy:
    silence_s: float
    pauses_right: int  # said "incomplete" (p < 0.5) at a pause inside a sentence
    pauses: int
    ends_right: int  # said "complete" (p >= 0.5) at the end of an utterance
    ends: int
    call_ms: list[float]
    wrong: list[str]

    def __str__(self) -> str:
        return (
            f"{self.silence_s:.1f} s of silence: pauses heard as incomplete {self.pauses_right}/{self.pauses}, "
            f"ends heard as complete {self.ends_right}/{self.ends}, "
            f"overall {100 * (self.pauses_right + self.ends_right) / (self.pauses + self.ends):.0f} %; "
            f"call p50 {statistics.median(self.call_ms):.0f} ms"
        )


async def accuracy(model: EndOfTurnModel, silence_s: float, clips: Sequence[TurnClip] | None = None) -> Accuracy:
    signal, wrong, calls = CancelSignal(), [], []
    right_pauses = right_ends = pauses = 0
    clips = list(clips) if clips is not None else turn_clips()
    for clip in clips:
        for index, (_, end) in enumerate(clip.speech):
            last = index == len(clip.speech) - 1
            started = time.perf_counter()
            probability = await model.predict(clip.until(end, silence_s), signal)
            calls.append((time.perf_counter() - started) * 1000)
            right = probability >= 0.5 if last else probability < 0.5
            pauses += not last
            right_pauses += right and not last
            right_ends += right and last
            if not right:
                wrong.append(f"{clip.name}{'' if last else f'@{index + 1}'}={probability:.2f}")
    return Accuracy(silence_s, right_pauses, pauses, right_ends, len(clips), calls, wrong)


async def _main() -> None:
    model = SmartTurn()
    await model.preload(CancelSignal())
    for silence in SILENCES_S:
        result = await accuracy(model, silence)
        print(result)
        print("  wrong:", " ".join(result.wrong))


if __name__ == "__main__":
    asyncio.run(_main())
