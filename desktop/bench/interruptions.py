"""answers_after_interruption: after a story cut off by the user, does the embedded model answer their new question?

A conversation goes on as a person would use it: ask for a story, interrupt it after a few words with a question,
ask for another story, and so on, so every cut reply stays in the history the later ones are read with (a small
model copies what its history shows: the failure this row watches for). The engine runs as in the app (journal,
history, prompt, the heard cursor of a silent speaker). A reply `repeated` when it holds four words in a row of any
reply cut so far in its conversation, or the cut mark; it `answered` when it did not and holds the question's
expected word (SmolLM2-135M also gets some facts wrong: those replies are on topic but not answers).
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from operator import contains
from pathlib import Path
from typing import Any

from adapters.contract import LlmAdapter, User
from engine.clock import SkippingClock
from engine.conversation import Conversation, EngineParts, open_conversation
from engine.events import ReplyHeard, State, StateChanged, TurnEnded
from engine.inbox import UserInput
from engine.journal import Journal
from engine.prompt import HistoryPrompt, PromptBuilder
from engine.silent_speech import SilentSpeech

MS_PER_WORD = 250.0
CUT_WORDS = (4, 40)  # the user interrupts after this many words heard (a uniform draw)
PER_CONVERSATION = 5  # interruptions in one conversation (then a new one: SmolLM2's context is 2048 tokens)
WALL = dt.datetime(2025, 6, 3, 14, 5, tzinfo=dt.timezone(dt.timedelta(hours=2), "CEST"))  # "What time is it?"
TOPICS = ("a dragon who learns to cook", "a pirate who lost his ship", "a robot who wants to paint",
          "a princess who builds a castle", "a lighthouse keeper and his cat", "a fox who opens a bakery",
          "a wizard who forgets his spells", "a girl who finds a map", "an astronaut who misses home",
          "a bear who cannot sleep", "a boy who talks to trees", "a clock that runs backwards",
          "a knight who is afraid of horses", "a whale who sings opera", "a village under the sea")  # fmt: skip
QUESTIONS = (
    ("Stop. What is the capital of France?", ("paris",)),
    ("Wait, what colour is the sky on a clear day?", ("blue",)),
    ("Stop. What time is it?", ("2:05",)),
    ("Hold on, how many days are there in a week?", ("seven", "7")),
    ("Stop. What do bees make?", ("honey",)),
    ("Stop. What is two plus two?", ("four", "4")),
)
Prompt = Callable[[Callable[[], dt.datetime]], PromptBuilder]


@dataclass(frozen=True)
class Interruption:
    heard: str  # what the user heard of the story before cutting in
    question: str
    reply: str
    repeated: bool
    answered: bool


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def repeats(reply: str, cut: str, run: int = 4) -> bool:
    """The reply holds `run` words in a row of the cut reply."""
    said, heard = _words(reply), _words(cut)
    runs = {tuple(heard[i : i + run]) for i in range(len(heard) - run + 1)}
    return any(tuple(said[i : i + run]) in runs for i in range(len(said) - run + 1))


def repeated(reply: str, cuts: list[str]) -> bool:
    """The reply copies a cut reply of its conversation, or ends as they were shown cut."""
    return "\u2014" in reply or any(repeats(reply, cut) for cut in cuts)


def answers(reply: str, expected: tuple[str, ...], cuts: list[str]) -> bool:
    low = reply.lower()
    return any(word in low for word in expected) and not repeated(reply, cuts)


class Turns:
    """What the engine said of each turn: the state it is in, its heard reply, and whether it ended."""

    def __init__(self) -> None:
        self.speaking: set[int] = set()
        self.heard: dict[int, ReplyHeard] = {}
        self.ended: dict[int, TurnEnded] = {}

    def __call__(self, event: Any) -> None:
        if isinstance(event, StateChanged) and event.state is State.SPEAKING and event.turn is not None:
            self.speaking.add(event.turn)
        elif isinstance(event, ReplyHeard):
            self.heard[event.turn] = event
        elif isinstance(event, TurnEnded):
            self.ended[event.turn] = event


async def poll(clock: SkippingClock, probe: Callable[[], bool], within_s: float = 300.0) -> None:
    deadline = clock.now() + within_s
    while not probe():
        if clock.now() > deadline:
            raise TimeoutError(f"a bench turn did not end within {within_s:.0f} s")
        await clock.sleep(0.02)


async def _ask(conversation: Conversation, turns: Turns, clock: SkippingClock, turn: int, text: str) -> None:
    conversation.submit(UserInput(text, source="voice"))
    await poll(clock, lambda: turn in turns.speaking or turn in turns.ended)


async def _conversation(
    llm: LlmAdapter, journal: Path, prompt: PromptBuilder, rng: random.Random, count: int, first: int
) -> list[Interruption]:
    """One conversation of `count` story-then-question pairs (a story that ends before its cut is not counted)."""
    clock = SkippingClock(real=True)
    turns, out, cuts = Turns(), list[Interruption](), list[str]()
    with Journal(journal) as record:
        parts = EngineParts(llm=llm, speech=SilentSpeech(clock, ms_per_word=MS_PER_WORD), journal=record,
                            clock=clock, prompt=prompt)  # fmt: skip
        async with clock.autojump(), open_conversation(parts) as conversation:
            conversation.subscribe(turns)
            turn, n = 1, first
            while len(out) < count and turn < 4 * count:
                story, (question, expected) = TOPICS[n % len(TOPICS)], QUESTIONS[n % len(QUESTIONS)]
                n += 1
                await _ask(conversation, turns, clock, turn, f"Tell me a long story about {story}.")
                await clock.sleep(rng.randint(*CUT_WORDS) * MS_PER_WORD / 1000)
                await conversation.cancel(User(), keep_inbox=True)
                cut = turns.heard.get(turn)
                turn += 1
                if cut is None or not cut.interrupted or not cut.heard:
                    continue  # over before the cut, or cut before a word was heard: no interruption to answer
                cuts.append(cut.heard)
                await _ask(conversation, turns, clock, turn, question)
                await poll(clock, partial(contains, turns.ended, turn))
                reply = turns.heard[turn].heard if turn in turns.heard else ""
                copied = repeated(reply, cuts)
                out.append(Interruption(cut.heard, question, reply, copied, answers(reply, expected, cuts)))
                turn += 1
    return out


async def answers_after_interruption(
    llm: LlmAdapter, root: Path, count: int, *, prompt: Prompt = lambda wall: HistoryPrompt(wall=wall), seed: int = 7
) -> list[Interruption]:
    """`count` interruptions, in conversations of PER_CONVERSATION, each answered (or not) by the next reply."""
    rng, out = random.Random(seed), list[Interruption]()
    for number in range(2 * count // PER_CONVERSATION + 1):  # a conversation may count fewer (stories too short)
        if len(out) >= count:
            break
        size = min(PER_CONVERSATION, count - len(out))
        journal = root / f"talk{number}" / "journal.jsonl"
        out += await _conversation(llm, journal, prompt(lambda: WALL), rng, size, len(out))
    return out
