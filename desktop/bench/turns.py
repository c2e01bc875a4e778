"""Offline end-of-turn evaluation: the evidence policy against a fixed 600 ms hangover on the pause fixtures.

Per clip: how many turns the speech was split into (more than one is a cut-off) and the latency from
the end of speech in the signal (the manifest's last speech end) to the decision. The policy runs on
Silero with a short silence, the real Smart Turn model and (optionally) a speculative Whisper pass at
each pause; the baseline is the same Silero with `min_silence_ms=600`, deciding when it reports.

    .venv/bin/python -m desktop.bench.turns [--no-words] [--max-wait-ms 2000]
        [--min-silence-ms 0] [--model-ms 100 --asr-ms 400]  # fixed delays, not the measured ones
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract.cancel import CancelSignal
from adapters.contract.speech_io import Transcriber, Transcript
from adapters.contract.turn import EndOfTurnModel
from adapters.turn.smart_turn import SmartTurn
from audio.events import SpeechStarted
from audio.ports import RATE, Frame
from audio.turns.endpoint import PAUSE_SILENCE_MS, EndpointConfig, EndpointPolicy
from audio.vad import SileroModel, Vad, VadConfig
from desktop.bench.table import Row, Target, render, row
from desktop.bench.turn_clips import TurnClip, turn_clips
from desktop.bench.turn_sim import FRAME, PREROLL_S, Delays, Hear, Samples, SimClock, SimResult, TurnSim
from desktop.config import AudioConfig
from desktop.pipeline.voice import endpoint_config, pause_ms

HANGOVER_MS = 600.0  # today's fixed end-of-speech silence
TRAILING_S = 3.5  # silence after each clip: more than the longest wait
CUTOFF = Target("final", 5)


@dataclass(frozen=True)
class ClipTurns:
    """What happened to one clip under the policy and under the fixed hangover (times in ms after its speech)."""

    name: str
    kind: str
    turns: int
    eot_ms: float | None  # end of speech -> the last turn decided
    text_ms: float | None  # end of speech -> the last turn decided and its words ready
    reason: str
    words: tuple[str, ...]  # the transcript at each decided end
    turns_600ms: int
    eot_ms_600ms: float | None
    text_ms_600ms: float | None  # ... plus one Whisper pass after the hangover

    @property
    def cut_off(self) -> bool:
        return self.turns > 1

    @property
    def cut_off_600ms(self) -> bool:
        return self.turns_600ms > 1


@dataclass
class TurnEval:
    clips: list[ClipTurns]
    model_ms: list[float]
    asr_ms: list[float]
    config: EndpointConfig


async def evaluate_turns(
    model: EndOfTurnModel,
    transcriber: Transcriber | None,
    config: EndpointConfig | None = None,
    clips: Sequence[TurnClip] | None = None,
    vad_threshold: float = 0.5,
    delays: Delays | None = None,
    pause_ms: float = PAUSE_SILENCE_MS,
) -> TurnEval:
    """Every clip under the policy (`transcriber` None: no words, so the policy does not wait for them).

    Load the models first (`preload`): a first call that loads them would count as latency. `delays` fixes
    how long the answers take (for figures that do not depend on the machine's load); the 600 ms hangover's
    Whisper pass is timed alike.
    """
    delays = delays or Delays()
    config = config or EndpointConfig(wait_for_words=transcriber is not None)
    silero, signal = SileroModel(), CancelSignal()

    async def judge(audio: Samples) -> float:
        return await model.predict(audio, signal)

    hear: Hear | None = None
    if transcriber is not None:

        async def hear(audio: Samples) -> Transcript:
            return await transcriber.transcribe(audio, signal)

    out = TurnEval([], [], [], config)
    for clip in clips if clips is not None else turn_clips():
        audio = clip.until(len(clip.audio()) / RATE, TRAILING_S)
        silero.reset()
        clock = SimClock()
        vad = Vad(VadConfig(vad_threshold, min_silence_ms=pause_ms), silero)
        policy = EndpointPolicy(clock, config)
        sim = await TurnSim(vad, policy, clock, judge, hear, delays).run(audio)
        out.model_ms += sim.model_ms
        out.asr_ms += sim.asr_ms
        silero.reset()
        hangover_vad = Vad(VadConfig(vad_threshold, min_silence_ms=HANGOVER_MS), silero)
        baseline = await hangover(hangover_vad, audio, hear, delays.asr_ms)
        out.clips.append(_clip_turns(clip, sim, baseline))
    return out


@dataclass(frozen=True)
class _Hangover:
    ends: list[float]  # when the VAD reported each end of speech
    text_ready: float | None  # when a Whisper pass started at the last report would deliver


async def hangover(vad: Vad, audio: Samples, hear: Hear | None, asr_ms: float | None) -> _Hangover:
    """A fixed-hangover VAD: when it reports each end of speech, and the words of the last utterance after it."""
    ends, start = [], 0.0
    for offset in range(0, len(audio) - FRAME + 1, FRAME):
        for event in vad.feed(Frame(audio[offset : offset + FRAME], offset / RATE, offset)):
            if isinstance(event, SpeechStarted):
                start = event.at
            else:
                ends.append((offset + FRAME) / RATE)
    if not ends or hear is None:
        return _Hangover(ends, None)
    utterance = audio[round(max(0.0, start - PREROLL_S) * RATE) : round(ends[-1] * RATE)]
    loop = asyncio.get_running_loop()
    began = loop.time()
    await hear(utterance)
    took = loop.time() - began if asr_ms is None else asr_ms / 1000
    return _Hangover(ends, ends[-1] + took)


def _clip_turns(clip: TurnClip, sim: SimResult, baseline: _Hangover) -> ClipTurns:
    last = sim.ended[-1] if sim.ended else None
    ready = sim.text_ready[-1] if sim.text_ready else None
    end = clip.speech_end_s
    return ClipTurns(
        clip.name,
        clip.kind,
        len(sim.ended),
        _ms(last.at - end) if last else None,
        _ms(ready - end) if ready is not None else None,
        last.reason if last else "none",
        tuple(sim.words),
        len(baseline.ends),
        _ms(baseline.ends[-1] - end) if baseline.ends else None,
        _ms(baseline.text_ready - end) if baseline.text_ready is not None else None,
    )


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def turn_rows(result: TurnEval) -> list[Row]:
    """`eot_ms`, `cutoff_rate` and the fixed hangover's figures beside them, for the bench table."""
    paused = [c for c in result.clips if c.kind == "paused"]
    cut, cut_600 = sum(c.cut_off for c in paused), sum(c.cut_off_600ms for c in paused)
    split_complete = float(sum(c.cut_off for c in result.clips if c.kind != "paused"))
    rate, rate_600 = 100 * cut / max(1, len(paused)), 100 * cut_600 / max(1, len(paused))

    def values(name: str, kind: str | None = None) -> list[float]:
        clips = [c for c in result.clips if kind is None or c.kind == kind]
        return [v for c in clips if (v := getattr(c, name)) is not None]

    return [
        row("eot_ms", values("eot_ms"), None, note=f"end of speech -> turn decided, {len(result.clips)} clips"),
        row("eot_ms_complete", values("eot_ms", "complete"), None, note="the complete questions only"),
        row("eot_ms_600ms", values("eot_ms_600ms"), None, note="the same with a fixed 600 ms hangover"),
        row("text_ready_ms", values("text_ms"), None, note="end of speech -> decided and its words ready"),
        row("text_ready_ms_600ms", values("text_ms_600ms"), None, note="600 ms hangover, then one Whisper pass"),
        row("cutoff_rate", [rate], CUTOFF, final=rate, note=f"% of {len(paused)} paused utterances split; {cut} cut"),
        row("cutoff_rate_600ms", [rate_600], None, final=rate_600, note=f"fixed 600 ms hangover: {cut_600} cut"),
        row("complete_split", [split_complete], Target("final", 0), final=split_complete, note="complete questions"),
        row("smart_turn_ms", result.model_ms, None, note="one Smart Turn call (wall time, beside Whisper)"),
        row("speculative_asr_ms", result.asr_ms, None, note="the Whisper pass started at each pause"),
    ]


def _details(result: TurnEval) -> list[str]:
    lines = []
    for c in result.clips:
        flag = "CUT " if c.cut_off else "    "
        lines.append(
            f"{flag}{c.name:16} {c.kind:8} turns {c.turns} eot {c.eot_ms} text {c.text_ms} ms ({c.reason}) | "
            f"600 ms: turns {c.turns_600ms} eot {c.eot_ms_600ms} text {c.text_ms_600ms} | {' / '.join(c.words)}"
        )
    return lines


async def _main(args: argparse.Namespace) -> None:
    model, transcriber = SmartTurn(), None if args.no_words else WhisperTranscriber()
    await model.preload(CancelSignal())
    if transcriber is not None:
        await transcriber.preload(CancelSignal())
    config = replace(endpoint_config(AudioConfig(), use_model=True), wait_for_words=transcriber is not None)
    config = replace(config, max_wait_ms=args.max_wait_ms, min_silence_ms=args.min_silence_ms)
    config = replace(config, doubt_wait_ms=args.doubt_wait_ms, punctuated=not args.no_punctuation)
    delays = Delays(args.model_ms, args.asr_ms)
    result = await evaluate_turns(model, transcriber, config, delays=delays, pause_ms=args.pause_ms)
    print("\n".join(_details(result)))
    print()
    said = f"answer delays: Smart Turn {args.model_ms or 'measured'}, Whisper {args.asr_ms or 'measured'} ms"
    print(render(turn_rows(result), [f"policy: {config}", f"VAD pause {args.pause_ms:g} ms", said]))


def main() -> None:
    parser = argparse.ArgumentParser(description="End-of-turn evaluation on assets/fixtures/turns")
    parser.add_argument("--no-words", action="store_true", help="no Whisper pass: Smart Turn and silence only")
    app = endpoint_config(AudioConfig(), use_model=True)  # the defaults are the app's
    parser.add_argument("--pause-ms", type=float, default=pause_ms(AudioConfig()), help="the VAD silence that asks")
    parser.add_argument("--max-wait-ms", type=float, default=app.max_wait_ms)
    parser.add_argument("--min-silence-ms", type=float, default=app.min_silence_ms)
    parser.add_argument("--doubt-wait-ms", type=float, default=app.doubt_wait_ms)
    parser.add_argument("--no-punctuation", action="store_true", help="a missing full stop is no evidence")
    parser.add_argument("--model-ms", type=float, help="fixed Smart Turn answer delay (default: measured)")
    parser.add_argument("--asr-ms", type=float, help="fixed Whisper pass delay (default: measured)")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
