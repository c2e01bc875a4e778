"""Issue 38 on `parley run`: one run per folder, a full disk said in one line with no partial file, what a provider
or a --text says reaches the terminal without control characters, and lines moved out of a journal are named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop.cli import main
from engine.invariants import violations
from engine.journal import read_events, read_journal
from tests.fault_behaviours import Behaviour, Delay, text_stream
from tests.fault_server import FaultServer
from tests.small_disk import fill, small_disk

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ("journal.jsonl", "output.wav", "report.json")


@pytest.fixture(autouse=True)
def _defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))  # the defaults, not a developer's settings
    monkeypatch.delenv("PARLEY_CONFIG", raising=False)
    monkeypatch.setenv("PARLEY_LLM_API_KEY", "sk-run-record-SECRET")


def _args(out: Path, server: FaultServer, *texts: str) -> list[str]:
    given = [arg for text in texts for arg in ("--text", text)]
    return ["run", *given, "--out", str(out), "--fast", "--llm", "openai", "--retries", "0",
            "--llm-base-url", server.base_url]  # fmt: skip


def test_a_second_run_on_the_same_folder_is_refused_and_the_first_keeps_its_record(
    tmp_path: Path, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = text_stream("I took my time, but here I am.")
    fault_server.push(Behaviour(parts=(Delay(4.0), *slow.parts), framing=slow.framing))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen([sys.executable, "-m", "desktop.cli", *_args(out, fault_server, "Hello")], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while not (out / "journal.jsonl").exists() or not fault_server.requests:
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run never sent its request"
            time.sleep(0.05)
        assert main(_args(out, fault_server, "Me too")) == 2
        err = capsys.readouterr().err
        assert err == (
            f"parley: {out / 'journal.jsonl'} is open in another Parley (process {first.pid}); close that one first, "
            "or use another folder\n"
        )
        _, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, stderr.decode()
    events = read_events(out / "journal.jsonl")
    assert violations(events) == []
    assert [e["text"] for e in events if e["type"] == "user/message"] == ["Hello"]
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["completed"]
    assert json.loads((out / "report.json").read_text())["turns"][0]["user"] == "Hello"
    assert len(fault_server.requests) == 1


def test_a_full_disk_is_one_line_whole_journal_lines_and_no_partial_file(
    tmp_path: Path, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fault_server.push(*[text_stream("A fairly long answer, so that the record grows. " * 3) for _ in range(8)])
    with small_disk(tmp_path / "disk", size_kb=256) as disk:
        out = disk / "out"
        out.mkdir()
        fill(disk, leave=8 * 1024)  # a page for the lock file, one for the journal, then nothing
        questions = [f"Question number {n}, please answer it. " + "And some more words. " * 30 for n in range(8)]
        code = main(_args(out, fault_server, *questions))
        captured = capsys.readouterr()
        assert code == 2
        assert "Traceback" not in captured.err
        assert captured.err.splitlines() == [
            f"parley: cannot write {out / 'journal.jsonl'}: no space left on device (ENOSPC); every complete event "
            "before it is kept (free some disk space)"
        ]
        assert sorted(p.name for p in out.iterdir()) == ["journal.jsonl", "journal.jsonl.lock"], "no partial output"
        found = read_journal(out / "journal.jsonl")
        assert (found.bad, found.torn) == ((), False)
        assert (out / "journal.jsonl").read_bytes().endswith(b"\n")
        assert any(e["type"] == "turn/start" for e in found.events)


def test_what_reaches_the_terminal_holds_no_control_characters(
    tmp_path: Path, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    nasty = "\x1b]0;PWNED\x07\x1b]52;c;aGVsbG8=\x07\x1b[2J\x9b31m"
    fault_server.push(text_stream(f"Fine.{nasty}\rturn 7 [text] -> completed\nuser:      forged"))
    out = tmp_path / "out"
    assert main(_args(out, fault_server, f"hi{nasty}\r  heard:     forged")) == 0
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert not [c for c in printed if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert "turn 7" not in [line.split(" [")[0] for line in printed.splitlines()], "no forged report line"
    assert sum(line.startswith("  user:") for line in printed.splitlines()) == 1
    assert sum(line.startswith("  heard:") for line in printed.splitlines()) == 1
    events = read_events(out / "journal.jsonl")
    assert [e["text"] for e in events if e["type"] == "user/message"] == [f"hi{nasty}\r  heard:     forged"]


def test_lines_that_do_not_fit_are_named_and_the_run_goes_on(
    tmp_path: Path, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    start = {"seq": 1, "time": 1.0, "type": "session/start", "version": "0"}
    (out / "journal.jsonl").write_text(json.dumps(start) + '\n{"seq": "2", "time": 1.0, "type": "x"}\n')
    fault_server.push(text_stream("Still fine."))
    assert main(_args(out, fault_server, "hello")) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"parley: {out / 'journal.jsonl'}: line 2 (seq is '2', not a whole number from 1) did not fit the journal's "
        f"format; moved to {out / 'journal.jsonl.quarantined'}, the rest of the conversation is kept"
    ]
    assert [e["outcome"] for e in read_events(out / "journal.jsonl") if e["type"] == "turn/end"] == ["completed"]
