"""Settings → Language: the list of languages, what a language still needs said under it, and the choice saved."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.catalog.entries import load_catalogue
from desktop.catalog.store import Receipt, Store
from desktop.config import Config
from desktop.model.device_lists import DeviceLists
from desktop.model.keyring_store import KeyStore
from desktop.qt.settings_dialog import SettingsDialog


def test_choosing_a_language_says_what_it_needs_and_saves_it(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARLEY_MODELS_DIR", str(tmp_path / "models"))
    path = tmp_path / "config.toml"
    dialog = SettingsDialog(Config(), path, KeyStore(env={}), DeviceLists())
    qtbot.addWidget(dialog)
    labels = [dialog.language.itemText(i) for i in range(dialog.language.count())]
    assert labels[:3] == ["English", "Deutsch (German)", "Français (French)"]
    assert labels[-1] == "Detect (any language you speak)"
    assert dialog.language.currentData() == "en"
    assert dialog.language_note.isHidden()
    dialog.language.setCurrentIndex(dialog.language.findData("de"))
    shown = dialog.language_note.text()
    assert shown.startswith("German needs speech recognition for many languages")
    assert "`parley models get de_DE-thorsten-medium`" in shown
    assert shown.endswith("until then Parley listens and speaks English")
    assert not dialog.language_note.isHidden()
    dialog.save()
    assert tomllib.loads(path.read_text())["speech"]["language"] == "de"


def test_with_its_models_here_the_dialog_says_how_turns_end(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "models")
    monkeypatch.setenv("PARLEY_MODELS_DIR", str(store.root))
    catalogue = load_catalogue()
    for model_id in ("whisper-tiny", "fr_FR-siwis-medium"):
        entry = catalogue.find(model_id)
        staged = store.root / ".staged" / entry.id
        staged.mkdir(parents=True)
        for name in entry.names:
            (staged / name).write_bytes(b"x")
        store.install(entry, staged, Receipt(entry.id, entry.repo, entry.revision, "0" * 40, {}))
    dialog = SettingsDialog(Config(), tmp_path / "config.toml", KeyStore(env={}), DeviceLists())
    qtbot.addWidget(dialog)
    dialog.language.setCurrentIndex(dialog.language.findData("fr"))
    assert dialog.language_note.text() == (
        "Parley hears and answers in French. The end-of-turn word rules are English: "
        "turns end on the end-of-turn model and the pause alone."
    )
