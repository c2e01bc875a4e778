"""One clip through Silero VAD and the end-of-turn policy on simulated time, with the real models' real latency.

Audio is fed in 20 ms frames; the clock is the audio's own time. At each `CheckTurn` the simulation
stops the audio, runs the models for real (Smart Turn on the turn's audio up to now, and at a pause's
first question a speculative Whisper pass, both at once, as the pipeline would), and delivers each answer to
the policy at `now + its measured wall time`. So decisions come as late as they would live.
`Delays` can fix those delays instead, so figures do not depend on what else the machine is doing.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from adapters.contract.speech_io import Transcript
from audio.events import SpeechEnded, SpeechStarted
from audio.ports import RATE, Frame
from audio.turns.endpoint import EPSILON_S, CheckTurn, Decision, EndpointPolicy, TurnDecided, TurnResumed
from audio.turns.words import says_something
from audio.vad import Vad

Samples = npt.NDArray[np.float32]
Judge = Callable[[Samples], Awaitable[float]]  # the end-of-turn model
Hear = Callable[[Samples], Awaitable[Transcript]]  # a transcription pass
FRAME = 320  # 20 ms, what the microphone delivers
PREROLL_S = 0.4  # audio kept from before the VAD's onset (audio/turns/ears.py)


@dataclass(frozen=True)
class Delays:
    """Fixed answer delays in ms (None: the measured wall time of the call)."""

    model_ms: float | None = None
    asr_ms: float | None = None


class SimClock:
    """The audio's time, moved by the simulation."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        """Nothing waits in the simulation: it moves the time itself (here only to be a `Clock`)."""
        raise NotImplementedError


@dataclass
class SimResult:
    ended: list[TurnDecided] = field(default_factory=list)
    resumed: int = 0
    words: list[str] = field(default_factory=list)  # what the transcript said when each turn ended
    text_ready: list[float | None] = field(default_factory=list)  # when each ended turn's words were ready
    model_ms: list[float] = field(default_factory=list)
    asr_ms: list[float] = field(default_factory=list)


class TurnSim:
    """Runs one clip; `judge` and `hear` are awaited for real and their wall time becomes simulated delay."""

    def __init__(
        self,
        vad: Vad,
        policy: EndpointPolicy,
        clock: SimClock,
        judge: Judge,
        hear: Hear | None,
        delays: Delays,
    ) -> None:
        self._vad, self._policy, self._clock = vad, policy, clock
        self._judge, self._hear, self._delays = judge, hear, delays
        self._audio: Samples = np.zeros(0, np.float32)
        self._arrivals: list[tuple[float, int, Callable[[], list[Decision]]]] = []
        self._order = itertools.count()
        self._turn_start: float | None = None
        self._words_due: dict[int, float] = {}  # pause -> when its speculative pass delivers
        self._words = ""
        self.result = SimResult()

    async def run(self, audio: Samples) -> SimResult:
        self._audio = audio
        for start in range(0, len(audio) - FRAME + 1, FRAME):
            end = (start + FRAME) / RATE
            await self._until(end)
            self._clock.t = end
            for event in self._vad.feed(Frame(audio[start : start + FRAME], start / RATE, start)):
                await self._on_vad(event)
        await self._until(len(audio) / RATE)
        return self.result

    async def _on_vad(self, event: SpeechStarted | SpeechEnded) -> None:
        if isinstance(event, SpeechStarted) and self._turn_start is None:
            self._turn_start = event.at
        await self._handle(self._policy.on_vad(event))

    async def _until(self, t: float) -> None:
        """Deliver answers and policy deadlines due up to `t`, in time order."""
        while True:
            arrival = self._arrivals[0][0] if self._arrivals else None
            deadline = self._policy.deadline()
            due = min((x for x in (arrival, deadline) if x is not None), default=None)
            if due is None or due > t + EPSILON_S:
                return
            self._clock.t = max(self._clock.t, due)
            if arrival is not None and arrival <= due:
                _, _, deliver = heapq.heappop(self._arrivals)
                await self._handle(deliver())
            else:
                await self._handle(self._policy.tick())

    async def _handle(self, decisions: list[Decision]) -> None:
        for decision in decisions:
            if isinstance(decision, CheckTurn):
                await self._ask(decision)
            elif isinstance(decision, TurnResumed):
                self.result.resumed += 1
            else:
                self.result.ended.append(decision)
                self.result.words.append(self._words)
                due = self._words_due.get(decision.pause)
                self.result.text_ready.append(None if due is None else max(decision.at, due))
                self._turn_start = None

    async def _ask(self, check: CheckTurn) -> None:
        now = self._clock.t
        start = max(0.0, (self._turn_start or 0.0) - PREROLL_S)
        audio = self._audio[round(start * RATE) : round(now * RATE)]
        hear = self._hear if self._hear is not None and check.pause not in self._words_due else None
        loop = asyncio.get_running_loop()
        began = loop.time()
        model_done, words_done = began, began

        async def judge() -> float:
            nonlocal model_done
            probability = await self._judge(audio)
            model_done = loop.time()
            return probability

        async def transcribe() -> Transcript | None:
            nonlocal words_done
            heard = await hear(audio) if hear is not None else None
            words_done = loop.time()
            return heard

        probability, heard = await asyncio.gather(judge(), transcribe())
        text = heard.text if heard is not None and says_something(heard) else ""
        model_ms, asr_ms = (model_done - began) * 1000, (words_done - began) * 1000
        self.result.model_ms.append(model_ms)
        model_at = now + (self._delays.model_ms if self._delays.model_ms is not None else model_ms) / 1000
        self._arrive(model_at, lambda: self._policy.model_said(check.pause, probability))
        if hear is not None:
            self.result.asr_ms.append(asr_ms)
            words_at = now + (self._delays.asr_ms if self._delays.asr_ms is not None else asr_ms) / 1000
            self._words_due[check.pause] = words_at
            self._arrive(words_at, lambda: self._heard(text, now))

    def _heard(self, text: str, until: float) -> list[Decision]:
        self._words = text
        return self._policy.heard(text, until)

    def _arrive(self, at: float, deliver: Callable[[], list[Decision]]) -> None:
        heapq.heappush(self._arrivals, (at, next(self._order), deliver))
