"""Issue 12's rig: Parley's replies on a PulseAudio null sink whose monitor loops back into the microphone
(module-loopback: latency, gain), heard by the real listening chain (Microphone -> Listener: EchoCanceller, Vad,
BargeInDetector armed). A `Script` plays replies, a user talking over one, and a reply right after a barge-in;
the `Tally` counts barge-ins Parley's own voice fired, onsets that paused it for nothing, and how fast a real
user stopped it (the user's onset in the captured signal -> the output paused).

Also a measuring tool: `python -m tests.audio.loopback --latency 40 --gain-db 0 --reps 3`.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from audio import events
from audio.aec import EchoCanceller
from audio.bargein import BargeInDetector
from audio.capture import Microphone
from audio.events import BargeIn
from audio.listen import Listener
from audio.player import Player
from audio.ports import RATE, Frame
from audio.vad import Vad, VadConfig
from audio.wav import load_wav
from tests.audio import pulse as kit
from tests.audio.signals import offset_of

USER_WAV = Path(__file__).resolve().parents[2] / "assets" / "fixtures" / "stop_what_time.wav"
LONG = (
    "Once upon a time, an old lighthouse keeper lived by the sea. Every night he climbed the stairs to light the lamp."
)
SHORT = "Two."
TAIL_S = 0.6  # the echo tail after a reply's last sample during which its echo could still fire
SETTLE_S = 1.0  # silence before a reply that starts "cold" (the canceller idles after 0.5 s)
ONSET_RMS = 0.01  # the user's onset: the clip's first 10 ms above -40 dBFS (as `parley bench` reads it)
WAIT_S = 30.0


@dataclass
class Tally:
    self_fired: list[float] = field(default_factory=list)  # audio time of barge-ins on Parley's own voice
    false_onsets: list[float] = field(default_factory=list)  # onset pauses with no user talking
    caught: list[bool] = field(default_factory=list)  # per user utterance: did it interrupt?
    stop_ms: list[float] = field(default_factory=list)  # user's signal onset -> output paused
    lost: list[str] = field(default_factory=list)  # echo protection lost: why

    def add(self, other: Tally) -> None:
        self.lost += other.lost
        self.self_fired += other.self_fired
        self.false_onsets += other.false_onsets
        self.caught += other.caught
        self.stop_ms += other.stop_ms


class _Tee:
    def __init__(self, mic: Microphone, frames: list[Frame]) -> None:
        self._mic, self._frames = mic, frames

    @property
    def dropped(self) -> int:
        return self._mic.dropped

    async def start(self) -> None:
        await self._mic.start()

    async def frames(self):  # type: ignore[no-untyped-def]
        async for item in self._mic.frames():
            if isinstance(item, Frame):
                self._frames.append(item)
            yield item

    async def close(self) -> None:
        await self._mic.close()


async def until(condition: Callable[[], bool], seconds: float = WAIT_S) -> None:
    """Poll `condition` (10 ms steps) for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the loopback rig waited too long")
        await asyncio.sleep(0.01)


