"""Settings → Models in the window, against the fake Hub on 127.0.0.1 (tests/hf_server.py, through HF_ENDPOINT):
a model downloads with its progress shown, is measured, is chosen with Use and answers the next turn; a cancel, a
full disk and no network each say so in one line and leave nothing behind."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.catalog.entries import load_catalogue
from desktop.catalog.store import Store
from desktop.config import Config, load
from desktop.model.model_shelf import Fetching, Shelf
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt.models_dialog import ModelsDialog
from desktop.qt.window import MainWindow
from engine.journal import read_events
from tests.desktop.helpers import running_window, until
from tests.hf_server import FakeHub, running
from tests.test_model_downloads import BUNDLED, OFFERED, SMOL

SMOL_NAME = "test-smollm2.Q4_1.gguf"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with running() as server:
        server.host("parley-test/smollm2", SMOL_NAME, SMOL)
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


class _Window:
    """A window over a running session whose Models dialog offers the test catalogue from `tmp_path`."""

    def __init__(self, tmp_path: Path, **shelf: Any) -> None:
        catalogue = tmp_path / "catalogue.toml"
        catalogue.write_text(BUNDLED + OFFERED, encoding="utf-8")
        self.store = Store(tmp_path / "models")
        self.config_path = tmp_path / "config.toml"
        clock = SystemClock()
        config = replace(Config(), llm=replace(Config().llm, max_tokens=8))
        self.session = Session(config, journal_dir=tmp_path, voice=SimulatedVoice(clock, ms_per_word=1), clock=clock)
        self.shelf = Shelf(load_catalogue(catalogue), self.store, self.session.start_work, **shelf)
        self.seen: list[Fetching] = []
        self.shelf.subscribe(lambda: self.seen.append(self.shelf.fetching) if self.shelf.fetching else None)

    def running(self) -> AbstractAsyncContextManager[MainWindow]:
        return running_window(self.session, self.config_path, self.shelf)


def _models(window: MainWindow) -> ModelsDialog:
    """Settings → Models, as a person gets there."""
    window.open_settings()
    assert window.settings_dialog is not None
    window.settings_dialog.models_button.click()
    window.settings_dialog.reject()
    assert window.models_dialog is not None
    return window.models_dialog


def test_a_model_downloaded_in_the_window_is_measured_used_and_answers_the_next_turn(
    run: Any, qtbot: QtBot, tmp_path: Path, hub: FakeHub
) -> None:
    (hosted,) = [h for (_, _, path), h in hub.files.items() if path == SMOL_NAME]
    hub.faults.pace[hosted.sha256] = 0.002  # a second or two: the progress bar moves
    here = _Window(tmp_path)

    async def scenario() -> None:
        async with here.running() as window:
            dialog = _models(window)
            dialog.select("test-smollm2")
            assert dialog.download_button.isEnabled()
            assert not dialog.use_button.isEnabled()  # not here yet
            dialog.download_button.click()
            assert dialog.progress.isVisible()
            assert dialog.cancel_button.isEnabled()
            await until(lambda: here.shelf.fetching is None, within=60, what="downloaded and measured")
            assert dialog.status.text().startswith("downloaded test-smollm2 (checksums verified); measured"), (
                dialog.status.text()
            )
            assert "tokens/s" in dialog.status.text()
            assert not dialog.progress.isVisible()
            assert dialog.use_button.isEnabled()
            dialog.use_button.click()
            assert "in use from the next turn" in dialog.status.text()
            assert here.session.send_text("Say hello.")  # at once: it waits for the new model
            await until(lambda: 1 in window.trace.turns and window.trace.turns[1].outcome != "running", within=60)

    run(scenario(), within=120)
    downloading = [f.percent for f in here.seen if f.phase == "downloading"]
    assert downloading, here.seen
    assert any(0 < p < 100 for p in downloading), downloading
    assert downloading == sorted(downloading)
    assert load(here.config_path).llm.local_model_path.endswith(SMOL_NAME)
    events = read_events(here.session.journal_path)
    request = next(e for e in events if e["type"] == "llm/request")
    assert request["model"] == "test-smollm2.Q4_1"  # the downloaded file, not the bundled SmolLM2
    assert any(e["type"] == "settings/changed" and "llm.local_model_path" in e["changed"] for e in events)


def test_a_cancel_in_the_window_stops_the_download_and_keeps_nothing(
    run: Any, qtbot: QtBot, tmp_path: Path, hub: FakeHub
) -> None:
    (hosted,) = [h for (_, _, path), h in hub.files.items() if path == SMOL_NAME]
    hub.faults.pace[hosted.sha256] = 0.02  # about half a minute for the whole file: the cancel comes first
    here = _Window(tmp_path)

    async def scenario() -> None:
        async with here.running() as window:
            dialog = _models(window)
            dialog.select("test-smollm2")
            dialog.download_button.click()
            await until(lambda: dialog.progress.value() > 0, what="some of it arrived")
            dialog.cancel_button.click()
            await until(lambda: here.shelf.fetching is None, what="stopped")
            assert dialog.status.text() == "✗ the download of test-smollm2 was cancelled; nothing was kept"
            assert dialog.download_button.isEnabled()  # it can be got again

    run(scenario())
    assert _files(here.store.root) == []


@pytest.mark.parametrize("trouble", ["offline", "full disk"])
def test_no_network_or_no_room_is_one_line_and_leaves_nothing(
    run: Any, qtbot: QtBot, tmp_path: Path, hub: FakeHub, monkeypatch: pytest.MonkeyPatch, trouble: str
) -> None:
    if trouble == "offline":
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    here = _Window(tmp_path, free=lambda _path: 10_000_000) if trouble == "full disk" else _Window(tmp_path)

    async def scenario() -> None:
        async with here.running() as window:
            dialog = _models(window)
            dialog.select("test-smollm2")
            dialog.download_button.click()
            await until(lambda: here.shelf.fetching is None, what="refused")
            text = dialog.status.text()
            assert "\n" not in text
            if trouble == "offline":
                assert text.startswith("✗ cannot reach 127.0.0.1:9 (ConnectError); Parley works offline"), text
            else:
                assert text.startswith("✗ not enough disk space for test-smollm2: it needs"), text

    run(scenario())
    assert _files(here.store.root) == []
    if trouble == "full disk":
        assert [s for s in hub.gets() if "/cdn/" in s.path] == []  # refused before the first byte
