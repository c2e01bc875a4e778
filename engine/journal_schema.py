"""The shape of every journal event (SPEC §7), checked on read: a line that does not fit is quarantined, not obeyed.

Everything that reads the journal (history, report, invariants, the window's transcript) indexes fields directly;
one hand-edited line with `"seq": "5"`, a missing `turn` or a `user/message` without `text` once took a run down with
a traceback and hid the conversation. Only fields the code relies on are required; anything else may be added.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive(value: Any) -> bool:
    return _whole(value) and value >= 1


def _counted(value: Any) -> bool:
    return _whole(value) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _failure(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("code"), str)


def _outcome(value: Any) -> bool:
    return value in ("completed", "aborted", "failed")


NAMES: dict[Check, str] = {_positive: "a whole number from 1", _counted: "a whole number", _number: "a finite number",
         _text: "a string", _flag: "true or false", _failure: "an object with a code", _outcome:
         "completed, aborted or failed"}  # fmt: skip
TURN: dict[str, Check] = {"turn": _positive}
STEP: dict[str, Check] = {"turn": _positive, "step": _positive}
REQUIRED: dict[str, dict[str, Check]] = {
    "turn/start": {**TURN, "source": _text},
    "user/message": {**TURN, "text": _text},
    "llm/request": {**STEP, "attempt": _positive},
    "assistant/attempt": {**STEP, "attempt": _positive, "failure": _failure},
    "llm/retry": {**STEP, "retry": _positive, "delay_ms": _number, "failure": _failure},
    "tool/call": {**STEP, "call_id": _text, "name": _text, "arguments": _text},
    "tool/result": {**STEP, "call_id": _text, "code": _text, "output": _text},
    "assistant/message": {**STEP, "text": _text, "interrupted": _flag},
    "turn/end": {**TURN, "outcome": _outcome},
    "metrics/turn": TURN,
}
OPTIONAL: dict[str, Check] = {  # when present, whatever the type
    "turn": _positive,
    "heard_ms": _number,
    "generated_chars": _counted,
    "trimmed_turns": _counted,
    "failure": _failure,
    "recovered": _flag,
}


def problem(event: Any) -> str | None:
    """Why `event` (a parsed JSON line) is not a journal event, in a few words; None when it is one."""
    if not isinstance(event, Mapping):
        return f"a JSON {_json_kind(event)}, not an object"
    basics: tuple[tuple[str, Check], ...] = (("seq", _positive), ("time", _number))
    for name, check in basics:
        if not check(event.get(name)):
            return f"{name} is {_shown(event, name)}, not {NAMES[check]}"
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        return f"type is {_shown(event, 'type')}, not a string"
    required = REQUIRED.get(kind, {})
    for name, check in {**OPTIONAL, **required}.items():
        if (name in required or name in event) and not check(event.get(name)):
            return f"{kind} {name} is {_shown(event, name)}, not {NAMES[check]}"
    return None


def _json_kind(value: Any) -> str:
    kinds = {list: "array", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


def _shown(event: Mapping[str, Any], name: str) -> str:
    if name not in event:
        return "missing"
    text = "null" if event[name] is None else repr(event[name])
    return text if len(text) <= 24 else text[:21] + "..."
