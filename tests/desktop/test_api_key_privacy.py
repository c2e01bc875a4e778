"""The API key never appears in full in any widget, tooltip or title, nor in the settings file or journal."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication, QLineEdit
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config, LlmConfig
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from tests.desktop.helpers import MemoryKeyring, running_window, texts, until
from tests.fault_behaviours import unauthorized
from tests.fault_server import FaultServer

STORED = "sk-proj-STOREDSECRET-9f8e7d6c5b4a"
TYPED = "sk-proj-TYPEDSECRET-0a1b2c3d4e5f"


def _leaks(qapp: QApplication, secret: str) -> list[tuple[str, str]]:
    return [(kind, text) for w in qapp.topLevelWidgets() for kind, text in texts(w) if secret in text]


def test_the_key_is_shown_only_masked_everywhere(
    run: Any, qapp: QApplication, qtbot: QtBot, tmp_path: Path, fault_server: FaultServer, memory_keyring: MemoryKeyring
) -> None:
    memory_keyring.set_password("parley", "llm-api-key", STORED)
    fault_server.push(unauthorized())
    clock = SystemClock()
    config = replace(Config(), llm=LlmConfig(provider="openai", base_url=fault_server.base_url, model="fault-1"))
    session = Session(config, journal_dir=tmp_path, voice=SimulatedVoice(clock), clock=clock)
    path = tmp_path / "config.toml"

    async def scenario() -> None:
        async with running_window(session, path) as window:
            session.send_text(f"my key is {STORED}, please remember it")  # the person may even say it
            await until(lambda: "auth" in window.banners.banners, what="auth banner")
            window.open_settings()
            dialog = window.settings_dialog
            assert dialog is not None
            assert dialog.api_key.echoMode() is QLineEdit.EchoMode.Password
            assert dialog.key_state.text() == "sk-…5b4a (stored in keyring)"
            assert _leaks(qapp, STORED) == []
            qtbot.keyClicks(dialog.api_key, TYPED)
            assert TYPED not in dialog.api_key.displayText()
            dialog.save()
            assert _leaks(qapp, TYPED) == []
            assert _leaks(qapp, STORED) == []

    run(scenario())
    assert fault_server.requests[0].headers["authorization"] == f"Bearer {STORED}"
    assert memory_keyring.store[("parley", "llm-api-key")] == TYPED
    journal = session.journal_path.read_text(encoding="utf-8")
    assert STORED not in journal  # redacted, even where the person typed it
    assert "[redacted]" in journal
    assert TYPED not in path.read_text(encoding="utf-8")
