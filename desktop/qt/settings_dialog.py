"""Settings: provider, model, API key (to the OS keyring, shown only masked), reply limits, devices and voice.

The models (language, speech recognition, voice) take effect from the next turn; the devices and speech
detection after a restart, which the dialog says and the window offers. Saving checks everything first
(ranges, the server address, that model files exist); an error stays in the dialog. Without an OS keyring the other
settings are still saved and the window says where the key can go instead.
"""

from __future__ import annotations

from collections.abc import Callable
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
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from adapters.llm.secret import Secret
from desktop.catalog.languages import note, spoken
from desktop.config import Config, ConfigError
from desktop.languages import CHOICES, DETECT, LANGUAGES
from desktop.model.device_lists import DeviceLists
from desktop.model.keyring_store import KeyringUnavailable, KeyStore, describe
from desktop.model.settings_io import SettingsError, save
from desktop.model.settings_rules import check
from desktop.providers import table as providers
from desktop.providers.table import OPENAI_BASE_URL, provider_named
from desktop.qt.fit import Scroller, fit_dialog
from desktop.qt.settings_fields import PathField, Picker, SpeechDetection, device, device_box, pick_with_qt
from desktop.qt.style import named

LIVE_TITLE = "Language model (takes effect from the next turn)"
SPEECH_TITLE = "Speech models (take effect from the next turn)"
RESTART_TITLE = "Devices (take effect after a restart; Parley offers one when you save)"
Tester = Callable[[Config, str, Callable[[bool, str], None]], None]  # (config, typed key, done(ok, words))


