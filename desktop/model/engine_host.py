"""Assemble and run the engine for one configuration: journal, language model, speech, clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from adapters.contract.clock import Clock
from desktop.catalog.languages import running
from desktop.config import Config
from desktop.model.keyring_store import StoredKey
from desktop.model.switching import spoken_models
from desktop.pipeline.parts import LlmChoice, prompt_for
from engine.conversation import Conversation, EngineParts, open_conversation
from engine.journal import Journal
from engine.retry import Budgets
from engine.speech import SpeechOutput
from engine.tools import ToolRegistry


def new_journal_path(base: Path) -> Path:
    """`<base>/<timestamp>/journal.jsonl`, in a folder no earlier session used."""
    stamp = dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    folder, n = base / stamp, 2
    while folder.exists():
        folder, n = base / f"{stamp}-{n}", n + 1
    return folder / "journal.jsonl"


@asynccontextmanager
async def open_engine(
    choice: LlmChoice,
    config: Config,
    *,
    journal_path: Path,
    speech: SpeechOutput,
    clock: Clock,
    tools: ToolRegistry,
    key: StoredKey | None,
    voice: str,
) -> AsyncIterator[Conversation]:
    """A running conversation writing to `journal_path` (redacting the key); disposed and quiescent on exit. The
    prompt and the record follow the language in use (English while the asked one's models are missing)."""
    config = running(config)
    with Journal(journal_path, secrets=[key.secret.reveal()] if key else []) as journal:
        parts = EngineParts(
            llm=choice.adapter,
            speech=speech,
            journal=journal,
            clock=clock,
            tools=tools,
            prompt=prompt_for(config),
            budgets=Budgets(retries=config.llm.retries, reply_s=config.llm.max_reply_s),
            summary={**config.summary(), "voice": voice, "models": spoken_models(config)},
            speculative_requests=config.llm.speculative_requests,
        )
        async with open_conversation(parts) as conversation:
            yield conversation
