"""`parley` on the command line: exit 0 for a completed run, 2 with one clear line for bad input."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from desktop.assets import fixture
from desktop.cli import main
from engine.journal import read_events
from tests.fault_behaviours import Behaviour, Delay, text_stream, tool_call
from tests.fault_server import FaultServer

pytestmark = pytest.mark.slow


def _scenario(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(body)
    return path


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('[[say]]\nwav = "nowhere.wav"\nat = 0.5\n', "does not exist"),
        ('[[say]]\nwav = "corrupt.wav"\nat = 0.5\n', "corrupt.wav"),
        (f'[[say]]\nwav = "{fixture("cough.wav")}"\nat = 0.5\nvolume = 3\n', "unknown key 'volume'"),
        (f'[[say]]\nwav = "{fixture("cough.wav")}"\nat = -2\n', "a time in the past"),
    ],
)
def test_bad_scenarios_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, needle: str
) -> None:
    (tmp_path / "corrupt.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    code = main(["run", "--fixture", str(_scenario(tmp_path, body)), "--out", str(tmp_path / "out"), "--fast"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert needle in err
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err


def test_an_unknown_llm_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--text", "hi", "--out", str(tmp_path), "--llm", "gpt-9"])
    assert exit_.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_a_malformed_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[llm\n")
    code = main(["run", "--text", "hi", "--out", str(tmp_path / "o"), "--config", str(config)])
    assert code == 2
    assert "not valid TOML" in capsys.readouterr().err


def test_an_unreachable_provider_is_a_failed_turn_on_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARLEY_LLM_API_KEY", "sk-never-in-the-journal")
    out = tmp_path / "out"
    args = ["run", "--text", "hi", "--out", str(out), "--fast", "--llm", "openai", "--retries", "0",
            "--llm-base-url", "http://127.0.0.1:9/v1"]  # fmt: skip
    assert main(args) == 0
    events = read_events(out / "journal.jsonl")
    (end,) = [e for e in events if e["type"] == "turn/end"]
    assert end["outcome"] == "failed"
    assert end["failure"]["code"] == "TRANSPORT"
    assert "127.0.0.1:9" in end["failure"]["message"]
    assert "sk-never" not in (out / "journal.jsonl").read_text()
    capsys.readouterr()


def test_a_run_leaves_private_files_and_no_url_credential(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, fault_server: FaultServer
) -> None:
    monkeypatch.setenv("PARLEY_LLM_API_KEY", "sk-never-in-the-journal")
    fault_server.push(tool_call('{"text": "buy milk"}', name="take_note"), text_stream("Noted: buy milk."))
    base = fault_server.base_url.replace("http://", "http://me:pw-SECRET@") + "?api-key=qs-SECRET"
    out = tmp_path / "runs" / "one"
    args = ["run", "--text", "Note: buy milk", "--out", str(out), "--fast", "--llm", "openai", "--retries", "0",
            "--llm-base-url", base]  # fmt: skip
    assert main(args) == 0
    capsys.readouterr()
    files = ["journal.jsonl", "output.wav", "report.json", "notes.txt"]
    assert {name: stat.S_IMODE((out / name).stat().st_mode) for name in files} == dict.fromkeys(files, 0o600)
    assert [stat.S_IMODE(p.stat().st_mode) for p in (out, out.parent)] == [0o700, 0o700]
    events = read_events(out / "journal.jsonl")
    (start,) = [e for e in events if e["type"] == "session/start"]
    assert start["llm_base_url"] == f"http://[redacted]@127.0.0.1:{fault_server.port}/v1?api-key=[redacted]"
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["completed"]
    for name in files[:1] + files[2:]:
        text = (out / name).read_text()
        assert "SECRET" not in text, name
        assert "sk-never" not in text, name
    assert [(r.path, r.json["max_tokens"]) for r in fault_server.requests] == [
        ("/v1/chat/completions?api-key=qs-SECRET", 300)
    ] * 2


def test_self_test_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["self-test"]) == 0
    assert "self-test: ok" in capsys.readouterr().out


def test_fast_time_does_not_skip_a_slow_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fault_server: FaultServer
) -> None:
    """`--fast` skips idle waits, never a wait on the network: the provider's delay is in llm_ttft_ms, and no
    metric of the run can be longer than the run itself took."""
    slow = text_stream("A slow provider, finally.")
    fault_server.push(Behaviour(parts=(Delay(1.0), *slow.parts), framing=slow.framing))
    out = tmp_path / "out"
    args = ["run", "--text", "hi", "--out", str(out), "--fast", "--llm", "openai", "--retries", "0",
            "--llm-base-url", fault_server.base_url]  # fmt: skip
    started = time.monotonic()
    assert main(args) == 0
    run_ms = (time.monotonic() - started) * 1000
    capsys.readouterr()
    (metrics,) = [e for e in read_events(out / "journal.jsonl") if e["type"] == "metrics/turn"]
    assert 1000 <= metrics["llm_ttft_ms"] < run_ms, "the provider's 1 s before its first byte counts, in real time"
    assert 0 < metrics["tts_first_ms"] < run_ms