class Loopback:
    """One PulseAudio loopback and the listening chain on it; `reply`/`talk_over`/`reply_after_barge_in`."""

    def __init__(self, voice_rate: int) -> None:
        self.rate = voice_rate
        self.player = Player("pulse", rate=voice_rate)
        self.frames: list[Frame] = []
        self.detector = BargeInDetector(self.player, _Clock(), min_speech_ms=64, resolve_window_ms=2500)
        self._user_windows: list[tuple[float, float]] = []  # clock times a user may be heard
        self._events: list[tuple[float, object]] = []
        self._turn = 0
        self._expecting_user = False  # a user barge-in now is confirmed by talk_over; any other one is dismissed
        self._listening: asyncio.Task[object] | None = None
        self._playing: list[subprocess.Popen[bytes]] = []
        self._tasks: set[asyncio.Task[object]] = set()

    async def start(self) -> None:
        await self.player.start()
        listener = Listener(_Tee(Microphone("pulse"), self.frames), Vad(VadConfig(0.5, min_silence_ms=600)),
                            echo=EchoCanceller(self.player.tap()), barge_in=self.detector)  # fmt: skip
        await listener.source.start()
        self.listener = listener
        self._listening = asyncio.create_task(listener.run(self._on_event))
        await until(lambda: len(self.frames) >= 10, 5.0)

    async def close(self) -> None:
        await self.listener.source.close()
        if self._listening is not None:
            await self._listening
        for task in list(self._tasks):
            task.cancel()
            await asyncio.wait({task})
        for process in self._playing:
            await asyncio.to_thread(process.wait, 10)
        await self.player.close()

    def _on_event(self, event: object) -> None:
        self._events.append((time.monotonic(), event))
        if isinstance(event, BargeIn) and not (self._expecting_user and self._user_at(event.at)):
            task = asyncio.ensure_future(self._dismiss(event))  # Parley's own voice: count it, go on
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _dismiss(self, barge_in: BargeIn) -> None:
        await self.detector.resolve(barge_in, _no_words)
        self.player.resume()  # even when a disarm resolved it first: the rig counts, the reply plays on

    def _user_at(self, at: float) -> bool:
        return any(start - 0.2 <= at <= end + 0.5 for start, end in self._user_windows)

    async def reply(self, samples: np.ndarray, *, settle_s: float = SETTLE_S) -> Tally:
        """Play a reply to its end (after `settle_s` of silence), armed; tally what fired."""
        await asyncio.sleep(settle_s)
        return await self._play(samples)

    async def _play(self, samples: np.ndarray) -> Tally:
        first = len(self._events)
        self._turn += 1
        self.detector.arm()
        self.player.enqueue(self._turn, 0, samples)
        await asyncio.wait_for(self.player.drain(self._turn), WAIT_S)
        await asyncio.sleep(TAIL_S)
        self.detector.disarm()
        self.player.release(self._turn)
        return self._tally(first)

    async def talk_over(self, samples: np.ndarray, after_s: float) -> tuple[Tally, float]:
        """Play a reply; `after_s` into it the user says "stop, what time is it"; the barge-in is confirmed as
        the pipeline would (the turn stopped). Returns the tally and the clock time the user's clip ended."""
        await asyncio.sleep(SETTLE_S)
        first = len(self._events)
        self._turn += 1
        self.detector.arm()
        self.player.enqueue(self._turn, 0, samples)
        await asyncio.sleep(after_s)
        injected = time.monotonic()
        self._user_windows.append((injected, injected + WAIT_S))
        process = kit.play_into(kit.MICWIRE, USER_WAV)
        self._playing.append(process)
        self._expecting_user = True
        fired = await self._first_barge_in(first, process)
        self._expecting_user = False
        self.player.stop(self._turn)
        self.detector.disarm()
        self.player.resume()
        self.player.release(self._turn)
        await asyncio.to_thread(process.wait, 10)
        self._playing.remove(process)
        ended = time.monotonic()
        self._user_windows[-1] = (injected, ended)
        tally = self._tally(first)
        tally.caught.append(fired)
        onset = self._onset(injected)
        paused = self._paused_at(first)
        if fired and onset is not None and paused is not None:
            tally.stop_ms.append(round(max(0.0, paused - onset) * 1000, 1))  # paused already: 0, as the bench
        return tally, ended

    async def reply_after_barge_in(self, first: np.ndarray, second: np.ndarray, gap_s: float) -> Tally:
        """The user interrupts `first`; `second` starts `gap_s` after the user stopped talking."""
        interrupted, ended = await self.talk_over(first, 1.5)
        await asyncio.sleep(max(0.0, ended + gap_s - time.monotonic()))
        interrupted.add(await self._play(second))
        return interrupted

    async def _first_barge_in(self, first: int, process: subprocess.Popen[bytes]) -> bool:
        """Until the user's barge-in, or a second after their clip finished playing (paplay may start late on a
        loaded machine: the clip's own end is the deadline, not a fixed time)."""
        ended: list[float] = []

        def settled() -> bool:
            if any(isinstance(e, BargeIn) and self._user_at(e.at) for _, e in self._events[first:]):
                return True
            if process.poll() is not None and not ended:
                ended.append(time.monotonic())
            return bool(ended) and time.monotonic() > ended[0] + 1.0

        await until(settled)
        return any(isinstance(e, BargeIn) and self._user_at(e.at) for _, e in self._events[first:])

    def _tally(self, first: int) -> Tally:
        tally = Tally()
        onset_type = getattr(events, "OnsetPaused", None)
        for _, event in self._events[first:]:
            if isinstance(event, BargeIn) and not self._user_at(event.at):
                if round(event.at, 3) not in tally.self_fired:  # one speech run re-fires after each resume
                    tally.self_fired.append(round(event.at, 3))
            elif onset_type is not None and isinstance(event, onset_type) and not self._user_at(event.at):
                tally.false_onsets.append(event.at)
            elif type(event).__name__ == "EchoProtectionLost":
                tally.lost.append(str(getattr(event, "reason", "")))
        return tally

    def _paused_at(self, first: int) -> float | None:
        """Clock time since which the output was paused when the user's barge-in came (an onset pause that was
        still in effect, or the barge-in's own pause)."""
        onset_type = getattr(events, "OnsetPaused", None)
        resumed_type = getattr(events, "OnsetResumed", None)
        since: float | None = None
        for received, event in self._events[first:]:
            if onset_type is not None and isinstance(event, onset_type) and since is None:
                since = float(event.paused_at)
            elif resumed_type is not None and isinstance(event, resumed_type):
                since = None
            elif isinstance(event, BargeIn) and self._user_at(event.at):
                return since if since is not None else received
        return None

    def _onset(self, after: float) -> float | None:
        """ADC time of the user's onset in the captured signal (the clip located by cross-correlation)."""
        frames = [f for f in self.frames if f.end >= after - 0.1]
        if not frames:
            return None
        captured = np.concatenate([f.samples for f in frames[:300]])
        clip = load_wav(USER_WAV)
        windows = np.sqrt(np.mean(np.square(clip[: len(clip) // 160 * 160].reshape(-1, 160)), axis=1))
        lead = int(np.flatnonzero(windows > ONSET_RMS)[0]) * 160
        return frames[0].at + (offset_of(captured, clip) + lead) / RATE


class _Clock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


async def _no_words() -> bool:
    return False


def load_loopback(pulse: kit.Pulse, latency_ms: int, gain_db: float) -> str:
    module = pulse.load("module-loopback", f"source={pulse.speaker}.monitor", f"sink={pulse.micwire}",
                        f"latency_msec={latency_ms}", "source_dont_move=true", "sink_dont_move=true")  # fmt: skip
    kit.pactl("set-source-volume", f"{pulse.speaker}.monitor", f"{gain_db:g}dB")
    return module


def unload_loopback(pulse: kit.Pulse, module: str) -> None:
    pulse.unload(module)
    kit.pactl("set-source-volume", f"{pulse.speaker}.monitor", "0dB")


def synthesize(texts: list[str]) -> tuple[int, list[np.ndarray]]:
    """Real Piper replies (the default voice), as the pipeline would play them."""
    from adapters.tts.piper_voice import default_voice_path, shared_voice

    voice = shared_voice(default_voice_path())
    clips = [np.concatenate([c.audio_float_array for c in voice.synthesize(t)]).astype(np.float32) for t in texts]
    return int(voice.config.sample_rate), clips


def hold_gil(seconds: float) -> None:
    """Keep the GIL for about `seconds` in one C call, as a Qt paint or layout does on the window's thread."""
    started = time.perf_counter()
    sum(range(100_000))
    per_item = (time.perf_counter() - started) / 100_000
    sum(range(round(seconds / per_item)))  # a builtin loop: no other thread runs until it returns


async def stall_loop(stall_s: float, every_s: float) -> None:
    """The loop's thread busy `stall_s` out of every `every_s` (the playback callback waits for the GIL)."""
    while True:
        await asyncio.sleep(every_s - stall_s)
        hold_gil(stall_s)


async def condition(
    pulse: kit.Pulse, latency_ms: int, gain_db: float, reps: int = 1, stalls: tuple[float, float] | None = None
) -> dict[str, Tally]:
    """Issue 12's script on one loopback: per case, what fired. `stalls`: (seconds, every seconds) the loop's
    thread holds the GIL, as a busy window does."""
    rate, (long, short) = synthesize([LONG, SHORT])
    module = load_loopback(pulse, latency_ms, gain_db)
    rig = Loopback(rate)
    cases = {"long": Tally(), "short": Tally(), "talk_over": Tally(), "after_barge_in": Tally()}
    stalling = asyncio.create_task(stall_loop(*stalls)) if stalls else None
    try:
        await rig.start()
        for _ in range(reps):
            cases["long"].add(await rig.reply(long))
            cases["short"].add(await rig.reply(short))
            cases["after_barge_in"].add(await rig.reply_after_barge_in(long, short, 0.2))
            cases["talk_over"].add((await rig.talk_over(long, 2.5))[0])
    finally:
        if stalling is not None:
            stalling.cancel()
            await asyncio.wait({stalling})
        await rig.close()
        unload_loopback(pulse, module)
    print(f"underruns {rig.player.underflows}", flush=True)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=int, nargs="+", default=[20, 40, 120])
    parser.add_argument("--gain-db", type=float, nargs="+", default=[0.0, -10.0])
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--stall-ms", type=float, nargs=2, metavar=("MS", "EVERY_MS"), help="hold the GIL")
    args = parser.parse_args()
    stalls = (args.stall_ms[0] / 1000, args.stall_ms[1] / 1000) if args.stall_ms else None
    from audio.portaudio import refresh

    server = kit.start()
    refresh()
    try:
        for gain in args.gain_db:
            for latency in args.latency:
                cases = asyncio.run(condition(server, latency, gain, args.reps, stalls))
                for name, t in cases.items():
                    print(f"latency {latency} ms gain {gain:g} dB {name:15s} self-fired {len(t.self_fired)} "
                          f"false onsets {len(t.false_onsets)} caught {sum(t.caught)}/{len(t.caught)} "
                          f"stop_ms {t.stop_ms} lost {t.lost}", flush=True)  # fmt: skip
    finally:
        kit.stop(server)


if __name__ == "__main__":
    main()
