"""`parley run`: a spoken conversation from a scenario (or typed turns) on fixture devices and the real models."""

from __future__ import annotations

import functools
import json
import signal
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract.clock import Clock
from adapters.llm.secret import Secret, load_api_key
from adapters.runtime.clock import SystemClock
from adapters.runtime.private_files import private_dir, write_private_text
from adapters.runtime.tasks import open_tasks
from adapters.runtime.workers import run_blocking
from adapters.tts.piper_voice import PiperSynthesizer
from audio.wav import load_wav
from desktop.config import Config
from desktop.errors import BadInput
from desktop.pipeline.audio_io import Devices, fixture_devices
from desktop.pipeline.facts import PipelineFact
from desktop.pipeline.parts import LlmChoice, builtin_tools, llm_choice, prompt_for, speech_models
from desktop.pipeline.scenario_play import Delivered, Stage, play
from desktop.pipeline.voice import Binding, open_pipeline
from desktop.scenario import Scenario
from engine.clock import SkippingClock
from engine.conversation import EngineParts, open_conversation
from engine.journal import Journal, quarantine_note, read_events
from engine.report import render, turn_reports
from engine.retry import Budgets

# A desktop session, systemd or `timeout`; Ctrl-C. Windows has no loop signal handlers: there Ctrl-C stays Python's
# KeyboardInterrupt (one line and 130 from the command line, without the outputs).
STOP_SIGNALS = () if sys.platform == "win32" else (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # HUP: its terminal


@dataclass(frozen=True)
class Ran:
    """What a run produced: the readable report, and the signal that stopped it early (None: it played out)."""

    report: str
    stopped_by: signal.Signals | None = None
    notes: tuple[str, ...] = ()  # what the person should know besides the report (lines moved out of the journal)


async def run_session(
    scenario: Scenario | None,
    texts: list[str],
    config: Config,
    out: Path,
    fast: bool,
    *,
    stop_on: Sequence[signal.Signals] = (),
) -> Ran:
    """Play the scenario (or the typed texts), write journal.jsonl, output.wav and report.json. A signal in
    `stop_on` stops the run as a user would: the play ends, the live turn is cancelled and waited for, and the
    turn is closed and the outputs written all the same (handlers only in the main thread)."""
    stop = _Stop()
    with anyio.open_signal_receiver(*stop_on) as signals:
        async with open_tasks(cancel_on_exit=True) as tasks:
            tasks.start(stop.watch, signals, name="stop-signals")
            stage = await _play_session(scenario, texts, config, out, fast, stop)
            return _write_reports(out, stage, stop.signal)


async def _play_session(
    scenario: Scenario | None, texts: list[str], config: Config, out: Path, fast: bool, stop: _Stop
) -> Stage | None:
    """The stage once played (None: stopped before the session was open); the session is closed on return."""
    await run_blocking(lambda: private_dir(out))  # 0700 when Parley creates it: the files hold the conversation
    for say in scenario.says if scenario else ():
        if say.wav is not None:
            load_wav(say.wav)  # a corrupt or unreadable WAV fails here, before anything starts
    transcriber, synthesizer = speech_models(config)
    clock: Clock = SkippingClock(real=True) if fast else SystemClock()
    stage: Stage | None = None
    with stop.ends():  # a stop while the models load: the session closes before it opened
        async with open_fixture_session(config, out, clock, transcriber, synthesizer, scenario) as stage:
            with stop.ends():  # a stop now ends the play only: leaving the session closes the live turn in order
                await play(stage, scenario, texts)
    return stage


class _Stop:
    """The first stop signal, and the part of the run it ends: the opening or the play, never the closing (later
    signals are ignored: the run is already on its way out)."""

    def __init__(self) -> None:
        self.signal: signal.Signals | None = None
        self._scope: anyio.CancelScope | None = None

    @contextmanager
    def ends(self) -> Iterator[None]:
        """A signal during the block cancels it (and nothing outside it)."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self.signal is not None:
                scope.cancel()
            try:
                yield
            finally:
                self._scope = None

    async def watch(self, signals: AsyncIterator[signal.Signals]) -> None:
        async for signum in signals:
            if self.signal is None:
                self.signal = signum
                if self._scope is not None:
                    self._scope.cancel()


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
        stack.push(functools.partial(_journal_failure_first, journal))
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
            prompt=prompt_for(config),
            budgets=Budgets(retries=config.llm.retries, reply_s=config.llm.max_reply_s),
            summary=config.summary(),
            speculative_requests=config.llm.speculative_requests,
        )
        conversation = await stack.enter_async_context(open_conversation(parts))
        binding = await stack.enter_async_context(pipeline.attached(conversation))
        await pipeline.microphone_open.wait()
        yield binding


def _journal_failure_first(journal: Journal, _type: object, error: BaseException | None, _tb: object) -> bool:
    """A journal that could not be written is what the run reports, not what failed after it (a full disk fails
    output.wav too, as the session closes)."""
    if journal.failed is not None and error is not None and error is not journal.failed:
        raise journal.failed
    return False


def _timeline(stage: Stage) -> dict[str, Any]:
    """Where each turn's audio sits in output.wav: seconds from the recording's first sample."""
    sink = stage.recording
    origin = sink.recording_start
    turns = {
        str(turn): {
            "first_audio_s": round((stage.binding.first_heard(turn) or at) - origin, 4),
            "silent_s": _offset(stage.binding.ears.silent_at.get(turn), origin),
        }
        for turn, at in stage.binding.metrics.first_audible.items()
    }
    says = [_said(said, origin) for said in stage.delivered]
    return {"sample_rate": sink.rate, "clock_origin": origin, "turns": turns, "says": says}


def _said(said: Delivered, origin: float) -> dict[str, Any]:
    row: dict[str, Any] = {"what": said.what, "at_s": round(said.at - origin, 4)}
    if said.rule is not None:
        row["rule"] = said.rule  # the reply it waited for never came (scenario_play's rules)
    return row


def _offset(at: float | None, origin: float) -> float | None:
    return None if at is None else round(at - origin, 4)


def _write_reports(out: Path, stage: Stage | None, stopped_by: signal.Signals | None) -> Ran:
    """report.json and the readable report, from the journal as the closed session left it."""
    reports = turn_reports(read_events(out / "journal.jsonl"))
    generated = stage.binding.metrics.generated if stage is not None else {}
    timeline = _timeline(stage) if stage is not None else {"turns": {}, "says": []}
    rows = [dict(vars(r), generated=generated.get(r.turn, "")) for r in reports]
    report = {"turns": rows, "timeline": timeline, "stopped_by": stopped_by.name if stopped_by else None}
    write_private_text(out / "report.json", json.dumps(report, indent=2, ensure_ascii=False))
    says = stage.delivered if stage is not None else []
    notes = [f"scenario: [[say]] #{n} ({d.label}): {d.rule}" for n, d in enumerate(says, start=1) if d.rule]
    return Ran("\n".join([render(reports, generated), *notes]), stopped_by, _journal_notes(stage))


def _journal_notes(stage: Stage | None) -> tuple[str, ...]:
    journal = stage.binding.conversation.parts.journal if stage is not None else None
    if journal is None or not journal.recovered.quarantined:
        return ()
    return (quarantine_note(journal.path, journal.recovered.quarantined),)
