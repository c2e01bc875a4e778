"""The bundled scenarios run on fixture devices (`run --fast`), and what their journals and recordings show."""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adapters.contract import CancelSignal
from adapters.contract.speech_io import Transcriber
from audio.wav import load_wav
from desktop.assets import fixture
from desktop.bench.signals import Samples, boundary_word_error, offset_s, onset_s, silent_from_s, word_edits
from desktop.config import Config
from desktop.pipeline.run import run_session
from desktop.scenario import load_scenario
from engine.journal import read_events

RATE = 16000  # output.wav is read back at Whisper's rate
SPEECH_TAIL_S = 0.5  # a barge-in this long after an utterance ended still belongs to it (the VAD hangover)
NEXT_MARGIN_S = 0.25  # the next reply's first samples may precede its first-audible stamp by a block or two


@dataclass(frozen=True)
class Run:
    out: Path
    events: list[dict[str, Any]]
    report: dict[str, Any]

    def of(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == type_]

    @property
    def timeline(self) -> dict[str, Any]:
        return dict(self.report["timeline"])

    def output(self) -> Samples:
        return load_wav(self.out / "output.wav", rate=RATE)

    def reply(self, turn: int) -> str | None:
        """The whole text the model wrote for `turn` (report.json), of which the journal kept what was heard."""
        row = next((r for r in self.report.get("turns", []) if r.get("turn") == turn), None)
        return None if row is None else row.get("generated")


@dataclass(frozen=True)
class Interruption:
    """An aborted turn's reply: where it played in output.wav, where the user's speech began, what was kept."""

    turn: int
    first_audio_s: float
    silent_s: float  # when the pipeline paused the output (the report's timeline)
    user_onset_s: float  # the interrupting speech's first loud window, in output.wav seconds
    next_audio_s: float  # the next reply's first audio (or the recording's end)
    heard: str  # the assistant/message text the journal kept


def keep_run(run_dir: Path) -> Path:
    """A copy of a run's journal and recordings that outlives the bench's temporary folder, for a look later."""
    kept = Path(tempfile.mkdtemp(prefix="parley-bench-kept-"))
    shutil.copytree(run_dir, kept, dirs_exist_ok=True)
    return kept


async def run_scenario(name: str, out: Path, config: Config) -> Run:
    await run_session(load_scenario(fixture(name)), [], config, out, fast=True)
    report = json.loads((out / "report.json").read_text())
    return Run(out, read_events(out / "journal.jsonl"), report)


def metric(runs: Sequence[Run], key: str) -> list[float]:
    return [float(m[key]) for run in runs for m in run.of("metrics/turn") if key in m]


def aborted_metric(runs: Sequence[Run], key: str) -> list[float]:
    values = []
    for run in runs:
        aborted = {e["turn"] for e in run.of("turn/end") if e["outcome"] == "aborted"}
        values += [float(m[key]) for m in run.of("metrics/turn") if m["turn"] in aborted and key in m]
    return values


def interruptions(run: Run) -> list[Interruption]:
    timeline, found = run.timeline, []
    starts = sorted(t["first_audio_s"] for t in timeline["turns"].values())
    end_s = len(run.output()) / RATE
    for message in run.of("assistant/message"):
        played = timeline["turns"].get(str(message["turn"]))
        if not message.get("interrupted") or played is None or played["silent_s"] is None:
            continue
        silent = float(played["silent_s"])
        onset = _user_onset(timeline["says"], silent)
        following = next((s for s in starts if s > silent), end_s)
        found.append(Interruption(message["turn"], played["first_audio_s"], silent, onset, following, message["text"]))
    return found


def _user_onset(says: list[dict[str, Any]], silent_s: float) -> float:
    """The latest utterance that began before the output was paused, and its onset within the clip."""
    say = max((s for s in says if s["at_s"] <= silent_s), key=lambda s: s["at_s"])
    return float(say["at_s"]) + onset_s(_clip(say["what"]), RATE)


@dataclass(frozen=True)
class Stop:
    """User speech onset in the mic signal → output silent, and its stages (ms)."""

    total_ms: float
    vad_onset_ms: float | None  # signal onset → the onset the VAD reports
    detect_ms: float | None  # VAD onset → barge-in detected (min_speech_ms of voiced audio)
    silence_ms: float | None  # detected (audio time) → the output silent in output.wav


