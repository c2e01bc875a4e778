"""Real people through the pipeline (`run --fast` on fixture devices): each corpus clip said once into a fresh
session, what became of it read off the journal and the recording, beside Whisper's offline reading of the
same audio. What a person said and no turn holds is a dropped utterance; a turn of several utterances answered
as more than one is a cut-off."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.contract import CancelSignal
from adapters.runtime.workers import run_blocking
from audio.wav import save_wav
from desktop.bench.real_speech import (
    Clip,
    at_level,
    conversation_speakers,
    conversation_turns,
    more_speech,
    sentences,
)
from desktop.bench.scenarios import Run, ttfas
from desktop.bench.sessions import Models
from desktop.bench.signals import normalise, word_edits
from desktop.bench.table import Row, Target, not_measured, row
from desktop.pipeline.run import run_session
from desktop.scenario import load_scenario
from engine.journal import read_events

REAL_TTFA = (Target("p50", 600), Target("p95", 900))
NONE_DROPPED, CUT_OFF = Target("final", 0), Target("final", 5)
LEVELS_DBFS = (-40.0, -30.0, -20.0, -10.0)
ROOM_DBFS = -50.0  # room noise as loud as a quiet office; speech at -40 dBFS is then 10 dB above it
LEAD_S = 0.5  # the clip starts this long into the session


@dataclass(frozen=True)
class RealTurn:
    """One clip said once: the user messages it became, its time to first audio, and Whisper's own reading."""

    group: str  # "sentence", "level", "conversation" or "long"
    clip: Clip
    texts: tuple[str, ...]
    ttfa_ms: float | None
    offline: str

    @property
    def dropped(self) -> bool:
        return not self.texts

    @property
    def split(self) -> bool:
        return len(self.texts) > 1


@dataclass(frozen=True)
class RealPlan:
    sentences: int = 10
    level_sentences: int = 4  # the first sentences, at every level with and without room noise
    conversation: bool = True  # the turns of several utterances: the conversation's and the long sentence


async def real_runs(models: Models, root: Path, plan: RealPlan, progress: Callable[[str], None]) -> list[RealTurn]:
    said = sentences()
    cases = [("sentence", clip) for clip in said[: plan.sentences]]
    for clip in said[: plan.level_sentences]:
        cases += [("level", at_level(clip, level, noise)) for level in LEVELS_DBFS for noise in (None, ROOM_DBFS)]
    if plan.conversation:
        cases += [("conversation", clip) for who in conversation_speakers() for clip in conversation_turns(who)]
        cases.append(("long", more_speech()["jfk"]))  # one sentence, two breaths of a second: one turn
    turns = []
    for n, (group, clip) in enumerate(cases, start=1):
        turns.append(await say_once(models, root / f"real{n}", group, clip))
        progress(f"real speech {n}/{len(cases)}")
    return turns


async def say_once(models: Models, out: Path, group: str, clip: Clip) -> RealTurn:
    """The clip into a fresh fixture session; the user messages and ttfa its journal and recording show."""
    run = await run_clip(models, out, clip)
    texts = tuple(str(e["text"]) for e in run.of("user/message"))
    first = ttfas(run)
    offline = (await models.transcriber.transcribe(clip.audio, CancelSignal())).text
    return RealTurn(group, clip, texts, first[0].ms if first else None, offline)


async def run_clip(models: Models, out: Path, clip: Clip) -> Run:
    def write() -> Path:
        out.mkdir(parents=True, exist_ok=True)
        save_wav(out / "said.wav", clip.audio, 16000)
        scenario = out / "said.toml"
        scenario.write_text(f'[[say]]\nwav = "said.wav"\nat = {LEAD_S}\n', encoding="utf-8")
        return scenario

    scenario = await run_blocking(write)
    session = out / "session"
    await run_session(load_scenario(scenario), [], models.config, session, fast=True)
    report = await run_blocking(lambda: json.loads((session / "report.json").read_text()))
    return Run(session, read_events(session / "journal.jsonl"), report)


def word_error_rate(pairs: Sequence[tuple[str, str]]) -> float:
    """% word edits over the reference words, all pairs pooled."""
    words = sum(len(normalise(reference)) for reference, _ in pairs)
    return 100 * sum(word_edits(reference, heard) for reference, heard in pairs) / max(1, words)


def real_rows(
    turns: Sequence[RealTurn], *, pulse_ttfa: Sequence[float] | str | None = None, pulse_missing: int = 0
) -> list[Row]:
    if not turns:
        return [not_measured(name, None, "not run") for name in ("real_dropped_utterances", "real_wer")]
    dropped = [t for t in turns if t.dropped]
    said = [(t.clip.text, " ".join(t.texts)) for t in turns]
    offline = word_error_rate([(t.clip.text, t.offline) for t in turns])
    wer = word_error_rate(said)
    multi = [t for t in turns if t.clip.utterances > 1]
    cut = 100 * sum(t.split for t in multi) / max(1, len(multi))
    ttfa = [t.ttfa_ms for t in turns if t.group == "sentence" and t.ttfa_ms is not None]
    rows = [
        row("real_dropped_utterances", [float(len(dropped))], NONE_DROPPED, final=float(len(dropped)),
            note=f"of {len(turns)} real utterances: {', '.join(t.clip.name for t in dropped) or 'none'}"),
        row("real_wer", [wer], Target("final", round(offline + 2, 1)), final=wer,
            note=f"% words; Whisper tiny.en offline on the same audio: {offline:.1f} %"),
        row("real_ttfa_ms", ttfa, REAL_TTFA, note="ten read sentences: end of speech in the signal -> first audio"),
        row("real_cutoff_rate", [cut], CUT_OFF, final=cut,
            note=f"% of {len(multi)} multi-utterance turns (conversation, jfk) answered as more than one turn"),
    ]  # fmt: skip
    if pulse_ttfa is not None:
        if isinstance(pulse_ttfa, str):
            rows.append(not_measured("real_ttfa_ms_pulse", REAL_TTFA, pulse_ttfa))
        else:
            missing = f"; {pulse_missing} without a figure (the notes say why)" if pulse_missing else ""
            rows.append(
                row("real_ttfa_ms_pulse", pulse_ttfa, REAL_TTFA, note=f"the read sentences on PulseAudio{missing}")
            )
    return rows


def real_notes(turns: Sequence[RealTurn]) -> list[str]:
    """Each clip whose turn was not one message with its words, so a miss can be looked at."""
    notes = []
    for t in turns:
        if len(t.texts) != 1 or word_edits(t.clip.text, t.texts[0]) > word_edits(t.clip.text, t.offline):
            notes.append(f"real {t.clip.name}: said {t.clip.text!r}; turns {list(t.texts)}; offline {t.offline!r}")
    return notes
