"""SmolLM2 behind the `WordsEndModel` contract: how likely the user's message ends with these words.

The way livekit's turn detector reads a transcript, with the GGUF the embedded LLM already ships: the words
(lower-cased, punctuation dropped, since Whisper ends fragments with a full stop) as a user message in the chat
template, and the probability the model gives to the end-of-message token right after them. Measured on the
end-of-turn fixtures (assets/fixtures/turns): the fragments that sound complete ("my favourite food is", "who
wrote the book", "remind me to water the plants") get at most 0.0004; 12 of the 20 whole statements 0.0013 or
more. It is a second small context of its own (the embedded LLM's cache keeps the conversation), one thread,
the fixed prefix evaluated once; one call evaluates a dozen tokens (60-160 ms here, ~90 typical), one step too
short to stop midway.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from adapters.contract.cancel import CancelSignal
from adapters.contract.workers import StopFlag, Worker
from adapters.llm.local import bundled_model, open_llama
from adapters.llm.models import LLAMA_LOAD_LOCK, ModelError

N_CTX = 256
MAX_WORDS = 60  # the last words of a long turn are what tell its end
PREFIX = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
END_OF_MESSAGE = "<|im_end|>"
WORDS_WORKER = Worker("parley-turn-words", threads=1)
_WORD = re.compile(r"[a-z0-9']+")


@dataclass
class _Context:
    llama: Any
    prefix: list[int]
    end: int  # the end-of-message token
    lock: threading.Lock


_contexts: dict[Path, _Context] = {}
_contexts_lock = threading.Lock()


def normalized(text: str) -> str:
    """What the model reads: the last MAX_WORDS words, lower case, no punctuation."""
    return " ".join(_WORD.findall(text.lower())[-MAX_WORDS:])


def _load(path: Path) -> _Context:
    try:
        llama = open_llama(path, n_ctx=N_CTX, n_threads=1, n_threads_batch=1)
    except (ValueError, RuntimeError) as error:
        raise ModelError(f"cannot load {path} for the end-of-turn words ({error})") from None
    end = llama.tokenize(END_OF_MESSAGE.encode(), add_bos=False, special=True)
    if len(end) != 1:
        with LLAMA_LOAD_LOCK:
            llama.close()
        raise ModelError(f"{path} has no single {END_OF_MESSAGE} token: not a SmolLM2 chat model")
    return _Context(llama, llama.tokenize(PREFIX.encode(), add_bos=False, special=True), end[0], threading.Lock())


def shared_context(path: Path) -> _Context:
    """Load once per process (blocking: call it from a worker thread)."""
    with _contexts_lock:
        if path not in _contexts:
            _contexts[path] = _load(path)
        return _contexts[path]


def score(context: _Context, text: str) -> float:
    """P(end of message | the words) (blocking)."""
    words = normalized(text)
    if not words:
        return 0.0
    llama = context.llama
    tokens = context.prefix + llama.tokenize(words.encode(), add_bos=False, special=False)
    tokens = tokens[: N_CTX - 1]
    with context.lock:
        cached = llama.input_ids[: llama.n_tokens].tolist()
        keep = min(int(llama_cpp.Llama.longest_token_prefix(cached, tokens)), len(tokens) - 1)
        llama.n_tokens = keep  # Llama.eval drops the KV cache beyond n_tokens
        llama.eval(tokens[keep:])
        last = llama_cpp.llama_get_logits_ith(llama.ctx, -1)  # eval keeps no logits without logits_all
        logits = np.ctypeslib.as_array(last, shape=(llama.n_vocab(),)).astype(np.float64)
    top = float(np.max(logits))
    log_total = top + math.log(float(np.sum(np.exp(logits - top))))
    probability = math.exp(float(logits[context.end]) - log_total)
    return min(max(probability, 0.0), 1.0) if math.isfinite(probability) else 0.0


class SentenceEnd:
    """Asks SmolLM2 whether the user's message would end with the words heard so far."""

    def __init__(self, model_path: Path | None = None, *, worker: Worker = WORDS_WORKER) -> None:
        self._path = model_path if model_path is not None else bundled_model()
        self._worker = worker

    @property
    def busy(self) -> int:
        return self._worker.active

    async def preload(self, signal: CancelSignal) -> None:
        """Load the context and read the fixed prefix in the worker now, so the first pause does not pay for it."""
        await self._worker.run(lambda _stop: score(shared_context(self._path), "hello"), signal)

    def probability(self, text: str) -> float:
        """Blocking form of `predict_words`, for offline evaluation on the caller's thread."""
        return score(shared_context(self._path), text)

    async def predict_words(self, text: str, signal: CancelSignal) -> float:
        return await self._worker.answer(lambda stop: self._judge(text, stop), signal)

    def _judge(self, text: str, stop: StopFlag) -> float | None:
        if stop.is_set():
            return None
        return score(shared_context(self._path), text)
