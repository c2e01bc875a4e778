"""Each Whisper pass frees ~24 MB that glibc keeps for the next one: once an utterance is over (its text handed
over, or the ears closed on it), that memory is handed back, after its passes have ended, and not while another
utterance's pass runs (it would fault the pages straight back in)."""

from __future__ import annotations

from pathlib import Path

import pytest

import audio.turns.ears as ears_module
from adapters.contract import CancelSignal
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, Transcript
from desktop.pipeline.scenario_play import until_quiet
from tests.conformance.speech_harness import until
from tests.pipeline.test_turn_taking import WEATHER, ByLength, rig

pytestmark = pytest.mark.anyio


class Passes(ByLength):
    """ByLength that counts its passes under way (on the event loop; the trim's thread only reads the count)."""

    def __init__(self, text: str) -> None:
        super().__init__([(0.0, text)])
        self.under_way = 0

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        self.under_way += 1
        try:
            return await super().transcribe(samples, signal, sample_rate=sample_rate)
        finally:
            self.under_way -= 1


class Trims:
    """Stands in for the heap trim: notes, from the worker thread it runs in, how many passes were under way."""

    def __init__(self) -> None:
        self.passes: Passes | None = None
        self.under_way: list[int] = []

    def __call__(self) -> None:
        assert self.passes is not None
        self.under_way.append(self.passes.under_way)


@pytest.fixture
def trims(monkeypatch: pytest.MonkeyPatch) -> Trims:
    spy = Trims()
    monkeypatch.setattr(ears_module, "give_back_free_heap", spy)
    return spy


async def test_an_utterance_gives_back_its_heap_once_its_text_is_handed_over(tmp_path: Path, trims: Trims) -> None:
    trims.passes = heard = Passes(WEATHER)
    async with rig(tmp_path, heard) as r:
        r.say("q_weather")
        await until_quiet(r.stage)
        assert [e["text"] for e in r.of("user/message")] == [WEATHER]
        assert heard.heard, "no pass ran"
        assert trims.under_way == [0], "one trim for the utterance, with no pass running"
    assert trims.under_way == [0, 0], "and one as the ears closed"


async def test_ears_closed_mid_utterance_give_back_its_heap_after_its_pass_ended(tmp_path: Path, trims: Trims) -> None:
    trims.passes = heard = Passes("Tell me about")
    async with rig(tmp_path, heard) as r:
        r.say("rome_about")
        assert await until(lambda: heard.under_way > 0), "no pass began"
        assert trims.under_way == []
    assert trims.under_way == [0], "the dropped utterance's pass had ended before the trim"


async def test_an_utterance_over_while_another_is_transcribed_leaves_the_heap_to_the_last(
    tmp_path: Path, trims: Trims
) -> None:
    trims.passes = heard = Passes(WEATHER)
    async with rig(tmp_path, heard) as r:
        ears = r.stage.binding.ears
        for _ in range(2):  # two push-to-talk utterances: both final passes are under way at once
            ears.press()
            ears.release()
        await until_quiet(r.stage)
        assert len(heard.heard) == 2, "both utterances had their final pass"
        assert len(trims.under_way) == 1, "only the utterance finished last gave the heap back"
    assert len(trims.under_way) == 2
