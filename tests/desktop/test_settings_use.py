"""Issue 37, item 8: Settings as a person uses it. What a failed connection said goes when the provider changes
(in the dialog and on the state chip); a restart is offered only when what takes effect then differs from what
runs; Test connection leaves the focus where it was."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from adapters.contract import LlmFailure
from adapters.runtime.clock import SystemClock
from desktop.config import Config, LlmConfig
from desktop.model.device_lists import DeviceLists
from desktop.model.facts import EngineOpened
from desktop.model.keyring_store import KeyStore
from desktop.model.session import Session
from desktop.qt.settings_dialog import SettingsDialog
from desktop.qt.state_chip import StateChip
from engine.events import TurnEnded
from engine.testing import FakeLlm, reply
from engine.testing.fake_llm import failure
from tests.desktop.helpers import MemoryKeyring, running_window, until

REMOTE = replace(Config(), llm=LlmConfig(provider="openai", base_url="http://127.0.0.1:9/v1", retries=0))
UNREACHABLE = "127.0.0.1:9 cannot be reached (ConnectError); check the server address and the server"


class _Tester:
    """Test connection's asks, answered when the test says."""

    def __init__(self) -> None:
        self.asked: list[Callable[[bool, str], None]] = []

    def __call__(self, config: Config, key: str, done: Callable[[bool, str], None]) -> None:
        self.asked.append(done)


def _dialog(qtbot: QtBot, tester: _Tester, config: Config = REMOTE) -> SettingsDialog:
    dialog = SettingsDialog(config, Path("/nonexistent/config.toml"), KeyStore(env={}), DeviceLists(), tester=tester)
    qtbot.addWidget(dialog)
    return dialog


def test_what_a_test_said_goes_when_the_provider_changes(qtbot: QtBot, memory_keyring: MemoryKeyring) -> None:
    tester = _Tester()
    dialog = _dialog(qtbot, tester)
    dialog.test_button.click()
    tester.asked[0](False, UNREACHABLE)
    assert dialog.test_result.text() == f"✗ {UNREACHABLE}"
    dialog.provider.setCurrentIndex(dialog.provider.findData("local"))
    assert dialog.test_result.text() == ""  # it was about another provider
    dialog.provider.setCurrentIndex(dialog.provider.findData("openai"))
    dialog.test_button.click()
    dialog.provider.setCurrentIndex(dialog.provider.findData("local"))
    tester.asked[1](False, UNREACHABLE)  # the answer comes after the switch
    assert dialog.test_result.text() == ""


def test_test_connection_leaves_the_focus_on_its_button(qtbot: QtBot, memory_keyring: MemoryKeyring) -> None:
    tester = _Tester()
    dialog = _dialog(qtbot, tester)
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.activateWindow()
    dialog.test_button.setFocus()
    qtbot.waitUntil(dialog.test_button.hasFocus, timeout=5000)
    dialog.test_button.click()
    assert dialog.test_result.text() == "Asking the provider…"
    assert dialog.focusWidget() is dialog.test_button  # not "Longest reply" with its 300 selected
    dialog.test_button.click()  # pressed again meanwhile: one question, not two
    assert len(tester.asked) == 1
    tester.asked[0](True, "answered")
    assert dialog.focusWidget() is dialog.test_button
    assert dialog.max_tokens.lineEdit().selectedText() == ""
    dialog.test_button.click()  # and it can ask again
    assert len(tester.asked) == 2


def test_the_chip_drops_a_failure_of_another_model(qtbot: QtBot) -> None:
    chip = StateChip(SystemClock())
    qtbot.addWidget(chip)
    chip.handle(EngineOpened("openai", "gpt-4o-mini", "gpt-4o-mini (OpenAI)"))
    chip.handle(TurnEnded(1, "failed", LlmFailure("refused", "TRANSPORT")))
    assert chip.text() == "Failed: Could not reach the provider"
    chip.handle(EngineOpened("openai", "gpt-4o-mini", "gpt-4o-mini (OpenAI)"))  # the same model, rebuilt
    assert chip.text() == "Failed: Could not reach the provider"
    chip.handle(EngineOpened("local", "SmolLM2-135M-Instruct", "SmolLM2 (embedded)"))
    assert chip.text() == "Ready"


def test_switching_back_to_embedded_clears_could_not_reach(
    run: Any, qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    llm = FakeLlm([failure("TRANSPORT"), reply("Hello.")])
    session = Session(REMOTE, journal_dir=tmp_path, llm=llm)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            assert session.send_text("Hello?")
            await until(lambda: window.chip.text() == "Failed: Could not reach the provider", what="the failure")
            window.open_settings()
            dialog = window.settings_dialog
            dialog.provider.setCurrentIndex(dialog.provider.findData("local"))
            dialog.save()
            await until(lambda: session.config.llm.provider == "local", what="applied")
            await until(lambda: window.chip.text() == "Ready", what="the failure gone")
            assert "unreachable" not in window.banners.banners

    run(scenario())


def test_a_restart_is_offered_only_when_the_devices_would_change(
    run: Any, qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    session = Session(Config(), journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            offered: list[list[str]] = []
            window.offer_restart = offered.append  # "Later", every time
            for echo in (False, True):
                window.open_settings()
                dialog = window.settings_dialog
                dialog.echo.setChecked(echo)
                dialog.save()
                await until(lambda: window.settings_dialog is None, what="closed")
            assert offered == [["echo cancellation"]]  # ticked back: what runs already
            assert session.config.audio.echo_cancellation

    run(scenario())


def test_an_untouched_speech_detection_keeps_its_exact_value(qtbot: QtBot, memory_keyring: MemoryKeyring) -> None:
    """A threshold from the file between two of the slider's steps is saved as it was, so no restart is asked."""
    config = replace(Config(), audio=replace(Config().audio, vad_threshold=0.37))
    dialog = _dialog(qtbot, _Tester(), config)
    assert dialog.form_config() == config
    dialog.vad.slider.setValue(dialog.vad.slider.value() + 1)
    assert dialog.form_config().audio.vad_threshold == 0.4
