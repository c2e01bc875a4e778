"""Context-overflow recovery: which of the oldest turns to leave out so that the prompt fits, every time.

The system prompt and the newest turn are always sent; turns are left out oldest first, whole. A trim aims at
TARGET_SHARE of the context window (when the provider said its size and the prompt's), estimated from the
characters sent, so that the reply has its room and the next turns fit too without trimming again: the kept
prefix then stays the same from turn to turn (the embedded model's prompt cache keeps it). When the provider says
nothing about sizes, half of the earlier turns it was sent are left out. The last trim a step's budget allows
leaves out every earlier turn: if the newest turn fits at all, the step is answered within its budget (max sends =
1 + the sum of the budgets).

A conversation keeps its trim: a new request starts from what the latest request to the same model left out
(`trimmed_turns` in the journal), so a long conversation does not overflow once per turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.contract import LlmFailure, Message
from engine.history import turns_of
from engine.journal import Event

TARGET_SHARE = 0.5


def carried_trim(events: Sequence[Event], provider: str, model: str) -> int:
    """How many of the oldest turns the latest request to this provider and model left out (0 if none)."""
    for event in reversed(events):
        if event.get("type") == "llm/request" and (event.get("provider"), event.get("model")) == (provider, model):
            return int(event.get("trimmed_turns", 0))
    return 0


def turn_sizes(events: Sequence[Event]) -> list[int]:
    """Characters each turn adds to a prompt, oldest first (the newest is the turn being answered)."""
    return [sum(_chars(message) for message in turn.messages()) for turn in turns_of(events)]


def next_trim(sizes: Sequence[int], dropped: int, failure: LlmFailure, *, fixed: int, last: bool) -> int:
    """The number of oldest turns to leave out after an overflow with `dropped` left out: always more than before
    (at most every turn but the newest). `fixed` is what every prompt holds besides the turns (the system prompt)."""
    past = max(0, len(sizes) - 1)
    if last or dropped >= past:
        return past
    tokens, window = failure.prompt_tokens, failure.context_tokens
    if not (tokens and window and tokens > 0):
        return dropped + max(1, (past - dropped) // 2)  # sizes unknown: half the earlier turns it was sent
    sent = fixed + sum(sizes[dropped:])
    budget = sent * window * TARGET_SHARE / tokens  # in characters, at the characters per token just sent
    kept, drop = fixed + sizes[-1], past
    for index in range(past - 1, dropped - 1, -1):  # the newest earlier turns first, while they fit
        if kept + sizes[index] > budget:
            break
        kept += sizes[index]
        drop = index
    return max(drop, dropped + 1)


def prompt_chars(messages: Sequence[Message]) -> int:
    return sum(_chars(message) for message in messages)


def _chars(message: Message) -> int:
    calls = sum(len(call.name) + len(call.arguments) for call in message.tool_calls)
    return len(message.content) + calls + 8  # the chat template's few tokens around each message
