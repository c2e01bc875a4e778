"""Server-sent events decoding, pure and incremental, so the transport code never splits lines itself."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

_EOL = re.compile(r"\r\n|\r|\n")
_KNOWN_FIELDS = frozenset({"data", "event", "id", "retry"})
MAX_LINE_CHARS = 1 << 20


class SseError(ValueError):
    """The bytes are not a well-formed event stream (bad UTF-8, a line that is not a field, no end)."""


@dataclass(frozen=True)
class SseEvent:
    data: str
    event: str = "message"


class SseDecoder:
    """Feed raw body bytes in any split; get complete events back (WHATWG event-stream rules)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self._buffer = ""
        self._started = False
        self._data: list[str] = []
        self._event = ""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        try:
            text = self._decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise SseError("the event stream is not valid UTF-8") from exc
        return self._take(text, final=False)

    def close(self) -> list[SseEvent]:
        """End of body: complete lines still count, an event without its blank line is dropped."""
        try:
            text = self._decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise SseError("the event stream ends inside a UTF-8 character") from exc
        return self._take(text, final=True)

    def _take(self, text: str, *, final: bool) -> list[SseEvent]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        self._buffer += text
        events: list[SseEvent] = []
        for line in self._lines(final=final):
            event = self._line(line)
            if event is not None:
                events.append(event)
        if len(self._buffer) > MAX_LINE_CHARS:
            raise SseError(f"an event-stream line is longer than {MAX_LINE_CHARS} characters")
        return events

    def _lines(self, *, final: bool) -> list[str]:
        lines: list[str] = []
        while match := _EOL.search(self._buffer):
            if match.group() == "\r" and match.end() == len(self._buffer) and not final:
                break  # a "\r\n" may be split across two network reads
            lines.append(self._buffer[: match.start()])
            self._buffer = self._buffer[match.end() :]
        return lines

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if not colon and name not in _KNOWN_FIELDS:
            raise SseError(f"not an event-stream line: {line[:60]!r}")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def _dispatch(self) -> SseEvent | None:
        data, event = self._data, self._event or "message"
        self._data, self._event = [], ""
        if not data:
            return None
        return SseEvent("\n".join(data), event)
