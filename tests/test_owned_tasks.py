"""open_tasks: a child's CancelledError that nothing asked for is a failure, never a quiet cancel of the group
and of the work that hosts it (the session's engine once closed and reopened mid-turn that way)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio
import anyio.lowlevel
import pytest

from adapters.contract import CancelSignal, Hook, stopped
from adapters.runtime.tasks import StrayCancellation, open_tasks

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


async def test_work_stopped_by_a_signal_as_its_scope_is_cancelled_ends_with_the_scope() -> None:
    """The window's pipeline died this way under load: a pause was dropped (its scopes cancelled, its signal set)
    just as the end-of-turn model's thread returned. The task resumed before the scope's cancellation reached it,
    saw the signal and raised a bare CancelledError, which the scope does not absorb (anyio absorbs only its own):
    a stray cancellation, and no more turns. `stopped()` lets the scope's own cancellation arrive first."""
    failures: list[tuple[str, Exception]] = []
    answered = asyncio.Event()
    signal = CancelSignal()
    scopes: list[anyio.CancelScope] = []
    ended: list[str] = []

    async def model_call() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await answered.wait()  # the thread's answer
            if signal.cancelled:
                await stopped()
            ended.append("answered")
        ended.append("scope left")

    async with open_tasks(on_error=lambda name, error: failures.append((name, error))) as tasks:
        tasks.start(model_call, name="end-of-turn-model")
        await until_true(lambda: bool(scopes))
        answered.set()  # the task's wait is over: its wake-up is queued...
        scopes[0].cancel()  # ...before the cancellation can reach it
        signal.set(Hook("the user went on"))
    assert failures == []
    assert ended == ["scope left"]


async def until_true(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(5):
        while not condition():
            await anyio.lowlevel.checkpoint()
