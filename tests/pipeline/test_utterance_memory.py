"""Each Whisper pass frees ~23 MB that glibc keeps for the next one: once an utterance is over (its text handed
over, or the ears closed on it), that memory is handed back, after its passes have ended."""

from __future__ import annotations

from pathlib import Path

import pytest

import desktop.pipeline.ears as ears_module
from adapters.testing_speech import FAKE_WORKER
from desktop.pipeline.scenario_play import until_quiet
from tests.conformance.speech_harness import until
from tests.pipeline.test_turn_taking import WEATHER, ByLength, rig

pytestmark = pytest.mark.anyio


class Trims:
    """Stands in for the heap trim: notes, from the worker thread it runs in, whether a pass was running then."""

    def __init__(self) -> None:
        self.passes_running: list[int] = []

    def __call__(self) -> None:
        self.passes_running.append(FAKE_WORKER.active)


async def test_an_utterance_gives_back_its_heap_once_its_text_is_handed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trims = Trims()
    monkeypatch.setattr(ears_module, "give_back_free_heap", trims)
    heard = ByLength([(0.0, WEATHER)])
    async with rig(tmp_path, heard) as r:
        r.say("q_weather")
        await until_quiet(r.stage)
        assert [e["text"] for e in r.of("user/message")] == [WEATHER]
        assert heard.heard, "no pass ran"
        assert trims.passes_running == [0], "one trim for the utterance, with no pass running"
    assert trims.passes_running == [0, 0], "and one as the ears closed"


async def test_ears_closed_mid_utterance_give_back_its_heap_after_its_pass_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trims = Trims()
    monkeypatch.setattr(ears_module, "give_back_free_heap", trims)
    heard = ByLength([(0.0, "Tell me about")])
    async with rig(tmp_path, heard) as r:
        r.say("rome_about")
        assert await until(lambda: FAKE_WORKER.active > 0), "no pass began"
        assert trims.passes_running == []
    assert trims.passes_running == [0], "the dropped utterance's pass had ended before the trim"
