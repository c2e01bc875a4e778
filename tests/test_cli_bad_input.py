"""Bad input on the command line, as a table: exit status 2, exactly one line on stderr, no traceback, and the
journal of an earlier run in the same --out directory left as it was (its invariants intact). Every case fails
before a model loads, so the table is fast; a few cases also run as a real `parley` process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from desktop.assets import fixture
from desktop.cli import main
from engine.invariants import violations
from engine.journal import read_events
from engine.testing import reply
from tests.engine_kit import kit

ROOT = Path(__file__).resolve().parent.parent
COUGH = fixture("cough.wav")


@dataclass(frozen=True)
class Case:
    """argv with {dir} for the case's folder and {out} for a folder holding an earlier run's journal."""

    id: str
    argv: str
    needle: str
    files: dict[str, str] = field(default_factory=dict)  # name -> text ("<dir>", "<loop>", "<nan wav>", ...)
    env: dict[str, str] = field(default_factory=dict)


def say(timing: str, extra: str = "", wav: str = str(COUGH)) -> str:
    return f'[[say]]\nwav = "{wav}"\n{timing}\n{extra}'


PLAY = "run --fixture {dir}/s.toml --out {out}"
CASES = [
    # Scenario numbers (issue 16, item 4)
    Case("at-nan", PLAY + " --fast", "at = nan is not a time", {"s.toml": say("at = nan")}),
    Case("at-inf", PLAY + " --fast", "at = inf is not a time", {"s.toml": say("at = inf")}),
    Case("at-negative", PLAY, "a time in the past", {"s.toml": say("at = -2")}),
    Case("at-huge", PLAY, "from 0 to 600", {"s.toml": say("at = 1e300")}),
    Case("echo-gain-nan", PLAY, "[echo] gain = nan",
         {"s.toml": say("at = 0", "[echo]\ngain = nan\n")}),
    Case("echo-delay-inf", PLAY, "[echo] delay_ms = inf",
         {"s.toml": say("at = 0", "[echo]\ndelay_ms = inf\n")}),
    # Paths (item 5)
    Case("wav-symlink-loop", PLAY, "loop.wav is a symbolic link loop",
         {"s.toml": say("at = 0", wav="loop.wav"), "loop.wav": "<loop>"}),
    Case("wav-is-a-directory", PLAY, "x.wav is a directory, not a file",
         {"s.toml": say("at = 0", wav="x.wav"), "x.wav": "<dir>"}),
    Case("wav-corrupt", PLAY, "cannot read WAV file",
         {"s.toml": say("at = 0", wav="bad.wav"), "bad.wav": "RIFF\0\0\0\0WAVEjunk"}),
    Case("wav-nan-samples", PLAY, "holds NaN or infinite samples",
         {"s.toml": say("at = 0", wav="nan.wav"), "nan.wav": "<nan wav>"}),
    Case("scenario-symlink-loop", PLAY, "is a symbolic link loop",
         {"s.toml": "<loop>"}),
    Case("scenario-is-a-directory", PLAY, "is a directory", {"s.toml": "<dir>"}),
    Case("out-is-a-file", "run --text hi --out {dir}/f", "--out {dir}/f is an existing file, not a directory",
         {"f": "x"}),
    Case("out-under-a-file", "run --text hi --out {dir}/f/o", "lies under something that is not a directory",
         {"f": "x"}),
    Case("out-unwritable", "run --text hi --out /sys/parley-cannot-write", "cannot be written"),
    Case("demo-out-is-a-file", "demo --out {dir}/f", "is an existing file", {"f": "x"}),
    # Flags (item 4)
    Case("idle-timeout-nan", "run --text hi --out {out} --idle-timeout nan", "--idle-timeout nan is out of range"),
    Case("idle-timeout-inf", "run --text hi --out {out} --idle-timeout inf", "--idle-timeout inf is out of range"),
    Case("idle-timeout-negative", "run --text hi --out {out} --idle-timeout -1", "--idle-timeout -1 is out of range"),
    Case("retries-negative", "run --text hi --out {out} --retries -1", "--retries -1 is out of range"),
    Case("retries-not-a-number", "run --text hi --out {out} --retries many", "invalid int value: 'many'"),
    Case("base-url-not-http", "run --text hi --out {out} --llm openai --llm-base-url ftp://x", "must start with http"),
    Case("out-missing", "run --text hi", "the following arguments are required: --out"),
    Case("soak-zero", "bench --soak 0", "--soak 0 is out of range"),
    Case("soak-negative", "bench --soak -5", "--soak -5 is out of range"),
    Case("bench-json-is-a-directory", "bench --json {dir}", "is a directory; give a file path"),
    Case("bench-config-missing", "bench --only everyday --config {dir}/none.toml", "the config file does not exist"),
    Case("bench-base-url-not-http", "bench --only everyday --llm openai --llm-base-url ftp://x",
         "must start with http"),
    # Config (items 4, 5 and 6)
    Case("config-missing", "run --text hi --out {out} --config {dir}/none.toml", "the config file does not exist"),
    Case("config-is-a-directory", "run --text hi --out {out} --config {dir}", "the config file is a directory"),
    Case("config-section-not-a-table", "run --text hi --out {out} --config {dir}/c.toml", "llm = 5 must be a table",
         {"c.toml": "llm = 5\n"}),
    Case("config-min-speech-negative", "run --text hi --out {out} --config {dir}/c.toml",
         "[audio] min_speech_ms = -10 is out of range", {"c.toml": "[audio]\nmin_speech_ms = -10\n"}),
    Case("config-min-silence-negative", "run --text hi --out {out} --config {dir}/c.toml",
         "[audio] min_silence_ms = -1 is out of range", {"c.toml": "[audio]\nmin_silence_ms = -1\n"}),
    Case("config-window-negative", "run --text hi --out {out} --config {dir}/c.toml",
         "false_interruption_window_ms = -5 is out of range",
         {"c.toml": "[audio]\nfalse_interruption_window_ms = -5\n"}),
    Case("config-vad-nan", "run --text hi --out {out} --config {dir}/c.toml", "vad_threshold = nan is out of range",
         {"c.toml": "[audio]\nvad_threshold = nan\n"}),
    Case("config-timeout-inf", "run --text hi --out {out} --config {dir}/c.toml", "idle_timeout = inf is out of range",
         {"c.toml": "[llm]\nidle_timeout = inf\n"}),
    Case("config-retries-negative", "run --text hi --out {out} --config {dir}/c.toml", "retries = -3 is out of range",
         {"c.toml": "[llm]\nretries = -3\n"}),
    Case("parley-config-missing", "run --text hi --out {out}", "(from $PARLEY_CONFIG): the config file does not exist",
         env={"PARLEY_CONFIG": "{dir}/none.toml"}),
    Case("doctor-config-missing", "doctor --config {dir}/none.toml", "the config file does not exist"),
    Case("doctor-parley-config-missing", "doctor", "fix or unset PARLEY_CONFIG", env={"PARLEY_CONFIG": "{dir}/no"}),
    # Keys (issue 38, item 10)
    Case("api-key-with-a-newline", "run --text hi --out {out} --llm openai --llm-base-url http://127.0.0.1:9/v1",
         "PARLEY_LLM_API_KEY in the environment is not a usable API key",
         env={"PARLEY_LLM_API_KEY": "sk-first-half-of-it\nsk-second-half"}),
    Case("bench-api-key-with-a-newline", "bench --only everyday --llm openai --llm-base-url http://127.0.0.1:9/v1",
         "PARLEY_LLM_API_KEY in the environment is not a usable API key",
         env={"PARLEY_LLM_API_KEY": "sk-first-half-of-it\nsk-second-half"}),
]  # fmt: skip
IN_A_PROCESS = ("at-nan", "out-is-a-file", "idle-timeout-nan", "config-missing", "retries-not-a-number",
                "api-key-with-a-newline")  # fmt: skip


@pytest.fixture(scope="module")
def earlier_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The --out folder of an earlier run: its journal must come out of every bad-input case unchanged."""
    out = tmp_path_factory.mktemp("earlier")
    asyncio.run(_one_turn(out))
    assert violations(read_events(out / "journal.jsonl")) == []
    return out


