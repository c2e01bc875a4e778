"""Issue 38 items 2 and 4: one writer per journal, and a write that fails (a full disk) leaves whole lines only,
with one clear error naming the file; every complete event is kept."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from engine.conversation import EngineParts, open_conversation
from engine.inbox import UserInput
from engine.invariants import violations
from engine.journal import Journal, JournalBusy, JournalWriteFailed, read_events
from engine.journal_lock import held, writer_lock
from engine.testing import FakeLlm, FakeSpeechOutput, VirtualClock, reply
from tests.journal_holder import held_elsewhere
from tests.small_disk import fill, small_disk

pytestmark = pytest.mark.anyio


class FullAfter:
    """A disk that takes `budget` more bytes, then writes part of a line and says ENOSPC."""

    def __init__(self) -> None:
        self.budget: int | None = None

    def __call__(self, fd: int, data: memoryview) -> int:
        if self.budget is None:
            return os.write(fd, data)
        if self.budget <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        taken = os.write(fd, data[: self.budget])
        self.budget -= taken
        return taken


def test_a_failed_write_is_cut_back_to_whole_lines_and_said_once(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    disk = FullAfter()
    journal = Journal(path, write=disk)
    journal.append("turn/start", turn=1, source="text")
    journal.append("user/message", turn=1, text="hello")
    disk.budget = 10  # the next line is torn after 10 bytes
    with pytest.raises(JournalWriteFailed) as caught:
        journal.append("user/message", turn=1, text="a line the disk cannot take")
    message = str(caught.value)
    assert message.startswith(f"cannot write {path}: no space left on device (ENOSPC)")
    assert "\n" not in message
    assert path.read_text().count("\n") == 2
    assert [e["seq"] for e in read_events(path)] == [1, 2] == [e["seq"] for e in journal.events]
    disk.budget = None  # space again: still refused, so no event is missing from what follows
    with pytest.raises(JournalWriteFailed):
        journal.append("turn/end", turn=1, outcome="aborted")
    journal.close()
    with Journal(path) as reopened:
        assert not reopened.recovered.torn_line_dropped
        assert reopened.recovered.turns_closed == (1,)
    assert violations(read_events(path)) == []


async def test_a_turn_whose_journal_fills_up_ends_the_conversation_with_that_error(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    disk = FullAfter()
    clock = VirtualClock()
    journal = Journal(path, wall=clock.now, write=disk)
    parts = EngineParts(FakeLlm([reply("One."), reply("Two.")], clock=clock), FakeSpeechOutput(clock), journal, clock)

    async def converse() -> None:
        async with clock.autojump(), open_conversation(parts) as conversation:
            conversation.submit(UserInput("first"))
            while not any(e["type"] == "turn/end" for e in journal.events):
                await clock.sleep(0.1)
            disk.budget = 160  # turn 2 starts on the record, its request does not fit
            conversation.submit(UserInput("second"))
            while journal.failed is None:
                await clock.sleep(0.1)

    with pytest.raises(JournalWriteFailed, match="ENOSPC"):
        await converse()
    journal.close()
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"", "the file ends with a whole line"
    events = read_events(path)
    assert len(events) == len(lines) - 1
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["completed"]
    with Journal(path) as reopened:  # the torn turn is closed on the next open, as after a crash
        assert reopened.recovered.turns_closed == (2,)
    assert violations(read_events(path)) == []


def test_a_real_full_disk_leaves_whole_lines_and_names_the_file(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", size_kb=64) as disk:
        path = disk / "conversation" / "journal.jsonl"
        journal = Journal(path)
        filler = fill(disk, leave=8192)  # tmpfs gives files whole 4 KiB pages
        written, caught = 0, None

        def append() -> None:
            journal.append("user/message", turn=1, text=f"words that fill the disk, line {written + 1} " * 3)

        for _ in range(10_000):
            try:
                append()
            except JournalWriteFailed as error:
                caught = error
                break
            written += 1
        assert caught is not None, "the disk never filled up"
        assert f"cannot write {path}: no space left on device (ENOSPC)" in str(caught)
        journal.close()
        assert written > 0
        assert len(read_events(path)) == written == path.read_bytes().count(b"\n")
        filler.unlink()
        with Journal(path) as reopened:
            assert len(reopened.events) == written
            reopened.append("session/start", version="x")


def test_a_second_process_is_refused_and_the_first_keeps_its_record(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with held_elsewhere(path) as holder:
        before = path.read_bytes()
        with pytest.raises(JournalBusy) as caught:
            Journal(path)
        assert str(caught.value) == (
            f"{path} is open in another Parley (process {holder.pid}); close that one first, or use another folder"
        )
        assert path.read_bytes() == before, "the refused one wrote nothing, closed no turn"
    events = read_events(path)
    assert [e["type"] for e in events] == ["turn/start", "user/message", "turn/end"]
    assert violations(events) == []
    with Journal(path):  # free again once the first has gone
        pass


def test_within_one_process_the_lock_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with writer_lock(path):
        with Journal(path):
            assert held(path)
        assert held(path), "the outer hold outlives the journal"
    assert not held(path)
