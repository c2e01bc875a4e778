"""Issue 38: whatever bytes a provider streams, the journal stays valid JSON lines of the right shape, every turn
started is ended once, and the history can be rebuilt. Through the real HTTP adapter and the fault server."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.llm.openai_compat import OpenAICompatAdapter
from adapters.llm.secret import Secret
from engine.history import build_history
from engine.invariants import violations
from engine.journal import Journal, read_journal
from engine.retry import Budgets
from tests.engine_kit import kit
from tests.fault_behaviours import DONE, ROLE, Behaviour
from tests.fault_server import running

NASTY = ["\\ud800", "\\udfff", "\\u0000", "\\u001b]52;c;aGk=\\u0007", "\\u001b[2J", "\\r\\n", '\\"', "\\\\", "x", "1"]
RAW_CONTENT = st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=8).map(lambda t: json.dumps(t)[1:-1])))


def _sse(content: list[str]) -> bytes:
    """An SSE event whose content is written as raw JSON text (escapes a JSON encoder would never produce)."""
    raw = "".join(content)
    return ('data: {"choices":[{"index":0,"delta":{"content":"' + raw + '"}}]}\n\n').encode("utf-8", "surrogatepass")


BODIES = st.one_of(
    st.binary(max_size=400),
    st.lists(RAW_CONTENT.map(_sse), max_size=4).map(lambda events: ROLE + b"".join(events) + DONE),
    st.tuples(RAW_CONTENT.map(_sse), st.binary(max_size=60)).map(lambda pair: ROLE + pair[0] + pair[1]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(BODIES, min_size=1, max_size=4), framing=st.sampled_from(["chunked", "length", "close"]))
def test_any_bytes_a_provider_streams_leave_a_valid_balanced_journal(
    tmp_path_factory: pytest.TempPathFactory, bodies: list[bytes], framing: str
) -> None:
    path = tmp_path_factory.mktemp("stream")

    async def scenario() -> None:
        with running() as server:
            for body in bodies * 4:  # more than the sends the budgets allow for two turns
                server.push(Behaviour(parts=(body,), framing=framing))  # type: ignore[arg-type]
            adapter = OpenAICompatAdapter(server.base_url, "fault-1", Secret("sk-property-SECRET"), idle_timeout=2.0)
            async with kit(path, adapter=adapter, budgets=Budgets(retries=1)) as k:
                k.submit("first")
                k.submit("second")
                await k.until_turn_ended(2)

    asyncio.run(scenario())
    lines = (path / "journal.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert all(isinstance(json.loads(line), dict) for line in lines[:-1])
    found = read_journal(path / "journal.jsonl")
    assert found.bad == ()
    assert not found.torn
    assert len(found.events) == len(lines) - 1
    assert violations(found.events) == []
    ends = [e["turn"] for e in found.events if e["type"] == "turn/end"]
    assert sorted(ends) == [1, 2]
    build_history(found.events)
    with Journal(path / "journal.jsonl") as reopened:
        assert reopened.recovered.quarantined == ()
        assert reopened.recovered.turns_closed == ()
