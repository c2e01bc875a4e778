"""What turn-taking needs of the conversation it feeds, and no more: the engine's `Conversation` fits it, and
turn-taking imports only the engine's value types (`engine.inbox`, `engine.events`), not its machinery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from adapters.contract import CancelCause
from engine.events import State
from engine.inbox import UserInput


class LiveTurn(Protocol):
    """The turn under way, as turn-taking names it in metrics."""

    @property
    def id(self) -> int: ...


class Prefill(Protocol):
    """A speculative read (and start) of the reply to words heard at a pause, dropped if the person goes on."""

    def drop(self) -> None: ...

    def rehearse(self) -> None:
        """The decision will wait: the voice may synthesize the reply's opening meanwhile."""
        ...


class ConversationPort(Protocol):
    """The conversation as the listening side sees it (engine.conversation.Conversation)."""

    @property
    def live_turn(self) -> LiveTurn | None: ...

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]: ...

    def record(self, type_: str, **fields: Any) -> None: ...

    def set_input_state(self, state: State) -> None: ...

    def speculate(self, text: str, *, ahead: bool = False) -> Prefill | None: ...

    def submit(self, item: UserInput) -> None: ...

    def withdrawable(self, item: UserInput, went_on_at: float | None = None) -> bool: ...

    def withdraw(self, item: UserInput, went_on_at: float | None = None) -> bool: ...

    def add_metrics(self, turn: int, **values: float) -> None: ...

    async def cancel(self, cause: CancelCause, *, keep_inbox: bool = False) -> None: ...
