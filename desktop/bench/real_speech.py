"""The real-speech corpus (assets/real_speech, sources and licences in its README): recordings of real people,
and the clips built from them for the bench and the tests: each read sentence, the same at a given level over
the room tone of a real meeting room, each turn of one speaker of a telephone conversation, its pauses kept, and
two recordings taken from speech toolkits' samples: a long sentence with breath pauses and softly read digits."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from audio.levels import speech_level_dbfs
from audio.ports import RATE
from audio.wav import load_wav
from desktop.assets import assets_dir

Samples = npt.NDArray[np.float32]
ROOM_TONE = ("meeting_tst01.wav", 1.3, 3.6)  # seconds of a meeting room where nobody speaks (meetings.rttm)
LEAD_S, TAIL_S = 0.3, 0.1  # room around a conversation turn cut at its .stm times


def corpus_dir() -> Path:
    return assets_dir() / "real_speech"


@dataclass(frozen=True)
class Clip:
    """One person's turn: its audio (16 kHz), what they said, and how many utterances the turn holds."""

    name: str
    text: str
    audio: Samples
    utterances: int = 1

    @property
    def level_dbfs(self) -> float:
        return speech_level_dbfs(self.audio)


def sentences() -> list[Clip]:
    """The ten read sentences, two speakers, with their transcripts."""
    folder = corpus_dir()
    with (folder / "transcripts.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [Clip(row["file"].removesuffix(".wav"), row["text"], load_wav(folder / row["file"])) for row in rows]


def more_speech() -> dict[str, Clip]:
    """The recordings of `more_speech.csv` by name: "jfk" (one sentence, two breath pauses of about a second, so
    three utterances) and "digits" (fifteen digits read softly in three groups)."""
    folder = corpus_dir()
    with (folder / "more_speech.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {
        row["file"].removesuffix(".wav"): Clip(
            row["file"].removesuffix(".wav"), row["text"], load_wav(folder / row["file"]), int(row["utterances"])
        )
        for row in rows
    }


@dataclass(frozen=True)
class _Utterance:
    speaker: str
    start: float
    end: float
    text: str


def conversation_turns(speaker: str) -> list[Clip]:
    """One speaker's turns of the telephone conversation: consecutive utterances of theirs with no one else's
    between are one turn, cut from the first one's start to the last one's end with the real pauses inside."""
    folder = corpus_dir()
    audio = load_wav(folder / "conversation_sample.wav")
    turns: list[list[_Utterance]] = []
    for said in _stm(folder / "conversation_sample.stm"):
        if turns and turns[-1][-1].speaker == said.speaker:
            turns[-1].append(said)
        else:
            turns.append([said])
    return [_turn_clip(audio, turn) for turn in turns if turn[0].speaker == speaker]


def _turn_clip(audio: Samples, turn: list[_Utterance]) -> Clip:
    start, end = turn[0].start, turn[-1].end
    cut = audio[round(start * RATE) : round((end + TAIL_S) * RATE)]
    lead = room_tone(round(LEAD_S * RATE), speech_level_dbfs(cut) - 45)
    text = " ".join(u.text for u in turn)
    return Clip(f"{turn[0].speaker.lower()}@{start:.1f}", text, np.concatenate([lead, cut]), len(turn))


def _stm(path: Path) -> list[_Utterance]:
    """`file channel speaker start end words` per line."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            _file, _channel, speaker, start, end, text = line.split(None, 5)
            out.append(_Utterance(speaker, float(start), float(end), text.strip()))
    return out


def conversation_speakers() -> list[str]:
    return sorted({u.speaker for u in _stm(corpus_dir() / "conversation_sample.stm")})


def room_tone(samples: int, dbfs: float) -> Samples:
    """`samples` of a real meeting room's background at `dbfs` RMS (its quiet stretch, looped)."""
    name, start, end = ROOM_TONE
    tone = load_wav(corpus_dir() / name)[round(start * RATE) : round(end * RATE)]
    looped = np.tile(tone, samples // len(tone) + 1)[:samples].astype(np.float64)
    rms = float(np.sqrt(np.mean(np.square(looped)))) or 1.0
    return (looped * (10 ** (dbfs / 20) / rms)).astype(np.float32)


def at_level(clip: Clip, dbfs: float, noise_dbfs: float | None = None) -> Clip:
    """The clip with its speech at `dbfs` (the level of its voiced part), over room tone at `noise_dbfs`."""
    gain = 10 ** ((dbfs - clip.level_dbfs) / 20)
    audio = clip.audio * np.float32(gain)
    if noise_dbfs is not None:
        audio = audio + room_tone(len(audio), noise_dbfs)
    noise = "" if noise_dbfs is None else f"+room{noise_dbfs:.0f}"
    return Clip(f"{clip.name}@{dbfs:.0f}dB{noise}", clip.text, np.clip(audio, -1.0, 1.0), clip.utterances)
