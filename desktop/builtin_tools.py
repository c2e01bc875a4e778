"""The built-in tools: `current_time` (no side effects) and `take_note` (appends to one notes file).

`take_note` writes only to the notes file it was built with; nothing from the model is ever
used as a path.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

from adapters.contract import CancelSignal, ToolSpec
from adapters.runtime.private_files import append_private_text
from adapters.runtime.workers import run_blocking
from engine.tools import Tool

MAX_NOTE_CHARS = 2000


class ToolInputError(ValueError):
    """The model's arguments don't fit the tool's schema."""


def _arguments(raw: str) -> dict[str, object]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as error:
        raise ToolInputError(f"arguments are not valid JSON: {error.msg}") from None
    if not isinstance(value, dict):
        raise ToolInputError("arguments must be a JSON object")
    return value


def current_time_tool(now: Callable[[], dt.datetime] = lambda: dt.datetime.now().astimezone()) -> Tool:
    async def body(arguments: str, signal: CancelSignal) -> str:
        _arguments(arguments)
        return now().strftime("%A %d %B %Y, %H:%M %Z").strip()

    spec = ToolSpec("current_time", "The current local date and time.", '{"type": "object", "properties": {}}')
    return Tool(spec, body, timeout_s=2.0)


def take_note_tool(notes_file: Path) -> Tool:
    """Appends one line per note; the write runs in a thread and is the only side effect."""

    async def body(arguments: str, signal: CancelSignal) -> str:
        text = str(_arguments(arguments).get("text", "")).strip()
        if not text:
            raise ToolInputError('a note needs a non-empty "text"')
        line = " ".join(text.split())[:MAX_NOTE_CHARS]
        stamped = f"{dt.datetime.now().isoformat(timespec='seconds')}\t{line}\n"
        await run_blocking(lambda: append_private_text(notes_file, stamped))  # 0600 in 0700 folders
        return f"noted: {line}"

    schema = '{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}'
    spec = ToolSpec("take_note", "Save a short note for the user.", schema)
    return Tool(spec, body, timeout_s=5.0, side_effects=True)
