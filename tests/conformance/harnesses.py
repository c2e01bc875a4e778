"""Every LLM adapter the conformance suite runs against; add a harness here to enrol an adapter."""

from __future__ import annotations

from collections.abc import Callable

from tests.conformance.harness_fake import FakeHarness
from tests.conformance.harness_local import LocalHarness
from tests.conformance.harness_openai import OpenAIHarness
from tests.conformance.llm_harness import LlmHarness

HARNESSES: dict[str, Callable[[], LlmHarness]] = {
    "fake": FakeHarness,
    "local": LocalHarness,
    "openai": OpenAIHarness,
}
