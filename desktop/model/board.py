"""Listeners and the problem board: how the session tells the view what happened and what is wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.runtime.listeners import Listeners
from desktop.model.facts import Problem, ProblemCleared, ProblemRaised

Listener = Callable[[Any], None]


class Board:
    """Publishes facts to listeners (on the loop thread) and keeps the problems that are current."""

    def __init__(self) -> None:
        self.problems: dict[str, Problem] = {}
        self._listeners: Listeners[Any] = Listeners()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    def publish(self, event: Any) -> None:
        self._listeners.publish(event)

    def raise_problem(self, problem: Problem) -> None:
        self.problems[problem.kind] = problem
        self.publish(ProblemRaised(problem))

    def clear_problem(self, kind: str) -> None:
        if self.problems.pop(kind, None) is not None:
            self.publish(ProblemCleared(kind))
