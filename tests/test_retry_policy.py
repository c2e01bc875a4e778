"""SPEC §3 as pure code: no loop, no I/O."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.contract import LlmFailure
from engine.retry import Backoff, Budgets, Decision, Fallback, GiveUp, Retry, Spent, TrimHistory, decide

TRANSIENT = ["RATE_LIMITED", "SERVER_ERROR", "TIMEOUT", "TRANSPORT", "EMPTY_RESPONSE"]
PERMANENT = ["AUTH", "QUOTA", "INVALID_REQUEST", "CONTEXT_WINDOW_EXCEEDED"]
RNG = random.Random(1)


def _decide(
    code: str,
    spent: Spent = Spent(),
    budgets: Budgets = Budgets(),
    *,
    after: int | None = None,
    can_trim: bool = False,
    has_fallback: bool = False,
) -> Decision:
    failure = LlmFailure("x", code, provider_retry_after_ms=after)
    return decide(failure, spent, budgets, can_trim=can_trim, has_fallback=has_fallback, rng=RNG)


@pytest.mark.parametrize("code", TRANSIENT)
def test_rule1_transient_codes_are_retried(code: str) -> None:
    assert isinstance(_decide(code), Retry)


@pytest.mark.parametrize("code", PERMANENT)
def test_rule1_auth_quota_invalid_and_overflow_are_never_retried(code: str) -> None:
    assert isinstance(_decide(code), GiveUp)


@given(seed=st.integers(0, 2**32), retry=st.integers(1, 12))
def test_rule2_backoff_starts_at_500ms_doubles_and_caps_at_10s_with_10pct_jitter(seed: int, retry: int) -> None:
    delay = Backoff().delay_ms(retry, random.Random(seed))
    nominal = min(500 * 2 ** (retry - 1), 10_000)
    assert nominal * 0.9 - 1 <= delay <= min(nominal * 1.1 + 1, 10_000)


def test_rule2_jitter_really_varies() -> None:
    delays = {Backoff().delay_ms(1, random.Random(seed)) for seed in range(20)}
    assert len(delays) > 5


@pytest.mark.parametrize("after", [0, 1, 2_500, 10_000])
def test_rule3_retry_after_within_the_cap_is_used_exactly(after: int) -> None:
    decision = _decide("RATE_LIMITED", after=after)
    assert decision == Retry(1, after)


def test_rule3_retry_after_above_the_cap_is_handed_on_not_retried() -> None:
    decision = _decide("RATE_LIMITED", after=60_000)
    assert isinstance(decision, GiveUp)
    assert decision.failure.provider_retry_after_ms == 60_000


def test_rule5_retries_stop_when_the_budget_is_spent() -> None:
    assert isinstance(_decide("SERVER_ERROR", Spent(retries=3)), GiveUp)
    assert isinstance(_decide("SERVER_ERROR", Spent(retries=2)), Retry)


def test_rule5_overflow_trims_within_budget_and_only_when_there_is_history_to_trim() -> None:
    assert isinstance(_decide("CONTEXT_WINDOW_EXCEEDED", can_trim=True), TrimHistory)
    assert isinstance(_decide("CONTEXT_WINDOW_EXCEEDED", can_trim=False), GiveUp)
    trims = Budgets().overflow_trims
    assert isinstance(_decide("CONTEXT_WINDOW_EXCEEDED", Spent(overflow_trims=trims - 1), can_trim=True), TrimHistory)
    assert isinstance(_decide("CONTEXT_WINDOW_EXCEEDED", Spent(overflow_trims=trims), can_trim=True), GiveUp)


def test_rule5_fallback_needs_a_budget_and_a_secondary_provider() -> None:
    spent = Spent(retries=3)
    assert isinstance(_decide("SERVER_ERROR", spent, has_fallback=True), GiveUp)  # default budget 0
    with_budget = Budgets(fallbacks=1)
    assert isinstance(_decide("SERVER_ERROR", spent, with_budget, has_fallback=True), Fallback)
    assert isinstance(_decide("AUTH", Spent(), with_budget, has_fallback=True), Fallback)
    assert isinstance(_decide("INVALID_REQUEST", Spent(), with_budget, has_fallback=True), GiveUp)


@given(
    codes=st.lists(st.sampled_from(TRANSIENT + PERMANENT), min_size=1, max_size=30),
    retries=st.integers(0, 5),
    trims=st.integers(0, 3),
    fallbacks=st.integers(0, 2),
)
def test_rule5_decisions_never_exceed_the_budgets(codes: list[str], retries: int, trims: int, fallbacks: int) -> None:
    budgets = Budgets(retries, trims, fallbacks)
    spent, sends = Spent(), 1
    for code in codes:
        decision = decide(LlmFailure("x", code), spent, budgets, can_trim=True, has_fallback=True, rng=RNG)
        if isinstance(decision, GiveUp):
            break
        sends += 1
        if isinstance(decision, Retry):
            spent = Spent(decision.retry, spent.overflow_trims, spent.fallbacks)
        elif isinstance(decision, TrimHistory):
            spent = Spent(spent.retries, spent.overflow_trims + 1, spent.fallbacks)
        else:
            spent = Spent(spent.retries, spent.overflow_trims, spent.fallbacks + 1)
    assert sends <= budgets.max_sends == 1 + retries + trims + fallbacks
