"""SPEC §6 on real devices: the assistant's voice loops from `speaker` back into `micwire` (module-loopback).
AEC on: it never barges in on itself; AEC off: protection is reported lost (push-to-talk only), and it still
never barges in on itself; a user talking over it is caught within 150 ms."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Sequence

import numpy as np
import pytest

from adapters.runtime.clock import SystemClock
from audio.capture import Microphone
from audio.events import EchoProtectionLost, OnsetPaused
from audio.player import Player
from tests.audio import pulse as pulse_kit
from tests.audio.conftest import USER_WAV
from tests.audio.scenario import Rig, real_wait, speak_and_listen
from tests.audio.signals import db, report

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
STALL_S = 0.4  # test_d: how long the sound server stops


@pytest.fixture
async def loopback(pulse: pulse_kit.Pulse) -> AsyncIterator[None]:
    module = pulse.load("module-loopback", f"source={pulse.speaker}.monitor", f"sink={pulse.micwire}",
                        "latency_msec=20", "source_dont_move=true", "sink_dont_move=true")  # fmt: skip
    # the echo reaches the microphone ~9 dB below the played level (70 % on PulseAudio's cubic scale): loud
    # loudspeaker echo, while a user close to the microphone is louder than it
    pulse_kit.pactl("set-source-volume", f"{pulse.speaker}.monitor", "70%")
    try:
        yield
    finally:
        pulse.unload(module)
        pulse_kit.pactl("set-source-volume", f"{pulse.speaker}.monitor", "100%")


async def _rig() -> Rig:
    clock = SystemClock()
    player = Player("pulse")
    mic = Microphone("pulse")
    await player.start()
    await mic.start()

    async def inject_user() -> None:
        _PLAYING.append(pulse_kit.play_into(pulse_kit.MICWIRE, USER_WAV))

    return Rig(clock, mic, player, inject_user, real_wait(clock))


_PLAYING: list[subprocess.Popen[bytes]] = []


async def _close(rig: Rig) -> None:
    await rig.sink.close()
    while _PLAYING:
        await asyncio.to_thread(_PLAYING.pop().wait, 30)


async def test_c_no_self_barge_in_with_aec_and_the_user_is_caught(
    loopback: None, assistant_speech: np.ndarray, user_speech: np.ndarray
) -> None:
    speech = np.concatenate([assistant_speech, assistant_speech])  # ~11.5 s of the assistant talking
    rig = await _rig()
    try:
        on = await speak_and_listen(rig, speech, aec=True, seconds=len(speech) / 16000)
    finally:
        await _close(rig)
    assert on.barge_ins == [], on.events
    rig = await _rig()
    try:
        off = await speak_and_listen(rig, assistant_speech, aec=False, seconds=4.0, stop_on_barge_in=True)
    finally:
        await _close(rig)
    assert off.barge_ins == [], "without echo cancellation the echo path still tells the assistant's own voice"
    assert any(isinstance(e, EchoProtectionLost) for e in off.events), "and echo protection is reported lost"
    rig = await _rig()
    try:
        user = await speak_and_listen(rig, speech, aec=True, seconds=5.0, user_at=2.5, stop_on_barge_in=True)
    finally:
        await _close(rig)
    onset = user.onset_of(user_speech)
    fired = [b for b in user.barge_ins if b.detected_at >= onset - 0.05]
    assert fired, user.events
    assert all(b.detected_at >= onset - 0.05 for b in user.barge_ins), "no barge-in before the user spoke"
    audio_delay = (fired[0].detected_at - onset) * 1000
    wall_delay = (user.received_at[id(fired[0])] - onset) * 1000
    onsets = [e.at for e in user.events if isinstance(e, OnsetPaused) and e.at >= onset - 0.05]
    silenced = (min([*onsets, fired[0].detected_at]) - onset) * 1000
    raw, clean = on.raw_audio(), on.clean_audio()
    erle = db(raw[16000:]) - db(clean[16000 : len(raw)])
    report(f"real loopback: ERLE {erle:.1f} dB, output paused {silenced:.0f} ms and barge-in {audio_delay:.0f} ms "
           f"after onset in audio time, {wall_delay:.0f} ms on the wall clock (ADC time of the onset -> event "
           "handled)")  # fmt: skip
    assert silenced <= 150.0, f"the output pauses on the user's onset; after it: {_told(user.events, onset)}"
    # the VAD confirms within the user's first word (voiced for its first 250 ms): 112-134 ms on an idle machine,
    # 191 ms in one clean run with PortAudio underruns (the canceller's reference thrown off for a moment)
    assert audio_delay <= 250.0


async def test_d_a_sound_server_that_stalls_while_it_speaks_is_no_barge_in(
    loopback: None, assistant_speech: np.ndarray
) -> None:
    """PulseAudio stops for a moment while the assistant speaks (a busy machine; test_c once failed so in CI): the
    player underruns, and the echo of all it plays after that comes up to the stall's length later than its
    stamps say. The late echo must not be taken for the user (it was 5 times in 22 such stalls before the echo
    path was told of underruns). For the 9 s of speech after the stall module-loopback drifts back toward its
    20 ms and jumps 10 ms either way, which the echo path lost 6-8 s after the stall in 2 of ~40 runs and in CI
    before it followed the echo by its loudness (docs/decisions/0002). Stops this session's server: not for a
    server shared with a desktop or another test session playing at the time."""
    speech = np.concatenate([assistant_speech, assistant_speech])  # ~11.5 s
    rig = await _rig()
    server = pulse_kit.server_pid()
    assert server is not None

    async def stall() -> None:
        os.kill(server, signal.SIGSTOP)
        try:
            await asyncio.sleep(STALL_S)  # the stall itself, not a wait for an outcome
        finally:
            os.kill(server, signal.SIGCONT)

    rig = dataclasses.replace(rig, inject_user=stall)
    try:
        outcome = await speak_and_listen(rig, speech, aec=True, seconds=len(speech) / 16000, user_at=2.5)
        assert isinstance(rig.sink, Player)
        underflows = rig.sink.underflows
    finally:
        await _close(rig)
    assert underflows > 0, "the stall made the output underrun"
    assert outcome.barge_ins == [], _told(outcome.events, outcome.raw[0].at)


def _told(events: Sequence[object], onset: float) -> list[str]:
    """The listener's facts as ms from the user's onset, for reading a failure (a rare one: 1 of ~24 runs)."""
    times = [(type(e).__name__, getattr(e, "at", None)) for e in events]
    return [f"{name} {(at - onset) * 1000:+.0f}" for name, at in times if isinstance(at, float)]
