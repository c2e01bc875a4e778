"""Turn whatever text a synthesizer is given into the source slices it will speak, one per segment."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable

from adapters.contract.speech_io import SpeechText
from adapters.tts.chunker import MAX_CHARS, SpeechChunker
from adapters.tts.speakable import to_speakable


async def source_slices(text: SpeechText, max_chars: int = MAX_CHARS) -> AsyncIterator[str]:
    """A `str` is cut into sentences; an iterable's items are one slice each (cut further only when too long).

    Slices with nothing speakable are left out.
    """
    if isinstance(text, str):
        chunker = SpeechChunker(max_chars=max_chars)
        for segment in [*chunker.feed(text), *chunker.flush()]:
            yield segment.text
        return
    async for item in _items(text):
        for piece in _bounded(item, max_chars):
            if to_speakable(piece).has_words:
                yield piece


async def _items(text: Iterable[str] | AsyncIterable[str]) -> AsyncIterator[str]:
    if isinstance(text, AsyncIterable):
        async for item in text:
            yield item
    else:
        for item in text:
            yield item


def _bounded(item: str, max_chars: int) -> list[str]:
    if len(item) <= max_chars:
        return [item]
    chunker = SpeechChunker(first_clause_words=None, max_chars=max_chars)
    return [segment.text for segment in [*chunker.feed(item), *chunker.flush()]]
