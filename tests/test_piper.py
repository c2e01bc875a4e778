"""Piper with the real en_US-joe-medium voice: word alignment, bad voices, awkward text."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper
from piper import PiperVoice

from adapters.contract.cancel import CancelSignal, User
from adapters.contract.speech_io import SynthSegment
from adapters.runtime.model_files import ModelError, ModelNotFound
from adapters.runtime.workers import StopFlag
from adapters.tts.chunker import MAX_CHARS
from adapters.tts.piper_voice import PiperSynthesizer, default_voice_path, shared_voice
from adapters.tts.render import render

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def speak(text: str | list[str], synthesizer: PiperSynthesizer | None = None) -> list[SynthSegment]:
    synthesizer = synthesizer or PiperSynthesizer()
    return [segment async for segment in synthesizer.stream(text, CancelSignal())]


def spoken(segment: SynthSegment) -> dict[str, tuple[float, float]]:
    return {segment.text[w.start : w.end]: (w.start_ms, w.end_ms) for w in segment.words}


async def test_expanded_numbers_and_abbreviations_keep_one_timing_per_source_word() -> None:
    (segment,) = await speak("It costs $3.50 on Dr. Smith's 2nd floor.")
    words = spoken(segment)
    assert list(words) == ["It", "costs", "$3.50", "on", "Dr.", "Smith's", "2nd", "floor."]
    assert not segment.estimated
    length = {word: end - start for word, (start, end) in words.items()}
    assert length["$3.50"] > 3 * length["on"]  # "dollars three point five zero"
    assert words["floor."][1] <= segment.duration_ms


async def test_words_espeak_runs_together_are_still_timed_apart() -> None:
    (segment,) = await speak(["I am going to the store in the morning, of course."])
    assert [segment.text[w.start : w.end] for w in segment.words] == segment.text.split()
    assert all(w.end_ms > w.start_ms for w in segment.words)
    assert not segment.estimated


def test_a_voice_without_alignments_falls_back_to_an_estimate() -> None:
    voice = PiperVoice.load(default_voice_path(), include_alignments=False)
    segment = render(voice, 0, "Plain words without any alignment.", StopFlag())
    assert segment is not None
    assert segment.estimated
    assert [segment.text[w.start : w.end] for w in segment.words] == segment.text.split()
    assert segment.words[-1].end_ms <= segment.duration_ms + 0.5


async def test_the_voices_threads_sleep_between_syntheses_rather_than_spin() -> None:
    """A spinning pool would take a core from llama.cpp while it generates the rest of the reply."""
    options = shared_voice(default_voice_path()).session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    (segment,) = await speak("Still aligned.")
    assert not segment.estimated


def test_a_missing_voice_or_config_is_a_one_line_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match=r"nowhere\.onnx") as missing:
        PiperSynthesizer(tmp_path / "nowhere.onnx")
    lonely = tmp_path / "lonely.onnx"
    shutil.copy(default_voice_path(), lonely)
    with pytest.raises(ModelNotFound, match=r"lonely\.onnx\.json") as no_config:
        PiperSynthesizer(lonely)
    (tmp_path / "lonely.onnx.json").write_text("{not json")
    with pytest.raises(ModelError, match="not a Piper voice config") as bad_config:
        PiperSynthesizer(lonely)
    assert all("\n" not in str(e.value) for e in (missing, no_config, bad_config))


def _with_config(model: Path) -> Path:
    shutil.copy(Path(f"{default_voice_path()}.json"), Path(f"{model}.json"))
    return model


async def test_a_corrupt_voice_fails_with_a_one_line_error_on_first_use(tmp_path: Path) -> None:
    corrupt = _with_config(tmp_path / "corrupt.onnx")
    corrupt.write_bytes(b"\x08\x01 definitely not a protobuf" * 10)
    with pytest.raises(ModelError, match=r"corrupt\.onnx: cannot load the Piper voice") as caught:
        await speak("Hello.", PiperSynthesizer(corrupt))
    assert "\n" not in str(caught.value)


async def test_an_onnx_model_that_is_not_a_piper_voice_is_refused(tmp_path: Path) -> None:
    model = _with_config(tmp_path / "identity.onnx")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity", [x], [y])
    onnx.save(helper.make_model(graph), str(model))
    with pytest.raises(ModelError, match="not a Piper voice"):
        await speak("Hello.", PiperSynthesizer(model))


async def test_ten_thousand_characters_are_spoken_in_bounded_cancellable_steps() -> None:
    synthesizer = PiperSynthesizer()
    await speak("Warm up.", synthesizer)
    started = time.monotonic()
    await speak("Tea is good, and so is coffee. " * (MAX_CHARS // 31), synthesizer)
    one_segment = time.monotonic() - started  # this machine's pace, under whatever load it has now
    for text in ("Tea is good, and so is coffee. " * 330, "word " * 2000):
        assert len(text) >= 10_000
        signal = CancelSignal()
        started = time.monotonic()
        stream = synthesizer.stream(text, signal)
        first = await anext(stream)
        second = await anext(stream)
        assert time.monotonic() - started < 10 * one_segment + 2, "the first segments come before the rest is made"
        assert all(len(s.text.strip()) <= MAX_CHARS for s in (first, second))
        signal.set(User())
        assert [s async for s in stream] == []
        assert synthesizer.busy == 0


async def test_a_stop_ends_the_inference_under_way_rather_than_the_sentence() -> None:
    synthesizer = PiperSynthesizer()
    await speak("Warm up.", synthesizer)
    voice = shared_voice(synthesizer.voice_path)
    sentence = "the quick brown fox jumps over the lazy dog, " * 5 + "and then it rests"
    started = time.monotonic()
    assert await asyncio.to_thread(render, voice, 0, sentence, StopFlag()) is not None
    whole = time.monotonic() - started
    stop = StopFlag()
    job = asyncio.ensure_future(asyncio.to_thread(render, voice, 0, sentence, stop))
    await asyncio.sleep(whole / 3)  # the moment to stop: a third of the way into the sentence
    stopped = time.monotonic()
    stop.set()
    assert await job is None
    latency = time.monotonic() - stopped
    print(f"\npiper: a {whole * 1000:.0f} ms sentence stopped {latency * 1000:.1f} ms after the stop")
    assert latency < whole / 2, "the inference was ended, not run to the end of the sentence"
    assert await asyncio.to_thread(render, voice, 0, "Still speaking.", StopFlag()) is not None, "voice still usable"


@pytest.mark.parametrize(
    "text",
    [
        "\u4f60\u597d\uff0c\u4e16\u754c\u3002",
        "Привет, как дела?",
        "Ελληνικά γράμματα.",
        "[[ bad phonemes ]] then words.",
    ],
)
async def test_other_scripts_and_raw_phoneme_syntax_give_audio_not_a_traceback(text: str) -> None:
    segments = await speak(text)
    assert segments
    assert all(len(s.audio) > 0 for s in segments)
    assert "".join(s.text for s in segments) == text


async def test_the_stream_never_blocks_the_event_loop() -> None:
    synthesizer = PiperSynthesizer()
    await speak("Warm up.", synthesizer)
    ticks_while_busy = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks_while_busy
        while not done.is_set():
            ticks_while_busy += synthesizer.busy > 0
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    await speak("A sentence long enough to take a while to synthesize on this machine, surely.", synthesizer)
    done.set()
    await task
    assert ticks_while_busy >= 2, "the loop kept turning while Piper's thread worked"


async def test_a_voice_that_loads_but_cannot_speak_fails_its_preload_with_a_one_line_error(tmp_path: Path) -> None:
    model = _with_config(tmp_path / "mute.onnx")
    inputs = [
        helper.make_tensor_value_info("input", TensorProto.INT64, [1, None]),
        helper.make_tensor_value_info("input_lengths", TensorProto.INT64, [1]),
        helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3]),
    ]
    output = helper.make_tensor_value_info("output", TensorProto.FLOAT, None)
    seven = helper.make_tensor("seven", TensorProto.INT64, [1], [7])  # three scales cannot be seven values
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["scales", "seven"], ["output"])], "mute", inputs, [output], [seven]
    )
    onnx.save(helper.make_model(graph), str(model))
    with pytest.raises(ModelError, match=r"mute\.onnx: the Piper voice cannot speak") as caught:
        await PiperSynthesizer(model).preload(CancelSignal())
    assert "\n" not in str(caught.value)
