"""Issue 38 item 11: saving settings keeps a symlinked config.toml a link and never writes the environment's
overrides into it; window.ini is private like config.toml; "Test connection" never swaps a mistyped key for the
stored one."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from desktop.config import Config, LlmConfig, load
from desktop.model.session import Session
from desktop.model.settings_io import save
from desktop.qt.window_state import WindowState
from engine.testing import FakeLlm
from tests.desktop.helpers import MemoryKeyring, running_window, until
from tests.fault_server import FaultServer

STORED = "sk-stored-ABCDEFGHIJKLMNOP"


@pytest.fixture
def lax_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_saving_a_symlinked_config_writes_through_the_link(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "parley.toml"
    dotfiles.parent.mkdir()
    dotfiles.write_text('[llm]\nmodel = "before"\n')
    link = tmp_path / "config" / "config.toml"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    save(replace(Config(), llm=LlmConfig(model="after")), link, env={})
    assert link.is_symlink()
    assert link.resolve() == dotfiles.resolve()
    assert load(dotfiles, env={}).llm.model == "after"


def test_environment_overrides_are_never_written_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[llm]\nmodel = "from-the-file"\nbase_url = "https://file.example/v1"\n')
    env = {"PARLEY_LLM_MODEL": "from-the-env", "PARLEY_INPUT_DEVICE": "env mic"}
    shown = load(path, env)  # what the window runs with and the dialog starts from
    assert (shown.llm.model, shown.audio.input_device) == ("from-the-env", "env mic")
    save(replace(shown, llm=replace(shown.llm, max_tokens=120)), path, env)
    on_file = load(path, env={})
    assert (on_file.llm.model, on_file.audio.input_device, on_file.llm.max_tokens) == ("from-the-file", "", 120)
    assert "from-the-env" not in path.read_text()
    save(replace(shown, llm=replace(shown.llm, model="typed-in-settings")), path, env)
    assert load(path, env={}).llm.model == "typed-in-settings", "a setting changed in the dialog is saved"


def test_window_ini_is_private_like_the_settings(qapp: Any, tmp_path: Path, lax_umask: None) -> None:
    config = tmp_path / "fresh" / "config.toml"
    WindowState(config).remember(zoom=1.1)
    ini = config.with_name("window.ini")
    assert stat.S_IMODE(ini.stat().st_mode) == 0o600
    assert stat.S_IMODE(ini.parent.stat().st_mode) == 0o700
    assert WindowState(config).zoom == 1.1


def test_test_connection_refuses_a_mistyped_key_instead_of_testing_the_stored_one(
    run: Any, qtbot: QtBot, tmp_path: Path, fault_server: FaultServer, memory_keyring: MemoryKeyring
) -> None:
    memory_keyring.set_password("parley", "llm-api-key", STORED)
    config = replace(Config(), llm=LlmConfig(provider="openai", base_url=fault_server.base_url, model="fault-1"))
    session = Session(config, journal_dir=tmp_path, llm=FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            window.open_settings()
            dialog = window.settings_dialog
            assert dialog is not None
            dialog.api_key.setText("sk-typed with a space")
            dialog.test_button.click()
            await until(lambda: dialog.test_result.text().startswith("✗"), what="refused")
            assert "typed here is not a usable key" in dialog.test_result.text()
            dialog.reject()

    run(scenario())
    assert fault_server.requests == [], "the stored key was not tried in its place"
