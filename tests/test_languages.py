"""Languages: the setting is checked like the others; a language picks a multilingual Whisper and a voice of its
own from the downloaded catalogue models (or stays English and names the model to get); the prompt is in the
language; the English end-of-turn word rules are off for other languages."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.asr.whisper import WhisperTranscriber, default_model_dir
from adapters.tts.piper_voice import PiperSynthesizer, default_voice_path
from audio.events import SpeechEnded, SpeechStarted
from audio.turns.endpoint import EndpointConfig, EndpointPolicy, TurnDecided
from desktop.catalog.entries import Catalogue, Entry, load_catalogue
from desktop.catalog.languages import note, spoken, voice_language
from desktop.catalog.store import Receipt, Store
from desktop.cli import main
from desktop.config import Config, ConfigError, SpeechConfig, load, with_language
from desktop.languages import CHOICES, LANGUAGES
from desktop.pipeline.audio_io import fixture_devices
from desktop.pipeline.parts import prompt_for, speech_models
from desktop.pipeline.voice import VoicePipeline
from engine.journal import read_events
from engine.prompt_languages import PROMPTS
from engine.testing.clock import VirtualClock
from tests.fault_behaviours import text_stream
from tests.fault_server import FaultServer
from tests.hf_server import running as hf_running

WALL = dt.datetime(2025, 6, 3, 14, 5, tzinfo=dt.UTC)


def _german(config: Config | None = None) -> Config:
    return with_language(config or Config(), "de")


def _install(store: Store, entry: Entry, source: Path | None = None) -> None:
    """A catalogue model put in the store as a download leaves it (the files and their receipt)."""
    staged = store.root / ".staged" / entry.id
    staged.mkdir(parents=True)
    for name in entry.names:
        found = source / name if source is not None and (source / name).exists() else None
        if found is not None:
            shutil.copy(found, staged / name)
        else:
            (staged / name).write_bytes(b"x")
    store.install(entry, staged, Receipt(entry.id, entry.repo, entry.revision, "0" * 40, {}))


@pytest.fixture
def catalogue() -> Catalogue:
    return load_catalogue()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "models")


# The setting


def test_the_language_is_checked_like_any_setting(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text('[speech]\nlanguage = "klingon"\n')
    with pytest.raises(ConfigError) as error:
        load(file, env={})
    assert str(error.value) == (
        f"{file}: [speech] language = 'klingon' is not a language Parley knows; use one of en, de, fr, es, it, detect"
    )
    assert len(str(error.value).splitlines()) == 1
    file.write_text('[speech]\nlanguage = " DE "\n')
    assert load(file, env={}).speech.language == "de"  # written as Whisper takes it
    file.write_text('[speech]\nlanguage = "detect"\n')
    assert load(file, env={}).speech.language == "detect"
    assert Config().speech.language == "en"
    with pytest.raises(ConfigError, match=r"^command line: --language 'xx' is not a language Parley knows"):
        with_language(Config(), "xx")


def test_every_language_offered_has_a_prompt_and_a_voice_in_the_catalogue(catalogue: Catalogue) -> None:
    voices = {voice_language(e.language) for e in catalogue.of_kind("voice")}
    assert set(LANGUAGES) <= voices
    assert set(LANGUAGES) == set(PROMPTS)
    assert "detect" in CHOICES
    assert any(e.multilingual for e in catalogue.of_kind("asr"))


def test_the_journal_records_the_language() -> None:
    assert Config().summary()["language"] == "en"
    assert _german().summary()["language"] == "de"


# The models a language picks


def test_english_is_left_alone_and_reads_nothing(tmp_path: Path) -> None:
    config = Config()
    assert spoken(config, store=Store(tmp_path / "absent")).config is config
    assert note(spoken(config)) == ""


def test_a_language_without_its_models_stays_english_and_says_what_to_get(catalogue: Catalogue, store: Store) -> None:
    result = spoken(_german(), catalogue, store)
    assert result.language == "en"
    assert result.config.speech == SpeechConfig()  # the bundled English models, unchanged
    assert [e.id for e in result.missing] == ["whisper-tiny", "de_DE-thorsten-medium"]
    assert "`parley models get whisper-tiny` and `parley models get de_DE-thorsten-medium`" in result.problem
    assert result.problem.startswith("German needs speech recognition for many languages")
    assert result.problem.endswith("until then Parley listens and speaks English")
    assert len(result.problem.splitlines()) == 1


def test_a_language_picks_the_downloaded_multilingual_whisper_and_its_voice(catalogue: Catalogue, store: Store) -> None:
    for model_id in ("whisper-base", "de_DE-thorsten-medium", "fr_FR-siwis-medium", "whisper-small.en"):
        _install(store, catalogue.find(model_id))
    german = spoken(_german(), catalogue, store)
    assert german.problem == ""
    assert german.language == "de"
    assert german.config.speech.asr_model_path == str(store.folder(catalogue.find("whisper-base")))
    assert german.config.speech.voice_path.endswith("de_DE-thorsten-medium.onnx")
    assert "turns end on the end-of-turn model and the pause alone" in note(german)
    french = spoken(with_language(Config(), "fr"), catalogue, store)
    assert french.config.speech.voice_path.endswith("fr_FR-siwis-medium.onnx")
    spanish = spoken(with_language(Config(), "es"), catalogue, store)  # Whisper is here, no Spanish voice
    assert [e.id for e in spanish.missing] == ["es_ES-davefx-medium"]
    assert spanish.language == "en"


def test_the_multilingual_sibling_of_the_size_in_use_is_preferred(catalogue: Catalogue, store: Store) -> None:
    for model_id in ("whisper-tiny", "whisper-small", "whisper-small.en", "de_DE-thorsten-medium"):
        _install(store, catalogue.find(model_id))
    small_en = replace(Config().speech, asr_model_path=str(store.folder(catalogue.find("whisper-small.en"))))
    chosen = spoken(_german(replace(Config(), speech=small_en)), catalogue, store)
    assert chosen.config.speech.asr_model_path == str(store.folder(catalogue.find("whisper-small")))


def test_models_that_already_fit_are_kept(catalogue: Catalogue, store: Store, tmp_path: Path) -> None:
    own_voice = tmp_path / "ma-voix.onnx"
    own_voice.write_bytes(b"x")
    own_voice.with_name("ma-voix.onnx.json").write_text(json.dumps({"language": {"code": "fr_FR"}}))
    own = SpeechConfig(asr_model_path=str(tmp_path / "my-whisper"), voice_path=str(own_voice), language="fr")
    kept = spoken(replace(Config(), speech=own), catalogue, store)
    assert (kept.config.speech, kept.problem) == (own, "")  # a folder of one's own is trusted to hear French
    german = spoken(replace(Config(), speech=replace(own, language="de")), catalogue, store)
    assert [e.id for e in german.missing] == ["de_DE-thorsten-medium"]  # the French voice will not do


def test_detect_needs_a_multilingual_whisper_and_keeps_the_voice(catalogue: Catalogue, store: Store) -> None:
    detect = with_language(Config(), "detect")
    assert [e.id for e in spoken(detect, catalogue, store).missing] == ["whisper-tiny"]
    _install(store, catalogue.find("whisper-tiny"))
    result = spoken(detect, catalogue, store)
    assert (result.language, result.config.speech.voice_path) == ("detect", "")
    assert "answers in it" in note(result)


# What runs: the transcriber, the prompt, the end of turn


def test_the_transcriber_is_told_the_language(catalogue: Catalogue, store: Store) -> None:
    _install(store, catalogue.find("whisper-tiny"), default_model_dir())  # tiny.en's files stand in for tiny's
    _install(store, catalogue.find("de_DE-thorsten-medium"))
    transcriber, _ = speech_models(replace(Config(), speech=SpeechConfig()))
    assert transcriber.language == "en"
    german = spoken(_german(), catalogue, store).config
    assert german.speech.voice_path  # the German voice, chosen
    transcriber, _ = speech_models(replace(german, speech=replace(german.speech, voice_path="")))
    assert (transcriber.language, transcriber.model_dir) == ("de", store.folder(catalogue.find("whisper-tiny")))
    detect = with_language(Config(), "detect")
    assert speech_models(spoken(detect, catalogue, store).config)[0].language is None


@pytest.mark.parametrize(
    ("language", "words"),
    [("de", ("Du bist Parley", "Heute ist Dienstag, der 3. Juni 2025. Es ist 14:05 Uhr (UTC).")),
     ("fr", ("Réponds en français", "Nous sommes le mardi 3 juin 2025. Il est 14 h 05 (UTC).")),
     ("es", ("Responde en español", "Hoy es martes, 3 de junio de 2025. Son las 14:05 (UTC).")),
     ("it", ("Rispondi in italiano", "Oggi è martedì 3 giugno 2025. Sono le 14:05 (UTC).")),
     ("en", ("You are Parley", "Today is Tuesday, 3 June 2025. The time is 2:05 PM (UTC).")),
     ("detect", ("Answer in the language the person speaks", "Today is Tuesday"))],
)  # fmt: skip
def test_the_prompt_is_in_the_language(language: str, words: tuple[str, ...]) -> None:
    prompt = prompt_for(with_language(Config(), language))
    prompt._wall = lambda: WALL  # the date it gives
    system = prompt.system_text()
    assert all(word in system for word in words), system


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def _policy(word_rules: bool) -> tuple[EndpointPolicy, _Clock]:
    clock = _Clock()
    return EndpointPolicy(clock, EndpointConfig(word_rules=word_rules)), clock


@pytest.mark.parametrize("text", ["Ich wollte dich fragen, ob", "Je voulais te demander si", "My favourite food is"])
def test_other_languages_end_on_the_model_and_the_silence(text: str) -> None:
    for word_rules, reason in ((True, "max_wait"), (False, "model")):
        policy, clock = _policy(word_rules)
        policy.on_vad(SpeechStarted(at=0.0))
        (check,) = [d for d in policy.on_vad(SpeechEnded(at=1.0)) if not isinstance(d, TurnDecided)]
        clock.advance(0.3)
        policy.heard(text, until=1.2)
        ended = policy.model_said(check.pause, 0.9)  # the model hears a finished turn
        while not ended:
            deadline = policy.deadline()
            assert deadline is not None
            clock.advance(deadline - clock.now())
            ended = policy.tick()
        assert [d.reason for d in ended if isinstance(d, TurnDecided)] == [reason], (text, word_rules)


def test_the_pipeline_switches_the_word_rules_with_the_transcriber() -> None:
    clock = VirtualClock()
    synth_rate = 22050
    english = WhisperTranscriber(default_model_dir(), language="en")
    german = WhisperTranscriber(default_model_dir(), language="de")
    pipeline = VoicePipeline(
        fixture_devices(clock, synth_rate), english, PiperSynthesizer(default_voice_path()), clock, Config().audio
    )
    assert pipeline.turn_taking().config.word_rules
    pipeline.use_models(german, None)
    assert not pipeline.turn_taking().config.word_rules
    pipeline.use_models(WhisperTranscriber(default_model_dir(), language=None), None)  # detect
    assert not pipeline.turn_taking().config.word_rules


# The command line, with the models got from a Hugging Face-compatible server on 127.0.0.1


@pytest.mark.slow
def test_parley_run_in_german_once_its_models_are_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fault_server: FaultServer
) -> None:
    monkeypatch.setenv("PARLEY_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("PARLEY_LLM_API_KEY", "sk-test")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)

    def run(out: Path) -> tuple[dict[str, Any], str]:
        fault_server.push(text_stream("Hallo!"))
        config = tmp_path / "none.toml"
        config.write_text("")
        args = ["run", "--text", "Hallo", "--out", str(out), "--fast", "--language", "de", "--llm", "openai",
                "--retries", "0", "--llm-base-url", fault_server.base_url, "--config", str(config)]  # fmt: skip
        assert main(args) == 0
        start = next(e for e in read_events(out / "journal.jsonl") if e["type"] == "session/start")
        return start, fault_server.requests[-1].json["messages"][0]["content"]

    start, system = run(tmp_path / "before")
    err = capsys.readouterr().err
    assert "parley: German needs speech recognition for many languages" in err
    assert "`parley models get whisper-tiny`" in err
    assert (start["language"], system.startswith("You are Parley")) == ("en", True)  # it went on in English

    with hf_running() as hub:  # tiny.en's files and Joe's voice stand in for tiny and Thorsten's
        for name in ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt"):
            hub.host("Systran/faster-whisper-tiny", name, default_model_dir() / name)
        thorsten = "de/de_DE/thorsten/medium/de_DE-thorsten-medium.onnx"
        voice = default_voice_path()
        hub.host("rhasspy/piper-voices", thorsten, voice, revision="v1.0.0")
        hub.host("rhasspy/piper-voices", thorsten + ".json", voice.with_name(voice.name + ".json"), "v1.0.0")
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        for model_id in ("whisper-tiny", "de_DE-thorsten-medium"):
            assert main(["models", "get", model_id, "--no-probe"]) == 0
    capsys.readouterr()
    start, system = run(tmp_path / "after")
    assert "German needs" not in capsys.readouterr().err
    assert start["language"] == "de"
    assert system.startswith("Du bist Parley"), system
