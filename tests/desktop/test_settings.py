"""Settings survive a save and a reload; the key goes to the keyring only; devices never crash the dialog."""

from __future__ import annotations

import builtins
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtWidgets import QDialogButtonBox, QMessageBox
from pytestqt.qtbot import QtBot

from adapters.asr.whisper import default_model_dir
from adapters.runtime.clock import SystemClock
from adapters.tts.piper_voice import default_voice_path
from desktop.config import AudioConfig, Config, LlmConfig, SpeechConfig, load
from desktop.model.device_lists import device_lists, from_query
from desktop.model.session import Session
from desktop.model.settings_io import save, to_toml
from desktop.model.voice import SimulatedVoice
from desktop.qt.settings_dialog import SettingsDialog
from engine.testing import FakeLlm
from tests.desktop.helpers import MemoryKeyring, running_window

KEY = "sk-live-ABCDEFGHIJKLMNOP1234"
CHOSEN = Config(
    LlmConfig(provider="openai", base_url="http://127.0.0.1:8080/v1", model='llama "3" \\ q4', local_model_path=""),
    SpeechConfig(asr_model_path="/models/whisper small", voice_path="/models/voix française.onnx"),
    AudioConfig(
        input_device="Test microphone",
        output_device="Test speaker",
        vad_threshold=0.35,
        echo_cancellation=False,
        false_interruption_resume=False,
    ),
)


REAL = replace(CHOSEN, speech=SpeechConfig(str(default_model_dir()), str(default_voice_path())))  # files that exist


def _fill(dialog: SettingsDialog, qtbot: QtBot, chosen: Config, key: str) -> None:
    dialog.provider.setCurrentIndex(dialog.provider.findData(chosen.llm.provider))
    for field, value in (
        (dialog.base_url, chosen.llm.base_url),
        (dialog.model, chosen.llm.model),
        (dialog.voice_path, chosen.speech.voice_path),
        (dialog.asr_path, chosen.speech.asr_model_path),
    ):
        field.setText(value)
    qtbot.keyClicks(dialog.api_key, key)
    dialog.input_device.setCurrentIndex(dialog.input_device.findData(chosen.audio.input_device))
    dialog.output_device.setCurrentIndex(dialog.output_device.findData(chosen.audio.output_device))
    dialog.vad.set_threshold(chosen.audio.vad_threshold)
    dialog.echo.setChecked(chosen.audio.echo_cancellation)
    dialog.resume.setChecked(chosen.audio.false_interruption_resume)


def test_settings_round_trip_through_the_dialog_file_and_keyring(
    run: Any, qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    path = tmp_path / "config.toml"
    clock = SystemClock()
    session = Session(Config(), journal_dir=tmp_path, voice=SimulatedVoice(clock), llm=FakeLlm(), clock=clock)

    async def scenario() -> None:
        async with running_window(session, path) as window:
            window.open_settings()
            dialog = window.settings_dialog
            assert dialog is not None
            _fill(dialog, qtbot, REAL, KEY)
            saved: list[tuple[Config, bool, str]] = []
            dialog.saved.connect(lambda *args: saved.append(args))
            dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
            assert saved == [(REAL, True, "")]
            assert window.settings_dialog is None  # closed and scheduled for deletion
            restart = window.findChild(QMessageBox, "restart")
            assert restart is not None  # devices and models changed: offered, not forced
            assert "microphone" in restart.text()
            restart.close()
            window.open_settings()
            again = window.settings_dialog
            assert again is not None
            assert again.form_config() == REAL
            assert again.key_state.text() == "sk-…1234 (stored in keyring)"
            assert again.api_key.text() == ""
            again.reject()

    run(scenario())
    assert load(path, env={}) == REAL
    assert memory_keyring.store == {("parley", "llm-api-key"): KEY}
    assert KEY not in path.read_text(encoding="utf-8")
    assert session.config == REAL  # the session was rebuilt with the new settings


def test_a_bad_value_stays_in_the_dialog_with_its_reason(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    session = Session(Config(), journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, path) as window:
            window.open_settings()
            dialog = window.settings_dialog
            assert dialog is not None
            dialog.provider.setCurrentIndex(dialog.provider.findData("openai"))
            dialog.base_url.setText("ftp://example")
            dialog.save()
            assert dialog.isVisible()
            assert "must start with http:// or https://" in dialog.error.text()
            dialog.reject()

    run(scenario())
    assert not path.exists()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(), number=st.floats(0.01, 0.99), flag=st.booleans())
def test_any_text_survives_the_toml_writer(text: str, number: float, flag: bool) -> None:
    config = replace(
        Config(),
        llm=replace(LlmConfig(), model=text, base_url="https://x.invalid/" + text),
        audio=replace(AudioConfig(), input_device=text, vad_threshold=number, echo_cancellation=flag),
    )
    raw = tomllib.loads(to_toml(config))
    assert raw["llm"]["model"] == text
    assert raw["audio"]["input_device"] == text
    assert raw["audio"]["vad_threshold"] == number
    assert raw["audio"]["echo_cancellation"] is flag


def test_save_then_load_gives_the_same_config(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "config.toml"
    save(CHOSEN, path)
    assert load(path, env={}) == CHOSEN
    assert not list(path.parent.glob("*.tmp"))


def test_devices_without_portaudio_are_an_empty_list_and_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_portaudio(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_portaudio)
    devices = device_lists()
    assert devices.inputs == []
    assert devices.outputs == []
    assert "PortAudio is missing" in devices.note


def test_devices_are_split_into_inputs_and_outputs() -> None:
    found = [
        {"name": "USB mic", "max_input_channels": 1, "max_output_channels": 0},
        {"name": "Speakers", "max_input_channels": 0, "max_output_channels": 2},
    ]
    devices = from_query(found)
    assert devices.inputs == ["USB mic"]
    assert devices.outputs == ["Speakers"]
    assert devices.note == ""
