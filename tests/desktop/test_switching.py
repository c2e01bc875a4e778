"""Switching models without a restart: a change applies at the next turn, the turn under way finishes on the old
model, input typed meanwhile waits for the new one, the old model's memory is handed back, and the journal says
which models spoke (`session/start`, `settings/changed`)."""

from __future__ import annotations

import shutil
from argparse import Namespace
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from adapters.llm.local import LocalLlamaAdapter, bundled_model, loaded_models
from adapters.runtime.clock import SystemClock
from adapters.tts.piper_voice import PiperSynthesizer, default_voice_path, loaded_voices
from desktop.bench.soak import resident_mb
from desktop.config import Config, LlmConfig
from desktop.model.live_voice import LiveVoice
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt.main import voice_for
from engine.journal import read_events
from engine.testing import reply
from tests.desktop.helpers import AnswersByContent, running_window, until
from tests.fault_behaviours import slow_trickle, text_stream
from tests.fault_server import FaultServer

STORY = " ".join(f"Part {n}: the little dragon climbed the hill and tried once more to fly." for n in range(1, 3))
SLOW = "One, two, three, four, five, six, seven, eight, nine, ten."


def _openai(server: FaultServer, model: str) -> Config:
    return replace(Config(), llm=LlmConfig(provider="openai", base_url=server.base_url, model=model))


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_a_new_model_answers_from_the_next_turn_and_the_turn_under_way_finishes_on_the_old(
    run: Any, qtbot: QtBot, tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.push(slow_trickle(SLOW, delay=0.05), text_stream("Second."))
    clock = SystemClock()
    first = _openai(fault_server, "fault-1")
    session = Session(first, journal_dir=tmp_path, voice=SimulatedVoice(clock, ms_per_word=5), clock=clock)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            assert session.send_text("count to ten")
            await until(lambda: len(fault_server.requests) == 1, what="the first turn asked the old model")
            session.apply_settings(_openai(fault_server, "fault-2"))  # as Settings → Save does
            assert session.send_text("and again")  # typed while the switch waits for the turn under way
            await until(lambda: 2 in window.trace.turns and window.trace.turns[2].outcome != "running")

    run(scenario())
    assert [r.json["model"] for r in fault_server.requests] == ["fault-1", "fault-2"]
    events = read_events(session.journal_path)
    ends = [e for e in events if e["type"] == "turn/end"]
    assert [e["outcome"] for e in ends] == ["completed", "completed"], ends
    starts = [e for e in events if e["type"] == "session/start"]
    assert [s["models"]["llm"] for s in starts] == ["fault-1 (openai)", "fault-2 (openai)"]
    (change,) = [e for e in events if e["type"] == "settings/changed"]
    assert change["changed"] == ["llm.model"]
    assert change["models"]["llm"] == "fault-2 (openai)"
    assert "turn" not in change  # recorded between two turns
    order = _types(events)
    assert order.index("turn/end") < order.index("settings/changed") < order.index("session/start", 1)
    second = [e for e in events if e["type"] == "user/message"]
    assert [(m["turn"], m["text"]) for m in second] == [(1, "count to ten"), (2, "and again")]


def test_leaving_the_embedded_model_hands_its_memory_back(
    run: Any, qtbot: QtBot, tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.push(text_stream("From the server."))
    embedded = replace(Config(), llm=replace(Config().llm, max_tokens=8))
    session = Session(embedded, journal_dir=tmp_path, voice=SimulatedVoice(SystemClock(), ms_per_word=5))
    measured: dict[str, float] = {}

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            assert session.conversation is not None
            adapter = session.conversation.parts.llm
            assert isinstance(adapter, LocalLlamaAdapter)
            assert session.send_text("Say hello.")
            await until(lambda: 1 in window.trace.turns and window.trace.turns[1].outcome != "running", within=60)
            assert bundled_model() in loaded_models()  # the embedded model answered and holds its memory
            measured["before"] = resident_mb()
            await session.reconfigure(_openai(fault_server, "fault-1"))
            measured["after"] = resident_mb()
            assert bundled_model() not in loaded_models()
            assert session.send_text("and now?")
            await until(lambda: 2 in window.trace.turns and window.trace.turns[2].outcome != "running")

    run(scenario(), within=90)
    print(f"resident memory {measured['before']:.0f} MB -> {measured['after']:.0f} MB")
    model_mb = bundled_model().stat().st_size / 2**20
    assert measured["before"] - measured["after"] > model_mb / 2, measured
    assert [r.json["model"] for r in fault_server.requests] == ["fault-1"]


def test_another_voice_speaks_from_the_next_turn_and_the_old_one_is_released(
    run: Any, qtbot: QtBot, tmp_path: Path
) -> None:
    """The real voice pipeline (Whisper and Piper, the scenario's simulated devices): a reply being spoken when
    the voice changes is spoken to its end by the old voice; the next reply by the new one."""
    other = tmp_path / "voices" / "copy_of_joe.onnx"  # another file is another voice to Parley
    other.parent.mkdir()
    shutil.copy(default_voice_path(), other)
    shutil.copy(
        default_voice_path().with_name(default_voice_path().name + ".json"), other.with_name(other.name + ".json")
    )
    script = tmp_path / "one_story.toml"
    script.write_text('[[say]]\ntext = "tell me a story"\nat = 0.2\n', encoding="utf-8")
    voice, notes = voice_for(Namespace(fixture=script), Config())
    assert isinstance(voice, LiveVoice), notes
    old = voice.pipeline.synthesizer
    llm = AnswersByContent([("story", reply(STORY, delay=0.01))], otherwise="Here I am.")
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=llm, clock=SystemClock())
    switched = replace(Config(), speech=replace(Config().speech, voice_path=str(other)))

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await until(lambda: voice.pipeline.played_words(0.0), within=30, what="the story is being spoken")
            session.apply_settings(switched)
            assert session.send_text("and again")
            await until(lambda: 2 in window.trace.turns and window.trace.turns[2].outcome != "running", within=60)

    run(scenario(), within=90)
    assert isinstance(old, PiperSynthesizer)
    new = voice.pipeline.synthesizer
    assert isinstance(new, PiperSynthesizer)
    assert new.voice_path == other.resolve()
    assert new.voice_path in loaded_voices()
    assert old.voice_path not in loaded_voices()
    events = read_events(session.journal_path)
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["completed", "completed"]
    (story,) = [e for e in events if e["type"] == "assistant/message" and e["turn"] == 1]
    assert story["text"] == STORY
    assert not story.get("interrupted")
    (change,) = [e for e in events if e["type"] == "settings/changed"]
    assert change["changed"] == ["speech.voice_path"]
    assert change["models"]["tts"] == "copy_of_joe"
