"""The state chip follows the engine: thinking, a live retry countdown, speaking, ready; failures in plain words."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from adapters.runtime.clock import SystemClock
from desktop.config import Config, LlmConfig
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from engine.events import State
from tests.desktop.helpers import MemoryKeyring, running_window, until
from tests.fault_behaviours import rate_limited, rate_limited_until, text_stream, unauthorized
from tests.fault_server import FaultServer


def _session(tmp_path: Path, fault_server: FaultServer) -> Session:
    clock = SystemClock()
    config = replace(Config(), llm=LlmConfig(provider="openai", base_url=fault_server.base_url, model="fault-1"))
    return Session(config, journal_dir=tmp_path, voice=SimulatedVoice(clock, ms_per_word=20), clock=clock)


def test_rate_limit_shows_a_live_countdown_then_speaking_then_ready(
    run: Any, tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.push(rate_limited("2"), text_stream("All good now, thanks for waiting."))
    session = _session(tmp_path, fault_server)
    shown: list[str] = []

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await until(lambda: window.chip.text() == "Ready", what="started up")
            window.chip.shown.connect(shown.append)
            assert session.send_text("Hello?")
            await until(lambda: "Retrying in 2.0 s (rate limited)" in shown, what="countdown starts at 2.0 s")
            await until(lambda: "Speaking" in shown, within=5, what="speaking after the retry")
            await until(lambda: window.chip.text() == "Ready", what="ready")
            bubble = window.transcript_model.assistant(1)
            assert bubble is not None
            assert bubble.heard == "All good now, thanks for waiting."
            trace = window.trace.turns[1]
            assert trace.outcome == "completed"
            assert trace.retries == ["retry 1 after 2000 ms"]
            assert trace.attempts == ["attempt 1 failed: RATE_LIMITED · HTTP 429"]

    run(scenario())
    countdown = [
        float(m[1]) for text in shown if (m := re.fullmatch(r"Retrying in (\d+\.\d) s \(rate limited\)", text))
    ]
    assert countdown[0] == 2.0
    assert countdown == sorted(countdown, reverse=True)
    assert len(countdown) >= 10  # it ticked (every 100 ms over 2 s), it did not sit still
    assert countdown[-1] <= 0.5
    assert shown[0] == "Thinking"
    order = [shown.index(s) for s in ("Thinking", "Retrying in 2.0 s (rate limited)", "Speaking")]
    assert order == sorted(order)
    assert shown[-1] == "Ready"


def test_a_refused_key_fails_the_turn_in_plain_words_with_a_banner(
    run: Any, tmp_path: Path, fault_server: FaultServer, memory_keyring: MemoryKeyring
) -> None:
    memory_keyring.set_password("parley", "llm-api-key", "sk-test-0123456789abcdefWXYZ")
    fault_server.push(unauthorized())
    session = _session(tmp_path, fault_server)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            session.send_text("Hello?")
            await until(lambda: "auth" in window.banners.banners, what="auth banner")
            assert window.chip.text() == "Failed: The API key was refused"
            assert "API key was refused" in window.banners.banners["auth"].label.text()
            bubble = window.transcript_model.assistant(1)
            assert bubble is not None
            assert bubble.failed
            assert bubble.note == "Failed: The API key was refused"

    run(scenario())
    assert len(fault_server.requests) == 1  # AUTH is never retried


def test_a_retry_after_beyond_the_cap_says_when_to_come_back(
    run: Any, tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.push(rate_limited_until(60))
    session = _session(tmp_path, fault_server)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            session.send_text("Hello?")
            await until(lambda: window.chip.text().startswith("Failed"), what="failed")
            assert re.fullmatch(
                r"Failed: The provider asked us to wait (59|60) s; try again after that", window.chip.text()
            )
            await until(lambda: window.chip.state is State.IDLE)
            assert window.chip.text().startswith("Failed")  # stays until the next turn

    run(scenario())
