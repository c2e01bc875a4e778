"""The end-of-turn fixtures through the one voice pipeline (`parley run --fast` on fixture devices, real models).

Each clip of assets/fixtures/turns is said once into a fresh session; the journal says into how many turns it
was split (a paused utterance split in more than one is a cut-off) and how long each decision took. The fixed
600 ms hangover the pipeline used before is measured beside it on the same clips: Silero with a 600 ms silence,
counting its ends of speech (desktop.bench.turns), so no model runs for it. Replies are kept short
(`max_tokens`): only the turns are counted here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from audio.ports import RATE
from audio.vad import SileroModel, Vad, VadConfig
from desktop.bench.table import Row, Target, row
from desktop.bench.turn_clips import TurnClip, turn_clips
from desktop.bench.turns import HANGOVER_MS, TRAILING_S, hangover
from desktop.config import Config
from desktop.pipeline.run import run_session
from desktop.scenario import Say, Scenario
from engine.journal import read_events

LEAD_S = 0.3  # when the clip starts on the session clock
REPLY_TOKENS = 16  # a short reply: the runs count turns, not words
CUTOFF = Target("final", 5)


@dataclass(frozen=True)
class ClipRun:
    """One clip through the pipeline: the text of each voice turn and its metrics, and the 600 ms baseline."""

    name: str
    kind: str  # "paused" or "complete"
    texts: tuple[str, ...]
    metrics: tuple[dict[str, Any], ...]
    turns_600ms: int

    @property
    def cut_off(self) -> bool:
        return len(self.texts) > 1

    @property
    def cut_off_600ms(self) -> bool:
        return self.turns_600ms > 1


async def clip_runs(
    config: Config, root: Path, clips: Sequence[TurnClip] | None = None, progress: Callable[[str], None] = print
) -> list[ClipRun]:
    """Every clip (default: all of assets/fixtures/turns) once through a fresh pipeline session."""
    short = replace(config, llm=replace(config.llm, max_tokens=REPLY_TOKENS))
    silero, runs = SileroModel(), []
    chosen = list(clips) if clips is not None else turn_clips()
    for n, clip in enumerate(chosen, start=1):
        out = root / clip.name
        scenario = Scenario(clip.path, (Say(clip.path, None, "at", LEAD_S),), None)
        await run_session(scenario, [], short, out, fast=True)
        events = read_events(out / "journal.jsonl")
        starts = {e["turn"] for e in events if e["type"] == "turn/start" and e["source"] == "voice"}
        texts = tuple(e["text"] for e in events if e["type"] == "user/message" and e["turn"] in starts)
        metrics = tuple(e for e in events if e["type"] == "metrics/turn" and e["turn"] in starts)
        runs.append(ClipRun(clip.name, clip.kind, texts, metrics, await _baseline(silero, clip)))
        progress(f"turn clip {n}/{len(chosen)} {clip.name}: {len(texts)} turn(s)")
    return runs


async def _baseline(silero: SileroModel, clip: TurnClip) -> int:
    silero.reset()
    audio = clip.until(len(clip.audio()) / RATE, TRAILING_S)
    fixed = await hangover(Vad(VadConfig(min_silence_ms=HANGOVER_MS), silero), audio, None, None)
    return len(fixed.ends)


def cutoff_rows(runs: Sequence[ClipRun]) -> list[Row]:
    """cutoff_rate (the pipeline) with the fixed 600 ms hangover's beside it, and complete questions split."""
    paused = [r for r in runs if r.kind == "paused"]
    cut, cut_600 = [r.name for r in paused if r.cut_off], sum(r.cut_off_600ms for r in paused)
    rate, rate_600 = 100 * len(cut) / max(1, len(paused)), 100 * cut_600 / max(1, len(paused))
    split = float(sum(r.cut_off for r in runs if r.kind != "paused"))
    where = f": {', '.join(cut)}" if cut else ""
    return [
        row("cutoff_rate", [rate], CUTOFF, final=rate, note=f"% of {len(paused)} paused utterances split{where}"),
        row("cutoff_rate_600ms", [rate_600], None, final=rate_600, note=f"a fixed 600 ms hangover: {cut_600} split"),
        row("complete_split", [split], Target("final", 0), final=split, note="complete questions split"),
    ]


def split_texts(runs: Sequence[ClipRun]) -> list[str]:
    """What each cut-off clip became, for the footnotes."""
    return [f"{r.name}: {json.dumps(list(r.texts), ensure_ascii=False)}" for r in runs if r.cut_off]
