"""The durable, append-only record of everything (SPEC §7); the history is rebuilt from it alone.

Every event is one whole line or nothing: a write that fails (a full disk) is cut back to the last complete line
and the journal takes no more. A line that does not fit the journal's format (engine.journal_schema) is moved to
`journal.jsonl.quarantined` when the journal is opened for writing, and skipped by readers: the rest stays usable.
Only one process writes a journal at a time (engine.journal_lock).
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from adapters.runtime.private_files import PRIVATE_FILE, open_private, private_dir
from engine.journal_lock import JournalBusy, acquire, release
from engine.journal_schema import problem
from engine.redact import REDACTED, Redactor

__all__ = ["REDACTED", "Journal", "JournalBusy", "JournalCorrupt", "JournalWriteFailed", "read_events"]

Event = Mapping[str, Any]
Write = Callable[[int, memoryview], int]
_SYNC_TYPES = frozenset({"turn/start", "turn/end", "llm/retry", "session/start"})
QUARANTINE_SUFFIX = ".quarantined"


class JournalCorrupt(Exception):
    """The journal's path holds something that is not a file: there is nothing to read or append to."""


class JournalWriteFailed(OSError):
    """An event could not be written (a full disk, say): the file keeps every complete event before it."""

    def __init__(self, path: Path, error: OSError) -> None:
        super().__init__(error.errno, error.strerror, str(path))
        code = errno.errorcode.get(error.errno or 0, "")
        why = f"{(error.strerror or str(error)).lower()}{f' ({code})' if code else ''}"
        fix = "free some disk space" if error.errno in (errno.ENOSPC, errno.EDQUOT) else "check the disk"
        self.message = f"cannot write {path}: {why}; every complete event before it is kept ({fix})"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class BadLine:
    """A complete line that is not a journal event, and why (moved aside, never obeyed)."""

    number: int
    reason: str
    raw: bytes


@dataclass(frozen=True)
class Recovered:
    """What opening the journal had to repair after a crash or a hand edit."""

    torn_line_dropped: bool
    turns_closed: tuple[int, ...]
    quarantined: tuple[BadLine, ...] = ()


