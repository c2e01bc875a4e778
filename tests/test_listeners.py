"""The one publish/subscribe: the engine's facts, the board and the model shelf all rely on these rules."""

from __future__ import annotations

import logging

import pytest

from adapters.runtime.listeners import Listeners
from desktop.model.board import Board
from engine.events import TurnGate


def test_a_failing_listener_is_logged_and_its_neighbours_still_hear(caplog: pytest.LogCaptureFixture) -> None:
    listeners: Listeners[str] = Listeners()
    heard: list[str] = []

    def broken(fact: str) -> None:
        raise RuntimeError("a view that broke")

    listeners.subscribe(heard.append)
    listeners.subscribe(broken)
    listeners.subscribe(lambda fact: heard.append(fact.upper()))
    with caplog.at_level(logging.ERROR):
        listeners.publish("said")
    assert heard == ["said", "SAID"]
    assert "a view that broke" in caplog.text


def test_unsubscribing_stops_the_facts_even_from_inside_a_publish() -> None:
    listeners: Listeners[int] = Listeners()
    heard: list[int] = []

    def once(fact: int) -> None:
        heard.append(fact)
        stop()

    stop = listeners.subscribe(once)
    listeners.publish(1)
    listeners.publish(2)
    assert heard == [1]


@pytest.mark.parametrize("publisher", [Board, TurnGate])
def test_the_board_and_the_engine_gate_publish_through_it(publisher: type[Board] | type[TurnGate]) -> None:
    source = publisher()
    heard: list[object] = []

    def broken(_fact: object) -> None:
        raise RuntimeError("broken")

    source.subscribe(broken)
    stop = source.subscribe(heard.append)
    source.publish("fact")
    stop()
    source.publish("late")
    assert heard == ["fact"]
