"""The echo path: learned while the assistant speaks and kept across replies; it tells a voice of the user's own
(unexplained sound) from the assistant's echo within a few 10 ms chunks, and assumes the worst until it knows."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pytest

from audio.echo_path import CHUNK, EchoPath
from audio.listen import ONSET_CHUNKS, ONSET_POWER
from audio.ports import RATE
from audio.wav import load_wav
from desktop.assets import fixture


def _speechlike(seconds: float, seed: int, phase: float = 0.0) -> np.ndarray:
    """Noise shaped like syllables: 4 Hz bursts with pauses, loud enough to be a voice (-20 dBFS)."""
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * RATE)) / RATE
    envelope = np.clip(np.sin(2 * np.pi * 4 * t + phase), 0, None) ** 2
    return (0.2 * envelope * rng.standard_normal(len(t))).astype(np.float32)


def _run(path: EchoPath, mic: np.ndarray, ref: np.ndarray, talking_from: int | None = None) -> list[float]:
    """Unexplained power per chunk; from sample `talking_from` on the VAD hears someone (nothing is learned)."""
    return [path.step(mic[i : i + CHUNK], ref[i : i + CHUNK], i / RATE,
                      quiet=talking_from is None or i < talking_from).unexplained
            for i in range(0, len(mic) - CHUNK + 1, CHUNK)]  # fmt: skip


def _echo(ref: np.ndarray, gain: float, delay_s: float) -> np.ndarray:
    lag = round(delay_s * RATE)
    return (gain * np.concatenate([np.zeros(lag, np.float32), ref[:-lag]])).astype(np.float32)


def test_the_path_is_learned_and_its_echo_is_explained_from_the_next_reply_on() -> None:
    path = EchoPath()
    reply = _speechlike(3.0, 1)
    _run(path, _echo(reply, 0.3, 0.06), reply)
    assert path.delay_chunks == 6
    assert np.allclose(10 * np.log10(path.gains), 20 * np.log10(0.3), atol=1.5)
    next_reply = _speechlike(2.0, 2)
    unexplained = _run(path, _echo(next_reply, 0.3, 0.06), next_reply)
    assert max(unexplained) < 1e-5, "the echo of the next reply is explained from its first chunk"


def test_a_voice_over_the_echo_is_unexplained_within_two_chunks() -> None:
    path = EchoPath()
    reply = _speechlike(4.0, 3)
    mic = _echo(reply, 0.5, 0.04)
    voice_at = round(3.0 * RATE)
    voice = _speechlike(1.0, 9, phase=np.pi)[: len(mic) - voice_at] * 0.5  # as loud as the echo, out of step
    mic[voice_at:] += voice
    rms = np.sqrt(np.mean(voice[: len(voice) // CHUNK * CHUNK].reshape(-1, CHUNK) ** 2, axis=1))
    onset_chunk = voice_at // CHUNK + int(np.flatnonzero(rms > 0.01)[0])  # its first chunk above -40 dBFS
    unexplained = np.array(_run(path, mic, reply, talking_from=voice_at + round(0.1 * RATE)))
    loud = np.flatnonzero(unexplained > 10 ** (-45 / 10))
    assert loud.size, "the voice is heard"
    assert onset_chunk - 1 <= loud[0] <= onset_chunk + 5, "within 50 ms of its onset"
    assert not np.any(unexplained[: voice_at // CHUNK] > 10 ** (-45 / 10)), "the echo alone never is"


def test_before_it_knows_the_path_it_assumes_the_echo_as_loud_as_played() -> None:
    path = EchoPath()
    reply = _speechlike(0.2, 4)
    unexplained = _run(path, _echo(reply, 1.0, 0.03), reply)
    assert max(unexplained) < 1e-5, "an unknown path at unity gain: its echo is explained"


def test_with_no_echo_at_all_a_headset_the_gains_fall_and_the_user_is_heard() -> None:
    path = EchoPath()
    reply = _speechlike(3.0, 5)
    _run(path, np.zeros_like(reply), reply)
    assert path.delay_chunks is None
    assert np.all(path.gains < 1e-2)
    voice = _speechlike(0.5, 6) * 0.3
    assert max(_run(path, voice, _speechlike(0.5, 7))) > 1e-4


def test_a_delay_longer_than_the_old_limit_is_found() -> None:
    """A loopback whose sound server fell behind holds 0.4-0.6 s (measured here): beyond 0.4 s nothing explained
    the echo, and Parley interrupted itself."""
    path = EchoPath()
    reply = _speechlike(3.0, 13)
    unexplained = _run(path, _echo(reply, 0.5, 0.55), reply)
    assert path.delay_chunks == 55
    assert max(unexplained[100:]) < 1e-5


def _clip(name: str) -> np.ndarray:
    return load_wav(fixture(name)).astype(np.float32)


def _story() -> np.ndarray:
    """A reply of real speech, 6 s: three fixture clips one after another."""
    return np.concatenate([_clip(name) for name in ("tell_a_story.wav", "whats_the_weather.wav", "tell_a_joke.wav")])


@dataclass(frozen=True)
class _Room:
    """How the user's barge-in reaches the echo path."""

    gain: float = 1.0  # the loopback's
    user_level: float = 1.0
    vad_lag_s: float = 0.06  # the VAD tells of the user this long after the voice begins
    idles: bool = False  # the path is not stepped from 0.5 s after the cut until the answer (a worst case)


