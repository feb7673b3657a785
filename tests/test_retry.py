"""burster.retry: backoff for retryable errors, and a throttled API's Retry-After."""

from __future__ import annotations

import pytest

from burster.errors import AuthError, ThrottledError, TransientError
from burster.retry import MAX_RETRY_AFTER_S, call_with_backoff


def _failing(errors: list[Exception]) -> object:
    def fn() -> str:
        if errors:
            raise errors.pop(0)
        return "ok"
    return fn


def test_retryable_errors_back_off_and_others_raise_at_once() -> None:
    slept: list[float] = []
    assert call_with_backoff(_failing([TransientError("503"), TransientError("503")]), sleep=slept.append) == "ok"
    assert len(slept) == 2 and all(0 <= s <= 10 for s in slept)
    with pytest.raises(AuthError):
        call_with_backoff(_failing([AuthError("403")]), sleep=slept.append)
    assert len(slept) == 2


def _throttled(retry_after_s: float | None) -> ThrottledError:
    err = ThrottledError("429")
    err.retry_after_s = retry_after_s
    return err


def test_a_throttled_call_waits_at_least_the_retry_after_it_was_given() -> None:
    slept: list[float] = []
    assert call_with_backoff(_failing([_throttled(20.0), _throttled(None)]), sleep=slept.append) == "ok"
    assert slept[0] >= 20.0 and slept[1] < 20.0  # none given: the jittered backoff
    with pytest.raises(ThrottledError):  # longer than one pass should wait: a later pass tries again
        call_with_backoff(_failing([_throttled(MAX_RETRY_AFTER_S + 1)]), sleep=slept.append)
    assert len(slept) == 2


def test_the_azure_adapter_waits_out_azures_retry_after() -> None:
    """ARM answers 429 with Retry-After: 20 three times; the adapter waits at least that long
    between tries (it retried within about a second, keeping the subscription throttled)."""
    import uuid

    from tests.providers.harness_azure import fakes, provider

    rg, arm = f"rg-{uuid.uuid4().hex[:8]}", fakes().arm
    p = provider(rg)
    slept: list[float] = []
    p._sleep = slept.append  # (the adapter's injected sleep: no real wait)
    arm.throttle_next(3, retry_after_s=20)
    try:
        assert p.list_nodes() == []
    finally:
        arm.throttle_next(0)
    assert len(slept) == 3 and min(slept) >= 20.0
