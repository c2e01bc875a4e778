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
from desktop.bench.pulse_rig import TIMEOUT_S, _Live, rig
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
    why: str = ""  # why there is no figure, when ttfa_ms is None


@dataclass(frozen=True)
class Outcome:
    """What a sentence's session showed, to give its figure or say why there is none."""

    ttfa_ms: float | None  # the reply's first audible sample - the clip's end of speech in the captured frames
    waited_out: bool  # the pipeline was still busy when the wait for a reply timed out
    audible: bool  # a turn's reply became audible
    started: int  # turns started
    ended: tuple[str, ...]  # the outcomes of the turns that ended
    dropped: tuple[str, ...]  # the reasons of the utterances dropped
    frames: int  # frames captured from the clip's start on


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
            try:
                turn, waited_out = await _reply_or_quiet(live), False
            except TimeoutError:  # said below, for this sentence alone
                turn, waited_out = None, True
            end = _speech_end_at(live.frames, injected)
            ttfa = None if turn is None or end is None else round((live.metrics.first_audible[turn] - end) * 1000, 1)
            frames = sum(f.end >= injected for f in live.frames)
            started, ended = len(live.metrics.started_at), tuple(e.outcome for e in live.metrics.ended.values())
    events = read_events(out / "journal.jsonl")
    texts = tuple(str(e["text"]) for e in events if e["type"] == "user/message")
    dropped = tuple(str(e["reason"]) for e in events if e["type"] == "utterance/dropped")
    why = no_figure(Outcome(ttfa, waited_out, turn is not None, started, ended, dropped, frames))
    return PulseTurn(clip, texts, None if why else ttfa, why)


def no_figure(seen: Outcome) -> str:
    """Why a sentence's run gave no time to first audio (one line), or "" when it gave one."""
    if seen.waited_out:
        return f"no reply audible after {TIMEOUT_S:.0f} s, and the pipeline still busy (a turn live or queued)"
    if not seen.audible and not seen.started:
        if seen.dropped:
            return f"no turn: the utterance was dropped ({', '.join(seen.dropped)})"
        return "no turn: the pipeline heard no utterance"
    if not seen.audible:
        ended = f"its turn ended {', '.join(seen.ended)}" if seen.ended else "its turn taken back, or not ended"
        return f"no reply audible: {ended}"
    if seen.ttfa_ms is None:
        return f"no end of speech found in the {seen.frames} frames captured from the clip's start"
    if seen.ttfa_ms < 0:
        return f"a reply began {-seen.ttfa_ms:.0f} ms before the end of speech (a turn ended at a pause)"
    return ""


async def _reply_or_quiet(live: _Live) -> int | None:
    """The first turn whose reply became audible; None once nothing has been under way for QUIET_AFTER_S (the
    ears idle, no turn live or queued: a slow reply is waited for, up to the rig's TIMEOUT_S)."""
    quiet_since: list[float] = []

    def probe() -> int | bool | None:
        turn = next(iter(live.metrics.first_audible), None)
        if turn is not None:
            return turn
        now = time.monotonic()
        if live.ears.busy or live.conversation.busy:
            quiet_since.clear()
        elif not quiet_since:
            quiet_since.append(now)
        return False if quiet_since and now - quiet_since[0] > QUIET_AFTER_S else None

    found = await _until(probe)
    return None if found is False else int(found)
