"""Shared test set-up: asyncio through anyio's pytest plugin; no proxy from the machine's environment."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["tests.fault_server"]  # the `fault_server` fixture


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests talk to servers on 127.0.0.1; a developer's corporate proxy must not sit in between (the proxy tests
    set their own variables)."""
    for name in list(os.environ):
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            monkeypatch.delenv(name)
