"""The read sentences of real people through PulseAudio in real time: played into the microphone's sink, heard
by the pipeline on the real devices, answered through the real speaker. What each became and its time to first
audio, to set beside the fixture path's (desktop.bench.real_runs)."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.runtime.workers import run_blocking
from audio.portaudio import refresh
from audio.wav import save_wav
from desktop.bench.pulse import PulseUnavailable, _kit, _speech_end_at, _until
from desktop.bench.pulse_rig import rig
from desktop.bench.real_speech import Clip
from desktop.bench.sessions import Models
from engine.journal import read_events

SETTLE_S = 0.5
QUIET_AFTER_S = 2.5  # after the clip, long enough for the longest wait of the end-of-turn policy


@dataclass(frozen=True)
class PulseTurn:
    clip: Clip
    texts: tuple[str, ...]
    ttfa_ms: float | None


async def real_pulse_turns(models: Models, root: Path, clips: Sequence[Clip], progress: Callable[[str], None]) -> (
    list[PulseTurn]
):  # fmt: skip
    kit = _kit()
    try:
        server = kit.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        raise PulseUnavailable(f"cannot start a private PulseAudio: {error}") from None
    try:
        refresh()
        turns = []
        for n, clip in enumerate(clips, start=1):
            turns.append(await _said(kit, models, root / f"real_pulse{n}", clip))
            progress(f"real speech on PulseAudio {n}/{len(clips)}")
        return turns
    finally:
        kit.stop(server)


async def _said(kit: object, models: Models, out: Path, clip: Clip) -> PulseTurn:
    with tempfile.TemporaryDirectory(prefix="parley-real-") as folder:
        wav = Path(folder) / f"{clip.name}.wav"
        await run_blocking(lambda: save_wav(wav, clip.audio, 16000))
        async with rig(models, out) as live:
            await asyncio.sleep(SETTLE_S)
            injected = time.monotonic()
            user = kit.play_into(kit.MICWIRE, wav)  # type: ignore[attr-defined]
            await asyncio.to_thread(user.wait, 30)
            ttfa = None
            turn = await _reply_or_quiet(live.metrics.first_audible, live.ears)
            end = _speech_end_at(live.frames, injected)
            if turn is not None and end is not None:
                ttfa = round((live.metrics.first_audible[turn] - end) * 1000, 1)
    texts = tuple(str(e["text"]) for e in read_events(out / "journal.jsonl") if e["type"] == "user/message")
    return PulseTurn(clip, texts, ttfa)


async def _reply_or_quiet(first_audible: dict[int, float], ears: object) -> int | None:
    """The first turn whose reply became audible; None once the ears have been idle for QUIET_AFTER_S."""
    quiet_since: list[float] = []

    def probe() -> int | bool | None:
        turn = next(iter(first_audible), None)
        if turn is not None:
            return turn
        busy = bool(getattr(ears, "busy", False))
        now = time.monotonic()
        if busy:
            quiet_since.clear()
        elif not quiet_since:
            quiet_since.append(now)
        return False if quiet_since and now - quiet_since[0] > QUIET_AFTER_S else None

    found = await _until(probe)
    return None if found is False else int(found)