class SettingsDialog(QDialog):
    saved = Signal(object, bool, str)  # the new Config (written to the file), a new key stored, why it was not

    def __init__(
        self,
        config: Config,
        path: Path,
        keys: KeyStore,
        devices: DeviceLists,
        parent: QWidget | None = None,
        *,
        tester: Tester | None = None,
        pick: Picker = pick_with_qt,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Parley settings")
        self._config, self._path, self._keys, self._tester = config, path, keys, tester
        llm, speech, audio = config.llm, config.speech, config.audio
        self.provider = QComboBox()
        for entry in providers.PROVIDERS:
            self.provider.addItem(entry.label, entry.name)
        self.provider.setCurrentIndex(self.provider.findData(llm.provider))
        self.base_url = QLineEdit(llm.base_url)
        self.base_url.setToolTip("Where the provider's OpenAI-compatible API answers, e.g. https://api.openai.com/v1")
        self.model = QLineEdit(llm.model)
        self.local_model = PathField(
            llm.local_model_path, "the bundled SmolLM2-135M", "Embedded model", "GGUF models (*.gguf)", pick
        )
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_state = named(QLabel(), "hint")
        self.forget = QPushButton("Forget stored key")
        self.forget.clicked.connect(self._forget_key)
        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(self._test)
        self.test_result = named(QLabel(), "hint")
        self.test_result.setWordWrap(True)
        self._testing = False  # a connection test is under way
        self._asked = 0  # which provider choice a test under way is about
        self.max_tokens = QSpinBox(minimum=1, maximum=100_000, singleStep=50, value=llm.max_tokens, suffix=" tokens")
        self.max_reply_s = QDoubleSpinBox(decimals=0, minimum=1, maximum=3600, singleStep=10, suffix=" s")
        self.max_reply_s.setValue(llm.max_reply_s)
        self.input_device = device_box(devices, "input", audio.input_device)
        self.output_device = device_box(devices, "output", audio.output_device)
        self.voice_path = PathField(
            speech.voice_path, "the bundled Piper voice en_US-joe-medium", "Piper voice", "Piper voices (*.onnx)", pick
        )
        self.asr_path = PathField(
            speech.asr_model_path, "the bundled Whisper tiny.en", "Whisper model folder", "", pick
        )
        self.vad = SpeechDetection(audio.vad_threshold)
        self.echo = QCheckBox("Echo cancellation (so Parley does not interrupt itself on loudspeakers)")
        self.echo.setChecked(audio.echo_cancellation)
        self.resume = QCheckBox("Resume the reply when an interruption was only a noise")
        self.resume.setChecked(audio.false_interruption_resume)
        self.models_button = QPushButton("Models… (download and choose)")
        self.language = QComboBox()
        for code in CHOICES:
            self.language.addItem(_language_label(code), code)
        self.language.setCurrentIndex(max(0, self.language.findData(speech.language)))
        self.language_note = _hint("")
        self.language.currentIndexChanged.connect(self._language_changed)
        self.error = QLabel()
        self.error.setStyleSheet("color: #b91c1c;")
        self.error.setWordWrap(True)
        self.error.hide()
        self._lay_out(devices.note)
        self.provider.currentIndexChanged.connect(self._provider_changed)
        self.provider.currentIndexChanged.connect(self._provider_picked)
        self._provider_changed()
        self._show_key_state()
        self._language_changed()

    def _lay_out(self, device_note: str) -> None:
        llm = QFormLayout()
        llm.addRow("Provider", self.provider)
        llm.addRow("Server address", self.base_url)
        llm.addRow("Model", self.model)
        llm.addRow("API key", self.api_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_state, 1)
        key_row.addWidget(self.forget)
        key_row.addWidget(self.test_button)
        llm.addRow("", key_row)
        llm.addRow("", self.test_result)
        llm.addRow("Embedded model file", self.local_model)
        llm.addRow("Longest reply", self.max_tokens)
        llm.addRow("…and at most", self.max_reply_s)
        speech = QFormLayout()
        speech.addRow("Language", self.language)
        speech.addRow("", self.language_note)
        speech.addRow("", self.models_button)
        speech.addRow("Voice (Piper .onnx)", self.voice_path)
        speech.addRow("Speech recognition model", self.asr_path)
        voice = QFormLayout()
        voice.addRow("Microphone", self.input_device)
        voice.addRow("Speaker", self.output_device)
        if device_note:
            voice.addRow("", _hint(device_note))
        voice.addRow("Speech detection", self.vad)
        voice.addRow("", self.echo)
        voice.addRow("", self.resume)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        groups = QWidget()
        inside = QVBoxLayout(groups)
        inside.setContentsMargins(0, 0, 0, 0)
        inside.addWidget(_group(LIVE_TITLE, llm))
        inside.addWidget(_group(SPEECH_TITLE, speech))
        inside.addWidget(_group(RESTART_TITLE, voice))
        inside.addStretch(1)
        self.scroller = Scroller(groups)  # on a small or scaled screen the groups scroll; Save stays in view
        column = QVBoxLayout(self)
        column.addWidget(self.scroller, 1)
        column.addWidget(self.error)
        column.addWidget(buttons)
        fit_dialog(self)

    def _provider_changed(self) -> None:
        """The fields the chosen provider reads are enabled; what a test of another provider said goes."""
        self._asked += 1
        self.test_result.clear()
        chosen = provider_named(str(self.provider.currentData()))
        reads = chosen.settings if chosen is not None else ()
        self.base_url.setEnabled("base_url" in reads)
        self.model.setEnabled("model" in reads)
        self.api_key.setEnabled("api_key" in reads)
        self.forget.setEnabled("api_key" in reads)
        self.test_button.setEnabled(chosen is not None and chosen.over_http)
        self.local_model.setEnabled("local_model_path" in reads)
        self.test_button.setVisible(self._tester is not None)

    def _provider_picked(self) -> None:
        """A server's own address replaces another provider's default address (never one the person typed)."""
        chosen = provider_named(str(self.provider.currentData()))
        defaults = {OPENAI_BASE_URL, "", *(p.base_url for p in providers.PROVIDERS)}
        if chosen is not None and chosen.base_url and self.base_url.text().strip() in defaults:
            self.base_url.setText(chosen.base_url)

    def _language_changed(self) -> None:
        """Under the language: the models it still needs (Parley stays in English until then), or what changes."""
        words = note(spoken(self.form_config()))
        self.language_note.setText(words)
        self.language_note.setVisible(bool(words))

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

    def _test(self) -> None:
        """Ask the provider; the button stays enabled (a disabled one would throw the focus onto the next field,
        "Longest reply" with its number selected, issue 37) and a second press meanwhile asks nothing."""
        if self._tester is None or self._testing:
            return
        try:
            config = check(self.form_config())
        except ConfigError as error:
            self._tested(self._asked, False, str(error).removeprefix("Settings: "))
            return
        self._testing = True
        self.test_result.setText("Asking the provider…")
        asked = self._asked
        self._tester(config, self.api_key.text().strip(), lambda ok, words: self._tested(asked, ok, words))

    def _tested(self, asked: int, ok: bool, words: str) -> None:
        """The verdict, unless the provider was changed since it was asked (it would be about another one)."""
        self._testing = False
        if asked == self._asked:
            self.test_result.setText(("✓ " if ok else "✗ ") + words)

    def form_config(self) -> Config:
        c = self._config
        llm = replace(
            c.llm,
            provider=str(self.provider.currentData()),
            base_url=self.base_url.text().strip(),
            model=self.model.text().strip(),
            local_model_path=self.local_model.text(),
            max_tokens=self.max_tokens.value(),
            max_reply_s=float(self.max_reply_s.value()),
        )
        speech = replace(
            c.speech,
            voice_path=self.voice_path.text(),
            asr_model_path=self.asr_path.text(),
            language=str(self.language.currentData()),
        )
        audio = replace(
            c.audio,
            input_device=device(self.input_device),
            output_device=device(self.output_device),
            vad_threshold=self.vad.threshold(),
            echo_cancellation=self.echo.isChecked(),
            false_interruption_resume=self.resume.isChecked(),
        )
        return Config(llm, speech, audio)

    def save(self) -> None:
        """Check, write the file, then store a new key in the keyring; errors stay in the dialog."""
        new_key = self.api_key.text().strip()
        try:
            Secret(new_key) if new_key else None  # a malformed key is refused before anything is written
            config = check(self.form_config())
            save(config, self._path)
        except (ConfigError, SettingsError, ValueError) as error:
            self._fail(str(error))
            return
        self.api_key.clear()
        stored, why = self._store_key(new_key)
        self.saved.emit(config, stored, why)
        self.accept()

    def _store_key(self, key: str) -> tuple[bool, str]:
        if not key:
            return False, ""
        try:
            self._keys.save(key)
        except KeyringUnavailable as error:
            return False, str(error)
        return True, ""

    def _fail(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()


def _language_label(code: str) -> str:
    """`Deutsch (German)`; `English`; `Detect (any language you speak)`."""
    if code == DETECT:
        return "Detect (any language you speak)"
    lang = LANGUAGES[code]
    return lang.native if lang.native == lang.name else f"{lang.native} ({lang.name})"


def _hint(text: str) -> QLabel:
    label = named(QLabel(text), "hint")
    label.setWordWrap(True)
    return label


def _group(title: str, form: QFormLayout) -> QGroupBox:
    group = QGroupBox(title)
    group.setLayout(form)
    return group
