"""The only retry layer (SPEC §3) as pure code: a failure and what was spent in, one decision out."""

from __future__ import annotations

import random
from dataclasses import dataclass

from adapters.contract.llm import (
    CONTEXT_WINDOW_EXCEEDED,
    EMPTY_RESPONSE,
    INVALID_REQUEST,
    RATE_LIMITED,
    SERVER_ERROR,
    TIMEOUT,
    TRANSPORT,
    LlmFailure,
)

TRANSIENT = frozenset({RATE_LIMITED, SERVER_ERROR, TIMEOUT, TRANSPORT, EMPTY_RESPONSE})
NO_FALLBACK = frozenset({INVALID_REQUEST, CONTEXT_WINDOW_EXCEEDED})


@dataclass(frozen=True)
class Budgets:
    """Finite budgets of every recovery mechanism (max sends per step is 1 + their sum), and of one reply's time.

    `reply_s`: an attempt's stream is closed once it has run this long or queued this much speech
    (engine/reply_limit.py); None leaves the length to the provider.
    """

    retries: int = 3
    overflow_trims: int = 2  # the first trims to fit (engine.trim), the last leaves out every earlier turn
    fallbacks: int = 0
    reply_s: float | None = None

    @property
    def max_sends(self) -> int:
        return 1 + self.retries + self.overflow_trims + self.fallbacks


@dataclass(frozen=True)
class Backoff:
    base_ms: int = 500
    cap_ms: int = 10_000
    jitter: float = 0.1

    def delay_ms(self, retry: int, rng: random.Random) -> int:
        """Exponential from `base_ms` (retry 1), capped, with ±jitter, never above the cap."""
        raw = min(self.base_ms << (retry - 1), self.cap_ms)
        return min(round(raw * (1 + rng.uniform(-self.jitter, self.jitter))), self.cap_ms)


@dataclass(frozen=True)
class Spent:
    """What one step has used so far."""

    retries: int = 0
    overflow_trims: int = 0
    fallbacks: int = 0


@dataclass(frozen=True)
class Retry:
    """Sleep `delay_ms`, then send again to the same provider."""

    retry: int
    delay_ms: int


@dataclass(frozen=True)
class TrimHistory:
    """Drop the oldest history and send again (context-overflow recovery)."""


@dataclass(frozen=True)
class Fallback:
    """Send to the secondary provider."""


@dataclass(frozen=True)
class GiveUp:
    """Every budget that applies is spent, or none applies: the step fails with this failure."""

    failure: LlmFailure


Decision = Retry | TrimHistory | Fallback | GiveUp


def decide(
    failure: LlmFailure,
    spent: Spent,
    budgets: Budgets,
    *,
    can_trim: bool,
    has_fallback: bool,
    rng: random.Random,
    backoff: Backoff = Backoff(),
) -> Decision:
    """Pick the next recovery for a failed attempt, or give up."""
    if failure.code == CONTEXT_WINDOW_EXCEEDED:
        if can_trim and spent.overflow_trims < budgets.overflow_trims:
            return TrimHistory()
        return GiveUp(failure)
    if failure.code in TRANSIENT and spent.retries < budgets.retries:
        delay = _retry_delay(failure, spent.retries + 1, backoff, rng)
        if delay is not None:
            return Retry(spent.retries + 1, delay)
    if has_fallback and failure.code not in NO_FALLBACK and spent.fallbacks < budgets.fallbacks:
        return Fallback()
    return GiveUp(failure)


def _retry_delay(failure: LlmFailure, retry: int, backoff: Backoff, rng: random.Random) -> int | None:
    """The provider's Retry-After when valid and within the cap; None when it is beyond the cap."""
    asked = failure.provider_retry_after_ms
    if asked is None or asked < 0:
        return backoff.delay_ms(retry, rng)
    if asked > backoff.cap_ms:
        return None
    return asked