@dataclass(frozen=True)
class JournalFile:
    """A journal as read: its events, the raw lines they came from, the lines that did not fit, and the length of
    everything before a torn last line."""

    events: list[dict[str, Any]]
    lines: list[bytes]
    bad: tuple[BadLine, ...]
    good_bytes: int
    torn: bool


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every event that fits the format; a torn last line (a crash mid-write) and misfit lines are left out."""
    return read_journal(path).events


def read_journal(path: Path) -> JournalFile:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return JournalFile([], [], (), 0, False)
    if not stat.S_ISREG(mode):
        raise JournalCorrupt(f"{path} is not a file; move it aside to start afresh")
    data = path.read_bytes()
    *complete, tail = data.split(b"\n")
    parsed = [(n, raw) for n, raw in enumerate(complete, start=1) if raw.strip()]
    torn = bool(tail.strip()) and _json(tail) is _NOT_JSON
    if tail.strip() and not torn:
        parsed.append((len(complete) + 1, tail))
    return _sorted_out(parsed, len(data) - (len(tail) if torn else 0), torn)


_NOT_JSON = object()


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:  # not JSON, or not UTF-8
        return _NOT_JSON


def _sorted_out(parsed: list[tuple[int, bytes]], good_bytes: int, torn: bool) -> JournalFile:
    events: list[dict[str, Any]] = []
    lines: list[bytes] = []
    bad: list[BadLine] = []
    for number, raw in parsed:
        event = _json(raw)
        reason = "not JSON" if event is _NOT_JSON else problem(event)
        if reason is None and events and event["seq"] <= events[-1]["seq"]:
            reason = f"seq {event['seq']} does not follow {events[-1]['seq']}"
        if reason is not None:
            bad.append(BadLine(number, reason, raw))
            continue
        events.append(event)
        lines.append(raw)
    return JournalFile(events, lines, tuple(bad), good_bytes, torn)


def quarantine_path(journal: Path) -> Path:
    return journal.with_name(journal.name + QUARANTINE_SUFFIX)


def quarantine_note(journal: Path, bad: tuple[BadLine, ...]) -> str:
    """One line for the person: which lines did not fit, why, and where they went."""
    first = bad[0]
    more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
    return (
        f"{journal}: line {first.number} ({first.reason}){more} did not fit the journal's format; "
        f"moved to {quarantine_path(journal)}, the rest of the conversation is kept"
    )


class Journal:
    """Append-only JSON Lines, written on every event and fsync'd at turn boundaries and before backoff.

    The file is readable by its owner only (0600), and folders it creates are 0700. `write` is the one call that
    puts bytes on the disk (a test gives a failing one).
    """

    def __init__(
        self,
        path: Path,
        *,
        wall: Callable[[], float] = time.time,
        secrets: Iterable[str] = (),
        write: Write = os.write,
    ) -> None:
        self.path = path
        self._wall = wall
        self._redactor = Redactor(secrets)
        self._write_fn = write
        self._failed: JournalWriteFailed | None = None
        private_dir(path.parent)  # conversation text: 0600 in 0700 folders
        self._lock = acquire(path)
        try:
            self._fd = self._open()
        except BaseException:
            release(self._lock)
            raise
        self._size = os.fstat(self._fd).st_size
        self._seq = max((int(e["seq"]) for e in self.events), default=0)
        self._held: int | None = None  # a provisional turn whose events wait in `_pending` (see `hold`)
        self._pending: list[dict[str, Any]] = []
        self.recovered = Recovered(self.torn_line_dropped, self._close_open_turns(), self.quarantined)

    def _open(self) -> int:
        found = read_journal(self.path)
        self.events: list[dict[str, Any]] = found.events
        self.quarantined = found.bad
        self.torn_line_dropped = found.torn
        if found.bad:
            _set_aside(self.path, found)
        else:
            _truncate_to(self.path, found.good_bytes)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
        if hasattr(os, "fchmod"):
            os.fchmod(fd, PRIVATE_FILE)
        return fd

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
        """Write one event as one whole line (or raise JournalWriteFailed and leave the file as it was); the events
        of a held turn wait, in `events` only, until it is committed."""
        if self._failed is not None:
            raise self._failed
        event: dict[str, Any] = {"time": round(self._wall(), 6), "type": type_, **fields}
        if self._held is not None and fields.get("turn") == self._held:
            self._pending.append(event)  # in `events` for the turn's own prompt, on disk only once committed
            self.events.append(event)
            return event
        stored = self._store(event)
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
            self.events[index] = self._store(event)

    def withdraw(self) -> list[dict[str, Any]]:
        """Drop the held turn's events (they were never written); returns them."""
        pending, self._pending, self._held = self._pending, [], None
        self.events = [e for e in self.events if not any(e is p for p in pending)]
        return pending

    @property
    def held(self) -> int | None:
        return self._held

    def _store(self, event: dict[str, Any]) -> dict[str, Any]:
        """`event` with the next seq, redacted inside its values, checked, on disk as one whole line."""
        if self._failed is not None:
            raise self._failed
        redacted = self._redactor.value({"seq": self._seq + 1, **event})
        data = _encode(redacted)
        stored: dict[str, Any] = json.loads(data)
        reason = problem(stored)
        if reason is not None:
            raise ValueError(f"not a journal event ({reason}): {event['type']}")
        self._write(data, sync=event["type"] in _SYNC_TYPES)
        self._seq += 1
        return stored

    def _write(self, data: bytes, *, sync: bool) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[self._write_fn(self._fd, view) :]
            if sync:
                os.fsync(self._fd)
        except OSError as error:
            self._fail(error)
        self._size += len(data)

    def _fail(self, error: OSError) -> NoReturn:
        """Cut the file back to its last complete line; from now on every append raises the same error."""
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            pass  # nothing more can be done here; a reader drops a torn last line anyway
        self._failed = JournalWriteFailed(self.path, error)
        raise self._failed from error

    def sync(self) -> None:
        if self._failed is not None:
            raise self._failed
        try:
            os.fsync(self._fd)
        except OSError as error:
            self._failed = JournalWriteFailed(self.path, error)
            raise self._failed from error

    @property
    def failed(self) -> JournalWriteFailed | None:
        return self._failed

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Sync and close, then let go of the lock (also when the sync fails: that error is raised)."""
        if self._fd < 0:
            return
        try:
            if self._failed is None:
                self.commit()  # a held turn still open at the close is kept, as before holding existed
                try:
                    os.fsync(self._fd)
                except OSError as error:
                    self._failed = JournalWriteFailed(self.path, error)
                    raise self._failed from error
        finally:
            fd, self._fd = self._fd, -1
            os.close(fd)
            release(self._lock)


def _encode(event: dict[str, Any]) -> bytes:
    """One JSON line. A lone surrogate (a provider's `\\ud800` escape) cannot be UTF-8: that line is escaped, ASCII;
    a NaN or infinity is not JSON: it becomes null."""
    try:
        text = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(event), ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(json.loads(text), separators=(",", ":")).encode() + b"\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _set_aside(path: Path, found: JournalFile) -> None:
    """Misfit lines to the quarantine file (appended, exactly as they were), then the journal rewritten without
    them in one rename: a crash in between leaves the old journal, never half a new one."""
    side = quarantine_path(path)
    with open_private(side, "ab") as handle:
        handle.write(b"".join(line.raw + b"\n" for line in found.bad))
        os.fsync(handle.fileno())
    temporary = path.with_name(path.name + ".rewrite")
    try:
        with open_private(temporary, "wb") as handle:
            handle.write(b"".join(raw + b"\n" for raw in found.lines))
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


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
