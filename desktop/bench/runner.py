"""`parley bench`: run every measurement in one event loop, then print the table (and write the JSON)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract import CancelSignal
from adapters.llm.local import LocalLlamaAdapter
from desktop.bench import models as model_bench
from desktop.bench.everyday import Configured, configured_llm, everyday_answers, everyday_notes, everyday_row
from desktop.bench.http_provider import HttpRuns, Unavailable, stalled_barge_ins
from desktop.bench.interruptions import answers_after_interruption
from desktop.bench.notes import footnotes, machine_note
from desktop.bench.real_runs import RealPlan, real_runs
from desktop.bench.rows import Measured, rows
from desktop.bench.scenarios import (
    Hearing,
    heard_word_errors,
    keep_run,
    run_scenario,
    self_interruptions,
    stops,
)
from desktop.bench.sessions import Models, idle_cpu
from desktop.bench.soak import soak
from desktop.bench.table import Row, machine, render, write_json
from desktop.bench.turn_clips import turn_clips
from desktop.bench.turn_runs import clip_runs
from desktop.config import Config
from desktop.pipeline.parts import speech_models


@dataclass(frozen=True)
class Plan:
    """How many times each measurement is repeated."""

    barge_in: int = 10
    echo: int = 20
    http: int = 5
    soak: int = 200
    idle_s: float = 5.0
    asr_reps: int = 3
    tts_reps: int = 3
    tts_sentences: int = 4
    llm_reps: int = 5
    llm_tokens: int = 128
    loudspeaker: int = 10  # uninterrupted and as many interrupted replies on the looped-back PulseAudio speaker
    turn_clips: int | None = None  # the end-of-turn fixtures run through the pipeline (None: all 40)
    real: RealPlan = field(default_factory=RealPlan)  # real people's recordings
    interruptions: int = 20  # questions asked over a story, each answered (or not) by the next reply
    everyday: int | None = None  # everyday questions asked of the configured model (None: all 20)


QUICK = Plan(barge_in=0, echo=1, http=1, soak=3, idle_s=1.0, asr_reps=1, tts_reps=1, tts_sentences=2, llm_reps=1,
             llm_tokens=32, turn_clips=2, loudspeaker=1, real=RealPlan(2, 1, False), interruptions=2,
             everyday=5)  # fmt: skip


@dataclass(frozen=True)
class Options:
    soak: int | None = None
    json: Path | None = None
    devices: str = "fixture"
    quick: bool = False
    plan: Plan = field(default_factory=Plan)
    config: Config = field(default_factory=Config)  # whose language model the everyday questions are asked of
    only: str | None = None  # one of desktop.cli.ONLY: just that measurement and its rows


def run_bench(options: Options) -> int:
    """Measure, print the table, write the JSON; 0 whether or not the targets are met, 1 (a line saying where
    its files are kept) when a run could not be measured."""
    plan = QUICK if options.quick else options.plan
    if options.soak is not None:
        plan = Plan(**{**vars(plan), "soak": options.soak})
    llm = configured_llm(options.config)  # a configuration that names no usable model fails before any work
    started = time.monotonic()
    try:
        if options.only == "everyday":
            table, notes = asyncio.run(_everyday_only(plan, llm, _progress(started)))
        else:
            measured = asyncio.run(_measure(plan, options.devices, llm, _progress(started)))
            table, notes = rows(measured), footnotes(measured)
    except RunFailed as failed:
        print(f"parley bench: {failed}", file=sys.stderr)
        return 1
    print(render(table, notes))
    if options.json is not None:
        write_json(options.json, table, machine(), notes)
        print(f"wrote {options.json}")
    return 0


def _progress(started: float) -> Callable[[str], None]:
    def say(what: str) -> None:
        print(f"bench [{time.monotonic() - started:6.1f} s] {what}", file=sys.stderr, flush=True)

    return say


async def _everyday_only(plan: Plan, llm: Configured, progress: Callable[[str], None]) -> tuple[list[Row], list[str]]:
    with tempfile.TemporaryDirectory(prefix="parley-bench-") as tmp:
        result = await everyday_answers(llm, Path(tmp), plan.everyday, progress=progress)
    return [everyday_row(result)], [machine_note(), *everyday_notes(result)]


async def _measure(plan: Plan, devices: str, configured: Configured, progress: Callable[[str], None]) -> Measured:
    config = Config()
    transcriber, synthesizer = speech_models(config)
    await transcriber.preload(CancelSignal())
    await synthesizer.preload(CancelSignal())
    llm = LocalLlamaAdapter()
    await llm.load()
    judge = WhisperTranscriber(config.speech.asr_model_path or None, beam_size=5)
    models = Models(config, transcriber, synthesizer, Hearing(judge, transcriber))
    measured = Measured(plan_soak=plan.soak, devices=devices)
    with tempfile.TemporaryDirectory(prefix="parley-bench-") as tmp:
        root = Path(tmp)
        await _models(measured, models, llm, plan, progress)
        measured.interruptions = await answers_after_interruption(llm, root / "interruptions", plan.interruptions)
        progress("questions over a story")
        measured.everyday = await everyday_answers(configured, root / "everyday", plan.everyday, progress=progress)
        measured.idle_cpu = await idle_cpu(models, root / "idle", plan.idle_s)
        measured.idle_cpu_headset = await idle_cpu(models, root / "idle_headset", plan.idle_s, loudspeaker=False)
        progress("idle listening")
        await _scenarios(measured, models, root, plan, progress)
        clips = turn_clips()
        clips = clips if plan.turn_clips is None else clips[: plan.turn_clips // 2] + clips[-plan.turn_clips // 2 :]
        measured.clips = await clip_runs(config, root / "turns", clips, progress)
        measured.real = await real_runs(models, root / "real", plan.real, progress)
        measured.http = await _http(config, root, plan.http, progress)
        if devices == "pulse":
            await _pulse(measured, models, root, plan, progress)
        measured.soak = await soak(models, root / "soak", plan.soak, progress)
    return measured


async def _models(
    measured: Measured, models: Models, llm: LocalLlamaAdapter, plan: Plan, progress: Callable[[str], None]
) -> None:
    await model_bench.llm_times(llm, 1, 16)  # warm-up: the first passes over the mapped weights are slow
    measured.llm = await model_bench.llm_times(llm, plan.llm_reps, plan.llm_tokens)
    await model_bench.asr_rtf(models.transcriber, 1, clips=1)
    measured.asr_rtf = await model_bench.asr_rtf(models.transcriber, plan.asr_reps)
    await model_bench.tts_rtf(models.synthesizer, 1, sentences=1)
    measured.tts_rtf = await model_bench.tts_rtf(models.synthesizer, plan.tts_reps, plan.tts_sentences)
    progress("models on their own")


class RunFailed(Exception):
    """A scenario that could not be measured; its journal and recording are kept for a look."""


def _kept(run_dir: Path, what: str, error: Exception) -> RunFailed:
    return RunFailed(f"{what} failed ({error}); its journal and recording are kept in {keep_run(run_dir)}")


async def _scenarios(
    measured: Measured, models: Models, root: Path, plan: Plan, progress: Callable[[str], None]
) -> None:
    for name, reps, into in (("barge_in", plan.barge_in, measured.barge_in), ("echo", plan.echo, measured.echo)):
        for n in range(reps):
            try:
                run = await run_scenario(f"{name}.toml", root / f"{name}{n}", models.config)
            except TimeoutError as error:
                raise _kept(root / f"{name}{n}", f"{name} run {n + 1}", error) from None
            into.append(run)
            measured.stops += stops(run)
            measured.heard += await heard_word_errors(run, models.hearing)
            if name == "echo":
                found = self_interruptions(run)
                measured.self_interruptions.append(float(len(found)))
                measured.self_described += [f"echo run {n + 1}: {what}" for what in found]
            progress(f"{name} {n + 1}/{reps}")


async def _http(config: Config, root: Path, reps: int, progress: Callable[[str], None]) -> HttpRuns | str:
    try:
        return await stalled_barge_ins(config, root, reps, progress)
    except Unavailable as error:
        return str(error)
    except TimeoutError as error:
        return f"a run did not finish: {error}"


async def _pulse(measured: Measured, models: Models, root: Path, plan: Plan, progress: Callable[[str], None]) -> None:
    from desktop.bench.pulse import PulseUnavailable, pulse_barge_ins

    try:
        reps = max(1, plan.barge_in // 2)
        measured.pulse = await pulse_barge_ins(models, root / "pulse", reps, max(1, plan.loudspeaker), progress)
    except PulseUnavailable as error:
        measured.pulse = str(error)
    except TimeoutError as error:
        measured.pulse = f"a run did not finish: {error}"
    await _real_pulse(measured, models, root, plan, progress)


async def _real_pulse(
    measured: Measured, models: Models, root: Path, plan: Plan, progress: Callable[[str], None]
) -> None:
    from desktop.bench.pulse import PulseUnavailable
    from desktop.bench.real_pulse import real_pulse_turns
    from desktop.bench.real_speech import sentences

    try:
        clips = sentences()[: plan.real.sentences]
        measured.real_pulse = await real_pulse_turns(models, root / "real_pulse", clips, progress)
    except PulseUnavailable as error:
        measured.real_pulse = str(error)
    except TimeoutError as error:
        measured.real_pulse = f"a run did not finish: {error}"
