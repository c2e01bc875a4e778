"""Close a turn in the journal: heard-only replies, balanced tool calls, metrics, exactly one turn/end."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from adapters.contract import LlmFailure
from engine.events import ReplyHeard
from engine.heard import heard_of
from engine.journal import Journal, unanswered_calls
from engine.speech import SpeechKey, SpeechOutput
from engine.step import StepText, TurnRecord, failure_fields
from engine.tools import ABORTED_BEFORE_DISPATCH

_FENCE = re.compile(r"^[ \t]*```[^\n]*$", re.MULTILINE)


def finalize_turn(
    journal: Journal,
    speech: SpeechOutput,
    turn: int,
    record: TurnRecord,
    outcome: str,
    failure: LlmFailure | None,
    *,
    phase_codes: dict[str, str],
    publish: Callable[[Any], bool],
) -> None:
    _write_heard_replies(journal, speech, turn, record, publish, outcome=outcome)
    for call_id, step in unanswered_calls(journal.events, turn).items():
        code = phase_codes.get(call_id, ABORTED_BEFORE_DISPATCH)
        journal.append("tool/result", turn=turn, step=step, call_id=call_id, code=code, output=_aborted(code))
    journal.append("metrics/turn", turn=turn, **record.metrics)
    end: dict[str, Any] = {"turn": turn, "outcome": outcome}
    if failure is not None:
        end["failure"] = failure_fields(failure)
    journal.append("turn/end", **end)
    speech.release(turn)


def _write_heard_replies(
    journal: Journal,
    speech: SpeechOutput,
    turn: int,
    record: TurnRecord,
    publish: Callable[[Any], bool],
    *,
    outcome: str,
) -> None:
    """One `assistant/message` per step holding only what was heard; nothing when nothing was.

    A reply is `interrupted` when some of its words were not heard, or when the turn was aborted while that step was
    still going (the model would have said more). What cannot be spoken (`***`, an emoji, a closing code fence) is
    skipped by the voice, not unheard: a completed turn was drained, so every segment it spoke played out in full.
    """
    last_step = max(record.steps, default=0)
    segments = speech.report(turn)
    for step, generated in sorted(record.steps.items()):
        key = SpeechKey(turn, step, generated.attempt)
        heard = heard_of(s for s in segments if s.key == key)
        cut_short = not heard.complete or (outcome != "completed" and _words_unheard(generated.text, heard.text))
        interrupted = cut_short or (outcome == "aborted" and step == last_step)
        publish(ReplyHeard(turn, step, heard.text, generated.text, interrupted, heard.heard_ms))
        if heard.text:
            journal.append(
                "assistant/message",
                turn=turn,
                step=step,
                text=heard.text,
                interrupted=interrupted,
                heard_ms=round(heard.heard_ms, 1),
                generated_chars=len(generated.text),
                **_ending(generated),
            )


def _words_unheard(generated: str, heard: str) -> bool:
    """Whether the generated text goes on with words after what was heard (a code fence line is not words)."""
    said = generated.strip()
    if not said.startswith(heard):
        return len(heard) < len(said)
    rest = _FENCE.sub("", said[len(heard) :])
    return any(char.isalnum() for char in rest)


def _ending(generated: StepText) -> dict[str, Any]:
    """`finish`: the stream's finish reason ("length": cut for length, by the provider's max_tokens or, with
    `reply_limit_s`, by Parley's reply limit); absent when the stream never finished (an aborted turn)."""
    ending: dict[str, Any] = {} if generated.finish is None else {"finish": generated.finish}
    if generated.limit_s is not None:
        ending["reply_limit_s"] = generated.limit_s
    return ending


def _aborted(code: str) -> str:
    if code == ABORTED_BEFORE_DISPATCH:
        return "cancelled before the tool ran; no side effects"
    return "cancelled while the tool was running; side effects possible"
