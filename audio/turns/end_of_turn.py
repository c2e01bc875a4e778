"""Whether a hands-free utterance is over: its EndpointPolicy (endpoint.py) fed with the VAD, the end-of-turn model,
the speculative final pass and the clock, and the speculative start of the reply made on each pause.

A pause opens the question: the model (in its own bounded worker) hears the audio so far, Whisper's final pass
runs on it, and once its words are in the conversation reads the request they would make (and, if they look
finished, begins the reply). If the user goes on, that pause's work is dropped; when the policy decides, the
utterance is handed back to Ears with the final pass already made.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from adapters.contract.clock import Clock
from adapters.contract.speech_io import Samples
from adapters.contract.turn import EndOfTurnModel
from audio.events import SpeechEnded, SpeechStarted
from audio.turns.endpoint import CheckTurn, Decision, EndpointConfig, TurnDecided, TurnResumed
from audio.turns.ports import ConversationPort
from audio.turns.utterance import MODEL, WORDS, PauseWork, TurnTaking, Utterance
from audio.turns.words import looks_unfinished, says_something

Own = Callable[..., None]  # start owned work: own(fn, *args, name=...)


class TurnEnd:
    """Runs the end-of-turn decision of each hands-free utterance; `decided(utterance, ended)` hands it back."""

    def __init__(
        self,
        conversation: ConversationPort,
        clock: Clock,
        turn_taking: Callable[[], TurnTaking],
        own: Own,
        decided: Callable[[Utterance, TurnDecided], None],
    ) -> None:
        self._conversation = conversation
        self._clock = clock
        self._turn_taking = turn_taking
        self._own = own
        self._decided = decided

    def config(self) -> EndpointConfig:
        """The policy's settings for a new utterance (the model may have loaded since the last one)."""
        return self._turn_taking().config

    def start(self, utterance: Utterance) -> None:
        """The utterance's speech began: from now on its pauses are questions."""
        if utterance.policy is not None:
            utterance.policy.on_vad(SpeechStarted(utterance.started_at))
            self._own(self._watch, utterance, name="end-of-turn")

    def on_vad(self, utterance: Utterance, event: SpeechStarted | SpeechEnded) -> None:
        if utterance.policy is not None:
            self._apply(utterance, utterance.policy.on_vad(event))

    async def _watch(self, utterance: Utterance) -> None:
        """The policy's clock: tick at each deadline it names, until the turn is decided (or push-to-talk took it)."""
        policy = utterance.policy
        while not utterance.over and policy is not None and utterance.policy is policy:
            await utterance.wait(policy.deadline(), self._clock.sleep, self._clock.now())
            if not utterance.over and utterance.policy is policy:
                self._apply(utterance, policy.tick())

    def _apply(self, utterance: Utterance, decisions: list[Decision]) -> None:
        for decision in decisions:
            if utterance.over:
                break
            if isinstance(decision, CheckTurn):
                self._check(utterance, decision)
            elif isinstance(decision, TurnResumed):
                utterance.drop_pause()
            else:
                self._end(utterance, decision)
        utterance.poke()

    def _check(self, utterance: Utterance, check: CheckTurn) -> None:
        """Ask the model about the audio so far; on a new pause, also start the speculative final pass."""
        pause = utterance.pause
        if pause is None or pause.number != check.pause:
            utterance.drop_pause()
            pause = utterance.pause = PauseWork(check.pause, check.silence_from)
            pause.pass_began_early = utterance.transcript.reading_up_to(check.silence_from)
            self._run(pause, WORDS, self._speculate, utterance, pause, name="speculative-asr")
        model = self._turn_taking().model
        if model is not None:
            audio = utterance.transcript.audio()  # what it hears: the pause as long as it is now
            self._run(pause, MODEL, self._ask_model, utterance, pause, model, audio, name="end-of-turn-model")

    async def _ask_model(self, utterance: Utterance, pause: PauseWork, model: EndOfTurnModel, audio: Samples) -> None:
        """Beside the pause's final pass when that pass began at the silence (most of it is made by now, and the
        decision no longer waits for the model after it); else after it: its words lead to the reply, the model's
        answer only to the decision, so Whisper gets both cores to itself (figures: docs/decisions/0002)."""
        if not pause.pass_began_early:
            await pause.passed.wait()
        probability = await model.predict(audio, pause.signal)
        if utterance.policy is not None:
            self._apply(utterance, utterance.policy.model_said(pause.number, probability))
        self._rehearse(utterance, pause)  # the model doubts: the decision waits, the cores are free for the voice

    @staticmethod
    def _rehearse(utterance: Utterance, pause: PauseWork) -> None:
        """The turn is still undecided: let the voice make the reply's first clause meanwhile."""
        if not utterance.over and pause.speculation is not None:
            pause.speculation.rehearse()

    async def _speculate(self, utterance: Utterance, pause: PauseWork) -> None:
        """The final pass at the pause; its words go to the policy, and the conversation reads their request."""
        started = self._clock.now()
        try:
            words = await utterance.transcript.speculate(pause.signal, pause.since)
        finally:
            pause.passed.set()
        pause.words, pause.words_at = words, self._clock.now()
        pause.asr_ms = round((pause.words_at - started) * 1000, 1)
        said = says_something(words)
        if said and not utterance.over:
            finished = not looks_unfinished(words.text, punctuated=True)  # then begin the reply too
            pause.speculation = self._conversation.speculate(words.text, ahead=finished)
        if utterance.policy is not None:
            until = utterance.transcript.covered_until or pause.words_at
            self._apply(utterance, utterance.policy.heard(words.text if said else "", until))
        if self._turn_taking().model is None:
            self._rehearse(utterance, pause)  # no model to wait for: the decision waits on silence alone

    def _end(self, utterance: Utterance, ended: TurnDecided) -> None:
        utterance.over = True
        utterance.poke()
        if utterance.pause is not None:
            utterance.pause.cancel(MODEL)  # its answer no longer matters; the final pass and the prefill go on
        self._decided(utterance, ended)

    def _run(self, pause: PauseWork, kind: str, fn: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        self._own(pause.run, kind, fn, *args, name=name)
