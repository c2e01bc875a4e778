"""Issue 37: the chip says "Loading models…", not "Ready", until every model is in; Settings and banners speak of
the server address, not of the settings file's keys."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from adapters.contract import LlmFailure
from desktop.config import Config, LlmConfig
from desktop.model.facts import ModelLoading
from desktop.model.session import Session
from desktop.model.wording import problem_for_failure
from engine.testing import FakeLlm
from tests.desktop.helpers import LoadingVoice, running_window, until

JARGON = ("base_url", "base URL", "[llm]", "llm ")


def test_the_chip_says_loading_until_every_model_is_in(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    voice = LoadingVoice()
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm())
    shown: list[str] = []

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            window.chip.shown.connect(shown.append)
            assert window.model_label.text().startswith("Model:")  # the language model is in ...
            assert window.chip.text() == "Loading models…"  # ... the speech models are not
            voice.loaded.set()
            await until(lambda: window.chip.text() == "Ready", what="ready once the speech models are in")
            session.publish(ModelLoading("a new voice", "loading"))  # Settings chose another model
            assert window.chip.text() == "Loading models…"
            session.publish(ModelLoading("a new voice", "ready", 0.5))
            assert window.chip.text() == "Ready"

    run(scenario())
    assert shown == ["Ready", "Loading models…", "Ready"]


def test_settings_name_the_server_address_not_the_file_key(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    session = Session(Config(), journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            window.open_settings()
            dialog = window.settings_dialog
            assert dialog is not None
            dialog.provider.setCurrentIndex(dialog.provider.findData("openai"))
            dialog.base_url.setText("api.example.com/v1")
            dialog.test_button.click()
            words = dialog.test_result.text()
            assert words == "✗ the server address 'api.example.com/v1' must start with http:// or https://"
            dialog.save()
            assert dialog.error.text() == "Settings: " + words.removeprefix("✗ ")
            dialog.base_url.setText("https://")
            dialog.save()
            assert "the server address 'https://' names no host" in dialog.error.text()
            dialog.reject()

    run(scenario())


def test_the_unreachable_banner_speaks_of_the_server_address() -> None:
    llm = replace(LlmConfig(), provider="openai", base_url="https://llm.example.com/v1")
    problem = problem_for_failure(LlmFailure("no route", "TRANSPORT"), llm, key_set=True)
    assert problem is not None
    assert "https://llm.example.com/v1" in problem.message
    assert "server address" in problem.fix
    assert not [word for word in JARGON if word in problem.message + problem.fix]
