"""Retry with exponential backoff and full jitter, for retryable ProviderErrors only."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from burster.errors import ProviderError

T = TypeVar("T")
MAX_RETRY_AFTER_S = 30.0  # a longer Retry-After is not waited out inside one pass


def call_with_backoff(
    fn: Callable[[], T],
    *,
    attempts: int = 5,
    base_s: float = 0.2,
    cap_s: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """Call ``fn``; on a retryable ProviderError sleep and try again, up to ``attempts`` calls. A
    throttled call waits at least the Retry-After its API gave (``ThrottledError.retry_after_s``):
    retrying sooner only keeps the account throttled; asked to wait longer than
    ``MAX_RETRY_AFTER_S``, it gives up at once (a later pass tries again)."""
    rng = rng or random.Random(0)
    for attempt in range(attempts):
        try:
            return fn()
        except ProviderError as err:
            if not err.retryable or attempt == attempts - 1:
                raise
            asked = getattr(err, "retry_after_s", None) or 0.0
            if asked > MAX_RETRY_AFTER_S:
                raise
            sleep(max(rng.uniform(0, min(cap_s, base_s * 2**attempt)), asked))
    raise AssertionError("unreachable")  # pragma: no cover
