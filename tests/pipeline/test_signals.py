"""SIGTERM and Ctrl-C mid-reply stop Parley as a user would: the turn is cancelled, waited for and closed, the
outputs are written, one line says so, and the exit status is 128 + the signal. `parley run` and the window, as
subprocesses on the real models (SmolLM2, Whisper, Piper), in real time so that the reply is long under way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from audio.wav import load_wav
from engine.invariants import violations
from engine.journal import read_events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[2]
STORY = "Tell me a long story about a dragon who learns to fly."
STARTUP_S = 180.0  # bound on loading the models and reaching the first request (polling, not a threshold)
POLL_S = 0.05


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    config = tmp_path / "config.toml"
    config.write_text("")  # the defaults, not a developer's settings
    return {**env, "PYTHONPATH": str(ROOT), "PARLEY_CONFIG": str(config), "QT_QPA_PLATFORM": "offscreen"}


def _start(args: list[str], tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    stdout, stderr = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "desktop.cli", *args], cwd=tmp_path, env=_env(tmp_path), stdout=out, stderr=err
        )
    return process, stdout, stderr


def _when(process: subprocess.Popen[bytes], condition: Callable[[], bool]) -> None:
    """Poll until `condition` holds (bounded); the process must still be running then."""
    deadline = time.monotonic() + STARTUP_S
    while not condition():
        assert process.poll() is None, f"parley ended early with {process.returncode}"
        assert time.monotonic() < deadline, "parley did not reach the reply"
        time.sleep(POLL_S)


def _requested(journal: Callable[[], Path | None]) -> Callable[[], bool]:
    """The reply is under way: the request for it is on the record (the journal is flushed on every event)."""

    def probe() -> bool:
        path = journal()
        return path is not None and any(e["type"] == "llm/request" for e in read_events(path))

    return probe


def _closed_in_order(events: list[dict[str, Any]]) -> None:
    assert violations(events) == []
    starts, ends = [e for e in events if e["type"] == "turn/start"], [e for e in events if e["type"] == "turn/end"]
    assert starts, "no turn was started"
    assert len(ends) == len(starts)
    assert ends[-1]["outcome"] == "aborted"
    heard = [e for e in events if e["type"] == "assistant/message" and e["turn"] == ends[-1]["turn"]]
    assert all(m["interrupted"] for m in heard), "a stopped reply keeps only what was heard"


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_parley_run_stopped_mid_reply_closes_the_turn_and_writes_the_outputs(
    tmp_path: Path, signum: signal.Signals, status: int
) -> None:
    out = tmp_path / "out"
    process, stdout, stderr = _start(["run", "--text", STORY, "--out", str(out)], tmp_path)
    try:
        _when(process, _requested(lambda: out / "journal.jsonl"))
        process.send_signal(signum)
        assert process.wait(timeout=120) == status
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    err = stderr.read_text()
    assert "Traceback" not in err
    assert err.strip().splitlines() == [
        f"parley: stopped by {signum.name}; every turn was closed in order; wrote {out / 'journal.jsonl'}, "
        f"{out / 'output.wav'}, {out / 'report.json'}"
    ]
    _closed_in_order(read_events(out / "journal.jsonl"))
    report = json.loads((out / "report.json").read_text())
    assert report["stopped_by"] == signum.name
    assert report["turns"][-1]["outcome"] == "aborted"
    assert load_wav(out / "output.wav").size > 0
    assert "-> aborted" in stdout.read_text()


def test_parley_run_stopped_while_the_models_load_still_writes_the_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    process, _, stderr = _start(["run", "--text", STORY, "--out", str(out), "--fast"], tmp_path)
    try:
        _when(process, (out / "journal.jsonl").exists)  # opened before the models load
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 143
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    err = stderr.read_text()
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("parley: stopped by SIGTERM; every turn was closed in order; wrote ")
    assert violations(read_events(out / "journal.jsonl")) == []
    assert json.loads((out / "report.json").read_text())["stopped_by"] == "SIGTERM"
    assert (out / "output.wav").exists()


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_the_window_closes_in_order_on_sigterm_mid_reply(tmp_path: Path, signum: signal.Signals, status: int) -> None:
    """SIGHUP (the terminal the window was started from closed) is a stop like SIGTERM (issue 38 item 5)."""
    sessions = tmp_path / "sessions"
    process, _, stderr = _start(["--fixture", "barge_in.toml", "--journal-dir", str(sessions)], tmp_path)

    def journal() -> Path | None:
        return next(iter(sessions.glob("*/journal.jsonl")), None)

    try:
        _when(process, _requested(journal))
        process.send_signal(signum)
        assert process.wait(timeout=120) == status
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Traceback" not in stderr.read_text()
    path = journal()
    assert path is not None
    _closed_in_order(read_events(path))
