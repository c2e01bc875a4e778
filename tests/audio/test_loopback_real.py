"""Issue 12 on real devices: Parley's Piper replies on a PulseAudio speaker looped back into the microphone
(module-loopback at unity gain and -10 dB, 20/40/120 ms), the real listening chain armed. A long reply, a short
one ("Two."), one starting 200 ms after the user stopped talking over the one before: Parley never interrupts
itself; the user talking over a reply always does, the output paused within a few frames of their onset."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from tests.audio import pulse as pulse_kit
from tests.audio.loopback import (
    LONG,
    SHORT,
    Loopback,
    Tally,
    load_loopback,
    stall_loop,
    synthesize,
    unload_loopback,
)
from tests.audio.signals import report

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def replies() -> tuple[int, list[np.ndarray]]:
    return synthesize([LONG, SHORT])


@pytest.mark.timeout(90)
@pytest.mark.parametrize("gain_db", [0.0, -10.0])
@pytest.mark.parametrize("latency_ms", [20, 40, 120])
async def test_parley_never_hears_itself_and_the_user_always_interrupts(
    pulse: pulse_kit.Pulse, replies: tuple[int, list[np.ndarray]], latency_ms: int, gain_db: float
) -> None:
    rate, (long, short) = replies
    module = load_loopback(pulse, latency_ms, gain_db)
    rig = Loopback(rate)
    tally = Tally()
    try:
        await rig.start()
        tally.add(await rig.reply(long))
        tally.add(await rig.reply(short))
        tally.add(await rig.reply_after_barge_in(long, short, gap_s=0.2))
        tally.add((await rig.talk_over(long, after_s=2.5))[0])
    finally:
        await rig.close()
        unload_loopback(pulse, module)
    report(f"PulseAudio loopback {latency_ms} ms, {gain_db:g} dB: own barge-ins {len(tally.self_fired)}, "
           f"false onsets {len(tally.false_onsets)}, users caught {sum(tally.caught)}/{len(tally.caught)}, "
           f"stop_ms {tally.stop_ms}, protection lost {tally.lost}")  # fmt: skip
    assert tally.self_fired == [], "Parley interrupted itself"
    assert tally.caught == [True, True], "a user talking over Parley did not interrupt it"
    assert len(tally.stop_ms) == 2


@pytest.mark.timeout(90)
async def test_a_busy_event_loop_does_not_make_parley_hear_itself(
    pulse: pulse_kit.Pulse, replies: tuple[int, list[np.ndarray]]
) -> None:
    """As in the window: the loop once blocked for over two seconds (models loading), so the microphone's queue
    overflows by a fraction of a second, then its thread holds the GIL 30 ms of every 100 (painting) while replies
    play. Before, the lost audio left every later frame that much early (the echo path never found), or the loop's
    own wait was taken for a silent microphone."""
    rate, (long, short) = replies
    module = load_loopback(pulse, 40, 0.0)
    rig = Loopback(rate)
    tally = Tally()
    try:
        await rig.start()
        time.sleep(2.1)  # noqa: ASYNC251 - the loop blocked, the audio threads not: the queue holds 2 s, ~0.1 s is lost
        async with asyncio.TaskGroup() as group:
            stalling = group.create_task(stall_loop(0.03, 0.1))
            tally.add(await rig.reply(long))
            tally.add(await rig.reply(short))
            tally.add((await rig.talk_over(long, after_s=2.5))[0])
            stalling.cancel()
    finally:
        await rig.close()
        unload_loopback(pulse, module)
    report(f"PulseAudio loopback, busy loop: own barge-ins {len(tally.self_fired)}, false onsets "
           f"{len(tally.false_onsets)}, caught {tally.caught}, stop_ms {tally.stop_ms}, lost frames "
           f"{rig.listener.source.dropped}, underruns {rig.player.underflows}")  # fmt: skip
    assert rig.listener.source.dropped > 0, "the stall lost microphone frames, as in the window"
    assert tally.self_fired == [], "Parley interrupted itself"
    assert len(tally.false_onsets) <= 3, "its own voice paused it again and again (a stutter: dozens)"
    assert tally.caught == [True], "the user talking over Parley did not interrupt it"
