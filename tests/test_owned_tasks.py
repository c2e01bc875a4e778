"""open_tasks: a child's CancelledError that nothing asked for is a failure, never a quiet cancel of the group
and of the work that hosts it (the session's engine once closed and reopened mid-turn that way)."""

from __future__ import annotations

import asyncio

import anyio
import anyio.lowlevel
import pytest

from adapters.contract.tasks import StrayCancellation, open_tasks

pytestmark = pytest.mark.anyio


async def _raises_cancelled() -> None:
    await anyio.lowlevel.checkpoint()
    raise asyncio.CancelledError  # as a model call stopped by a signal, outside any cancelled scope


async def test_a_stray_cancel_is_reported_and_the_host_and_the_other_work_go_on() -> None:
    failures: list[tuple[str, Exception]] = []
    sibling_done = anyio.Event()

    async def sibling() -> None:
        await anyio.sleep(0.05)
        sibling_done.set()

    async with open_tasks(on_error=lambda name, error: failures.append((name, error))) as tasks:
        tasks.start(_raises_cancelled, name="stray")
        tasks.start(sibling, name="sibling")
        await sibling_done.wait()  # the host's own wait is not cancelled by the stray
        assert not tasks.cancelled
    assert [name for name, _ in failures] == ["stray"]
    assert isinstance(failures[0][1], StrayCancellation)
    assert isinstance(failures[0][1].__cause__, asyncio.CancelledError)


async def _group_with_a_stray() -> None:
    async with open_tasks() as tasks:
        tasks.start(_raises_cancelled, name="stray")
        await anyio.sleep(1)


async def test_without_a_handler_a_stray_cancel_is_raised_when_the_group_closes() -> None:
    with pytest.raises(StrayCancellation):
        await _group_with_a_stray()


async def _waits(started: anyio.Event) -> None:
    started.set()
    await anyio.sleep_forever()


async def test_a_real_cancel_is_no_failure() -> None:
    failures: list[str] = []
    started = anyio.Event()
    async with open_tasks(on_error=lambda name, _error: failures.append(name)) as tasks:
        tasks.start(_waits, started, name="waits")
        await started.wait()
        tasks.cancel()
    assert failures == []


async def test_a_cancel_from_outside_still_cancels_the_children() -> None:
    failures: list[str] = []
    started = anyio.Event()
    with anyio.CancelScope() as outer:
        async with open_tasks(on_error=lambda name, _error: failures.append(name)) as tasks:
            tasks.start(_waits, started, name="waits")
            await started.wait()
            outer.cancel()
            await anyio.sleep_forever()
    assert outer.cancelled_caught
    assert failures == []


async def test_raising_cancelled_inside_a_cancelled_group_is_no_stray() -> None:
    """A turn cancelled before its first task ran: the task sees the signal and raises before anyio delivers the
    group's cancel at its next await. That is the cancel asked for, not a failure."""
    failures: list[str] = []
    async with open_tasks(on_error=lambda name, _error: failures.append(name)) as tasks:
        tasks.cancel()
        tasks.start(_raises_at_once, name="sees-its-signal")
    assert failures == []


async def _raises_at_once() -> None:
    raise asyncio.CancelledError
