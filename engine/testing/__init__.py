"""First-class fakes and a virtual clock: every engine test and every harness builds on these."""

from engine.testing.clock import VirtualClock
from engine.testing.fake_llm import (
    Delay,
    Emit,
    FakeLlm,
    Hang,
    Raise,
    Stubborn,
    empty_reply,
    failure,
    reply,
    stream_failure,
    tool_reply,
)
from engine.testing.fake_speech import FakeSpeechOutput

__all__ = [
    "Delay",
    "Emit",
    "FakeLlm",
    "FakeSpeechOutput",
    "Hang",
    "Raise",
    "Stubborn",
    "VirtualClock",
    "empty_reply",
    "failure",
    "reply",
    "stream_failure",
    "tool_reply",
]
