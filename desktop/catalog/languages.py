"""The models a language needs: speech recognition that hears it (a multilingual Whisper; tiny.en hears English
only) and a voice that speaks it (a Piper voice of that language; "detect" keeps the voice set). They come from
the catalogue's downloaded models; nothing is downloaded here. When one is missing, Parley keeps working in
English and one line says which model to get."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from desktop.catalog.choice import configured_path, current
from desktop.catalog.entries import Catalogue, Entry, load_catalogue
from desktop.catalog.store import Store, models_dir
from desktop.config import Config
from desktop.languages import DETECT, ENGLISH, language_name


@dataclass(frozen=True)
class Spoken:
    """What runs for a configuration: `config` names the models and the language in use (English when the asked
    language's models are not here: `missing` names them)."""

    config: Config
    asked: str
    missing: tuple[Entry, ...] = ()

    @property
    def language(self) -> str:
        return self.config.speech.language

    @property
    def problem(self) -> str:
        """One line for the person ("" when the language asked for is the one in use)."""
        if not self.missing:
            return ""
        needs = " and ".join(_need(entry, self.asked) for entry in self.missing)
        gets = " and ".join(f"`parley models get {entry.id}`" for entry in self.missing)
        them = "them" if len(self.missing) > 1 else "it"
        return (
            f"{language_name(self.asked).capitalize()} needs {needs}: get {them} in Settings → Models or with "
            f"{gets}; until then Parley listens and speaks English"
        )


def note(spoken: Spoken) -> str:
    """What the Settings dialog says under the language: what is missing, or how it changes listening."""
    if spoken.problem or spoken.asked == ENGLISH:
        return spoken.problem
    rules = "The end-of-turn word rules are English: turns end on the end-of-turn model and the pause alone."
    if spoken.asked == DETECT:
        return f"Parley hears whichever language you speak and answers in it; its voice stays the same. {rules}"
    return f"Parley hears and answers in {language_name(spoken.asked)}. {rules}"


def spoken(config: Config, catalogue: Catalogue | None = None, store: Store | None = None) -> Spoken:
    """The models and the language to run `config` with (English: unchanged, and nothing read from disk)."""
    language = config.speech.language
    if language == ENGLISH:
        return Spoken(config, language)
    catalogue = catalogue or _built_in()
    store = store or Store(models_dir())
    asr, missing_asr = _asr(config, catalogue, store)
    voice, missing_voice = (None, None) if language == DETECT else _voice(config, catalogue, store, language)
    missing = tuple(entry for entry in (missing_asr, missing_voice) if entry is not None)
    if missing:
        return Spoken(replace(config, speech=replace(config.speech, language=ENGLISH)), language, missing)
    speech = config.speech
    chosen = replace(
        speech,
        asr_model_path=speech.asr_model_path if asr is None else _path(asr, store),
        voice_path=speech.voice_path if voice is None else _path(voice, store),
    )
    return Spoken(replace(config, speech=chosen), language)


def running(config: Config) -> Config:
    """The configuration as it runs (see `spoken`)."""
    return spoken(config).config


def voice_language(entry_language: str) -> str:
    """A voice's "de_DE" as the language setting's "de"."""
    return entry_language.split("_")[0].lower()


def _asr(config: Config, catalogue: Catalogue, store: Store) -> tuple[Entry | None, Entry | None]:
    """(the Whisper model to use instead of the configured one, or None to keep it; the one to get, or None)."""
    using = current(catalogue, config, store, "asr")
    if using is None or using.multilingual:
        return None, None  # a folder of the person's own is trusted to hear the language
    candidates = [e for e in catalogue.of_kind("asr") if e.multilingual]
    sibling = next((e for e in candidates if e.id == using.id.removesuffix(".en")), candidates[0])
    here = [e for e in candidates if store.installed(e)]
    if not here:
        return None, sibling
    return (sibling if sibling in here else min(here, key=lambda e: e.size_mb)), None


def _voice(config: Config, catalogue: Catalogue, store: Store, language: str) -> tuple[Entry | None, Entry | None]:
    """(the voice to use instead of the configured one, or None to keep it; the one to get, or None)."""
    using = current(catalogue, config, store, "voice")
    if using is None:
        own = _own_voice_language(configured_path(config, "voice"))
        if own in (None, language):
            return None, None  # a voice of the person's own that says nothing of its language is trusted
    elif voice_language(using.language) == language:
        return None, None
    candidates = [e for e in catalogue.of_kind("voice") if voice_language(e.language) == language]
    here = [e for e in candidates if store.installed(e)]
    if here:
        return here[0], None
    return None, candidates[0] if candidates else None


def _own_voice_language(path: str) -> str | None:
    """The language a Piper voice's .onnx.json gives ("language": {"code": "de_DE"}), if it says."""
    try:
        meta = json.loads(Path(path + ".json").expanduser().read_text(encoding="utf-8"))
        return voice_language(str(meta["language"]["code"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _path(entry: Entry, store: Store) -> str:
    return "" if entry.bundled else str(store.model_path(entry))


def _need(entry: Entry, language: str) -> str:
    if entry.kind == "asr":
        return f"speech recognition for many languages ({entry.id}, {entry.size_mb:.0f} MB)"
    return f"a {language_name(language)} voice ({entry.id}, {entry.size_mb:.0f} MB)"


@cache
def _built_in() -> Catalogue:
    return load_catalogue()
