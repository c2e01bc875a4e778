"""everyday_correct: the share of everyday questions (desktop.bench.everyday_questions) the configured language
model answers right, so models can be compared by one number.

Each question is a fresh conversation run by the engine as the app runs a turn: the journal, the history, the
system prompt with the date and time of an injected wall clock, the built-in tools (the clock one on the same wall),
the retry budgets of the configuration, and a silent speaker whose idle time is skipped. A recall question is the
second turn of its conversation. A reply is right when it holds an accepted answer (desktop.bench.everyday_match);
the reply read is the text the model generated for it, all of which the silent speaker let be heard.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from operator import contains
from pathlib import Path

from adapters.llm.secret import Secret, load_api_key
from desktop.bench.everyday_match import holds
from desktop.bench.everyday_questions import WALL, Item, everyday_questions
from desktop.bench.interruptions import Turns, poll
from desktop.bench.table import Row, not_measured, row
from desktop.builtin_tools import current_time_tool, take_note_tool
from desktop.config import Config
from desktop.pipeline.parts import LlmChoice, llm_choice
from desktop.providers.table import provider_named
from engine.clock import SkippingClock
from engine.conversation import EngineParts, open_conversation
from engine.inbox import UserInput
from engine.journal import Journal
from engine.prompt import HistoryPrompt, now_sentence
from engine.retry import Budgets
from engine.silent_speech import SilentSpeech
from engine.tools import ToolRegistry

NAME = "everyday_correct"
MS_PER_WORD = 250.0
SHOWN_CHARS = 80  # of a wrong reply, in the footnotes


@dataclass(frozen=True)
class Answer:
    item: Item
    reply: str
    failure: str | None  # why the model gave no reply (the provider's message), None when it did

    @property
    def right(self) -> bool:
        return self.failure is None and holds(self.reply, self.item.accepted)


@dataclass(frozen=True)
class Everyday:
    """The answers of one model (`label`, as the Settings dialog names it), asked at `wall`."""

    label: str
    answers: tuple[Answer, ...]
    wall: dt.datetime = WALL

    @property
    def percent(self) -> float:
        return round(100.0 * sum(a.right for a in self.answers) / max(1, len(self.answers)), 1)


@dataclass(frozen=True)
class Configured:
    """The configured model, and the key its journals must keep out (a cloud provider's)."""

    choice: LlmChoice
    config: Config
    key: Secret | None


def configured_llm(config: Config) -> Configured:
    """The language model `config` names, as the app builds it (a one-line BadInput when it cannot be)."""
    provider = provider_named(config.llm.provider)
    key = load_api_key() if provider is not None and provider.sends_key else None
    return Configured(llm_choice(config, key), config, key)


async def everyday_answers(
    llm: Configured, root: Path, count: int | None = None, *, wall: dt.datetime = WALL,
    progress: Callable[[str], None] = lambda _: None,
) -> Everyday:  # fmt: skip
    """The first `count` questions (all when None), each in a conversation of its own under `root`."""
    if llm.choice.load is not None:
        await llm.choice.load()
    items = everyday_questions(wall)[:count]
    answers = []
    for n, item in enumerate(items, start=1):
        answers.append(await _conversation(llm, root / f"q{n}", item, wall))
        progress(f"everyday question {n}/{len(items)}")
    return Everyday(llm.choice.label, tuple(answers), wall)


async def _conversation(llm: Configured, out: Path, item: Item, wall: dt.datetime) -> Answer:
    clock, turns = SkippingClock(real=True), Turns()
    secrets = [llm.key.reveal()] if llm.key is not None else []
    with Journal(out / "journal.jsonl", secrets=secrets) as journal:
        tools = ToolRegistry([current_time_tool(lambda: wall), take_note_tool(out / "notes.txt")])
        parts = EngineParts(
            llm=llm.choice.adapter,
            speech=SilentSpeech(clock, ms_per_word=MS_PER_WORD),
            journal=journal,
            clock=clock,
            tools=tools,
            prompt=HistoryPrompt(wall=lambda: wall),
            budgets=Budgets(retries=llm.config.llm.retries, reply_s=llm.config.llm.max_reply_s),
            summary=llm.config.summary(),
        )
        async with clock.autojump(), open_conversation(parts) as conversation:
            conversation.subscribe(turns)
            for turn, said in enumerate(item.said, start=1):
                conversation.submit(UserInput(said, source="voice"))
                await poll(clock, partial(contains, turns.ended, turn))
    last = len(item.said)
    failure = turns.ended[last].failure
    replied = turns.heard.get(last)
    return Answer(item, replied.generated.strip() if replied else "", failure.message if failure else None)


def everyday_row(result: Everyday | str | None) -> Row:
    """The share right in %, informational (no target): it says how good the model is, not how Parley is."""
    if result is None or isinstance(result, str):
        return not_measured(NAME, None, result or "not run")
    failed = [a for a in result.answers if a.failure is not None]
    if not result.answers or len(failed) == len(result.answers):
        why = failed[0].failure if failed else "no questions"
        return not_measured(NAME, None, f"{result.label} gave no answer: {why}")
    note = f"% of {len(result.answers)} everyday questions right, {result.label}"
    return row(NAME, [result.percent], None, note=note + (f"; {len(failed)} not answered" if failed else ""))


def everyday_notes(result: Everyday | str | None) -> list[str]:
    """What was asked, and each wrong reply, so a miss can be looked at."""
    if result is None or isinstance(result, str):
        return []
    kinds = ", ".join(dict.fromkeys(a.item.kind for a in result.answers))
    notes = [
        f"{NAME}: {len(result.answers)} short spoken questions ({kinds}; a recall question is the second turn of "
        f"its conversation) asked of {result.label} as the app runs a turn, the system prompt saying "
        f"{now_sentence(result.wall)!r}; right when the reply holds an accepted answer (numbers as digits or words)."
    ]
    wrong = [_wrong(a) for a in result.answers if not a.right]
    if wrong:
        notes.append(f"{NAME} wrong: " + "; ".join(wrong))
    return notes


def _wrong(answer: Answer) -> str:
    got = answer.failure or answer.reply
    shown = " ".join(got.split())
    shown = shown if len(shown) <= SHOWN_CHARS else shown[: SHOWN_CHARS - 1] + "…"
    return f"{answer.item.question!r} -> {shown!r} (wanted {' or '.join(answer.item.accepted)})"
