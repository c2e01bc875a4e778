"""A readable per-turn account of a session, built from the journal alone."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.journal import Event

_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # a line break in a message must not forge a line


def _line(text: object) -> str:
    """A field on one line: control characters (newlines, escapes) become a space."""
    return _CONTROLS.sub(" ", str(text))


@dataclass
class TurnReport:
    turn: int
    source: str = ""
    user: str = ""
    heard: list[str] = field(default_factory=list)
    interrupted: bool = False
    generated_chars: int = 0
    outcome: str = "open"
    failure: dict[str, Any] | None = None
    attempts: list[str] = field(default_factory=list)
    retries: list[int] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)


def _apply(report: TurnReport, event: Event) -> None:
    kind = event["type"]
    if kind == "turn/start":
        report.source = str(event.get("source", ""))
    elif kind == "user/message":
        report.user = str(event["text"])
    elif kind == "assistant/message":
        report.heard.append(str(event["text"]))
        report.interrupted = report.interrupted or bool(event.get("interrupted"))
        report.generated_chars += int(event.get("generated_chars", 0))
    elif kind == "assistant/attempt":
        report.attempts.append(str(event["failure"]["code"]))
    elif kind == "llm/retry":
        report.retries.append(int(event["delay_ms"]))
    elif kind == "tool/result":
        report.tools.append(f"{event['call_id']}={event['code']}")
    elif kind == "metrics/turn":
        report.metrics = {k: v for k, v in event.items() if k not in ("seq", "time", "type", "turn")}
    elif kind == "turn/end":
        report.outcome = str(event["outcome"])
        report.failure = event.get("failure")


def turn_reports(events: Sequence[Event]) -> list[TurnReport]:
    reports: dict[int, TurnReport] = {}
    for event in events:
        if "turn" in event:
            turn = int(event["turn"])
            _apply(reports.setdefault(turn, TurnReport(turn)), event)
    return list(reports.values())


def render(reports: Sequence[TurnReport], generated: dict[int, str] | None = None) -> str:
    """Plain text for a terminal; `generated` (from live events) shows what was produced but not heard."""
    lines: list[str] = []
    for r in reports:
        lines.append(f"turn {r.turn} [{r.source}] -> {r.outcome}" + (" (interrupted)" if r.interrupted else ""))
        lines.append(f"  user:      {_line(r.user)}")
        if generated and r.turn in generated:
            lines.append(f"  generated: {_line(generated[r.turn].strip())}")
        lines.append(f"  heard:     {_line(' '.join(r.heard)) or '(nothing)'}")
        if r.attempts or r.retries:
            lines.append(f"  attempts failed: {_line(', '.join(r.attempts))}; backoff ms: {r.retries}")
        if r.tools:
            lines.append(f"  tools: {_line(', '.join(r.tools))}")
        if r.failure:
            lines.append(f"  failure: {_line(r.failure.get('code'))}: {_line(r.failure.get('message'))}")
        if r.metrics:
            lines.append("  metrics: " + ", ".join(f"{k}={v}" for k, v in sorted(r.metrics.items())))
    return "\n".join(lines)
