"""Translate what a provider said (status, headers, error body) into one LlmFailure fact.

This is the only place that reads provider error text: consumers route on the code.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from adapters.contract.llm import (
    AUTH,
    CONTEXT_WINDOW_EXCEEDED,
    INVALID_REQUEST,
    QUOTA,
    RATE_LIMITED,
    SERVER_ERROR,
    TIMEOUT,
    FailureCode,
    LlmFailure,
)
from adapters.llm.secret import ENV_VAR, Secret

_CONTEXT = re.compile(
    r"context_length_exceeded|maximum context length|context window|too many tokens|prompt is too long"
    r"|input is too long|exceeds the available context|context length exceeded",
    re.IGNORECASE,
)
_WINDOW = re.compile(r"(?:maximum context length|context (?:window|length|size)) (?:is|of) (\d+)", re.IGNORECASE)
_PROMPT = re.compile(r"(\d+) (?:tokens )?in the messages|resulted in (\d+) tokens|prompt (?:is|has) (\d+) tokens",
                     re.IGNORECASE)  # fmt: skip
_QUOTA = re.compile(r"insufficient_quota|quota_exceeded|billing", re.IGNORECASE)
_RATE = re.compile(r"rate.?limit|too_many_requests|resource_exhausted", re.IGNORECASE)
_AUTH = re.compile(r"auth|invalid_api_key|permission", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-amzn-requestid")
MAX_DETAIL = 200


@dataclass(frozen=True)
class ErrorInfo:
    """The provider's own words about an error, reduced to one short line plus its codes."""

    message: str = ""
    kind: str = ""  # the body's code/type/status strings, for matching only
    status: int | None = None  # a numeric code inside the body (some providers put the HTTP status there)
    prompt_tokens: int | None = None  # a context overflow's sizes, where the provider says them
    context_tokens: int | None = None


def one_line(text: str, limit: int = MAX_DETAIL) -> str:
    """Collapse whitespace and cut, so a failure message is always a single readable line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_info(payload: object) -> ErrorInfo | None:
    """Read `{"error": {...}}`, `{"error": "text"}` or a bare `{"message": ...}`; None if not an error."""
    if not isinstance(payload, dict):
        return None
    error = payload.get("error", payload if "message" in payload or "detail" in payload else None)
    if error is None:
        return None
    if not isinstance(error, dict):
        return ErrorInfo(message=one_line(str(error)))
    message = error.get("message", error.get("detail", ""))
    fields = [error.get(key) for key in ("code", "type", "status")]
    kind = " ".join(str(value) for value in fields if isinstance(value, str))
    numeric = next((v for v in fields if isinstance(v, int) and not isinstance(v, bool)), None)
    text = message if isinstance(message, str) else json.dumps(message)
    prompt, window = _sizes(error, text)
    return ErrorInfo(one_line(text), kind, numeric, prompt, window)


def _sizes(error: Mapping[str, object], text: str) -> tuple[int | None, int | None]:
    """A context overflow's prompt and window in tokens: llama.cpp's server puts them in the error
    (`n_prompt_tokens`, `n_ctx`); OpenAI and vLLM only in words ("maximum context length is 4096 tokens ...")."""
    prompt, window = error.get("n_prompt_tokens"), error.get("n_ctx")
    if isinstance(prompt, int) and isinstance(window, int) and prompt > 0 and window > 0:
        return prompt, window
    in_words, said = _PROMPT.search(text), _WINDOW.search(text)
    if in_words is None or said is None:
        return None, None
    return int(next(group for group in in_words.groups() if group)), int(said.group(1))


def body_info(body: bytes, content_type: str) -> ErrorInfo:
    """An error body of any shape (JSON, HTML page, plain text) as a short fact, never a dump."""
    text = body.decode("utf-8", errors="replace")
    try:
        info = error_info(json.loads(text))
    except ValueError:
        info = None
    if info is not None:
        return info
    if "html" in content_type.lower() or text.lstrip().startswith("<"):
        title = _TITLE.search(text)
        return ErrorInfo(message=f"HTML error page {one_line(title.group(1), 80)!r}" if title else "HTML error page")
    return ErrorInfo(message=one_line(text))


def is_context_overflow(info: ErrorInfo) -> bool:
    return bool(_CONTEXT.search(info.kind) or _CONTEXT.search(info.message))


def code_for_status(status: int, info: ErrorInfo) -> FailureCode:
    """HTTP status plus the body's own code → canonical failure code."""
    if status == 402 or _QUOTA.search(info.kind):
        return QUOTA
    if status in (401, 403):
        return AUTH
    if status == 429:
        return RATE_LIMITED
    if status == 408:
        return TIMEOUT
    if status >= 500:
        return SERVER_ERROR
    return CONTEXT_WINDOW_EXCEEDED if is_context_overflow(info) else INVALID_REQUEST


