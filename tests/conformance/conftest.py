"""Parametrise the LLM suite over every enrolled harness and only the cases it can provoke (no skips)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.conformance.harnesses import HARNESSES
from tests.conformance.llm_harness import LlmHarness


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "harness_name" not in metafunc.fixturenames:
        return
    kinds = getattr(metafunc.function, "llm_cases", None)
    params = []
    for name, factory in HARNESSES.items():
        probe = factory()
        for kind in kinds or ("-",):
            if kind == "-" or probe.supports(kind):
                params.append(pytest.param(name, kind, id=f"{name}-{kind}"))
    metafunc.parametrize(("harness_name", "case_kind"), params)


@pytest.fixture
async def harness(harness_name: str) -> AsyncIterator[LlmHarness]:
    instance = HARNESSES[harness_name]()
    try:
        yield instance
    finally:
        await instance.aclose()
