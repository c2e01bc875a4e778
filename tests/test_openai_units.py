"""The pure parts of the OpenAI-compatible adapter: SSE decoding, failure facts, the wire state, the key."""

from __future__ import annotations

import itertools
import pickle
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import keyring
import pytest
from hypothesis import given
from hypothesis import strategies as st
from keyring.errors import KeyringError, NoKeyringError

from adapters.contract.llm import CONTEXT_WINDOW_EXCEEDED, INVALID_REQUEST, SERVER_ERROR, TIMEOUT, ToolCallDelta
from adapters.llm import failures
from adapters.llm.openai_wire import StreamState
from adapters.llm.secret import ENV_VAR, KEYRING_SERVICE, KEYRING_USERNAME, Secret, load_api_key
from adapters.llm.sse import SseDecoder, SseError, SseEvent

STREAM = (
    '\ufeff: keep-alive comment\r\ndata: {"a": "ü"}\r\n\r\n'
    "event: error\ndata: line one\ndata: line two\n\n"
    "data:no-space\r\rdata: [DONE]\n\n"
).encode()
EVENTS = [SseEvent('{"a": "ü"}'), SseEvent("line one\nline two", "error"), SseEvent("no-space"), SseEvent("[DONE]")]


def decode(pieces: list[bytes]) -> list[SseEvent]:
    decoder = SseDecoder()
    events = [event for piece in pieces for event in decoder.feed(piece)]
    return events + decoder.close()


def test_sse_events_decode_whole() -> None:
    assert decode([STREAM]) == EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_sse_events_do_not_depend_on_how_the_network_split_the_bytes(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    assert decode([STREAM[a:b] for a, b in itertools.pairwise(bounds)]) == EVENTS


def test_an_event_without_its_blank_line_at_the_end_is_dropped() -> None:
    assert decode([b"data: one\n\ndata: half"]) == [SseEvent("one")]


@pytest.mark.parametrize("raw", [b"data: \xff\xfe\n\n", b"<html>\n", b"data: x\n\xe2\x82"])
def test_malformed_event_streams_raise(raw: bytes) -> None:
    with pytest.raises(SseError):
        decode([raw])


def test_an_endless_line_is_refused() -> None:
    with pytest.raises(SseError):
        SseDecoder().feed(b"data: " + b"x" * (1 << 21))


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "0"}, 0),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": format_datetime(NOW + timedelta(seconds=12), usegmt=True)}, 12_000),
        ({"retry-after": format_datetime(NOW - timedelta(seconds=12), usegmt=True)}, 0),
        ({"retry-after": "Wed, 99 Foo 2026 nonsense"}, None),
        ({"retry-after-ms": "12.6"}, 13),
    ],
)
def test_retry_after_forms(headers: dict[str, str], expected: int | None) -> None:
    assert failures.retry_after_ms(headers, now=NOW) == expected


def test_status_codes_without_a_dedicated_mapping() -> None:
    none = failures.ErrorInfo()
    assert failures.code_for_status(408, none) == TIMEOUT
    assert failures.code_for_status(404, none) == INVALID_REQUEST
    redirect = failures.status_failure(
        301, "Moved", {"location": "https://x.example/v1"}, none, where=("p", "http://u"), keyed=True
    )
    assert redirect.code == INVALID_REQUEST
    assert "redirected to https://x.example/v1" in redirect.message


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"error": {"code": 502, "message": "upstream failed"}}, SERVER_ERROR),
        ({"error": "something broke"}, SERVER_ERROR),
        ({"error": {"message": "the request exceeds the available context size"}}, CONTEXT_WINDOW_EXCEEDED),
        ({"object": "error", "message": "bad input", "type": "invalid_request_error"}, INVALID_REQUEST),
    ],
)
def test_error_objects_in_their_many_shapes(payload: dict[str, object], code: str) -> None:
    info = failures.error_info(payload)
    assert info is not None
    assert info.message
    assert failures.code_for_stream_error(info) == code


@pytest.mark.parametrize(
    ("error", "sizes"),
    [
        ({"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
          "tokens.", "code": "context_length_exceeded"}, (9000, 8192)),
        ({"message": "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (1900 in "
          "the messages, 200 in the completion).", "type": "BadRequestError"}, (1900, 2048)),
        ({"message": "the request exceeds the available context size", "type": "exceed_context_size_error",
          "n_prompt_tokens": 5120, "n_ctx": 4096}, (5120, 4096)),
        ({"message": "the request exceeds the available context size"}, (None, None)),
    ],
)  # fmt: skip
def test_a_context_overflow_carries_the_sizes_the_provider_said(
    error: dict[str, object], sizes: tuple[int | None, int | None]
) -> None:
    """Issue 38 item 3: the engine trims to fit in one go when it knows the window; only the adapter reads the words."""
    info = failures.error_info({"error": error})
    assert info is not None
    failure = failures.status_failure(400, "Bad Request", {}, info, where=("p", "http://u"), keyed=True)
    assert failure.code == CONTEXT_WINDOW_EXCEEDED
    assert (failure.prompt_tokens, failure.context_tokens) == sizes
    state = StreamState(where="p at u")
    assert state.on_payload({"error": error}) == []
    assert state.failure is not None
    assert (state.failure.code, state.failure.prompt_tokens, state.failure.context_tokens) == (
        CONTEXT_WINDOW_EXCEEDED,
        *sizes,
    )


def test_tool_call_ids_and_names_are_reported_once_and_object_arguments_become_text() -> None:
    state = StreamState(where="p at u")
    fragment = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a":'}}
    again = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": {"b": 1}}}
    chunks = state.on_payload({"choices": [{"delta": {"tool_calls": [fragment, again]}}]})
    assert chunks == [ToolCallDelta(0, '{"a":', "c1", "f"), ToolCallDelta(0, '{"b": 1}', None, None)]


def test_a_secret_never_shows_itself() -> None:
    secret = Secret("  sk-abc123  ")
    assert secret.reveal() == "sk-abc123"
    assert repr(secret) == str(secret) == f"{secret}" == "Secret('***')"
    with pytest.raises(TypeError):
        pickle.dumps(secret)


@pytest.mark.parametrize("value", ["", "sk-with space", "sk-\n-newline", "sk-ünïcode"])
def test_a_malformed_key_is_refused_without_echoing_it(value: str) -> None:
    with pytest.raises(ValueError, match="API key") as caught:
        Secret(value)
    assert not value.strip() or value.strip() not in str(caught.value)


def test_the_key_comes_from_the_environment_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyring, "get_password", lambda *_: pytest.fail("keyring must not be asked"))
    key = load_api_key({ENV_VAR: "sk-env"})
    assert key is not None
    assert key.reveal() == "sk-env"


def test_the_key_falls_back_to_the_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []

    def get_password(service: str, username: str) -> str:
        asked.append((service, username))
        return "sk-from-keyring"

    monkeypatch.setattr(keyring, "get_password", get_password)
    key = load_api_key({ENV_VAR: "  "})
    assert key is not None
    assert key.reveal() == "sk-from-keyring"
    assert asked == [(KEYRING_SERVICE, KEYRING_USERNAME)]


@pytest.mark.parametrize("error", [NoKeyringError("no backend"), KeyringError("locked")])
def test_a_missing_or_broken_keyring_means_no_key(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    def get_password(service: str, username: str) -> str:
        raise error

    monkeypatch.setattr(keyring, "get_password", get_password)
    assert load_api_key({}) is None
