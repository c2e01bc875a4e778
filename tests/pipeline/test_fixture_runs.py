"""The voice pipeline end to end on the real models and the fixture devices (`parley run --fast`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract import CancelSignal
from audio.wav import load_wav
from desktop.assets import fixture
from desktop.bench.signals import boundary_word_error
from desktop.config import Config
from desktop.pipeline.run import run_session
from desktop.scenario import load_scenario
from engine.invariants import violations
from engine.journal import read_events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _run(name: str, out: Path, config: Config | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    asyncio.run(run_session(load_scenario(fixture(name)), [], config or Config(), out, fast=True))
    events = read_events(out / "journal.jsonl")
    assert violations(events) == []
    return events, json.loads((out / "report.json").read_text())


def _of(events: list[dict[str, Any]], type_: str, turn: int | None = None) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == type_ and turn in (None, e.get("turn"))]


def _audio(out: Path, start_s: float, end_s: float) -> np.ndarray:
    samples = load_wav(out / "output.wav", rate=16000)
    return samples[int(start_s * 16000) : int(end_s * 16000)]


def test_barge_in_keeps_only_the_heard_words_and_answers_the_interruption(tmp_path: Path) -> None:
    events, report = _run("barge_in.toml", tmp_path)
    first, second = _of(events, "turn/end")[:2]
    assert first["outcome"] == "aborted"
    assert second["outcome"] == "completed"
    assert "time" in _of(events, "user/message", second["turn"])[0]["text"].lower()
    (message,) = _of(events, "assistant/message", first["turn"])
    assert message["interrupted"] is True
    generated = next(t for t in report["turns"] if t["turn"] == first["turn"])["generated"]
    heard_words = message["text"].split()
    assert generated.split()[: len(heard_words)] == heard_words, "heard text is not a word-wise prefix"
    assert len(heard_words) < len(generated.split())

    timeline = report["timeline"]["turns"]
    start, stop = timeline[str(first["turn"])]["first_audio_s"], timeline[str(first["turn"])]["silent_s"]
    heard_audio = _audio(tmp_path, start, stop)
    transcript = asyncio.run(WhisperTranscriber().transcribe(heard_audio, CancelSignal()))
    # at most one word off at the cut; Whisper tiny.en's misreadings inside the sentence are not the cut's fault
    assert boundary_word_error(message["text"], transcript.text) <= 1, (message["text"], transcript.text)

    after_stop = _audio(tmp_path, stop + 0.02, timeline[str(second["turn"])]["first_audio_s"] - 0.01)
    assert float(np.abs(after_stop).max(initial=0.0)) < 1e-3, "audio of the aborted turn played after the stop"

    metrics = _of(events, "metrics/turn", first["turn"])[0]
    assert metrics["stop_ms"] < 250
    assert "quiesce_ms" in metrics


def test_a_cough_does_not_cancel_the_reply(tmp_path: Path) -> None:
    events, _ = _run("cough.toml", tmp_path)
    outcomes = [e["outcome"] for e in _of(events, "turn/end")]
    assert outcomes == ["completed"]
    assert not _of(events, "barge_in/confirmed")


def test_loudspeaker_echo_does_not_interrupt_itself_but_the_user_does(tmp_path: Path) -> None:
    events, report = _run("echo.toml", tmp_path)
    origin_user = report["timeline"]["says"][1]["at_s"]
    recording_start = float(report["timeline"]["clock_origin"])
    detected = [e["onset"] - recording_start for e in _of(events, "barge_in/detected")]
    assert detected, "the user's real barge-in was not detected"
    assert min(detected) >= origin_user - 0.05, f"self-interruption at {detected} (user spoke at {origin_user})"
    assert _of(events, "turn/end")[0]["outcome"] == "aborted"


def test_push_to_talk_cancels_at_once_and_the_held_utterance_is_next(tmp_path: Path) -> None:
    events, _ = _run("push_to_talk.toml", tmp_path)
    ends = _of(events, "turn/end")
    assert [e["outcome"] for e in ends][:2] == ["aborted", "completed"]
    assert _of(events, "barge_in/confirmed")[0]["source"] == "push_to_talk"
    assert "two" in _of(events, "user/message", ends[1]["turn"])[0]["text"].lower().replace("2", "two")


def test_typed_turns_are_still_spoken(tmp_path: Path) -> None:
    asyncio.run(run_session(None, ["Say hello in five words."], Config(), tmp_path, fast=True))
    events = read_events(tmp_path / "journal.jsonl")
    assert [e["outcome"] for e in _of(events, "turn/end")] == ["completed"]
    assert _of(events, "turn/start")[0]["source"] == "text"
    spoken = load_wav(tmp_path / "output.wav", rate=16000)
    assert float(np.sqrt(np.mean(spoken**2))) > 0.005
    assert _of(events, "assistant/message")[0]["text"]
