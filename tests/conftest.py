"""Shared test set-up: asyncio through anyio's pytest plugin."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.fault_server"]  # the `fault_server` fixture


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
