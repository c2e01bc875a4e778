"""The scripted provider behaviours the fault server can play: normal streams and every fault we map."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any, Literal


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Stall:
    """Send nothing more and keep the socket open until the client closes it."""


@dataclass(frozen=True)
class Reset:
    """Abort the connection with a TCP RST (SO_LINGER 0)."""


@dataclass(frozen=True)
class Forever:
    """Send `data` every `every_s` seconds until the client closes the connection (a provider that never stops)."""

    data: bytes
    every_s: float = 0.01


Part = bytes | Delay | Stall | Reset | Forever


@dataclass(frozen=True)
class Behaviour:
    """One scripted response: status line, headers, then body parts framed as `framing` says."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = (("content-type", "text/event-stream"),)
    parts: tuple[Part, ...] = ()
    framing: Literal["chunked", "length", "close"] = "chunked"
    stall_before_headers: bool = False
    request_id_header: str | None = "x-request-id"


def sse(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return sse({"id": "chatcmpl-fault", "object": "chat.completion.chunk", "model": "fault-1", "choices": [choice]})


def usage_chunk(prompt: int = 7, completion: int = 5) -> bytes:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return sse({"id": "chatcmpl-fault", "object": "chat.completion.chunk", "choices": [], "usage": usage})


DONE = b"data: [DONE]\n\n"
ROLE = chunk({"role": "assistant", "content": ""})


JSON = (("content-type", "application/json"),)
CONTEXT_MESSAGE = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. "
    "Please reduce the length of the messages."
)


def words(text: str) -> list[str]:
    """Split into deltas that keep their spaces, so joining them gives the text back exactly."""
    return re.findall(r"\S+\s*|\s+", text)


def _deltas(pieces: list[str], delay: float) -> list[Part]:
    parts: list[Part] = []
    for piece in pieces:
        if delay and parts:
            parts.append(Delay(delay))
        parts.append(chunk({"content": piece}))
    return parts


def text_stream(
    text: str = "Hello there, world.",
    *,
    pieces: list[str] | None = None,
    delay: float = 0.0,
    usage: bool = True,
    done: bool = True,
    framing: Literal["chunked", "length", "close"] = "chunked",
) -> Behaviour:
    """A normal streamed answer: role chunk, text deltas, finish, usage, [DONE]."""
    parts: list[Part] = [ROLE, *_deltas(pieces or words(text), delay), chunk(finish="stop")]
    parts += [usage_chunk()] if usage else []
    parts += [DONE] if done else []
    return Behaviour(parts=tuple(parts), framing=framing)


def tiny_deltas(text: str = "Many tiny deltas, one character each.") -> Behaviour:
    return text_stream(pieces=list(text))


def slow_trickle(text: str = "Slowly, word by word.", delay: float = 0.05) -> Behaviour:
    return text_stream(text, delay=delay)


def tool_call(arguments: str, fragments: list[str] | None = None, *, name: str = "weather") -> Behaviour:
    """One tool call whose raw JSON arguments arrive in fragments (never reassembled by the server)."""
    pieces = fragments or [arguments[:7], arguments[7:19], arguments[19:]]
    assert "".join(pieces) == arguments
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}
    parts: list[Part] = [chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
    parts += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}) for piece in pieces]
    parts += [chunk(finish="tool_calls"), usage_chunk(), DONE]
    return Behaviour(parts=tuple(parts))


def status(code: int, body: object, *, headers: tuple[tuple[str, str], ...] = (), content_type: str = "") -> Behaviour:
    """A non-streaming error answer; dict bodies are sent as JSON."""
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    kind = content_type or ("application/json" if not isinstance(body, str) else "text/plain")
    return Behaviour(code, (("content-type", kind), *headers), (raw,), "length")


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def rate_limited(retry_after: str | None = "2", *, extra: tuple[tuple[str, str], ...] = ()) -> Behaviour:
    headers = ((("retry-after", retry_after),) if retry_after is not None else ()) + extra
    return status(
        429, error_body("Rate limit reached for requests", "requests", "rate_limit_exceeded"), headers=headers
    )


def rate_limited_until(seconds: int, *, with_date: bool = True) -> Behaviour:
    """429 whose Retry-After is an HTTP-date `seconds` after the response's own Date header."""
    now = int(time.time())
    headers = [("retry-after", formatdate(now + seconds, usegmt=True))]
    if with_date:
        headers.append(("date", formatdate(now, usegmt=True)))
    return status(429, error_body("Slow down", "requests", "rate_limit_exceeded"), headers=tuple(headers))


def server_error(code: int = 500) -> Behaviour:
    return status(code, error_body("The server had an error while processing your request.", "server_error"))


def unauthorized() -> Behaviour:
    message = "Incorrect API key provided: sk-***. You can find your API key at https://example.invalid."
    return status(401, error_body(message, "invalid_request_error", "invalid_api_key"))


def quota(code: int = 402) -> Behaviour:
    message = "You exceeded your current quota, please check your plan and billing details."
    return status(code, error_body(message, "insufficient_quota", "insufficient_quota"))


def context_overflow(code: int = 400) -> Behaviour:
    return status(code, error_body(CONTEXT_MESSAGE, "invalid_request_error", "context_length_exceeded"))


def stall_before_headers() -> Behaviour:
    return Behaviour(stall_before_headers=True)


def stall_mid_stream(text: str = "Hello ") -> Behaviour:
    """Some deltas, then silence with the socket open until the client closes it."""
    return Behaviour(parts=(ROLE, *_deltas(words(text), 0.0), Stall()))


def endless_stream(word: str = "and ", *, every_s: float = 0.01) -> Behaviour:
    """Text deltas forever: no finish, no [DONE], no pause long enough for an idle timeout."""
    return Behaviour(parts=(ROLE, Forever(chunk({"content": word}), every_s)))


def reset_mid_stream(text: str = "Hello ") -> Behaviour:
    return Behaviour(parts=(ROLE, *_deltas(words(text), 0.0), Reset()))


def malformed_sse(kind: str = "json") -> Behaviour:
    """A good delta, then a broken event: truncated JSON, or a line that is not an SSE field."""
    broken = b'data: {"choices": [{"delta": {"content": "oo\n\n' if kind == "json" else b"this is not sse\n\n"
    return Behaviour(parts=(ROLE, chunk({"content": "Hi"}), broken, DONE))


def error_in_stream(
    after: str = "Partial", message: str = "The model is overloaded.", kind: str = "server_error"
) -> Behaviour:
    """A 200 stream that reports an error object after some text (OpenAI/OpenRouter style)."""
    parts = (ROLE, chunk({"content": after}), b"data: " + json.dumps(error_body(message, kind)).encode() + b"\n\n")
    return Behaviour(parts=parts)


def empty_completion() -> Behaviour:
    return Behaviour(parts=(ROLE, chunk(finish="stop"), usage_chunk(prompt=7, completion=0), DONE))


def plain_text_200() -> Behaviour:
    return status(200, "Hello, I am not an event stream.", content_type="text/plain")


def json_200() -> Behaviour:
    body = {"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"message": {"content": "Hi"}}]}
    return status(200, body)


def html_error(code: int = 500) -> Behaviour:
    page = "<html><head><title>500 Internal Server Error</title></head><body>" + "<p>stack trace</p>" * 500
    return status(code, page + "</body></html>", content_type="text/html; charset=utf-8")
