"""The one publish/subscribe of the app: the engine's facts, the session's board and the model shelf all tell
their listeners through it, so a listener that fails is logged and its neighbours still hear the fact."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class Listeners(Generic[T]):
    """Callables that hear each published fact, in the order they subscribed."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[T], None]] = []

    def subscribe(self, listener: Callable[[T], None]) -> Callable[[], None]:
        """Add `listener`; the returned callable removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self, fact: T) -> None:
        for listener in list(self._listeners):
            try:
                listener(fact)
            except Exception:  # a broken listener (a view, a metric) must not break the publisher or its neighbours
                log.exception("listener %r failed on %r", listener, fact)
