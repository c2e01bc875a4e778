"""The journal's invariants (checked by tests and by `parley self-test`); each violation is one readable line."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

from engine.journal import Event
from engine.retry import Budgets


def violations(events: Sequence[Event], budgets: Budgets = Budgets()) -> list[str]:
    """Everything wrong with a journal; empty when it keeps every promise."""
    return [
        *_seq_increasing(events),
        *_one_end_per_turn(events),
        *_one_result_per_call(events),
        *_sends_within_budget(events, budgets),
        *_nothing_after_end(events),
        *_interrupted_turns(events),
    ]


def _seq_increasing(events: Sequence[Event]) -> list[str]:
    seqs = [int(e["seq"]) for e in events]
    return [] if all(a < b for a, b in itertools.pairwise(seqs)) else ["seq is not strictly increasing"]


def _one_end_per_turn(events: Sequence[Event]) -> list[str]:
    starts = Counter(e["turn"] for e in events if e["type"] == "turn/start")
    ends = Counter(e["turn"] for e in events if e["type"] == "turn/end")
    return [f"turn {t} has {ends[t]} turn/end events" for t in starts if ends[t] != 1]


def _one_result_per_call(events: Sequence[Event]) -> list[str]:
    calls = Counter(e["call_id"] for e in events if e["type"] == "tool/call")
    results = Counter(e["call_id"] for e in events if e["type"] == "tool/result")
    return [f"tool call {c} has {results[c]} results" for c in calls if results[c] != 1]


def _sends_within_budget(events: Sequence[Event], budgets: Budgets) -> list[str]:
    sends = Counter((e["turn"], e["step"]) for e in events if e["type"] == "llm/request")
    return [f"turn {t} step {s} sent {n} requests" for (t, s), n in sends.items() if n > budgets.max_sends]


def _nothing_after_end(events: Sequence[Event]) -> list[str]:
    ended: set[object] = set()
    problems = []
    for event in events:
        turn = event.get("turn")
        if turn in ended:
            problems.append(f"{event['type']} (seq {event['seq']}) comes after turn {turn} ended")
        if event["type"] == "turn/end":
            ended.add(turn)
    return problems


def _interrupted_turns(events: Sequence[Event]) -> list[str]:
    problems = []
    for end in (e for e in events if e["type"] == "turn/end" and e["outcome"] == "aborted"):
        messages = [e for e in events if e["type"] == "assistant/message" and e["turn"] == end["turn"]]
        if len(messages) > 1 and len({m["step"] for m in messages}) == 1:
            problems.append(f"aborted turn {end['turn']} has {len(messages)} assistant messages for one step")
        for message in messages:
            if len(message["text"]) > int(message.get("generated_chars", 0)):
                problems.append(f"turn {end['turn']}: heard text is longer than what was generated")
    return problems
