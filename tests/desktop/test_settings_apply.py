"""What saving settings does: every field applies live or says it needs a restart; checks before writing;
stale banners go; no keyring keeps the rest; Test connection asks the real provider."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import keyring
from keyring.backends import fail
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config, LlmConfig
from desktop.model.facts import Problem
from desktop.model.session import Session
from desktop.model.settings_rules import LIVE, RESTART, answered, restart_needed, stale_problems
from desktop.model.voice import SimulatedVoice
from desktop.qt.settings_dialog import LIVE_TITLE, RESTART_TITLE
from engine.testing import FakeLlm
from tests.desktop.helpers import MemoryKeyring, running_window, until
from tests.fault_behaviours import status, text_stream, unauthorized
from tests.fault_server import FaultServer


def _openai(server: FaultServer) -> Config:
    return replace(Config(), llm=LlmConfig(provider="openai", base_url=server.base_url, model="fault-1"))


def _settings(window: Any) -> Any:
    """The Settings dialog, opened."""
    window.open_settings()
    dialog = window.settings_dialog
    assert dialog is not None
    return dialog


def test_every_setting_is_either_live_or_needs_a_restart() -> None:
    every = {
        f"{section.name}.{f.name}" for section in fields(Config()) for f in fields(getattr(Config(), section.name))
    }
    assert LIVE | RESTART == every
    assert not LIVE & RESTART
    assert {"llm.max_tokens", "llm.max_reply_s"} <= LIVE
    assert "next turn" in LIVE_TITLE
    assert {"speech.voice_path", "speech.asr_model_path"} <= LIVE
    assert "restart" in RESTART_TITLE
    mic = replace(Config(), audio=replace(Config().audio, input_device="USB"))
    assert restart_needed(Config(), mic) == ["microphone"]
    assert restart_needed(Config(), replace(Config(), llm=replace(Config().llm, max_tokens=50))) == []


def test_the_live_settings_reach_the_provider_and_the_engine(
    run: Any, qtbot: QtBot, tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.push(text_stream("Short."), text_stream("Shorter."))
    clock = SystemClock()
    config = _openai(fault_server)
    session = Session(config, journal_dir=tmp_path, voice=SimulatedVoice(clock, ms_per_word=5), clock=clock)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            assert session.send_text("one")
            await until(lambda: 1 in window.trace.turns and window.trace.turns[1].outcome != "running")
            await session.reconfigure(replace(config, llm=replace(config.llm, max_tokens=7, max_reply_s=12.0)))
            assert session.conversation is not None
            assert session.conversation.parts.budgets.reply_s == 12.0
            assert session.send_text("two")
            await until(lambda: 2 in window.trace.turns and window.trace.turns[2].outcome != "running")

    run(scenario())
    assert [r.json["max_tokens"] for r in fault_server.requests] == [300, 7]


def test_a_model_path_that_does_not_exist_stays_in_the_dialog(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    session = Session(Config(), journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, path) as window:
            dialog = _settings(window)
            dialog.voice_path.setText(str(tmp_path / "nowhere.onnx"))
            dialog.save()
            assert dialog.isVisible()
            assert "nowhere.onnx" in dialog.error.text()
            dialog.voice_path.setText("")
            dialog.asr_path.setText(str(tmp_path))  # a folder, but no Whisper model in it
            dialog.save()
            assert dialog.isVisible()
            assert str(tmp_path) in dialog.error.text()
            dialog.reject()

    run(scenario())
    assert not path.exists()


def test_a_settings_change_clears_the_banners_it_makes_stale(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    assert stale_problems(Config(), Config(), key_changed=True) == {"auth", "quota"}
    session = Session(Config(), journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            session.raise_problem(Problem("The API key was refused by the provider", "fix", "auth"))
            session.raise_problem(Problem("Cannot reach the provider", "fix", "unreachable"))
            quieter = replace(Config(), audio=replace(Config().audio, vad_threshold=0.7))
            session.apply_settings(quieter)
            assert set(window.banners.banners) == {"auth", "unreachable"}  # nothing to do with them
            session.apply_settings(quieter, key_changed=True)
            assert set(window.banners.banners) == {"unreachable"}
            elsewhere = replace(quieter, llm=replace(quieter.llm, base_url="http://127.0.0.1:9/v1"))
            session.apply_settings(elsewhere)
            assert window.banners.banners == {}

    run(scenario())


def test_without_a_keyring_the_other_settings_are_saved_and_the_key_has_a_place_to_go(
    run: Any, qtbot: QtBot, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    session = Session(Config(), journal_dir=tmp_path, llm=FakeLlm())
    try:

        async def scenario() -> None:
            async with running_window(session, path) as window:
                dialog = _settings(window)
                dialog.max_tokens.setValue(120)
                dialog.provider.setCurrentIndex(dialog.provider.findData("openai"))
                qtbot.keyClicks(dialog.api_key, "sk-test-ABCDEFGHIJKLMNOP")
                dialog.save()
                assert not dialog.isVisible(), dialog.error.text()
                banner = window.banners.banners["key_storage"]
                assert "PARLEY_LLM_API_KEY" in banner.label.text()
                assert "sk-test" not in banner.label.text()

        run(scenario())
    finally:
        keyring.set_keyring(previous)
    assert "max_tokens = 120" in path.read_text(encoding="utf-8")
    assert 'provider = "openai"' in path.read_text(encoding="utf-8")
    assert session.config.llm.max_tokens == 120


def test_test_connection_asks_the_provider_with_the_typed_key(
    run: Any, qtbot: QtBot, tmp_path: Path, fault_server: FaultServer, memory_keyring: MemoryKeyring
) -> None:
    fault_server.push(unauthorized(), status(200, {"object": "list", "data": []}))
    session = Session(_openai(fault_server), journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            dialog = _settings(window)
            dialog.api_key.setText("sk-wrong-ABCDEFGHIJKLMNOP")
            dialog.test_button.click()
            await until(lambda: dialog.test_result.text().startswith("✗"), what="refused")
            assert "refused the API key" in dialog.test_result.text()
            dialog.api_key.setText("sk-right-ABCDEFGHIJKLMNOP")
            dialog.test_button.click()
            await until(lambda: dialog.test_result.text().startswith("✓"), what="answered")
            dialog.reject()

    run(scenario())
    assert [r.headers["authorization"] for r in fault_server.requests] == [
        "Bearer sk-wrong-ABCDEFGHIJKLMNOP",
        "Bearer sk-right-ABCDEFGHIJKLMNOP",
    ]
    assert memory_keyring.store == {}  # testing stores nothing


def test_restart_now_closes_in_order_and_asks_to_open_again(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    session = Session(Config(), journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            window.offer_restart(["microphone"])
            box = window.findChild(QMessageBox, "restart")
            assert box is not None
            (restart,) = [b for b in box.buttons() if b.text() == "Restart now"]
            restart.click()
            await until(window.closed.is_set, what="closed in order")
            assert window.restart_requested

    run(scenario())


def test_test_connection_fails_on_a_404_and_names_the_url(
    run: Any, qtbot: QtBot, tmp_path: Path, fault_server: FaultServer, memory_keyring: MemoryKeyring
) -> None:
    fault_server.push(status(404, {"error": "not found"}), status(400, "bad"))
    session = Session(_openai(fault_server), journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            dialog = _settings(window)
            dialog.test_button.click()
            await until(lambda: dialog.test_result.text().startswith(("✓", "✗")), what="tested")
            tried = f"{fault_server.base_url}/models"
            assert dialog.test_result.text() == f"✗ nothing answers at {tried} (HTTP 404): check the server address"
            await until(dialog.test_button.isEnabled, what="ready to test again")
            dialog.test_button.click()
            await until(lambda: "HTTP 400" in dialog.test_result.text(), what="tested again")
            assert dialog.test_result.text().startswith(f"✗ {tried} refused the request")
            dialog.reject()

    run(scenario())
    assert [r.path for r in fault_server.requests] == ["/v1/models", "/v1/models"]


def test_a_question_answered_by_a_404_says_the_address_may_be_wrong(
    run: Any, qtbot: QtBot, tmp_path: Path, fault_server: FaultServer, memory_keyring: MemoryKeyring
) -> None:
    secret = "sk-secret-ABCDEFGHIJKLMNOP"
    memory_keyring.store[("parley", "llm-api-key")] = secret
    fault_server.push(status(404, {"error": {"message": "Not Found", "type": "invalid_request_error"}}))
    session = Session(_openai(fault_server), journal_dir=tmp_path)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            assert session.send_text("Hello?")
            await until(lambda: "unreachable" in window.banners.banners, what="the 404 banner")
            words = window.banners.banners["unreachable"].label.text()
            assert f"nothing answers at {fault_server.base_url}/chat/completions (HTTP 404)" in words
            assert "server address may be wrong" in words
            assert secret not in words
            notes = [b.note for b in window.transcript_model.bubbles if b.note]
            assert any("server address may be wrong" in note for note in notes), notes

    run(scenario())
    assert fault_server.requests[0].headers["authorization"] == f"Bearer {secret}"


def test_only_a_success_or_a_rate_limit_passes_the_connection_test() -> None:
    tried, shown = "https://x.invalid/v1/models", "https://x.invalid/v1"
    verdicts = {code: answered(code, tried, shown, key_sent=True) for code in (200, 302, 400, 401, 404, 429, 502)}
    assert {code for code, (ok, _) in verdicts.items() if ok} == {200, 429}
    assert verdicts[404][1] == f"nothing answers at {tried} (HTTP 404): check the server address"
    assert all(tried in verdicts[code][1] for code in (302, 400, 404))
