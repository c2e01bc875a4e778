"""The OpenAI chat-completions wire format: request body out, stream payloads in (pure, no I/O)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from adapters.contract.llm import (
    CONTEXT_WINDOW_EXCEEDED,
    EMPTY_RESPONSE,
    Finish,
    GenerateOptions,
    LlmFailure,
    Message,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from adapters.llm.failures import ErrorInfo, code_for_stream_error, error_info, one_line


class WireError(ValueError):
    """A payload that is valid JSON but not a chat-completions chunk (or a request we cannot encode)."""


def build_body(options: GenerateOptions, default_model: str) -> bytes:
    """The streaming request; tool schemas are JSON text in ToolSpec and become JSON objects here."""
    body: dict[str, Any] = {
        "model": options.model or default_model,
        "messages": [_message(message) for message in options.messages],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if options.tools:
        body["tools"] = [_tool(spec.name, spec.description, spec.parameters) for spec in options.tools]
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError as exc:
        raise WireError(f"the request cannot be encoded as JSON ({exc})") from None


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        calls = [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
        return {"role": "assistant", "content": message.content or None, "tool_calls": calls}
    return {"role": message.role, "content": message.content}


def _tool(name: str, description: str, parameters: str) -> dict[str, Any]:
    try:
        schema = json.loads(parameters)
    except ValueError:
        raise WireError(f"tool {name!r} has a parameters schema that is not JSON") from None
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


@dataclass
class StreamState:
    """Turns decoded payloads into chunks and knows how the stream must end (usage, then finish)."""

    where: str  # "provider at URL", the start of every failure message
    request_id: str | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    done: bool = False
    failure: LlmFailure | None = None
    _content: bool = False
    _seen: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """[DONE] or an in-stream error ends reading; a finish_reason alone still awaits the usage chunk."""
        return self.done or self.failure is not None

    @property
    def ended_cleanly(self) -> bool:
        """Whether an end of body now is a normal end (some servers stop after finish_reason)."""
        return self.finished or self.finish_reason is not None

    def on_payload(self, payload: object, *, error_event: bool = False) -> list[StreamChunk]:
        """Chunks for one event; an error object ends the stream (see `finished`) instead."""
        if error_event or (isinstance(payload, dict) and "error" in payload):
            self._on_error(error_info(payload) or ErrorInfo(message="the provider sent an error event"))
            return []
        if not isinstance(payload, dict):
            raise WireError("a stream event is not a JSON object")
        self._usage(payload.get("usage"))
        choices = payload.get("choices") or []
        if not isinstance(choices, list):
            raise WireError("'choices' is not a list")
        chunks: list[StreamChunk] = []
        for choice in choices:
            chunks.extend(self._choice(choice))
        return chunks

    def ending(self) -> list[StreamChunk]:
        """Usage (zeros when the provider never said), then exactly one Finish."""
        usage = self.usage or Usage(0, 0)
        if self.failure is not None:
            return [usage, Finish("error", self.failure)]
        reason = self.finish_reason or "stop"
        if not self._content:
            message = f"{self.where}: the reply has no text and no tool call (finish_reason {reason})"
            return [usage, Finish("error", LlmFailure(message, EMPTY_RESPONSE, request_id=self.request_id))]
        return [usage, Finish(reason)]

    def _on_error(self, info: ErrorInfo) -> None:
        status = info.status if info.status is not None and 400 <= info.status < 600 else None
        message = one_line(f"{self.where}: error inside the stream: {info.message or 'no detail'}", 400)
        code = code_for_stream_error(info)
        sizes = (info.prompt_tokens, info.context_tokens) if code == CONTEXT_WINDOW_EXCEEDED else (None, None)
        self.failure = LlmFailure(message, code, status, None, self.request_id, *sizes)

    def _usage(self, raw: object) -> None:
        if not isinstance(raw, dict):
            return
        prompt, completion = raw.get("prompt_tokens", 0), raw.get("completion_tokens", 0)
        if isinstance(prompt, int) and isinstance(completion, int):
            self.usage = Usage(prompt, completion)

    def _choice(self, choice: object) -> list[StreamChunk]:
        if not isinstance(choice, dict):
            raise WireError("a choice is not a JSON object")
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise WireError("'delta' is not a JSON object")
        chunks: list[StreamChunk] = []
        content = delta.get("content")
        if content is not None and not isinstance(content, str):
            raise WireError("'delta.content' is not a string")
        if content:
            self._content = True
            chunks.append(TextDelta(content))
        calls = delta.get("tool_calls") or []
        if not isinstance(calls, list):
            raise WireError("'delta.tool_calls' is not a list")
        chunks.extend(self._tool_delta(call) for call in calls)
        return chunks

    def _tool_delta(self, call: object) -> ToolCallDelta:
        if not isinstance(call, dict) or not isinstance(call.get("index", 0), int):
            raise WireError("a tool-call delta is not a JSON object with an integer index")
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise WireError("a tool-call delta's 'function' is not a JSON object")
        arguments = function.get("arguments") or ""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)  # a non-compliant server sent an object
        index: int = call.get("index", 0)
        call_id, name = self._first_time(index, _text(call.get("id")), _text(function.get("name")))
        self._content = True
        return ToolCallDelta(index=index, arguments=arguments, call_id=call_id, name=name)

    def _first_time(self, index: int, call_id: str | None, name: str | None) -> tuple[str | None, str | None]:
        """Ids and names are reported once per call even if a server repeats them in every fragment."""
        seen_id, seen_name = self._seen.get(index, (None, None))
        self._seen[index] = (seen_id or call_id, seen_name or name)
        return (None if seen_id else call_id), (None if seen_name else name)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
