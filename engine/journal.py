"""The durable, append-only record of everything (SPEC §7); the history is rebuilt from it alone."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.contract.private_files import open_private, private_dir

Event = Mapping[str, Any]
REDACTED = "[redacted]"
_SYNC_TYPES = frozenset({"turn/start", "turn/end", "llm/retry", "session/start"})


class JournalCorrupt(Exception):
    """A line other than the last cannot be read: the file was damaged, not merely torn by a crash."""


@dataclass(frozen=True)
class Recovered:
    """What opening the journal had to repair after a crash."""

    torn_line_dropped: bool
    turns_closed: tuple[int, ...]


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every complete event; a torn last line (a crash mid-write) is ignored."""
    events, _ = _read(path)
    return events


def _read(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Events and the byte length of the good prefix (everything but a torn tail)."""
    if not path.exists():
        return [], 0
    *complete, tail = path.read_bytes().split(b"\n")
    events: list[dict[str, Any]] = []
    good = 0
    for number, raw in enumerate(complete, start=1):
        good += len(raw) + 1
        if raw.strip():
            events.append(_parse(raw, path, number))
    if tail.strip():
        try:
            events.append(json.loads(tail))
            good += len(tail)
        except ValueError:
            pass  # the torn last line of a crash: dropped
    return events, good


def _parse(raw: bytes, path: Path, number: int) -> dict[str, Any]:
    try:
        event: dict[str, Any] = json.loads(raw)
    except ValueError:
        raise JournalCorrupt(f"{path}: line {number} is damaged; move the file aside to start afresh") from None
    return event


class Journal:
    """Append-only JSON Lines, flushed on every event and fsync'd at turn boundaries and before backoff.

    The file is readable by its owner only (0600), and folders it creates are 0700.
    """

    def __init__(
        self,
        path: Path,
        *,
        wall: Callable[[], float] = time.time,
        secrets: Iterable[str] = (),
    ) -> None:
        self.path = path
        self._wall = wall
        self._secrets = tuple(s for s in secrets if s)
        private_dir(path.parent)  # conversation text: 0600 in 0700 folders
        events, good = _read(path)
        self.torn_line_dropped = _truncate_to(path, good)
        self.events: list[dict[str, Any]] = events
        self._file = open_private(path, "ab")
        self._seq = max((int(e.get("seq", 0)) for e in events), default=0)
        self._held: int | None = None  # a provisional turn whose events wait in `_pending` (see `hold`)
        self._pending: list[dict[str, Any]] = []
        self.recovered = Recovered(self.torn_line_dropped, self._close_open_turns())

    def _close_open_turns(self) -> tuple[int, ...]:
        open_turns = open_turn_ids(self.events)
        for turn in open_turns:
            for call_id, step in unanswered_calls(self.events, turn).items():
                self.append(
                    "tool/result",
                    turn=turn,
                    step=step,
                    call_id=call_id,
                    code="ABORTED",
                    output="interrupted by a crash; side effects possible",
                )
            self.append("turn/end", turn=turn, outcome="aborted", recovered=True)
        return tuple(open_turns)

    def append(self, type_: str, **fields: Any) -> dict[str, Any]:
        event: dict[str, Any] = {"time": round(self._wall(), 6), "type": type_, **fields}
        if self._held is not None and fields.get("turn") == self._held:
            self._pending.append(event)  # in `events` for the turn's own prompt, on disk only once committed
            self.events.append(event)
            return event
        stored = self._write(event)
        self.events.append(stored)
        return stored

    def hold(self, turn: int) -> None:
        """Keep `turn`'s events off the disk until `commit` (or drop them with `withdraw`): a turn decided while
        the user may still go on leaves no trace if they do, as a speculation leaves none."""
        self.commit()
        self._held = turn

    def commit(self) -> None:
        """Write the held turn's events, in order, and stop holding it."""
        pending, self._pending, self._held = self._pending, [], None
        for event in pending:
            index = next(i for i, e in enumerate(self.events) if e is event)
            self.events[index] = self._write(event)

    def withdraw(self) -> list[dict[str, Any]]:
        """Drop the held turn's events (they were never written); returns them."""
        pending, self._pending, self._held = self._pending, [], None
        self.events = [e for e in self.events if not any(e is p for p in pending)]
        return pending

    @property
    def held(self) -> int | None:
        return self._held

    def _write(self, event: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        line = self._redact(json.dumps({"seq": self._seq, **event}, ensure_ascii=False, separators=(",", ":")))
        self._file.write(line.encode() + b"\n")
        self._file.flush()
        if event["type"] in _SYNC_TYPES:
            os.fsync(self._file.fileno())
        stored: dict[str, Any] = json.loads(line)
        return stored

    def sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._file.closed:
            self.commit()
            self.sync()
            self._file.close()

    def _redact(self, line: str) -> str:
        for secret in self._secrets:
            line = line.replace(secret, REDACTED)
        return line


def _truncate_to(path: Path, good: int) -> bool:
    """Cut a torn tail and make sure the file ends with a newline; True if anything was cut."""
    if not path.exists():
        return False
    with path.open("r+b") as handle:
        torn = handle.seek(0, os.SEEK_END) > good
        handle.truncate(good)
        if good:
            handle.seek(good - 1)
            if handle.read(1) != b"\n":
                handle.write(b"\n")
    return torn


def open_turn_ids(events: Iterable[Event]) -> list[int]:
    """Turns with a `turn/start` and no `turn/end`, in order."""
    started: dict[int, None] = {}
    for event in events:
        if event.get("type") == "turn/start":
            started[int(event["turn"])] = None
        elif event.get("type") == "turn/end":
            started.pop(int(event["turn"]), None)
    return list(started)


def unanswered_calls(events: Iterable[Event], turn: int) -> dict[str, int]:
    """Tool calls of `turn` that have no result yet, with their step."""
    calls: dict[str, int] = {}
    for event in events:
        if event.get("turn") != turn:
            continue
        if event.get("type") == "tool/call":
            calls[str(event["call_id"])] = int(event["step"])
        elif event.get("type") == "tool/result":
            calls.pop(str(event["call_id"]), None)
    return calls
