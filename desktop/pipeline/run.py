"""`parley run`: a spoken conversation from a scenario (or typed turns) on fixture devices and the real models."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract.private_files import private_dir, write_private_text
from adapters.contract.workers import run_blocking
from adapters.llm.secret import Secret, load_api_key
from adapters.tts.piper_voice import PiperSynthesizer
from audio.wav import load_wav
from desktop.config import Config
from desktop.errors import BadInput
from desktop.pipeline.devices import Devices, fixture_devices
from desktop.pipeline.facts import PipelineFact
from desktop.pipeline.parts import LlmChoice, builtin_tools, llm_choice, speech_models
from desktop.pipeline.scenario_play import Stage, play
from desktop.pipeline.voice import Binding, open_pipeline
from desktop.scenario import Scenario
from engine.clock import Clock, MonotonicClock, SkippingClock
from engine.conversation import EngineParts, open_conversation
from engine.journal import Journal
from engine.report import TurnReport, render, turn_reports
from engine.retry import Budgets


async def run_session(scenario: Scenario | None, texts: list[str], config: Config, out: Path, fast: bool) -> str:
    """Play the scenario (or the typed texts), write journal.jsonl, output.wav and report.json; return the report."""
    await run_blocking(lambda: private_dir(out))  # 0700 when Parley creates it: the files hold the conversation
    for say in scenario.says if scenario else ():
        if say.wav is not None:
            load_wav(say.wav)  # a corrupt or unreadable WAV fails here, before anything starts
    transcriber, synthesizer = speech_models(config)
    clock: Clock = SkippingClock(real=True) if fast else MonotonicClock()
    async with open_fixture_session(config, out, clock, transcriber, synthesizer, scenario) as stage:
        await play(stage, scenario, texts)
        journal = stage.binding.conversation.parts.journal
        reports = turn_reports(journal.events)
        timeline = _timeline(stage)
    return _write_reports(out, reports, stage.binding.metrics.generated, timeline)


@asynccontextmanager
async def open_fixture_session(
    config: Config,
    out: Path,
    clock: Clock,
    transcriber: WhisperTranscriber,
    synth: PiperSynthesizer,
    scenario: Scenario | None,
    *,
    llm: LlmChoice | None = None,
    key: Secret | None = None,
) -> AsyncIterator[Stage]:
    """`open_voice_session` on fixture devices recording into out/output.wav, with the scenario's echo path."""
    echo = scenario.echo if scenario else None
    devices = fixture_devices(clock, synth.sample_rate, echo=echo, output=out / "output.wav")
    assert devices.files is not None
    assert devices.recording is not None
    async with open_voice_session(config, out, clock, transcriber, synth, devices, llm=llm, key=key) as binding:
        yield Stage(clock, binding, devices.files, devices.recording)


@asynccontextmanager
async def open_voice_session(
    config: Config,
    out: Path,
    clock: Clock,
    transcriber: WhisperTranscriber,
    synth: PiperSynthesizer,
    devices: Devices,
    *,
    llm: LlmChoice | None = None,
    key: Secret | None = None,
) -> AsyncIterator[Binding]:
    """The pipeline on `devices`, its models loaded, listening hands-free and bound to a running conversation
    journalled in out/journal.jsonl. A skipping clock skips idle waits only inside this block."""
    if llm is None and config.llm.provider == "openai":
        key = load_api_key()
    choice = llm or llm_choice(config, key)
    secrets = [key.reveal()] if key is not None else []
    facts: list[PipelineFact] = []
    async with AsyncExitStack() as stack:
        journal = stack.enter_context(Journal(out / "journal.jsonl", secrets=secrets))
        await stack.enter_async_context(clock.autojump() if isinstance(clock, SkippingClock) else nullcontext())
        pipeline = await stack.enter_async_context(
            open_pipeline(devices, transcriber, synth, clock, config.audio, on_fact=facts.append, listening=True)
        )
        if choice.load is not None:
            await choice.load()
        await pipeline.loaded.wait()  # the first reply must not pay for loading the models
        if pipeline.unheard is not None:
            raise BadInput(pipeline.unheard.message)
        parts = EngineParts(
            llm=choice.adapter,
            speech=pipeline.speech,
            journal=journal,
            clock=clock,
            tools=builtin_tools(out / "notes.txt"),
            budgets=Budgets(retries=config.llm.retries, reply_s=config.llm.max_reply_s),
            summary=config.summary(),
        )
        conversation = await stack.enter_async_context(open_conversation(parts))
        binding = await stack.enter_async_context(pipeline.attached(conversation))
        await pipeline.microphone_open.wait()
        yield binding


def _timeline(stage: Stage) -> dict[str, Any]:
    """Where each turn's audio sits in output.wav: seconds from the recording's first sample."""
    sink = stage.recording
    origin = sink.recording_start
    turns = {
        str(turn): {
            "first_audio_s": round(at - origin, 4),
            "silent_s": _offset(stage.binding.ears.silent_at.get(turn), origin),
        }
        for turn, at in stage.binding.metrics.first_audible.items()
    }
    says = [{"what": what, "at_s": round(at - origin, 4)} for what, at in stage.delivered]
    return {"sample_rate": sink.rate, "clock_origin": origin, "turns": turns, "says": says}


def _offset(at: float | None, origin: float) -> float | None:
    return None if at is None else round(at - origin, 4)


def _write_reports(out: Path, reports: list[TurnReport], generated: dict[int, str], timeline: dict[str, Any]) -> str:
    rows = [dict(vars(r), generated=generated.get(r.turn, "")) for r in reports]
    report = {"turns": rows, "timeline": timeline}
    write_private_text(out / "report.json", json.dumps(report, indent=2, ensure_ascii=False))
    return render(reports, generated)
