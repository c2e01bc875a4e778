"""`parley run`: a spoken conversation from a scenario (or typed turns) on fixture devices and the real models."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.contract.private_files import private_dir, write_private_text
from adapters.contract.speech_io import Transcriber
from adapters.tts.piper_voice import PiperSynthesizer
from audio.aec import EchoCanceller
from audio.bargein import BargeInDetector
from audio.fixtures import EchoMixer, FileSource, RecordingSink
from audio.listen import Listener
from audio.vad import Vad, VadConfig
from audio.wav import load_wav
from desktop.config import Config
from desktop.scenario import Say, Scenario
from desktop.voice.assembly import builtin_tools, llm_adapter, speech_models
from desktop.voice.clock import FastForwardClock
from desktop.voice.ears import Ears
from desktop.voice.session_metrics import SessionMetrics
from desktop.voice.voice_output import VoiceOutput
from engine.clock import Clock, MonotonicClock
from engine.conversation import Conversation, EngineParts, open_conversation
from engine.inbox import UserInput
from engine.journal import Journal
from engine.report import TurnReport, render, turn_reports
from engine.retry import Budgets

QUIET_FOR_S = 1.0  # the run ends once everything has been idle this long after the last utterance
MAX_SESSION_S = 300.0
POLL_S = 0.05


@dataclass
class Rig:
    """Everything one run is made of, wired together."""

    clock: Clock
    conversation: Conversation
    source: FileSource
    sink: RecordingSink
    ears: Ears
    metrics: SessionMetrics
    journal: Journal
    delivered: list[tuple[str, float]] = field(default_factory=list)  # (what, clock time) of each utterance


async def run_session(scenario: Scenario | None, texts: list[str], config: Config, out: Path, fast: bool) -> str:
    """Play the scenario (or the typed texts), write journal.jsonl, output.wav and report.json; return the report."""
    await asyncio.to_thread(private_dir, out)  # 0700 when Parley creates it: the run's files hold the conversation
    for say in scenario.says if scenario else ():
        if say.wav is not None:
            load_wav(say.wav)  # a corrupt or unreadable WAV fails here, before anything starts
    transcriber, synthesizer = speech_models(config)
    await _preload(transcriber, synthesizer)
    clock: Clock = FastForwardClock() if fast else MonotonicClock()
    async with _rig(config, out, clock, transcriber, synthesizer, scenario) as rig:
        await _play(rig, scenario, texts)
        reports = turn_reports(rig.journal.events)
        timeline = _timeline(rig)
    return _write_reports(out, reports, rig.metrics.generated, timeline)


@asynccontextmanager
async def _rig(
    config: Config,
    out: Path,
    clock: Clock,
    transcriber: Transcriber,
    synth: PiperSynthesizer,
    scenario: Scenario | None,
) -> AsyncIterator[Rig]:
    llm, key = llm_adapter(config)
    sink = RecordingSink(clock, rate=synth.sample_rate, path=out / "output.wav")
    source = FileSource(clock)
    mic = EchoMixer(source, sink, gain=scenario.echo.gain, delay_s=scenario.echo.delay_ms / 1000) if (
        scenario and scenario.echo) else source  # fmt: skip
    journal = Journal(out / "journal.jsonl", secrets=(key.reveal(),) if key else ())
    async with AsyncExitStack() as stack:
        stack.callback(journal.close)
        holder: list[SessionMetrics] = []
        voice = VoiceOutput(synth, sink, clock, on_first_audio=lambda *a: holder[0].first_audio(*a))
        parts = EngineParts(
            llm=llm,
            speech=voice,
            journal=journal,
            clock=clock,
            tools=builtin_tools(out / "notes.txt"),
            budgets=Budgets(retries=config.llm.retries, reply_s=config.llm.max_reply_s),
            summary=config.summary(),
        )
        conversation = await stack.enter_async_context(open_conversation(parts))
        holder.append(SessionMetrics(conversation, sink.latency_s))
        detector = BargeInDetector(
            sink,
            clock,
            min_speech_ms=config.audio.min_speech_ms,
            resolve_window_ms=config.audio.false_interruption_window_ms,
        )
        ears = Ears(
            conversation,
            transcriber,
            detector,
            sink,
            clock,
            on_utterance=holder[0].utterance,
            resume_false_interruptions=config.audio.false_interruption_resume,
        )
        vad = Vad(VadConfig(config.audio.vad_threshold, min_silence_ms=config.audio.min_silence_ms))
        # A scenario without [echo] is a headset: no acoustic path, so nothing for the canceller to remove.
        aec = config.audio.echo_cancellation and scenario is not None and scenario.echo is not None
        listener = Listener(mic, vad, echo=EchoCanceller(sink.tap(), enabled=aec), barge_in=detector)
        if isinstance(clock, FastForwardClock):
            await stack.enter_async_context(clock.running(lambda: _busy(conversation, transcriber, synth, llm)))
        await sink.start()
        stack.push_async_callback(sink.close)
        await mic.start()
        stack.push_async_callback(mic.close)
        listening = asyncio.create_task(listener.run(ears.on_event, ears.on_audio), name="listener")
        stack.push_async_callback(_stop_listening, mic, listening)
        stack.push_async_callback(ears.aclose)
        yield Rig(clock, conversation, source, sink, ears, holder[0], journal)


async def _preload(transcriber: Any, synthesizer: Any) -> None:
    """Load the speech models before the session starts, so the first reply does not pay for them."""
    from adapters.contract import CancelSignal

    signal = CancelSignal()
    await transcriber.preload(signal)
    await synthesizer.preload(signal)


async def _stop_listening(mic: Any, listening: asyncio.Task[Any]) -> None:
    await mic.close()
    listening.cancel()
    await asyncio.wait({listening})


def _busy(conversation: Conversation, transcriber: Any, synth: Any, llm: Any) -> bool:
    """Real work is under way: let real time pass instead of skipping ahead."""
    turn = conversation.live_turn
    return bool(
        getattr(transcriber, "busy", 0)
        or getattr(synth, "busy", 0)
        or getattr(llm, "active_generations", 0)
        or (turn is not None and turn.threads_busy)
        or conversation.state.value == "thinking"
    )


async def _play(rig: Rig, scenario: Scenario | None, texts: list[str]) -> None:
    if scenario is not None:
        last = 0.0
        for say in scenario.says:
            last = await _deliver(rig, say, await _when(rig, say, last))
    for text in texts:
        rig.conversation.submit(UserInput(text))
        await _until_quiet(rig)
    await _until_quiet(rig)


async def _when(rig: Rig, say: Say, previous: float) -> float:
    """The clock time at which `say` starts."""
    if say.timing == "at":
        return rig.source.started_at + say.seconds
    turn = await _poll(rig, lambda: next((t for t, at in rig.metrics.started_at.items() if at >= previous), None))
    if say.timing == "after_reply_starts":
        return float(await _poll(rig, lambda: rig.metrics.first_audible.get(turn))) + say.seconds
    await _poll(rig, lambda: rig.metrics.ended.get(turn))
    return float(rig.clock.now() + say.seconds)


async def _deliver(rig: Rig, say: Say, at: float) -> float:
    await rig.clock.sleep(at - rig.clock.now())
    rig.delivered.append((say.text if say.text is not None else str(say.wav), at))
    if say.text is not None:
        rig.conversation.submit(UserInput(say.text))
        return at
    assert say.wav is not None
    samples = load_wav(say.wav)
    rig.source.add(samples, at - rig.source.started_at)
    if say.push_to_talk:
        rig.ears.press()
        await rig.clock.sleep(len(samples) / 16000 + 0.1)
        rig.ears.release()
    return at


async def _poll(rig: Rig, probe: Any) -> Any:
    deadline = rig.clock.now() + MAX_SESSION_S
    while (value := probe()) is None:
        if rig.clock.now() > deadline:
            raise TimeoutError("the scenario waited for a reply that never came")
        await rig.clock.sleep(POLL_S)
    return value


async def _until_quiet(rig: Rig) -> None:
    quiet_since: float | None = None
    deadline = rig.clock.now() + MAX_SESSION_S
    while rig.clock.now() < deadline:
        idle = rig.conversation.live_turn is None and not len(rig.conversation.inbox) and not rig.ears.busy
        quiet_since = (quiet_since or rig.clock.now()) if idle else None
        if quiet_since is not None and rig.clock.now() - quiet_since >= QUIET_FOR_S:
            return
        await rig.clock.sleep(POLL_S)
    raise TimeoutError("the conversation did not settle within the session limit")


def _timeline(rig: Rig) -> dict[str, Any]:
    """Where each turn's audio sits in output.wav: seconds from the recording's first sample."""
    origin = rig.sink.recording_start
    turns = {
        str(turn): {"first_audio_s": round(at - origin, 4), "silent_s": _offset(rig.ears.silent_at.get(turn), origin)}
        for turn, at in rig.metrics.first_audible.items()
    }
    says = [{"what": what, "at_s": round(at - origin, 4)} for what, at in rig.delivered]
    return {"sample_rate": rig.sink.rate, "clock_origin": origin, "turns": turns, "says": says}


def _offset(at: float | None, origin: float) -> float | None:
    return None if at is None else round(at - origin, 4)


def _write_reports(out: Path, reports: list[TurnReport], generated: dict[int, str], timeline: dict[str, Any]) -> str:
    rows = [dict(vars(r), generated=generated.get(r.turn, "")) for r in reports]
    report = {"turns": rows, "timeline": timeline}
    write_private_text(out / "report.json", json.dumps(report, indent=2, ensure_ascii=False))
    return render(reports, generated)
