"""What a change of settings does: which take effect at once and which after a restart (every field is one or
the other, none is ignored), which failure banners it makes stale, and the checks run before saving.

The models (language, speech recognition, voice) apply from the next turn (the session swaps them between two
turns); the voice pipeline's devices, speech detection and echo cancellation are read once when it starts.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import httpx

from adapters.asr.whisper import check_model_dir
from adapters.llm.openai_compat import endpoint
from adapters.llm.proxy import ProxySettingError, proxy_for
from adapters.llm.secret import Secret, redact_url
from adapters.runtime.model_files import ModelError
from adapters.tts.piper_voice import check_voice_files
from desktop.config import Config, ConfigError, check_url, validate
from desktop.providers.checks import answered, check_server
from desktop.providers.table import base_url_for, provider_named

LIVE = frozenset(
    [f"llm.{f.name}" for f in fields(Config().llm)] + [f"speech.{f.name}" for f in fields(Config().speech)]
)
RESTART = frozenset(f"audio.{f.name}" for f in fields(Config().audio))
NAMES = {
    "speech.asr_model_path": "speech recognition model",
    "speech.voice_path": "voice",
    "speech.language": "language",
    "audio.input_device": "microphone",
    "audio.output_device": "speaker",
    "audio.echo_cancellation": "echo cancellation",
    "audio.vad_threshold": "speech detection",
    "audio.min_speech_ms": "interruption length",
    "audio.min_silence_ms": "end-of-speech pause",
    "audio.false_interruption_resume": "resuming after a noise",
    "audio.false_interruption_window_ms": "resume window",
}
# Failure banners a settings change makes stale (they come back if the problem does): kind -> settings
STALE_WHEN = {
    "auth": {"llm.provider", "llm.base_url", "key"},
    "unreachable": {"llm.provider", "llm.base_url", "llm.connect_timeout", "llm.idle_timeout"},
    "quota": {"llm.provider", "llm.base_url", "key"},
    "missing_model": {"llm.provider", "llm.local_model_path"},
    "no_engine": LIVE,
    "config": LIVE | RESTART,  # the file was rewritten whole
}


def changed(old: Config, new: Config) -> set[str]:
    """`section.key` of every setting that differs."""
    out = set()
    for section in fields(old):
        before, after = getattr(old, section.name), getattr(new, section.name)
        out |= {f"{section.name}.{f.name}" for f in fields(before) if getattr(before, f.name) != getattr(after, f.name)}
    return out


def restart_needed(old: Config, new: Config) -> list[str]:
    """Plain names of the changed settings that take effect only after a restart."""
    return [NAMES.get(name, name) for name in sorted(changed(old, new) & RESTART)]


def stale_problems(old: Config, new: Config, *, key_changed: bool) -> set[str]:
    names = changed(old, new) | ({"key"} if key_changed else set())
    return {kind for kind, causes in STALE_WHEN.items() if names & causes}


def check(config: Config, where: str = "Settings") -> Config:
    """Everything desktop.config checks (ranges, the server address), and that every model path given exists."""
    _check_address(config, where)
    config = validate(config, where)
    llm, speech = config.llm, config.speech
    if llm.provider == "local" and llm.local_model_path and not Path(llm.local_model_path).is_file():
        raise ConfigError(f"{where}: the embedded model file {llm.local_model_path} does not exist; pick a .gguf file")
    try:
        if speech.voice_path:
            check_voice_files(speech.voice_path)
        if speech.asr_model_path:
            check_model_dir(speech.asr_model_path)
    except ModelError as error:
        raise ConfigError(f"{where}: {error}") from None
    return config


def _check_address(config: Config, where: str) -> None:
    """The server address as desktop.config checks it, in the dialog's words rather than the file's keys."""
    provider = provider_named(config.llm.provider)
    if provider is not None and provider.over_http:
        check_url(base_url_for(config.llm), where, "the server address")


def try_connection(config: Config, key: Secret | None) -> tuple[bool, str]:
    """Ask the provider for its models (blocking; run it in a worker): whether it answers and takes the key."""
    if config.llm.provider == "local":
        return True, "The embedded model needs no connection."
    provider = provider_named(config.llm.provider)
    if provider is not None and provider.local_server:
        return check_server(config.llm)
    url = endpoint(config.llm.base_url, "models")
    shown = redact_url(config.llm.base_url)
    headers = {"Authorization": f"Bearer {key.reveal()}"} if key else {}
    try:
        route = proxy_for(url)
        response = httpx.get(
            url, headers=headers, timeout=config.llm.connect_timeout, proxy=route.proxy, trust_env=False
        )
    except (ProxySettingError, httpx.InvalidURL) as error:
        return False, f"The proxy setting cannot be used: {error}"
    except httpx.HTTPError as error:
        return False, f"{shown} cannot be reached ({type(error).__name__}); check the server address and the server"
    return answered(response.status_code, redact_url(url), shown, key_sent=key is not None)