def stops(run: Run) -> list[Stop]:
    """Read off the signals: the interrupting clip's first loud window → output.wav silent from then on
    (or, when the output was silent anyway, the moment the pipeline paused it)."""
    output, origin, found = run.output(), float(run.timeline["clock_origin"]), []
    for cut in interruptions(run):
        # in a gap between sentences (or words) the output was silent anyway: then the pause counts
        silent = max(silent_from_s(output, RATE, cut.user_onset_s, cut.next_audio_s - NEXT_MARGIN_S), cut.silent_s)
        total = round(max(0.0, silent - cut.user_onset_s) * 1000, 1)
        detected = [e for e in run.of("barge_in/detected") if e.get("turn") == cut.turn]
        if not detected:
            found.append(Stop(total, None, None, None))
            continue
        onset, at = float(detected[-1]["onset"]) - origin, float(detected[-1]["at"]) - origin
        ms = [round((b - a) * 1000, 1) for a, b in ((cut.user_onset_s, onset), (onset, at), (at, silent))]
        found.append(Stop(total, *ms))
    return found


@dataclass(frozen=True)
class Ttfa:
    """A voice turn's time to first audio read off the signals, beside the pipeline's own figure for it."""

    turn: int
    ms: float  # the end of the user's speech in the signal → the reply's first audio in output.wav
    journal_ms: float  # the pipeline's metrics/turn: from the end of speech as its VAD placed it


def ttfas(run: Run) -> list[Ttfa]:
    """Per voice turn: the utterance that started it is the last one to end before the reply's first audio; its
    end is the clip's last loud 10 ms window (SPEC §9: end of speech in the signal, not where the VAD put it)."""
    timeline, found = run.timeline, []
    ends = [float(s["at_s"]) + end for s in timeline["says"] if (end := offset_s(_clip(s["what"]), RATE)) is not None]
    for m in run.of("metrics/turn"):
        played = timeline["turns"].get(str(m["turn"]))
        if "ttfa_ms" not in m or played is None or played["first_audio_s"] is None:
            continue
        first = float(played["first_audio_s"])
        before = [end for end in ends if end < first]
        if before:
            found.append(Ttfa(m["turn"], round((first - max(before)) * 1000, 1), float(m["ttfa_ms"])))
    return found


@dataclass(frozen=True)
class Heard:
    error: int  # words wrong at the cut (boundary_word_error)
    edits: int  # all word edits, Whisper's misreadings included
    kept: str  # the journal's text of the interrupted reply
    transcript: str  # what Whisper hears in the part of output.wav that played
    greedy_error: int  # words wrong at the cut by the pipeline's own greedy Whisper pass, for comparison


@dataclass(frozen=True)
class Hearing:
    """Who listens to the played part: `judge` (Whisper with a 5-wide beam) decides; the pipeline's greedy pass is
    kept beside it, since its slips on a word cut short by the stop ("there was" dropped) counted as Parley's."""

    judge: Transcriber
    greedy: Transcriber


async def hear(hearing: Hearing, kept: str, played: Samples, reply: str | None = None) -> Heard:
    """The kept text against what the judge hears in the audio that played; `reply`, the whole reply the model
    wrote when the caller knows it, tells the words played past the kept ones from the cut word's fragment."""
    transcript = (await hearing.judge.transcribe(played, CancelSignal())).text
    greedy = (await hearing.greedy.transcribe(played, CancelSignal())).text
    error = boundary_word_error(kept, transcript, reply)
    return Heard(error, word_edits(kept, transcript), kept, transcript, boundary_word_error(kept, greedy, reply))


async def heard_word_errors(run: Run, hearing: Hearing) -> list[Heard]:
    """Per interruption: the kept text against what Whisper hears in the played part of the audio."""
    output, found = run.output(), []
    for cut in interruptions(run):
        audio = output[round(cut.first_audio_s * RATE) : round(cut.silent_s * RATE)]
        found.append(await hear(hearing, cut.heard, audio, run.reply(cut.turn)))
    return found


def self_interruptions(run: Run) -> list[str]:
    """Barge-ins detected while no user utterance was under way (the assistant's own echo), described."""
    timeline = run.timeline
    origin = float(timeline["clock_origin"])
    spans = [(s["at_s"], s["at_s"] + len(_clip(s["what"])) / RATE + SPEECH_TAIL_S) for s in timeline["says"]]
    found = []
    for event in run.of("barge_in/detected"):
        at = float(event["onset"]) - origin
        if not any(lo - 0.05 <= at <= hi for lo, hi in spans):
            reply = timeline["turns"].get(str(event.get("turn")), {}).get("first_audio_s")
            found.append(f"turn {event.get('turn')} at {at:.2f} s (its reply began at {reply} s), {event['source']}")
    return found


@functools.lru_cache(maxsize=32)
def _clip(what: str) -> Samples:
    """A spoken utterance's samples, read once (every run's rows and notes ask for the same few clips); a typed one
    (not a file) has none. Read-only: the callers share it."""
    path = Path(what)
    samples = load_wav(path) if path.is_file() else np.zeros(0, dtype=np.float32)
    samples.setflags(write=False)
    return samples
