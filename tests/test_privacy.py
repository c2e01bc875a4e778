"""Conversation text is private (0600 files in 0700 folders) and no URL credential reaches a journal or a label."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from adapters.contract import CancelSignal, LlmFailure
from adapters.llm.secret import redact_url
from adapters.runtime.private_files import private_dir, write_private_text
from audio.wav import load_wav, save_wav
from desktop.builtin_tools import take_note_tool
from desktop.config import Config, LlmConfig
from desktop.model.settings_io import save
from desktop.model.wording import problem_for_failure
from desktop.pipeline.parts import llm_choice
from engine.conversation import EngineParts, open_conversation
from engine.journal import Journal, read_events
from engine.testing import FakeLlm, FakeSpeechOutput, VirtualClock

pytestmark = pytest.mark.anyio
URL = "https://me:pw-SECRET@llm.example:8443/v1?api-key=qs-SECRET&api-version=2024-06-01"
SHOWN = "https://[redacted]@llm.example:8443/v1?api-key=[redacted]&api-version=2024-06-01"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def lax_umask() -> Iterator[None]:
    """The modes must not depend on a strict umask: run every test under the usual 022."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_missing_folders_are_made_0700_and_an_existing_one_is_left_alone(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    private_dir(shared / "a" / "b")
    assert [mode(shared / "a"), mode(shared / "a" / "b")] == [0o700, 0o700]
    assert mode(shared) == 0o755  # `--out /tmp/x` must not turn /tmp private
    private_dir(shared, tighten=True)
    assert mode(shared) == 0o700


def test_the_journal_is_0600_in_0700_folders_even_when_an_old_one_was_0644(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "today" / "journal.jsonl"
    with Journal(path) as journal:
        journal.append("session/start", version="x")
    assert (mode(path), mode(path.parent), mode(path.parent.parent)) == (0o600, 0o700, 0o700)
    os.chmod(path, 0o644)
    with Journal(path) as journal:
        journal.append("turn/start", turn=1, source="text")
    assert mode(path) == 0o600
    assert [e["type"] for e in read_events(path)] == ["session/start", "turn/start"]


async def test_notes_are_0600_in_a_0700_folder(tmp_path: Path) -> None:
    notes = tmp_path / "data" / "notes.txt"
    await take_note_tool(notes).body('{"text": "buy milk"}', CancelSignal())
    assert (mode(notes), mode(notes.parent)) == (0o600, 0o700)
    assert notes.read_text().endswith("\tbuy milk\n")


def test_a_saved_wav_is_0600_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "output.wav"
    path.write_bytes(b"old and longer than the new file will be" * 4000)
    os.chmod(path, 0o644)
    save_wav(path, np.full(1600, 0.25, dtype=np.float32), 16000)
    assert mode(path) == 0o600
    assert np.allclose(load_wav(path), 0.25, atol=1e-3)


def test_a_report_and_the_settings_are_0600(tmp_path: Path) -> None:
    write_private_text(tmp_path / "report.json", "{}")
    save(Config(), tmp_path / "config" / "config.toml")
    assert (mode(tmp_path / "report.json"), mode(tmp_path / "config" / "config.toml")) == (0o600, 0o600)
    assert not (tmp_path / "config" / "config.toml.tmp").exists()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (URL, SHOWN),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("https://ghp_token@host/v1", "https://[redacted]@host/v1"),
        (
            "https://h/v1?key=1&token=2&access_token=3&Api_Key=4&model=m&flag",
            "https://h/v1?key=[redacted]&token=[redacted]&access_token=[redacted]&Api_Key=[redacted]&model=m&flag",
        ),
        ("https://h/v1#access_token=abc", "https://h/v1#access_token=[redacted]"),
        ("http://u:p@[::1/v1?key=3", "[::1/v1"),  # unparsable: only what cannot hold a credential
    ],
)
def test_credentials_in_a_url_are_redacted(url: str, shown: str) -> None:
    assert redact_url(url) == shown


async def test_session_start_records_the_base_url_without_its_credentials(tmp_path: Path) -> None:
    config = Config(llm=LlmConfig(provider="openai", base_url=URL))
    clock = VirtualClock()
    with Journal(tmp_path / "journal.jsonl", wall=clock.now) as journal:
        parts = EngineParts(FakeLlm(clock=clock), FakeSpeechOutput(clock), journal, clock, summary=config.summary())
        async with open_conversation(parts):
            pass
    (start,) = [e for e in read_events(tmp_path / "journal.jsonl") if e["type"] == "session/start"]
    assert start["llm_base_url"] == SHOWN
    assert "SECRET" not in (tmp_path / "journal.jsonl").read_text()


def test_the_window_shows_the_provider_without_its_credentials() -> None:
    llm = LlmConfig(provider="openai", base_url=URL, model="m")
    assert llm_choice(Config(llm=llm), None).label == "m at llm.example:8443"
    problem = problem_for_failure(LlmFailure("no route", "TRANSPORT"), llm, key_set=False)
    assert problem is not None
    assert "SECRET" not in problem.message
    assert SHOWN in problem.message
