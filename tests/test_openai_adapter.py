"""The OpenAI-compatible adapter against a real fault-injecting HTTP server: every fact it must report."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import aclosing

import pytest

from adapters.contract import (
    CancelSignal,
    Finish,
    GenerateOptions,
    LlmError,
    LlmFailure,
    Message,
    StreamChunk,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
    User,
)
from adapters.contract.llm import (
    ABORTED,
    AUTH,
    CONTEXT_WINDOW_EXCEEDED,
    EMPTY_RESPONSE,
    INVALID_REQUEST,
    PROTOCOL,
    QUOTA,
    RATE_LIMITED,
    SERVER_ERROR,
    TIMEOUT,
    TRANSPORT,
)
from adapters.llm.openai_compat import OpenAICompatAdapter
from adapters.llm.secret import Secret
from tests import fault_behaviours as faults
from tests.fault_behaviours import ROLE, Behaviour, chunk
from tests.fault_server import FaultServer, running

pytestmark = pytest.mark.anyio
KEY = "sk-test-0123456789abcdefSECRET"
OPTIONS = GenerateOptions(messages=(Message("user", "Hello"),))
IDLE = 0.5
SECRET = Secret(KEY)


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with running() as started:
        yield started


def adapter_for(server: FaultServer, key: Secret | None = SECRET, idle_timeout: float = 20.0) -> OpenAICompatAdapter:
    return OpenAICompatAdapter(server.base_url, "fault-1", key, idle_timeout=idle_timeout, provider="testprov")


async def run(
    adapter: OpenAICompatAdapter, signal: CancelSignal | None = None, options: GenerateOptions = OPTIONS
) -> tuple[list[StreamChunk], LlmFailure | None]:
    """All chunks, plus the raised failure if the stream raised one."""
    chunks: list[StreamChunk] = []
    try:
        async with aclosing(adapter.stream(options, signal or CancelSignal())) as stream:
            async for item in stream:
                chunks.append(item)
    except LlmError as error:
        return chunks, error.failure
    return chunks, None


async def raised(adapter: OpenAICompatAdapter) -> LlmFailure:
    chunks, failure = await run(adapter)
    assert failure is not None, chunks
    return failure


def finish_of(chunks: list[StreamChunk]) -> Finish:
    assert isinstance(chunks[-1], Finish), chunks
    assert isinstance(chunks[-2], Usage), chunks
    assert sum(isinstance(item, Finish) for item in chunks) == 1
    return chunks[-1]


STATUS_CASES = [
    pytest.param(faults.unauthorized(), AUTH, 401, id="401"),
    pytest.param(faults.status(403, faults.error_body("Forbidden", "permission_error")), AUTH, 403, id="403"),
    pytest.param(faults.quota(402), QUOTA, 402, id="402"),
    pytest.param(faults.quota(429), QUOTA, 429, id="429-insufficient_quota"),
    pytest.param(faults.rate_limited(), RATE_LIMITED, 429, id="429"),
    pytest.param(faults.server_error(500), SERVER_ERROR, 500, id="500"),
    pytest.param(faults.server_error(503), SERVER_ERROR, 503, id="503"),
    pytest.param(faults.html_error(502), SERVER_ERROR, 502, id="502-html"),
    pytest.param(
        faults.status(400, faults.error_body("bad 'temperature'", "invalid_request_error")), INVALID_REQUEST, 400
    ),
    pytest.param(faults.status(413, "Request Entity Too Large"), INVALID_REQUEST, 413, id="413-plain"),
    pytest.param(faults.status(422, {"detail": "messages: field required"}), INVALID_REQUEST, 422, id="422"),
    pytest.param(faults.context_overflow(400), CONTEXT_WINDOW_EXCEEDED, 400, id="400-context-code"),
    pytest.param(faults.context_overflow(413), CONTEXT_WINDOW_EXCEEDED, 413, id="413-context-code"),
    pytest.param(
        faults.status(400, faults.error_body("prompt is too long: 210000 tokens > 200000", "invalid_request_error")),
        CONTEXT_WINDOW_EXCEEDED,
        400,
        id="400-prompt-is-too-long",
    ),
    pytest.param(faults.status(422, {"detail": "Too many tokens in the input"}), CONTEXT_WINDOW_EXCEEDED, 422),
    pytest.param(faults.status(400, "exceeds the model's context window"), CONTEXT_WINDOW_EXCEEDED, 400, id="text"),
]


@pytest.mark.parametrize(("behaviour", "code", "status"), STATUS_CASES)
async def test_http_status_is_raised_before_any_chunk_with_its_code(
    server: FaultServer, behaviour: Behaviour, code: str, status: int
) -> None:
    server.push(behaviour)
    chunks, failure = await run(adapter_for(server))
    assert chunks == []
    assert failure is not None
    assert (failure.code, failure.status, failure.request_id) == (code, status, "req-1")
    assert failure.message.startswith(f"testprov at {server.base_url}/chat/completions: HTTP {status}")
    assert "\n" not in failure.message
    assert len(server.requests) == 1
    assert await server.until_closed(0)


async def test_an_html_error_page_gives_a_short_message_not_the_page(server: FaultServer) -> None:
    server.push(faults.html_error(500))
    failure = await raised(adapter_for(server))
    assert failure.code == SERVER_ERROR
    assert len(failure.message) < 300
    assert "<p>" not in failure.message
    assert "500 Internal Server Error" in failure.message


@pytest.mark.parametrize(
    ("behaviour", "expected_ms"),
    [
        pytest.param(faults.rate_limited("2"), 2000, id="seconds"),
        pytest.param(faults.rate_limited("1.5"), 1500, id="fractional-seconds"),
        pytest.param(faults.rate_limited(None, extra=(("retry-after-ms", "250"),)), 250, id="ms"),
        pytest.param(faults.rate_limited("3", extra=(("retry-after-ms", "2750"),)), 2750, id="ms-wins"),
        pytest.param(faults.rate_limited_until(7), 7000, id="http-date-vs-date-header"),
        pytest.param(faults.rate_limited("soon"), None, id="invalid"),
        pytest.param(faults.rate_limited(None), None, id="absent"),
    ],
)
async def test_retry_after_is_reported_in_milliseconds(
    server: FaultServer, behaviour: Behaviour, expected_ms: int | None
) -> None:
    server.push(behaviour)
    failure = await raised(adapter_for(server))
    assert failure.code == RATE_LIMITED
    assert failure.provider_retry_after_ms == expected_ms


async def test_an_http_date_retry_after_without_a_date_header_is_relative_to_now(server: FaultServer) -> None:
    server.push(faults.rate_limited_until(30, with_date=False))
    failure = await raised(adapter_for(server))
    assert failure.provider_retry_after_ms is not None
    assert 27_000 <= failure.provider_retry_after_ms <= 30_000


@pytest.mark.parametrize("header", ["x-request-id", "request-id", "x-amzn-requestid"])
async def test_the_request_id_is_captured(server: FaultServer, header: str) -> None:
    server.push(Behaviour(503, faults.JSON, (b"{}",), "length", request_id_header=header))
    assert (await raised(adapter_for(server))).request_id == "req-1"


async def test_the_key_is_sent_as_a_bearer_token(server: FaultServer) -> None:
    server.push(faults.text_stream())
    await run(adapter_for(server))
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_without_a_key_no_header_is_sent_and_a_401_says_how_to_set_one(server: FaultServer) -> None:
    server.push(faults.unauthorized())
    failure = await raised(adapter_for(server, key=None))
    assert "authorization" not in server.requests[0].headers
    assert failure.code == AUTH
    assert "PARLEY_LLM_API_KEY" in failure.message


async def test_the_key_never_appears_in_repr_messages_or_debug_logs(
    server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "adapters"):
        caplog.set_level(logging.DEBUG, logger=name)
    adapter = adapter_for(server)
    echo = faults.status(401, faults.error_body(f"key {KEY} is not valid (Bearer {KEY})", "invalid_request_error"))
    behaviours = [echo, faults.text_stream(), faults.rate_limited(), faults.reset_mid_stream(), faults.malformed_sse()]
    messages = []
    for behaviour in behaviours:
        server.push(behaviour)
        chunks, failure = await run(adapter)
        messages += [failure.message] if failure else []
        messages += [item.failure.message for item in chunks if isinstance(item, Finish) and item.failure]
    assert any(record.name.startswith("httpcore") for record in caplog.records), "debug logging was not captured"
    assert "***" in messages[0]
    for text in [repr(adapter), str(adapter), repr(Secret(KEY)), str(Secret(KEY)), *messages, caplog.text]:
        assert KEY not in text
    assert all(KEY not in repr(record.args) for record in caplog.records)


FAULTS = [
    faults.text_stream(),
    faults.tool_call('{"a": 1}', ['{"a"', ": 1}"]),
    faults.rate_limited(),
    faults.rate_limited_until(3),
    faults.server_error(500),
    faults.server_error(503),
    faults.unauthorized(),
    faults.quota(),
    faults.context_overflow(),
    faults.stall_before_headers(),
    faults.stall_mid_stream(),
    faults.reset_mid_stream(),
    faults.malformed_sse(),
    faults.malformed_sse("line"),
    faults.error_in_stream(),
    faults.empty_completion(),
    faults.plain_text_200(),
    faults.json_200(),
    faults.html_error(),
]


@pytest.mark.parametrize("behaviour", FAULTS)
async def test_one_call_is_one_request_and_leaves_no_connection_open(server: FaultServer, behaviour: Behaviour) -> None:
    server.push(behaviour)
    await run(adapter_for(server, idle_timeout=IDLE))
    assert len(server.requests) == 1
    assert len(server.connections) == 1
    assert await server.until_closed(0)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
async def test_failing_calls_do_not_accumulate_open_sockets(server: FaultServer) -> None:
    adapter = adapter_for(server, idle_timeout=IDLE)
    server.push(faults.text_stream())
    await run(adapter)  # warm-up: lazily created SSL context, logging handlers, ...
    assert await server.until(server.all_closed)
    before = len(os.listdir("/proc/self/fd"))
    for behaviour in [
        faults.reset_mid_stream(),
        faults.server_error(),
        faults.malformed_sse(),
        faults.stall_mid_stream(),
    ] * 3:
        server.push(behaviour)
        await run(adapter)
    assert await server.until(server.all_closed)
    assert len(os.listdir("/proc/self/fd")) <= before


async def test_a_stall_before_headers_times_out_and_the_server_sees_the_close(server: FaultServer) -> None:
    server.push(faults.stall_before_headers())
    failure = await raised(adapter_for(server, idle_timeout=IDLE))
    assert failure.code == TIMEOUT
    assert await server.until_closed(0)
    connection = server.connections[0]
    assert connection.closed is not None
    assert connection.stalled_at is not None
    assert connection.closed_by == "client"
    assert connection.closed - connection.stalled_at <= IDLE + 0.5


async def test_a_stall_mid_stream_times_out_after_the_text_and_closes_the_connection(server: FaultServer) -> None:
    server.push(faults.stall_mid_stream("Hello there "))
    chunks, failure = await run(adapter_for(server, idle_timeout=IDLE))
    assert [item.text for item in chunks if isinstance(item, TextDelta)] == ["Hello ", "there "]
    assert failure is not None
    assert failure.code == TIMEOUT
    assert "idle timeout" in failure.message
    assert await server.until_closed(0)
    connection = server.connections[0]
    assert connection.closed is not None
    assert connection.stalled_at is not None
    assert connection.closed - connection.stalled_at <= IDLE + 0.5


async def test_a_slow_trickle_within_the_idle_timeout_is_not_a_stall(server: FaultServer) -> None:
    server.push(faults.slow_trickle("one two three four five six", delay=IDLE / 3))
    chunks, failure = await run(adapter_for(server, idle_timeout=IDLE))
    assert failure is None
    assert "".join(item.text for item in chunks if isinstance(item, TextDelta)) == "one two three four five six"


async def test_a_reset_mid_stream_is_a_raised_transport_failure(server: FaultServer) -> None:
    server.push(faults.reset_mid_stream())
    failure = await raised(adapter_for(server))
    assert failure.code == TRANSPORT
    assert server.base_url in failure.message


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_base_url_is_a_transport_failure_naming_provider_and_url() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    failure = await raised(OpenAICompatAdapter(url, "m", Secret(KEY), provider="testprov"))
    assert failure.code == TRANSPORT
    assert failure.message.startswith(f"testprov at {url}/chat/completions: cannot connect")


async def test_a_wrong_scheme_fails_clearly_without_an_attempt() -> None:
    failure = await raised(OpenAICompatAdapter("ftp://127.0.0.1/v1", "m", None, provider="testprov"))
    assert failure.code == INVALID_REQUEST
    assert "ftp://127.0.0.1/v1/chat/completions" in failure.message


@pytest.mark.parametrize(
    "behaviour",
    [faults.plain_text_200(), faults.json_200(), faults.malformed_sse(), faults.malformed_sse("line")],
    ids=["text-plain-200", "json-200", "truncated-json-event", "not-an-sse-line"],
)
async def test_a_200_that_is_not_a_valid_event_stream_is_a_protocol_failure(
    server: FaultServer, behaviour: Behaviour
) -> None:
    server.push(behaviour)
    failure = await raised(adapter_for(server))
    assert failure.code == PROTOCOL
    assert f"testprov at {server.base_url}" in failure.message


async def test_text_arrives_as_deltas_then_usage_then_finish(server: FaultServer) -> None:
    server.push(faults.tiny_deltas("Tiny deltas!"))
    chunks, failure = await run(adapter_for(server))
    assert failure is None
    assert [item.text for item in chunks if isinstance(item, TextDelta)] == list("Tiny deltas!")
    assert finish_of(chunks) == Finish("stop")
    assert chunks[-2] == Usage(7, 5)


async def test_a_provider_without_usage_still_reports_usage_before_finish(server: FaultServer) -> None:
    server.push(faults.text_stream(usage=False, done=False, framing="close"))
    chunks, failure = await run(adapter_for(server))
    assert failure is None
    assert finish_of(chunks) == Finish("stop")
    assert chunks[-2] == Usage(0, 0)


async def test_a_body_that_ends_before_any_finish_is_a_transport_failure(server: FaultServer) -> None:
    server.push(Behaviour(parts=(ROLE, chunk({"content": "Hel"})), framing="close"))
    chunks, failure = await run(adapter_for(server))
    assert failure is not None
    assert failure.code == TRANSPORT
    assert not any(isinstance(item, Finish) for item in chunks)


@pytest.mark.parametrize(
    ("behaviour", "code"),
    [
        (faults.error_in_stream(), SERVER_ERROR),
        (faults.error_in_stream(message="Rate limit exceeded", kind="rate_limit_error"), RATE_LIMITED),
        (faults.error_in_stream(message=faults.CONTEXT_MESSAGE, kind="invalid_request_error"), CONTEXT_WINDOW_EXCEEDED),
    ],
)
async def test_an_error_inside_the_stream_ends_it_with_usage_and_a_failing_finish(
    server: FaultServer, behaviour: Behaviour, code: str
) -> None:
    server.push(behaviour)
    chunks, failure = await run(adapter_for(server))
    assert failure is None
    assert chunks[0] == TextDelta("Partial")
    finish = finish_of(chunks)
    assert finish.reason == "error"
    assert finish.failure is not None
    assert finish.failure.code == code
    assert finish.failure.request_id == "req-1"


async def test_a_clean_finish_without_content_is_an_empty_response(server: FaultServer) -> None:
    server.push(faults.empty_completion())
    chunks, failure = await run(adapter_for(server))
    assert failure is None
    finish = finish_of(chunks)
    assert finish.failure is not None
    assert finish.failure.code == EMPTY_RESPONSE


async def test_tool_call_fragments_stay_raw_and_the_request_is_openai_shaped(server: FaultServer) -> None:
    arguments = '{"city":  "Zürich" , "days": [1,2]}'
    server.push(faults.tool_call(arguments, [arguments[:5], arguments[5:20], arguments[20:]]))
    history = (
        Message("system", "Be brief."),
        Message("user", "Weather?"),
        Message("assistant", "", (ToolCall("call_0", "weather", '{"city":"Bern"}'),)),
        Message("tool", "sunny", tool_call_id="call_0"),
    )
    tools = (ToolSpec("weather", "Get the weather", '{"type": "object", "properties": {"city": {"type": "string"}}}'),)
    options = GenerateOptions(history, tools, model="override-1", max_tokens=64, temperature=0.2)
    chunks, failure = await run(adapter_for(server), options=options)
    assert failure is None
    deltas = [item for item in chunks if isinstance(item, ToolCallDelta)]
    assert (deltas[0].call_id, deltas[0].name) == ("call_1", "weather")
    assert "".join(delta.arguments for delta in deltas) == arguments
    assert finish_of(chunks) == Finish("tool_calls")
    body = server.requests[0].json
    assert server.requests[0].path == "/v1/chat/completions"
    assert (body["model"], body["stream"], body["stream_options"]) == ("override-1", True, {"include_usage": True})
    assert (body["max_tokens"], body["temperature"]) == (64, 0.2)
    assert body["tools"][0]["function"]["parameters"]["properties"]["city"] == {"type": "string"}
    call = body["messages"][2]["tool_calls"][0]
    assert call == {"id": "call_0", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Bern"}'}}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_0", "content": "sunny"}


async def test_a_bad_tool_schema_is_an_invalid_request_without_an_attempt(server: FaultServer) -> None:
    options = GenerateOptions(OPTIONS.messages, (ToolSpec("t", "d", "{not json"),))
    _, failure = await run(adapter_for(server), options=options)
    assert failure is not None
    assert failure.code == INVALID_REQUEST
    assert server.requests == []


async def _started(adapter: OpenAICompatAdapter, signal: CancelSignal) -> tuple[asyncio.Task[None], asyncio.Event]:
    started = asyncio.Event()

    async def consume() -> None:
        async with aclosing(adapter.stream(OPTIONS, signal)) as stream:
            async for item in stream:
                if isinstance(item, TextDelta):
                    started.set()

    return asyncio.create_task(consume()), started


async def test_cancel_mid_stream_aborts_promptly_and_the_server_sees_the_close(server: FaultServer) -> None:
    server.push(faults.stall_mid_stream())
    signal = CancelSignal()
    task, started = await _started(adapter_for(server, idle_timeout=30.0), signal)
    await started.wait()
    cancelled_at = time.monotonic()
    signal.set(User())
    await asyncio.wait({task})
    assert time.monotonic() - cancelled_at < 1.0
    error = task.exception()
    assert isinstance(error, LlmError)
    assert error.failure.code == ABORTED
    assert await server.until_closed(0)
    assert server.connections[0].closed_by == "client"


async def test_cancel_while_waiting_for_headers_aborts_and_closes(server: FaultServer) -> None:
    server.push(faults.stall_before_headers())
    signal = CancelSignal()
    task = asyncio.create_task(run(adapter_for(server, idle_timeout=30.0), signal))
    assert await server.until(server.stalled)
    signal.set(User())
    _, failure = await asyncio.wait_for(task, 2.0)
    assert failure is not None
    assert failure.code == ABORTED
    assert await server.until_closed(0)


async def test_an_already_cancelled_signal_sends_nothing(server: FaultServer) -> None:
    signal = CancelSignal()
    signal.set(User())
    _, failure = await run(adapter_for(server), signal)
    assert failure is not None
    assert failure.code == ABORTED
    assert server.requests == []


async def test_a_consumer_that_stops_iterating_closes_the_connection(server: FaultServer) -> None:
    server.push(faults.stall_mid_stream())
    stream = adapter_for(server, idle_timeout=30.0).stream(OPTIONS, CancelSignal())
    assert isinstance(await anext(stream), TextDelta)
    await stream.aclose()
    assert await server.until_closed(0)


async def test_a_cancelled_consumer_task_stays_cancelled_and_closes_the_connection(server: FaultServer) -> None:
    server.push(faults.stall_mid_stream())
    task, started = await _started(adapter_for(server, idle_timeout=30.0), CancelSignal())
    await started.wait()
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled()
    assert await server.until_closed(0)
