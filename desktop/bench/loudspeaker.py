"""`--devices pulse`, on loudspeakers: the one pipeline on PulseAudio with the speaker looped into the microphone
(module-loopback, unity gain, 40 ms), so the microphone hears every word Parley says, as on a laptop.

Uninterrupted runs: a typed request, the reply played to its end, then a quiet room. Interrupted runs: a long
reply, the user's "stop, what time is it" played into the microphone over it, its answer played to its end, then
quiet. Counted from each run's journal: turns started by a voice the user never used (self-talk), barge-ins
confirmed before the user spoke (self-interruptions), user words that did not interrupt (missed); and stop_ms,
the user's onset in the captured signal (found by cross-correlation under the loud echo) → the speaker silent.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from audio.wav import load_wav, save_wav
from desktop.assets import fixture
from desktop.bench.pulse_rig import TALK_OVER_AFTER_S, TIMEOUT_S, measure, rig
from desktop.bench.scenarios import keep_run
from desktop.bench.sessions import QUESTION, Models
from desktop.bench.signals import found_at, onset_s
from engine.inbox import UserInput
from engine.journal import read_events

LOOP_MS, LOOP_GAIN_DB = 40, 0.0
ASKS = ("What is two plus two?", "What colour is the sky on a clear day?", "Say good morning to me.")
INTERRUPTION = "stop_what_time.wav"
QUIET_S = 3.0  # of silence after the last reply ended: anything Parley starts in it was started by itself
RATE = 16000
SLOW_STOP_MS = 120.0
ANSWER_S = 150.0  # the embedded model may answer at length (up to max_tokens: about a minute and a half spoken)


@dataclass
class LoudspeakerRuns:
    self_talk_turns: list[float] = field(default_factory=list)  # per run
    self_interruptions: list[float] = field(default_factory=list)  # per run
    missed: list[float] = field(default_factory=list)  # per interrupted run: 1 when the user did not interrupt
    stop_ms: list[float] = field(default_factory=list)
    described: list[str] = field(default_factory=list)
    onset_pauses: int = 0  # brief pauses of an uninterrupted reply on an onset the echo explained afterwards
    played_s: float = 0.0  # of uninterrupted replies

    @property
    def runs(self) -> int:
        return len(self.self_talk_turns)


async def loudspeaker_runs(
    kit: Any, server: Any, models: Models, root: Path, reps: int, progress: Any
) -> LoudspeakerRuns:
    """`reps` uninterrupted and `reps` interrupted replies on the looped-back loudspeaker."""
    module = server.load("module-loopback", f"source={server.speaker}.monitor", f"sink={server.micwire}",
                         f"latency_msec={LOOP_MS}", "source_dont_move=true", "sink_dont_move=true")  # fmt: skip
    kit.pactl("set-source-volume", f"{server.speaker}.monitor", f"{LOOP_GAIN_DB:g}dB")
    runs = LoudspeakerRuns()
    try:
        for n in range(reps):
            out = root / f"loud_reply{n}"
            async with rig(models, out, acoustic=True) as live:
                await _reply_and_quiet(live, ASKS[n % len(ASKS)])
            _count(runs, out, f"reply {n + 1}", expected_voice_turns=0, user_onset=None)
            if runs.self_talk_turns[-1] or runs.self_interruptions[-1]:
                _save_audio(out, live.frames, None)
                runs.described.append(f"reply {n + 1}: kept in {keep_run(out)}")
            _pauses(runs, out)
            progress(f"loudspeaker reply {n + 1}/{reps}")
            await _interrupted(kit, server, models, root / f"loud_barge_in{n}", runs, n)
            progress(f"loudspeaker barge-in {n + 1}/{reps}")
    finally:
        server.unload(module)
        kit.pactl("set-source-volume", f"{server.speaker}.monitor", "0dB")
    return runs


async def _reply_and_quiet(live: Any, ask: str) -> int:
    live.conversation.submit(UserInput(ask))
    turn = await _until(lambda: next(iter(live.metrics.first_audible), None))
    await _until(lambda: live.metrics.ended.get(turn), ANSWER_S)  # "What is two plus two?" once took 59 s to say
    await asyncio.sleep(QUIET_S)
    return int(turn)


async def _interrupted(kit: Any, server: Any, models: Models, out: Path, runs: LoudspeakerRuns, n: int) -> None:
    clip = load_wav(fixture(INTERRUPTION))
    recorder = kit.Recorder(f"{server.speaker}.monitor", RATE)
    try:
        async with rig(models, out, acoustic=True) as live:
            live.conversation.submit(UserInput(QUESTION))
            turn = await _until(lambda: next(iter(live.metrics.first_audible), None))
            first = live.metrics.first_audible[turn]
            await asyncio.sleep(TALK_OVER_AFTER_S)
            injected = time.monotonic()
            user = kit.play_into(server.micwire, fixture(INTERRUPTION))
            await _until(lambda: live.metrics.ended.get(turn))
            await asyncio.to_thread(user.wait, 30)
            await _until(lambda: live.metrics.ended.get(turn + 1) or _no_answer(live), ANSWER_S)
            await asyncio.sleep(QUIET_S)
            onset = _clip_onset(live.frames, injected, clip)
            paused = live.ears.silent_at.get(turn, 0.0)
    finally:
        recording = await asyncio.to_thread(recorder.finish)
    stop, _heard = await measure(models, recording, out, turn, (first, paused), onset)
    missed = _count(runs, out, f"barge-in {n + 1}", expected_voice_turns=1, user_onset=onset)
    runs.missed.append(float(missed))
    slow = stop is not None and not missed and stop > SLOW_STOP_MS
    if stop is not None and not missed:
        runs.stop_ms.append(stop)
    if slow or missed or runs.self_interruptions[-1] or runs.self_talk_turns[-1]:
        _save_audio(out, live.frames, recording)
        what = f"stop_ms {stop:g}; " if slow else ""
        runs.described.append(f"barge-in {n + 1}: {what}{_stages(out, onset)}; kept in {keep_run(out)}")


def _save_audio(out: Path, frames: list[Any], recording: np.ndarray | None) -> None:
    """A run kept for a look: what the microphone captured (mic.wav, its first sample at the clock time in
    mic_at.txt, the journal's time base) and, where it was recorded, what the speaker played (speaker.wav)."""
    if frames:
        save_wav(out / "mic.wav", np.concatenate([f.samples for f in frames]), RATE)
        (out / "mic_at.txt").write_text(f"{frames[0].at:.6f}\n")
    if recording is not None:
        save_wav(out / "speaker.wav", recording, RATE)


def _stages(out: Path, onset: float | None) -> str:
    """Where a slow stop's time went, by the journal: when the output paused and when the barge-in was detected,
    and what the interruption was heard as (were its first words heard at all?)."""
    events = read_events(out / "journal.jsonl")
    found = [e for e in events if e["type"] in ("barge_in/onset_paused", "barge_in/detected")]
    heard = [repr(e["text"]) for e in events if e["type"] == "user/message"][1:]  # after the typed question
    said = f"; heard as {', '.join(heard) or 'nothing'}"
    if onset is None or not found:
        return "no pause or detection on record" + said
    stages = (f"{e['type'].split('/')[1]} {1000 * (float(e['at']) - onset):.0f} ms after onset" for e in found)
    return ", ".join(stages) + said


def _pauses(runs: LoudspeakerRuns, out: Path) -> None:
    events = read_events(out / "journal.jsonl")
    runs.onset_pauses += len([e for e in events if e["type"] == "barge_in/onset_paused"])
    runs.played_s += sum(float(e.get("heard_ms", 0.0)) for e in events if e["type"] == "assistant/message") / 1000


def _no_answer(live: Any) -> bool | None:
    """The interruption was heard as no turn at all (a miss): nothing more to wait for."""
    return True if not live.ears.busy and not live.conversation.live_turn and not len(live.conversation.inbox) else None


def _count(runs: LoudspeakerRuns, out: Path, name: str, *, expected_voice_turns: int, user_onset: float | None) -> bool:
    """Count this run's self-talk and self-interruptions from its journal; True when the user's words were missed."""
    events = read_events(out / "journal.jsonl")
    said = {e["turn"]: e["text"] for e in events if e["type"] == "user/message"}
    voices = [e for e in events if e["type"] == "turn/start" and e.get("source") == "voice"]
    extra = [said.get(e["turn"], "") for e in voices[expected_voice_turns:]]
    confirmed = [e for e in events if e["type"] == "barge_in/confirmed"]
    own = [e for e in confirmed if user_onset is None or float(e["onset"]) < user_onset - 0.1]
    runs.self_talk_turns.append(float(len(extra)))
    runs.self_interruptions.append(float(len(own)))
    runs.described += [f"{name}: a turn from Parley's own voice: {text!r}" for text in extra]
    runs.described += [f"{name}: interrupted itself at {e['onset']:.2f}" for e in own]
    if user_onset is None:
        return False
    return len(voices) < expected_voice_turns or len(confirmed) == len(own)


def _clip_onset(frames: list[Any], after: float, clip: Any) -> float | None:
    later = [f for f in frames if f.end >= after]
    if not later:
        return None
    captured = np.concatenate([f.samples for f in later])
    return float(later[0].at + found_at(captured, clip) / RATE + onset_s(clip, RATE))


async def _until(probe: Any, within: float | None = None) -> Any:
    deadline = time.monotonic() + (within or TIMEOUT_S)
    while not (value := probe()):
        if time.monotonic() > deadline:
            raise TimeoutError("the loudspeaker run waited for a reply that never came")
        await asyncio.sleep(0.01)
    return value