LATE_VAD = _Room(gain=0.3, user_level=0.5, vad_lag_s=0.2, idles=True)
LATER_VAD = _Room(gain=0.3, user_level=0.5, vad_lag_s=0.4, idles=True)


@pytest.mark.parametrize(
    ("cut_s", "gap_s", "room"),
    [(3.0, 0.35, _Room()), (3.74, 0.35, _Room()), (4.53, 0.5, _Room()), (5.22, 0.5, _Room()),
     (3.0, 0.35, LATE_VAD), (3.0, 0.8, LATE_VAD), (3.0, 0.35, LATER_VAD), (3.74, 0.5, LATER_VAD),
     (4.53, 0.35, LATER_VAD)],
)  # fmt: skip
def test_a_reply_right_after_a_barge_in_keeps_the_delay(cut_s: float, gap_s: float, room: _Room) -> None:
    """The CI failure on da6120d: "Two." began 0.3-0.5 s after the user's "Stop. What is two plus two?", the
    delay was measured again at its first chunks against the microphone's last second, the user's question, and
    taken from the cut reply's last words at 0.9 s (correlation 0.53): Parley heard its own "Two." as the user.
    The user's voice is left out of the estimate; an estimate may fall due at any chunk of the new reply.
    LATE_VAD, the CI failure on 2e47fa9's loopback at -10 dB: the VAD told of the user 200 ms in, past its lag,
    and the path is not stepped while nothing plays and no reply is armed, so the user's unmarked first
    syllables were much of what the estimate heard (2 -> 40 chunks at correlation 0.58)."""
    story = _story()
    user, two = _clip("what_is_two_plus_two.wav"), _clip("stop_what_time.wav")[: RATE // 2]
    cut, lead = round(cut_s * RATE), round(0.02 * RATE)  # the reply paused 20 ms into the user's voice
    user_at = cut - lead
    two_at = user_at + len(user) + round(gap_s * RATE)
    ref = np.zeros(two_at + len(two) + RATE // 2, np.float32)
    ref[:cut] = story[:cut]
    ref[two_at : two_at + len(two)] = two
    mic = _echo(ref, room.gain, 0.05)  # 50 ms
    mic[user_at : user_at + len(user)] += room.user_level * user
    vad_hears = range(user_at + round(room.vad_lag_s * RATE), user_at + len(user) + round(0.3 * RATE))  # hangover
    idle = range(cut + RATE // 2, two_at) if room.idles else range(0)
    path = EchoPath()
    delays = set()
    for i in range(0, len(ref) - CHUNK + 1, CHUNK):
        if two_at <= i < two_at + round(0.3 * RATE):
            path.remeasure(i / RATE)  # an estimate due now (as every 50th chunk played, or an onset come to nothing)
        if i not in idle:
            path.step(mic[i : i + CHUNK], ref[i : i + CHUNK], i / RATE, quiet=i not in vad_hears)
        if i >= two_at:
            delays.add(path.delay_chunks)
    assert delays == {5}, "the delay the story taught holds through the new reply's first estimates"


def test_a_path_that_moved_is_found_again_with_no_onset_to_resume() -> None:
    """Its echo is sound the old delay cannot explain, which is left out of an estimate only if the VAD tells of
    a voice soon after: with none (hands-free off, so no onset pauses and resumes to `remeasure`), the next
    estimates read it (0.46 s after the move here)."""
    path = EchoPath()
    reply = _story()
    moved = round(3.0 * RATE)
    mic = np.concatenate([_echo(reply, 0.5, 0.05)[:moved], _echo(reply, 0.5, 0.3)[moved:]])
    found_at = None
    for i in range(0, len(mic) - CHUNK + 1, CHUNK):
        path.step(mic[i : i + CHUNK], reply[i : i + CHUNK], i / RATE, quiet=True)
        if i == moved - CHUNK:
            assert path.delay_chunks == 5
        if found_at is None and path.delay_chunks == 30:
            found_at = (i - moved) / RATE
    assert found_at is not None, "the moved path is never found again"
    assert found_at <= 2.0, f"found again {found_at} s after the move"


def test_sound_that_proved_no_voice_still_teaches_the_path_that_moved() -> None:
    """A sound server falling behind delays the echo past what the path explains; the VAD may hear that late echo
    as a voice. Once its onset has come to nothing (no words), that sound is the echo to measure again by."""
    path = EchoPath()
    reply = _speechlike(6.0, 21)
    moved = round(3.0 * RATE)
    mic = np.concatenate([_echo(reply, 0.5, 0.05)[:moved], _echo(reply, 0.5, 0.3)[moved:]])
    steps = range(0, len(mic) - CHUNK + 1, CHUNK)
    resumed_at = moved + round(0.8 * RATE)
    for i in steps:
        if i == resumed_at:
            path.remeasure(moved / RATE)  # the onset paused at the move resumed: no words in it
        heard_as_voice = moved <= i < resumed_at
        path.step(mic[i : i + CHUNK], reply[i : i + CHUNK], i / RATE, quiet=not heard_as_voice)
        if i == moved - CHUNK:
            assert path.delay_chunks == 5
        if i == resumed_at:
            assert path.delay_chunks == 30, "measured again at once, on the sound that was no voice"


@pytest.mark.parametrize("told", [True, False])
def test_after_an_underrun_the_echo_that_comes_later_is_explained_until_found_again(told: bool) -> None:
    """PulseAudio stalled 0.4 s (the test_bargein_real failure, rebuilt): the echo of everything played after the
    underrun comes that much later than the stamps say. Told of the underrun, the path explains that echo from its
    first chunk at any delay and finds the new one on the sound after it; not told, the late echo is an onset."""
    path = EchoPath()
    reply = _story()
    moved = round(3.0 * RATE)
    mic = np.concatenate([_echo(reply, 0.5, 0.03)[:moved], _echo(reply, 0.5, 0.43)[moved:]])
    loud, onsets, found_at = 0, [], None
    for i in range(0, len(mic) - CHUNK + 1, CHUNK):
        if told and i == moved:
            path.moved(i / RATE)
        heard = path.step(mic[i : i + CHUNK], reply[i : i + CHUNK], i / RATE, quiet=True)
        loud = loud + 1 if heard.unexplained > ONSET_POWER else 0
        if i >= moved and loud == ONSET_CHUNKS:
            onsets.append(round((i - moved) / RATE, 2))
        if found_at is None and i >= moved and path.delay_chunks == 43:
            found_at = (i - moved) / RATE
        if i == moved - CHUNK:
            assert path.delay_chunks == 3
    if told:
        assert onsets == [], f"onsets after the underrun (s): {onsets}"
        assert found_at is not None, "the new delay is never found"
        assert found_at <= 0.5, f"the new delay found {found_at} s after the underrun"
    else:
        assert onsets, "not told, the late echo is sound the old delay cannot explain"


@pytest.mark.parametrize(("user_level", "after_s"), [(1.0, 0.35), (0.5, 0.35), (1.0, 0.6), (0.7, 0.6)])
def test_the_user_saying_the_replys_word_in_its_voice_does_not_move_the_path(user_level: float, after_s: float) -> None:
    """The CI failure on d4f5bea (loopback at -10 dB): the user's "two", said in the voice of the reply "Two."
    that had begun 0.35 s before, was let into the estimates by `remeasure` (an onset come to nothing) and moved
    the delay 5 -> 35 chunks at correlation 0.74; the reply's echo went unexplained and was heard as the user going
    on. A path that moves keeps its loudness: the user's word is far louder than the echo at the known delay."""
    story, word, rest = _story(), _clip("stop_what_time.wav")[: RATE // 2], _clip("tell_a_joke.wav")
    reply_at = len(story) + RATE // 2
    ref = np.zeros(reply_at + len(word) + len(rest), np.float32)
    ref[: len(story)], ref[reply_at:] = story, np.concatenate([word, rest])
    mic = _echo(ref, 0.3, 0.05)
    user_at = reply_at + round(after_s * RATE)
    mic[user_at : user_at + len(word)] += user_level * word
    vad_hears = range(user_at + round(0.06 * RATE), user_at + len(word) + round(0.2 * RATE))
    resumed_at = (user_at + len(word) + round(0.3 * RATE)) // CHUNK * CHUNK
    path, delays = EchoPath(), set()
    for i in range(0, len(ref) - CHUNK + 1, CHUNK):
        if i == resumed_at:
            path.remeasure(user_at / RATE)  # the onset at the user's word resumed: taken for no words
        path.step(mic[i : i + CHUNK], ref[i : i + CHUNK], i / RATE, quiet=i not in vad_hears)
        if i >= reply_at:
            delays.add(path.delay_chunks)
    assert delays == {5}


def _onset_ms(path: EchoPath, mic: np.ndarray, ref: np.ndarray, start: int, onset: int) -> float | None:
    """Run from `start` (the user's voice begins at sample `onset`); ms from it to the listener's onset rule
    (its ONSET_POWER of unexplained sound for ONSET_CHUNKS running), None if never within 300 ms."""
    loud = 0
    for i in range(start, onset + round(0.3 * RATE), CHUNK):
        talking = i + CHUNK > onset + round(0.06 * RATE)  # the VAD tells of the voice ~60 ms in
        heard = path.step(mic[i : i + CHUNK], ref[i : i + CHUNK], i / RATE, quiet=not talking)
        loud = loud + 1 if heard.unexplained > ONSET_POWER else 0
        if loud == ONSET_CHUNKS:
            assert i + CHUNK > onset, "the echo alone is never taken for a voice"
            return (i + CHUNK - onset) * 1000 / RATE
    return None


def test_a_stop_said_under_parleys_own_sibilants_is_heard_within_100_ms() -> None:
    """Issue 12's masked "S": at 0 dB, Parley's own "s" echoes in the 4-8 kHz band as loud as the user's, so the
    user's "S" said under it was explained away and the stop came on the vowel, 130-170 ms late. Bands 800 Hz
    wide above 2.4 kHz tell the user's hiss from Parley's where one 4-8 kHz band could not (7 of 223 moments late
    against 12; the rest are caught on the vowel, Parley's "s" and the user's as loud in every band)."""
    names = ("airplanes", "book", "everest", "france", "joke", "mona_lisa", "music", "thanks")
    reply = np.concatenate([load_wav(fixture(f"turns/q_{name}.wav")) for name in names]).astype(np.float32)
    lag = round(0.04 * RATE)
    echo = np.tanh(0.3 * np.concatenate([np.zeros(lag, np.float32), reply[:-lag]])) / 0.3  # 0 dB, clipping softly
    stop = _clip("stop_what_time.wav")
    first = int(np.argmax(np.abs(stop) > 0.01))  # its first sample above -40 dBFS
    path, learned, latencies = EchoPath(), 0, []
    for onset in range(round(2.5 * RATE), len(reply) - RATE, round(0.06 * RATE)):
        start = (onset - round(0.5 * RATE)) // CHUNK * CHUNK
        for at in range(learned, start, CHUNK):  # the reply so far, nobody talking: the path learns
            path.step(echo[at : at + CHUNK], reply[at : at + CHUNK], at / RATE, quiet=True)
        learned = start
        mic = echo.copy()
        mic[onset - first : onset - first + len(stop)] += stop[: len(mic) - onset + first]
        latencies.append(_onset_ms(copy.deepcopy(path), mic, reply, start, onset))
    late = [ms for ms in latencies if ms is None or ms > 100]
    assert len(late) <= 0.04 * len(latencies), f"{len(late)} of {len(latencies)} late: {late}"


def _noisy_move(story: np.ndarray, start: int, end: int) -> np.ndarray:
    """The echo at 50 ms, but from `start` to `end` mostly at 300 ms under loud unrelated sound (no voice told
    of): an estimate there finds 300 ms only weakly (correlation ~0.5)."""
    mic = _echo(story, 0.5, 0.05)
    noisy = _echo(story, 0.1, 0.05) + _echo(story, 0.3, 0.3) + _speechlike(len(story) / RATE, 3)[: len(story)]
    mic[start:end] = noisy[start:end]
    return mic


def _delays(mic: np.ndarray, ref: np.ndarray) -> list[int | None]:
    path = EchoPath()
    delays = []
    for i in range(0, len(mic) - CHUNK + 1, CHUNK):
        path.step(mic[i : i + CHUNK], ref[i : i + CHUNK], i / RATE, quiet=True)
        delays.append(path.delay_chunks)
    return delays


def test_one_weak_estimate_does_not_move_a_known_delay() -> None:
    """The CI failure on 85877f9 (loopback at -10 dB): one estimate at the start of "Two.", drawn by the user's
    question the VAD had not yet told of, moved the delay 4 -> 31 chunks at correlation 0.54; the echo of "Two."
    went unexplained and Parley took it for the user ("and")."""
    story = _story()
    delays = _delays(_noisy_move(story, 3 * RATE, 4 * RATE), story)
    assert delays[299] == 5
    assert set(delays[300:]) == {5}


def test_a_path_that_moved_in_a_noisy_room_is_found_by_two_estimates_that_agree() -> None:
    story = _story()
    delays = _delays(_noisy_move(story, 3 * RATE, len(story)), story)
    assert delays[299] == 5
    assert delays[-1] == 30


@pytest.mark.parametrize("gain", [1.0, 0.3])
def test_a_loudspeaker_that_appears_after_a_headset_is_followed_at_the_first_false_onset(gain: float) -> None:
    """Issue 37: a headset's path learns there is no echo (its gains fall far); then a loopback is loaded. Its echo
    is unexplained and pauses the reply; that onset comes to nothing (`remeasure`), and from then on the echo is
    explained again (assumed as loud as played until measured), its delay found within the next second."""
    path = EchoPath()
    headset = _speechlike(3.0, 21)
    _run(path, np.zeros_like(headset), headset)
    assert path.delay_chunks is None
    assert float(np.max(path.gains)) < 10 ** (-30 / 10), "a headset: no echo"
    reply = _speechlike(0.5, 22)
    first = _run(path, _echo(reply, gain, 0.04), reply)
    assert max(first) > ONSET_POWER, "the new echo is unexplained: an onset"
    path.remeasure(0.5 * len(headset) / RATE)  # the onset came to nothing
    after = _speechlike(2.0, 23)
    unexplained = _run(path, _echo(after, gain, 0.04), after)
    assert max(unexplained) < ONSET_POWER, "its echo is explained from the first chunk after"
    assert path.delay_chunks == 4


def test_an_echo_found_where_a_headset_had_none_is_explained_within_a_second() -> None:
    """The same, with no onset to resolve (the VAD took the echo for a voice): the delay estimate finds the new
    path, and its gains start again from the worst case instead of the headset's."""
    path = EchoPath()
    headset = _speechlike(3.0, 24)
    _run(path, np.zeros_like(headset), headset)
    reply = _speechlike(3.0, 25)
    unexplained = _run(path, _echo(reply, 0.5, 0.04), reply)
    assert path.delay_chunks == 4
    assert max(unexplained[100:]) < ONSET_POWER, "explained from the first second on"


def _drifting_echo(ref: np.ndarray, gain: float, at: int, delay_s: float, drift: float) -> np.ndarray:
    """The echo of `ref` 30 ms late until sample `at`; from there `delay_s` late, drifting back `drift` seconds a
    second (a resampler: 6 ms a second as recorded) and off by 10 ms either way for 0.1-0.4 s at a time
    (module-loopback catching up after a stall)."""
    rng = np.random.default_rng(7)
    jumps = np.zeros(len(ref))
    start = at
    while start < len(ref):
        end = start + round(rng.uniform(0.1, 0.4) * RATE)
        jumps[start:end] = 0.01 * rng.integers(-1, 2)
        start = end
    t = (np.arange(len(ref)) - at) / RATE
    delay = np.where(t >= 0, delay_s - drift * t + jumps, 0.03)
    source = np.arange(len(ref)) - delay * RATE
    return (gain * np.interp(source, np.arange(len(ref)), ref, left=0.0)).astype(np.float32)


@pytest.mark.parametrize("drift", [0.006, 0.012, 0.025])
def test_an_echo_that_drifts_back_after_an_underrun_is_followed(drift: float) -> None:
    """The CI failure on 8ecafef, rebuilt from a probe's recording: after a stall module-loopback resamples to catch
    up, and the echo's delay jumped 10 ms either way every few tenths of a second as it drifted back (716 -> 663 ms
    over 7 s). Over the estimate's second its waveform correlated 0.15-0.35, the path kept a delay the echo had
    left, and 6-8 s after the stall that echo was taken for the user. Its loudness still follows the played
    signal's: the path follows it by that."""
    reply = np.concatenate([_story(), _story()])
    stall = round(2.0 * RATE)
    mic = _drifting_echo(reply, 0.5, stall, 0.7, drift)
    path, loud, onsets = EchoPath(), 0, []
    for i in range(0, len(mic) - CHUNK + 1, CHUNK):
        if i == stall:
            path.moved(i / RATE)
        heard = path.step(mic[i : i + CHUNK], reply[i : i + CHUNK], i / RATE, quiet=True)
        loud = loud + 1 if heard.unexplained > ONSET_POWER else 0
        if i >= stall and loud == ONSET_CHUNKS:
            onsets.append(round((i - stall) / RATE, 2))
    assert onsets == [], f"onsets after the underrun (s): {onsets}"
    drifted = (0.7 - drift * (len(mic) - stall) / RATE) * 100
    assert path.delay_chunks is not None
    assert abs(path.delay_chunks - drifted) <= 2, f"the path at {path.delay_chunks} chunks, the echo at {drifted:.0f}"
