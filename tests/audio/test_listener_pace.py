"""A silent room costs few wake-ups: the listener asks a paced source for its frames a few at a time while the
VAD's gate holds and nothing plays, and one by one as soon as there is sound or a reply to interrupt."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from audio.bargein import BargeInDetector
from audio.events import CaptureFailed
from audio.listen import IDLE_FRAMES, Listener
from audio.ports import RATE, Frame
from audio.vad import Vad
from engine.testing.clock import VirtualClock

pytestmark = pytest.mark.anyio
FRAME = 320


class _PacedSource:
    """Frames of `audio`; records each pace request with the time of the last frame handed over."""

    def __init__(self, audio: np.ndarray) -> None:
        self._audio = audio
        self.paces: list[tuple[float, int]] = []
        self._at = 0.0
        self.dropped = 0

    def pace(self, frames: int) -> None:
        self.paces.append((round(self._at, 3), frames))

    async def start(self) -> None:
        return None

    async def frames(self) -> AsyncIterator[Frame | CaptureFailed]:
        for i in range(0, len(self._audio) - FRAME + 1, FRAME):
            self._at = i / RATE
            yield Frame(self._audio[i : i + FRAME], self._at, i)

    async def close(self) -> None:
        return None


class _Output:
    def pause(self) -> float:
        return 0.0

    def resume(self) -> None:
        return None


async def test_a_silent_room_is_paced_and_the_first_sound_is_not(user_speech: np.ndarray) -> None:
    silence = np.zeros(RATE, np.float32)
    speech_at = len(silence) / RATE
    source = _PacedSource(np.concatenate([silence, user_speech, silence, silence]))
    await Listener(source, Vad()).run(lambda event: None)
    assert [frames for _, frames in source.paces] == [IDLE_FRAMES, 1, IDLE_FRAMES]
    (idle_at, _), (sound_at, _), (again_at, _) = source.paces
    assert 0.45 <= idle_at < speech_at, "paced once the gate's hold of silence has passed"
    assert speech_at <= sound_at <= speech_at + 0.1, "one frame at a time from the first loud window"
    assert again_at > speech_at + len(user_speech) / RATE, "and paced again only after the speech"


async def test_a_reply_to_interrupt_keeps_every_frame_prompt() -> None:
    source = _PacedSource(np.zeros(2 * RATE, np.float32))
    detector = BargeInDetector(_Output(), VirtualClock())
    detector.arm()
    await Listener(source, Vad(), barge_in=detector).run(lambda event: None)
    assert source.paces == []
