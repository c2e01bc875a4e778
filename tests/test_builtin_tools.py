"""The built-in tools keep to their side-effect contracts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from adapters.contract import CancelSignal
from desktop.builtin_tools import ToolInputError, current_time_tool, take_note_tool

pytestmark = pytest.mark.anyio


async def test_current_time_reads_the_injected_clock() -> None:
    tool = current_time_tool(lambda: dt.datetime(2026, 11, 29, 10, 30, tzinfo=dt.UTC))
    assert await tool.body("{}", CancelSignal()) == "Sunday 29 November 2026, 10:30 UTC"
    assert not tool.side_effects


async def test_take_note_appends_to_its_own_file_only(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    tool = take_note_tool(notes)
    await tool.body('{"text": "buy  milk", "path": "/etc/passwd"}', CancelSignal())
    await tool.body('{"text": "call Ana"}', CancelSignal())
    assert _notes(notes) == ["buy milk", "call Ana"]
    assert tool.side_effects
    assert _names(tmp_path) == ["notes.txt"]


def _notes(path: Path) -> list[str]:
    return [line.split("\t")[1] for line in path.read_text().splitlines()]


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("raw", ["not json", "[1]", '{"text": "   "}'])
async def test_take_note_rejects_bad_arguments(tmp_path: Path, raw: str) -> None:
    with pytest.raises(ToolInputError):
        await take_note_tool(tmp_path / "n.txt").body(raw, CancelSignal())
    assert _names(tmp_path) == []
