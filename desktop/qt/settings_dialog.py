"""Settings: provider, model, API key (to the OS keyring, shown only masked), devices and voice options."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.config import Config, ConfigError, validate
from desktop.model.devices import Devices
from desktop.model.keyring_store import KeyringUnavailable, KeyStore, describe
from desktop.model.settings_io import SettingsError, save
from desktop.qt.style import named

PROVIDERS = (("Embedded (offline, SmolLM2-135M)", "local"), ("OpenAI-compatible server", "openai"))
DEFAULT_DEVICE = "System default"
VOICE_NOTE = "Saved now; devices, models and VAD settings take effect when Parley restarts."


class SettingsDialog(QDialog):
    saved = Signal(object)  # the new Config, already written to the file

    def __init__(self, config: Config, path: Path, keys: KeyStore, devices: Devices, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Parley settings")
        self._config, self._path, self._keys = config, path, keys
        self.provider = QComboBox()
        for label, value in PROVIDERS:
            self.provider.addItem(label, value)
        self.provider.setCurrentIndex(self.provider.findData(config.llm.provider))
        self.base_url = QLineEdit(config.llm.base_url)
        self.model = QLineEdit(config.llm.model)
        self.local_model = _path_field(config.llm.local_model_path, "the bundled SmolLM2-135M")
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_state = named(QLabel(), "hint")
        self.forget = QPushButton("Forget stored key")
        self.forget.clicked.connect(self._forget_key)
        self.input_device = _device_box(devices.inputs, config.audio.input_device)
        self.output_device = _device_box(devices.outputs, config.audio.output_device)
        self.voice_path = _path_field(config.speech.voice_path, "the bundled Piper voice en_US-joe-medium")
        self.asr_path = _path_field(config.speech.asr_model_path, "the bundled Whisper tiny.en")
        self.vad = QDoubleSpinBox(decimals=2, minimum=0.05, maximum=0.95, singleStep=0.05)
        self.vad.setValue(config.audio.vad_threshold)
        self.vad.setToolTip("Speech probability above which you count as speaking; lower is more sensitive")
        self.echo = QCheckBox("Echo cancellation (so Parley does not interrupt itself on loudspeakers)")
        self.echo.setChecked(config.audio.echo_cancellation)
        self.resume = QCheckBox("Resume the reply when an interruption was only a noise")
        self.resume.setChecked(config.audio.false_interruption_resume)
        self.error = QLabel()
        self.error.setStyleSheet("color: #b91c1c;")
        self.error.setWordWrap(True)
        self.error.hide()
        self._lay_out(devices.note)
        self.provider.currentIndexChanged.connect(self._provider_changed)
        self._provider_changed()
        self._show_key_state()

    def _lay_out(self, device_note: str) -> None:
        llm = QFormLayout()
        llm.addRow("Provider", self.provider)
        llm.addRow("Base URL", self.base_url)
        llm.addRow("Model", self.model)
        llm.addRow("API key", self.api_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_state, 1)
        key_row.addWidget(self.forget)
        llm.addRow("", key_row)
        llm.addRow("Embedded model file", self.local_model)
        voice = QFormLayout()
        voice.addRow("Microphone", self.input_device)
        voice.addRow("Speaker", self.output_device)
        if device_note:
            voice.addRow("", _hint(device_note))
        voice.addRow("Voice (Piper .onnx)", self.voice_path)
        voice.addRow("Speech recognition model", self.asr_path)
        voice.addRow("VAD threshold", self.vad)
        voice.addRow("", self.echo)
        voice.addRow("", self.resume)
        voice.addRow("", _hint(VOICE_NOTE))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        column = QVBoxLayout(self)
        column.addWidget(_group("Language model", llm))
        column.addWidget(_group("Voice", voice))
        column.addWidget(self.error)
        column.addWidget(buttons)

    def _provider_changed(self) -> None:
        remote = self.provider.currentData() == "openai"
        for widget in (self.base_url, self.model, self.api_key, self.forget):
            widget.setEnabled(remote)
        self.local_model.setEnabled(not remote)

    def _show_key_state(self) -> None:
        stored = self._keys.load()
        self.key_state.setText(describe(stored))
        self.api_key.setPlaceholderText(f"{describe(stored)}; type a new key to replace it" if stored else "sk-…")
        self.forget.setVisible(stored is not None and stored.source == "keyring")

    def _forget_key(self) -> None:
        try:
            self._keys.forget()
        except KeyringUnavailable as error:
            self._fail(str(error))
        self._show_key_state()

    def form_config(self) -> Config:
        c = self._config
        llm = replace(
            c.llm,
            provider=str(self.provider.currentData()),
            base_url=self.base_url.text().strip(),
            model=self.model.text().strip(),
            local_model_path=self.local_model.text().strip(),
        )
        speech = replace(
            c.speech, voice_path=self.voice_path.text().strip(), asr_model_path=self.asr_path.text().strip()
        )
        audio = replace(
            c.audio,
            input_device=_device(self.input_device),
            output_device=_device(self.output_device),
            vad_threshold=round(self.vad.value(), 2),
            echo_cancellation=self.echo.isChecked(),
            false_interruption_resume=self.resume.isChecked(),
        )
        return Config(llm, speech, audio)

    def save(self) -> None:
        """Validate, store a new key in the keyring, write the file; errors stay in the dialog."""
        new_key = self.api_key.text().strip()
        self.api_key.clear()
        try:
            config = validate(self.form_config(), "Settings")
            if new_key:
                self._keys.save(new_key)
            save(config, self._path)
        except (ConfigError, SettingsError, KeyringUnavailable, ValueError) as error:
            self._fail(str(error))
            self._show_key_state()
            return
        self.saved.emit(config)
        self.accept()

    def _fail(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()


def _path_field(value: str, default: str) -> QLineEdit:
    field = QLineEdit(value)
    field.setPlaceholderText(f"empty: {default}")
    return field


def _device_box(names: list[str], current: str) -> QComboBox:
    box = QComboBox()
    box.addItem(DEFAULT_DEVICE, "")
    for name in names:
        box.addItem(name, name)
    if current and box.findData(current) < 0:
        box.addItem(f"{current} (not found now)", current)
    box.setCurrentIndex(max(0, box.findData(current)))
    return box


def _device(box: QComboBox) -> str:
    return str(box.currentData() or "")


def _hint(text: str) -> QLabel:
    label = named(QLabel(text), "hint")
    label.setWordWrap(True)
    return label


def _group(title: str, form: QFormLayout) -> QGroupBox:
    group = QGroupBox(title)
    group.setLayout(form)
    return group
