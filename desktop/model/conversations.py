"""Past conversations: the session folders under the journal directory, and the transcript each journal holds.

A conversation is one `<journal dir>/<time>/journal.jsonl`. Reading one never writes to it (a crashed turn is
closed only when the engine opens the journal to continue it), and shows what the journal keeps: the user's
words and, of each reply, exactly the words that were heard.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.contract import LlmFailure
from adapters.contract.llm import FailureCode
from desktop.model.facts import ReplyCut
from desktop.model.transcript_model import Bubble
from desktop.model.wording import cut_note, failure_reason, no_reply
from engine.journal import JournalCorrupt, open_turn_ids, read_journal

JOURNAL = "journal.jsonl"
TITLE_CHARS = 60
CLOSED = "Parley was closed before it answered"


@dataclass(frozen=True)
class ConversationInfo:
    """One past conversation, for the list: when it started and was last used (the list's order), its first words
    (`title`, shortened; `first` whole), how many turns."""

    path: Path
    started: float
    title: str
    turns: int
    readable: bool = True
    last_used: float = 0.0
    first: str = ""


def journals(base: Path) -> list[Path]:
    """Every session's journal under `base`, newest first (folder names are start times, so they sort)."""
    if not base.is_dir():
        return []
    found = [folder / JOURNAL for folder in base.iterdir() if (folder / JOURNAL).is_file()]
    return sorted(found, key=lambda path: (path.stat().st_mtime, path.parent.name), reverse=True)


def last_conversation(base: Path) -> Path | None:
    """The journal to reopen at start: the most recently written one that can be read."""
    return next((path for path in journals(base) if _usable(path) is not None), None)


def _usable(path: Path) -> list[dict[str, Any]] | None:
    """The events of a journal worth opening: None when it cannot be read or nothing in it fits the format (lines
    that do not fit, among ones that do, are moved aside when it is opened; the rest is kept)."""
    try:
        found = read_journal(path)
    except (JournalCorrupt, OSError, UnicodeDecodeError):
        return None
    return None if found.bad and not found.events else found.events


def list_conversations(base: Path) -> list[ConversationInfo]:
    return [describe(path) for path in journals(base)]


def describe(path: Path) -> ConversationInfo:
    used = path.stat().st_mtime  # what `journals` sorts by: the list is labelled with what orders it
    events = _usable(path)
    if events is None:
        title = f"{path.parent.name} (damaged, cannot be read)"
        return ConversationInfo(path, used, title, 0, False, used, title)
    started = next((float(e["time"]) for e in events if "time" in e), used)
    first = next((str(e["text"]) for e in events if e.get("type") == "user/message"), "")
    title = first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"
    turns = sum(1 for e in events if e.get("type") == "turn/start")
    return ConversationInfo(path, started, title or "(nothing said yet)", turns, True, used, first)


def when_used(moment: float, now: float) -> str:
    """When a conversation was last used, as a person says it: "Today 14:02", "Yesterday 09:15", "Monday 18:40"
    within the week, else the date ("3 Mar 14:02", with the year when it is not this one)."""
    at, today = dt.datetime.fromtimestamp(moment), dt.datetime.fromtimestamp(now).date()
    days = (today - at.date()).days
    clock = at.strftime("%H:%M")
    if days == 0:
        return f"Today {clock}"
    if days == 1:
        return f"Yesterday {clock}"
    if 1 < days < 7:
        return f"{at.strftime('%A')} {clock}"
    day = f"{at.day} {at.strftime('%b')}"
    return f"{day} {clock}" if at.year == today.year else f"{day} {at.year}, {clock}"


def bubbles_of(events: Sequence[Mapping[str, Any]]) -> list[Bubble]:
    """The transcript a journal holds, settled: heard words only (the unheard rest was never kept)."""
    bubbles: list[Bubble] = []
    sources: dict[int, str] = {}
    crashed = set(open_turn_ids(events))
    for event in events:
        kind, turn = event.get("type"), event.get("turn")
        if not isinstance(turn, int):
            continue
        at = float(event.get("time", 0.0))
        if kind == "turn/start":
            sources[turn] = str(event.get("source", "text"))
        elif kind == "user/message":
            bubbles.append(_user(turn, sources.get(turn, "text"), str(event["text"]), at))
        elif kind == "assistant/message":
            bubbles.append(_assistant(event, turn, at))
        elif kind == "turn/end":
            _ended(bubbles, turn, event, at)
    for turn in crashed:
        _note_unanswered(bubbles, turn, CLOSED)
    return bubbles


def _user(turn: int, source: str, text: str, at: float) -> Bubble:
    return Bubble("user", turn, source=source, text=text, settled=True, at=at)


def _assistant(event: Mapping[str, Any], turn: int, at: float) -> Bubble:
    text = str(event.get("text", ""))
    interrupted = bool(event.get("interrupted"))
    bubble = Bubble("assistant", turn, int(event.get("step", 1)), text=text, heard=text, settled=True, at=at)
    bubble.interrupted = interrupted
    cut = reply_cut(event)
    if interrupted:
        bubble.note = "Interrupted here: the rest was never heard, so it was not kept"
    elif cut is not None:
        bubble.note = cut_note(cut.limit_s)
    return bubble


def reply_cut(message: Mapping[str, Any]) -> ReplyCut | None:
    """A journal's assistant/message that stopped at the reply limit, not at its end (one interrupted is not:
    the rest was not heard anyway)."""
    turn, step = message.get("turn"), message.get("step", 1)
    if message.get("finish") != "length" or message.get("interrupted") or not isinstance(turn, int):
        return None
    limit = message.get("reply_limit_s")
    return ReplyCut(turn, int(step), float(limit) if isinstance(limit, int | float) else None)


def _ended(bubbles: list[Bubble], turn: int, event: Mapping[str, Any], at: float) -> None:
    if any(b.role == "assistant" and b.turn == turn for b in bubbles):
        return
    failure = event.get("failure")
    if isinstance(failure, Mapping) and failure.get("code"):
        bubble = Bubble("assistant", turn, 1, heard="", settled=True, failed=True, at=at)
        bubble.note = f"Failed: {failure_reason(failure_of(failure))}"
        bubbles.append(bubble)
    else:
        outcome = str(event.get("outcome", ""))
        _note_unanswered(bubbles, turn, CLOSED if event.get("recovered") else no_reply(outcome), at)


def failure_of(fields: Mapping[str, Any]) -> LlmFailure:
    """A failure as the journal wrote it (`failure_fields`), back as the engine had it."""
    after, status = fields.get("retry_after_ms"), fields.get("status")
    code = str(fields.get("code", ""))
    return LlmFailure(
        str(fields.get("message", "")),
        FailureCode(code) if code in FailureCode.__members__ else FailureCode.INTERNAL,
        int(status) if isinstance(status, int) and not isinstance(status, bool) else None,
        provider_retry_after_ms=int(after) if isinstance(after, int | float) else None,
    )


def _note_unanswered(bubbles: list[Bubble], turn: int, note: str, at: float = 0.0) -> None:
    if any(b.role == "assistant" and b.turn == turn for b in bubbles):
        return
    bubbles.append(Bubble("assistant", turn, 1, heard="", settled=True, interrupted=True, note=note, at=at))


def plain_text(bubbles: Iterable[Bubble]) -> str:
    """The conversation as plain text, for the clipboard: who said what, and where a reply was cut."""
    lines = []
    for bubble in bubbles:
        if bubble.role == "user":
            lines.append(f"You: {bubble.text}")
            continue
        heard = bubble.heard if bubble.heard is not None else bubble.text
        if heard:
            lines.append(f"Parley: {heard}{' [interrupted]' if bubble.interrupted else ''}")
        elif bubble.note:
            lines.append(f"Parley: ({bubble.note})")
    return "\n\n".join(lines) + ("\n" if lines else "")