def code_for_stream_error(info: ErrorInfo) -> FailureCode:
    """An error the provider reported inside a 200 stream → canonical failure code."""
    if info.status is not None and 400 <= info.status < 600:
        return code_for_status(info.status, info)
    if _QUOTA.search(info.kind):
        return QUOTA
    if is_context_overflow(info):
        return CONTEXT_WINDOW_EXCEEDED
    if _RATE.search(info.kind) or _RATE.search(info.message):
        return RATE_LIMITED
    if _AUTH.search(info.kind):
        return AUTH
    if "invalid_request" in info.kind:
        return INVALID_REQUEST
    return SERVER_ERROR


def retry_after_ms(headers: Mapping[str, str], now: datetime | None = None) -> int | None:
    """`retry-after-ms`, else `Retry-After` in seconds or as an HTTP-date (relative to `Date`, else now)."""
    precise = _number(headers.get("retry-after-ms"))
    if precise is not None:
        return round(precise)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is not None:
        return round(seconds * 1000)
    when = _http_date(raw)
    if when is None:
        return None
    base = _http_date(headers.get("date")) or now or datetime.now(UTC)
    return max(0, round((when - base).total_seconds() * 1000))


def request_id(headers: Mapping[str, str]) -> str | None:
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return one_line(value, 120)
    return None


def describe(provider: str, url: str, what: str, detail: str = "") -> str:
    """The one-line message shape: who, where, what happened, and the provider's words if any."""
    return one_line(f"{provider} at {url}: {what}" + (f": {detail}" if detail else ""), 400)


def status_failure(
    status: int, reason: str, headers: Mapping[str, str], info: ErrorInfo, *, where: tuple[str, str], keyed: bool
) -> LlmFailure:
    """A non-2xx response as a failure carrying status, Retry-After and request id."""
    code = code_for_status(status, info)
    what = f"HTTP {status} {reason}".rstrip()
    detail = info.message
    if 300 <= status < 400:
        detail = f"redirected to {one_line(headers.get('location', '?'), 120)}; check the base URL"
    if code == AUTH and not keyed:
        detail = f"no API key was sent; set {ENV_VAR} or store one in the keyring ({detail or 'no detail'})"
    return LlmFailure(
        message=describe(*where, what, detail),
        code=code,
        status=status,
        provider_retry_after_ms=retry_after_ms(headers),
        request_id=request_id(headers),
        prompt_tokens=info.prompt_tokens if code == CONTEXT_WINDOW_EXCEEDED else None,
        context_tokens=info.context_tokens if code == CONTEXT_WINDOW_EXCEEDED else None,
    )


def scrub(failure: LlmFailure, key: Secret | None) -> LlmFailure:
    """Belt and braces: if a provider echoed the key back, it still never reaches a message."""
    if key is None or key.reveal() not in failure.message:
        return failure
    return dataclasses.replace(failure, message=failure.message.replace(key.reveal(), "***"))


def _number(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _http_date(raw: str | None) -> datetime | None:
    if not raw:
        return None
    try:
        parsed = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
