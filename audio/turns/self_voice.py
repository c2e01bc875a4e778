"""Parley never starts a turn from its own voice: an utterance whose words are the words Parley was playing at that
moment (audio/own_voice.py decides, on the two word timelines) is its echo, whatever the acoustic guards said."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.contract.speech_io import Transcript
from audio.own_voice import ECHO_LAG_S, OwnVoice, TimedWord, own_voice
from audio.turns.ports import ConversationPort
from audio.turns.utterance import Utterance

PlayedWords = Callable[[float], list[TimedWord]]  # the words audible since a clock time, in order


def heard_words(transcript: Transcript, audio_start: float) -> list[TimedWord]:
    """The transcript's words on the clock: `audio_start` is when the transcribed audio's first sample was heard."""
    return [TimedWord(w.text, audio_start + w.start_s, audio_start + w.end_s) for w in transcript.words]


def echo_of_parley(transcript: Transcript, audio_start: float, played: PlayedWords) -> OwnVoice | None:
    """The evidence that the utterance is Parley's own voice, or None when it is not (or nothing was playing)."""
    heard = heard_words(transcript, audio_start)
    if not heard:
        return None
    said = played(heard[0].start - ECHO_LAG_S[1])
    if not said:
        return None
    verdict = own_voice(heard, said)
    return verdict if verdict.own else None


def evidence(verdict: OwnVoice, transcript: Transcript) -> dict[str, Any]:
    """What the journal's `barge_in/echo_rejected` keeps: the words heard and how each matched what was played."""
    return {
        "heard": transcript.text,
        "matched": [{"word": word, "lag_ms": round(lag * 1000)} for word, lag in verdict.matched],
        "share": round(verdict.share, 2),
    }


class SelfVoice:
    """The one judge of Parley's own voice for the ears and the barge-in decision: push-to-talk is the user by
    definition; a hands-free utterance may be Parley heard through the room, and each rejection goes on the record."""

    def __init__(self, conversation: ConversationPort, played: PlayedWords | None) -> None:
        self._conversation = conversation
        self._played = played

    def echo(self, utterance: Utterance, transcript: Transcript) -> OwnVoice | None:
        if self._played is None or utterance.push_to_talk:
            return None
        return echo_of_parley(transcript, utterance.audio_start, self._played)

    def rejected(self, utterance: Utterance, transcript: Transcript, stage: str) -> bool:
        """True when `transcript` is Parley's own voice; then `barge_in/echo_rejected` says why, at `stage`."""
        verdict = self.echo(utterance, transcript)
        if verdict is None:
            return False
        self._conversation.record(
            "barge_in/echo_rejected", stage=stage, onset=utterance.started_at, **evidence(verdict, transcript)
        )
        return True