async def _one_turn(out: Path) -> None:
    async with kit(out, [reply("Hello.")]) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user config and no PARLEY_CONFIG from the machine."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    monkeypatch.delenv("PARLEY_CONFIG", raising=False)
    return tmp_path


def _prepare(case: Case, folder: Path, out: Path) -> tuple[list[str], dict[str, str]]:
    for name, text in case.files.items():
        path = folder / name
        if text == "<dir>":
            path.mkdir()
        elif text == "<loop>":
            path.symlink_to(path)
        elif text == "<nan wav>":
            sf.write(str(path), np.array([0.0, np.nan, 0.1], dtype=np.float32), 16000, subtype="FLOAT")
        else:
            path.write_text(text)
    fill = {"dir": str(folder), "out": str(out)}
    return [arg.format(**fill) for arg in case.argv.split()], {k: v.format(**fill) for k, v in case.env.items()}


def _in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        code = int(exit_.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_exit_2_and_one_line(
    case: Case, home: Path, earlier_run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = (earlier_run / "journal.jsonl").read_bytes()
    folder = home / "case"
    folder.mkdir()
    argv, env = _prepare(case, folder, earlier_run)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, err = _in_process(argv, capsys)
    _assert_one_line(code, err, case.needle.format(dir=folder))
    assert (earlier_run / "journal.jsonl").read_bytes() == journal
    assert violations(read_events(earlier_run / "journal.jsonl")) == []


@pytest.mark.parametrize("case", [c for c in CASES if c.id in IN_A_PROCESS], ids=list(IN_A_PROCESS))
def test_bad_input_is_exit_2_and_one_line_from_a_real_process(case: Case, home: Path, earlier_run: Path) -> None:
    folder = home / "case"
    folder.mkdir()
    argv, env = _prepare(case, folder, earlier_run)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(home / "config-home"), **env}
    done = subprocess.run([sys.executable, "-m", "desktop.cli", *argv], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    _assert_one_line(done.returncode, done.stderr, case.needle.format(dir=folder))


def _assert_one_line(code: int, err: str, needle: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err


TEXTS = {  # issue 38, item 10: typed turns that are no words
    "empty": ("", "--text is empty"),
    "blank": ("   ", "--text is empty"),
    "not-utf-8": (b"caf\xe9 au lait".decode("utf-8", "surrogateescape"), "--text is not valid UTF-8"),
}


@pytest.mark.parametrize("text", sorted(TEXTS))
def test_a_text_that_is_no_words_is_exit_2_and_one_line(
    text: str, home: Path, earlier_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = (earlier_run / "journal.jsonl").read_bytes()
    given, needle = TEXTS[text]
    code, err = _in_process(["run", "--text", given, "--out", str(earlier_run)], capsys)
    _assert_one_line(code, err, needle)
    assert (earlier_run / "journal.jsonl").read_bytes() == journal


def test_a_text_in_another_encoding_is_exit_2_from_a_real_process(home: Path, earlier_run: Path) -> None:
    journal = (earlier_run / "journal.jsonl").read_bytes()
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(home / "config-home")}
    argv = [sys.executable.encode(), b"-m", b"desktop.cli", b"run", b"--text", b"caf\xe9", b"--out", bytes(earlier_run)]
    done = subprocess.run(argv, cwd=ROOT, env=environment, capture_output=True, timeout=60, check=False)
    _assert_one_line(done.returncode, done.stderr.decode(), "--text is not valid UTF-8")
    assert (earlier_run / "journal.jsonl").read_bytes() == journal
