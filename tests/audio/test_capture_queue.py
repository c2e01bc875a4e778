"""The hand-over from PortAudio's thread: never blocks, bounded, drops the oldest and counts it."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from audio.capture import FrameQueue, Microphone
from audio.events import CaptureFailed
from audio.ports import Frame

pytestmark = pytest.mark.anyio


async def test_a_flood_from_another_thread_keeps_the_newest_and_counts_the_dropped() -> None:
    queue = FrameQueue(asyncio.get_running_loop(), maxlen=100)
    producer = threading.Thread(target=lambda: [queue.put(i) for i in range(150)])
    producer.start()
    await asyncio.to_thread(producer.join)
    assert queue.dropped == 50
    assert [await queue.get() for _ in range(100)] == list(range(50, 150))


async def test_a_waiting_reader_wakes_on_a_put_from_another_thread() -> None:
    queue = FrameQueue(asyncio.get_running_loop(), maxlen=4)
    reader = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    threading.Thread(target=queue.put, args=("frame",)).start()
    assert await asyncio.wait_for(reader, 5) == "frame"


def test_audio_lost_before_a_block_puts_it_at_its_own_stamp() -> None:
    """A full queue or an overflow loses audio: the next frame sits at its stamp, not on the sample clock that
    lost count (a 0.1 s loss would otherwise leave every later frame 0.1 s early, under the re-anchor limit)."""
    mic = Microphone()
    block = np.zeros(320, dtype=np.float32)
    first = mic._frame(block, 50.0)
    jittered = mic._frame(block, 50.02 + 0.003)
    after_loss = mic._frame(block, 50.04 + 0.1, lost=True)
    following = mic._frame(block, 50.16 + 0.002)
    assert first is not None
    assert jittered is not None
    assert after_loss is not None
    assert following is not None
    assert jittered.at == pytest.approx(50.02), "jitter stays on the sample clock"
    assert after_loss.at == pytest.approx(50.14), "after a loss the stamp is the truth"
    assert following.at == pytest.approx(50.16), "and the sample clock goes on from there"


async def test_a_busy_loop_is_not_a_silent_microphone() -> None:
    """The loop held longer than the stall time (a model's import) while the device went on delivering: the
    queued audio comes through and no failure is reported; a device that stops delivering still fails."""
    mic = Microphone(stall_s=0.2)
    mic._queue = queue = FrameQueue(asyncio.get_running_loop(), maxlen=100)
    stop = threading.Event()

    def device() -> None:
        k = 0
        while not stop.is_set() and k < 40:
            queue.put((np.zeros(320, dtype=np.float32), 1.0 + k * 0.02, False))
            k += 1
            stop.wait(0.02)

    feeder = threading.Thread(target=device)
    feeder.start()
    threading.Event().wait(0.5)  # the loop's thread busy for 0.5 s, as while importing llama.cpp
    items = []
    async for item in mic.frames():
        items.append(item)
        if isinstance(item, CaptureFailed):
            break
    stop.set()
    feeder.join()
    assert [type(i) for i in items[:40]] == [Frame] * 40, "the busy stretch lost nothing and failed nothing"
    assert isinstance(items[-1], CaptureFailed), "once the device went quiet, the microphone failed"


async def test_a_paced_queue_wakes_its_reader_once_enough_frames_are_queued() -> None:
    """A silent room: the reader wakes for every third frame, gets all three in order, and going back to one at a
    time hands over what is queued at once."""
    queue = FrameQueue(asyncio.get_running_loop(), maxlen=100)
    queue.pace(3)
    reader = await _waiting(queue)
    for k in range(2):
        await asyncio.to_thread(queue.put, k)
    assert not await _woken(reader), "two frames do not wake a reader paced at three"
    await asyncio.to_thread(queue.put, 2)
    assert await asyncio.wait_for(reader, 5) == 0
    assert [await queue.get(), await queue.get()] == [1, 2]
    reader = await _waiting(queue)
    for k in (3, 4):
        await asyncio.to_thread(queue.put, k)
    assert not await _woken(reader)
    queue.pace(1)
    assert await asyncio.wait_for(reader, 5) == 3, "frames queued before pace(1) are not stranded"
    assert await queue.get() == 4


async def _waiting(queue: FrameQueue) -> asyncio.Task[object]:
    """A reader waiting on the empty queue (one that comes to a queue with frames in it takes them at once)."""
    reader = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    return reader


async def _woken(reader: asyncio.Task[object]) -> bool:
    """Whether the reader was woken: a put's wake-up is queued on the loop before its to_thread returns, so a few
    passes of the loop run it."""
    for _ in range(3):
        await asyncio.sleep(0)
    return reader.done()
