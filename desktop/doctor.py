"""`parley devices` and `parley doctor`: what this machine offers Parley, one line per check with the fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from adapters.asr.whisper import check_model_dir, default_model_dir
from adapters.llm.local import DEFAULT_DISTRIBUTION
from adapters.llm.openai_compat import endpoint
from adapters.llm.proxy import ProxySettingError, proxy_for, without_credentials
from adapters.llm.secret import MalformedKey, load_api_key, redact_url
from adapters.runtime.model_files import ModelError, find_in_distribution
from adapters.tts.piper_voice import check_voice_files, default_voice_path
from audio.events import AudioError
from audio.portaudio import list_devices, resolve_device
from audio.sound_server import FRONT, ServerDevice, server_devices
from audio.vad import SileroModel
from desktop.config import Config
from desktop.providers.checks import answered, check_server
from desktop.providers.table import base_url_for, provider_named


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.name}: {self.detail}"


def devices_table(server: Callable[[], list[ServerDevice]] = server_devices) -> str:
    """Every PortAudio device with its index, for `input_device` / `output_device` in the config, then the sound
    server's own devices (reached through PortAudio's 'pulse' device) with the setting that names each."""
    try:
        devices = list_devices()
    except AudioError as error:
        return str(error)
    if not devices:
        return "no audio devices found: connect a microphone and speakers, or start PulseAudio/PipeWire"
    rows = [f"{'idx':>3}  {'in':>2} {'out':>3}  {'rate':>6}  name (host API)"]
    for d in devices:
        mark = ("*" if d.default_input else " ") + ("*" if d.default_output else " ")
        rows.append(
            f"{d.index:>3}  {d.inputs:>2} {d.outputs:>3}  {d.default_rate:>6.0f}  {d.name} ({d.host_api}) {mark}"
        )
    rows.append("(* = default input, default output)")
    named = [d for d in server() if not d.monitor] if any(d.name == FRONT for d in devices) else []
    if named:
        rows += ["", "On the sound server (the setting names one as pulse:NAME):"]
        rows += [f"  {d.kind:<6}  {d.setting}  ({d.description})" for d in named]
    return "\n".join(rows)


def doctor(config: Config) -> list[Check]:
    checks: list[Callable[[Config], Check]] = [_asr, _voice, _llm, _vad, _devices, _echo, _proxy, _provider]
    return [check(config) for check in checks]


def _guard(name: str, probe: Callable[[], str]) -> Check:
    try:
        return Check(name, True, probe())
    except (ModelError, AudioError, OSError, ValueError) as error:
        return Check(name, False, str(error))


def _asr(config: Config) -> Check:
    path = config.speech.asr_model_path or default_model_dir()
    return _guard("speech recognition model", lambda: str(check_model_dir(path)))


def _voice(config: Config) -> Check:
    path = config.speech.voice_path or default_voice_path()
    return _guard("Piper voice", lambda: f"{check_voice_files(path)[0]} ({check_voice_files(path)[1]} Hz)")


def _llm(config: Config) -> Check:
    if config.llm.local_model_path:
        path = Path(config.llm.local_model_path)
        return Check("local LLM", path.is_file(), str(path) if path.is_file() else f"{path} does not exist")
    return _guard("local LLM", lambda: str(find_in_distribution(DEFAULT_DISTRIBUTION, "*.gguf")))


def _vad(config: Config) -> Check:
    return _guard("voice activity detector", lambda: (SileroModel(), "Silero VAD loaded")[1])


def _devices(config: Config) -> Check:
    def probe() -> str:
        devices = list_devices()
        inputs, outputs = sum(d.inputs > 0 for d in devices), sum(d.outputs > 0 for d in devices)
        if not inputs or not outputs:
            raise OSError(f"{inputs} input and {outputs} output devices: connect a microphone and speakers")
        wanted = {"input": config.audio.input_device, "output": config.audio.output_device}
        chosen = [  # a configured device must exist (the default is whatever the system gives)
            f"{kind} {resolve_device(wanted[kind], kind).name!r}" for kind in ("input", "output") if wanted[kind]
        ]
        found = f"{inputs} input and {outputs} output devices (see `parley devices`)"
        return f"{found}; configured: {', '.join(chosen)}" if chosen else found

    return _guard("audio devices", probe)


def _echo(config: Config) -> Check:
    if not config.audio.echo_cancellation:
        return Check("echo cancellation", True, "switched off in the config (headset use)")
    try:
        from livekit import rtc

        rtc.AudioProcessingModule(echo_cancellation=True)
    except ImportError:
        return Check("echo cancellation", False, "the livekit package is missing: pip install livekit")
    return Check("echo cancellation", True, "WebRTC AEC available")


def _proxy(config: Config) -> Check:
    """The route to the provider, as the adapter will take it (the same function decides)."""
    if config.llm.provider == "local":
        return Check("LLM proxy", True, "none needed: the embedded model works offline")
    try:
        route = proxy_for(base_url_for(config.llm))
    except (ProxySettingError, httpx.InvalidURL) as error:
        return Check("LLM proxy", False, str(error))
    return Check("LLM proxy", True, f"{without_credentials(base_url_for(config.llm))} is reached {route.shown}")


def _provider(config: Config) -> Check:
    if config.llm.provider == "local":
        return Check("LLM provider", True, "embedded llama.cpp (offline)")
    provider = provider_named(config.llm.provider)
    if provider is not None and provider.local_server:
        return Check("LLM provider", *check_server(config.llm))
    url = endpoint(config.llm.base_url, "models")
    shown = redact_url(url)  # the URL's user info or query may hold a credential
    try:
        key = load_api_key()
    except MalformedKey as error:
        return Check("LLM provider", False, f"{shown} not tried: {error}")
    headers = {"Authorization": f"Bearer {key.reveal()}"} if key else {}
    try:
        route = proxy_for(url)
    except (ProxySettingError, httpx.InvalidURL):
        return Check("LLM provider", False, f"{shown} not tried: the proxy setting is unusable (see LLM proxy)")
    via, fix = (f" {route.shown}", "check the proxy and the base URL") if route.proxy else ("", "check the base URL")
    try:
        response = httpx.get(
            url, headers=headers, timeout=config.llm.connect_timeout, proxy=route.proxy, trust_env=False
        )
    except httpx.HTTPError as error:
        return Check("LLM provider", False, f"{shown} cannot be reached{via} ({type(error).__name__}); {fix}")
    status = response.status_code
    if status in (401, 403):
        return Check("LLM provider", False, f"{shown} refused the API key; set PARLEY_LLM_API_KEY or the keyring")
    if status == 407:
        return Check("LLM provider", False, f"{shown}: the proxy wants credentials; set {route.because} to "
                     "http://user:password@host:port")  # fmt: skip
    return Check("LLM provider", *answered(status, shown, shown, key_sent=key is not None))
