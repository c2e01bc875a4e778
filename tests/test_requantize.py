"""The bundled SmolLM2 read as a Q8_0 copy made once from its Q4_1 file: made whole or not at all, reused, made
again when the shipped file changes, never in the way (an unwritable cache or a damaged copy falls back to the
shipped file), and the answers stay the shipped model's."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import llama_cpp
import pytest

from adapters.llm import local, requantize

pytestmark = pytest.mark.slow
PROMPTS = ["What is two plus two?", "What colour is the sky on a clear day?", "Say good morning to me."]


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    """A copy of the bundled Q4_1 file (so its mtime can change without touching the install)."""
    copy = tmp_path / "shipped" / local.bundled_model().name
    copy.parent.mkdir()
    shutil.copy2(local.bundled_model(), copy)
    return copy


def test_the_copy_is_made_once_and_again_only_when_the_shipped_file_changes(shipped: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = requantize.prompt_ready(shipped, cache)
    assert first != shipped
    assert first.name.startswith("SmolLM2-135M-Instruct.Q8_0-")
    made = first.stat().st_mtime_ns
    assert requantize.prompt_ready(shipped, cache) == first
    assert first.stat().st_mtime_ns == made, "made again although nothing changed"
    os.utime(shipped, ns=(made, made + 10**9))
    second = requantize.prompt_ready(shipped, cache)
    assert second != first
    assert sorted(p.name for p in cache.iterdir()) == [second.name], "the stale copy and no partial file left"


def test_a_file_that_is_no_q4_1_is_read_as_it_is(tmp_path: Path) -> None:
    other = tmp_path / "mine.Q8_0.gguf"
    other.write_bytes(b"GGUF")
    assert requantize.prompt_ready(other, tmp_path / "cache") == other
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_falls_back_to_the_shipped_file(
    shipped: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="adapters.llm.requantize"):
        assert requantize.prompt_ready(shipped, blocked / "models") == shipped
    assert "as shipped" in caplog.text


def test_a_damaged_copy_is_dropped_and_the_shipped_file_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PARLEY_MODEL_CACHE", str(tmp_path))
    copy = requantize.prompt_ready(local.bundled_model())
    assert copy.parent == tmp_path
    copy.write_bytes(b"GGUF" + b"\0" * 64)
    with caplog.at_level(logging.WARNING, logger="adapters.llm.requantize"):
        llama = local.open_llama(local.bundled_model(), n_ctx=256)
    try:
        assert llama.model_path == str(local.bundled_model())
    finally:
        llama.close()
    assert not copy.exists()
    assert "did not load" in caplog.text


def test_the_copy_answers_as_the_shipped_model_does(shipped: Path, tmp_path: Path) -> None:
    copy = requantize.prompt_ready(shipped, tmp_path / "cache")
    assert _greedy(copy) == _greedy(shipped)


def _greedy(path: Path) -> list[list[int]]:
    """The first four tokens of each prompt's greedy answer."""
    llama = llama_cpp.Llama(str(path), n_ctx=512, n_threads=1, n_threads_batch=2, verbose=False)
    answers = []
    try:
        for prompt in PROMPTS:
            text = f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
            llama.reset()
            llama.eval(llama.tokenize(text.encode(), special=True))
            tokens: list[int] = []
            for token in llama.generate([], temp=0, reset=False):
                tokens.append(token)
                if len(tokens) == 4:
                    break
            answers.append(tokens)
    finally:
        llama.close()
    return answers
