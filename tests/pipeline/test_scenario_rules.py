"""`parley run` plays every clip to its end, and a reply that never comes is a fact of the run, not a crash.

Real Whisper and Piper on the fixture devices, the LLM behind the tests' fault-injecting server (`--fast`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from audio.wav import load_wav, save_wav
from desktop.assets import fixture
from desktop.cli import main
from engine.invariants import violations
from engine.journal import read_events
from tests.fault_behaviours import text_stream, unauthorized
from tests.fault_server import FaultServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
RATE = 16000


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(round(seconds * RATE), dtype=np.float32)


def _play(tmp_path: Path, server: FaultServer, says: str) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    scenario = tmp_path / "s.toml"
    scenario.write_text(says)
    out = tmp_path / "out"
    args = ["run", "--fixture", str(scenario), "--out", str(out), "--fast", "--llm", "openai", "--retries", "0",
            "--llm-base-url", server.base_url]  # fmt: skip
    code = main(args)
    events = read_events(out / "journal.jsonl")
    assert violations(events) == []
    return code, events, json.loads((out / "report.json").read_text())


def _of(events: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == type_]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARLEY_LLM_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-parley-config")  # the defaults, not a developer's config


def test_leading_silence_and_a_long_gap_inside_one_wav_both_become_turns(
    tmp_path: Path, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    two, weather = load_wav(fixture("what_is_two_plus_two.wav")), load_wav(fixture("whats_the_weather.wav"))
    save_wav(tmp_path / "both.wav", np.concatenate([_silence(1.5), two, _silence(8.0), weather]), RATE)
    fault_server.push(text_stream("Four."), text_stream("Sunny and mild."))
    code, events, report = _play(tmp_path, fault_server, '[[say]]\nwav = "both.wav"\nat = 0.5\n')
    capsys.readouterr()
    assert code == 0
    said = [e["text"].lower() for e in _of(events, "user/message")]
    assert len(said) == 2, said
    assert "plus" in said[0]
    assert "weather" in said[1]
    assert [e["outcome"] for e in _of(events, "turn/end")] == ["completed", "completed"]
    assert len(report["timeline"]["turns"]) == 2, "both replies were played into output.wav"


def test_an_entry_after_a_reply_start_that_never_came_is_delivered_after_the_failed_turn(
    tmp_path: Path, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fault_server.push(unauthorized(), text_stream("Sunny and mild."))
    code, events, report = _play(
        tmp_path,
        fault_server,
        f'[[say]]\nwav = "{fixture("what_is_two_plus_two.wav")}"\nat = 0.5\n\n'
        f'[[say]]\nwav = "{fixture("whats_the_weather.wav")}"\nafter_reply_starts = 0.5\n',
    )
    out = capsys.readouterr()
    assert code == 0
    assert "Traceback" not in out.err
    assert [e["outcome"] for e in _of(events, "turn/end")] == ["failed", "completed"]
    assert "weather" in _of(events, "user/message")[1]["text"].lower()
    first, second = report["timeline"]["says"]
    assert "rule" not in first
    assert second["rule"] == "turn 1 ended failed before its reply started; delivered after"
    assert f"scenario: [[say]] #2 (whats_the_weather.wav): {second['rule']}" in out.out


def test_an_entry_after_an_utterance_that_started_no_turn_is_delivered_after_the_quiet(
    tmp_path: Path, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    save_wav(tmp_path / "silence.wav", _silence(1.0), RATE)
    fault_server.push(text_stream("Four."))
    code, events, report = _play(
        tmp_path,
        fault_server,
        '[[say]]\nwav = "silence.wav"\nat = 0.5\n\n'
        f'[[say]]\nwav = "{fixture("what_is_two_plus_two.wav")}"\nafter_reply_ends = 0.3\n',
    )
    capsys.readouterr()
    assert code == 0
    assert [e["outcome"] for e in _of(events, "turn/end")] == ["completed"]
    assert "plus" in _of(events, "user/message")[0]["text"].lower()
    rule = report["timeline"]["says"][1]["rule"]
    assert rule == "the previous utterance started no turn; delivered after the quiet"
