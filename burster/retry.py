"""Retry with exponential backoff and full jitter, for retryable ProviderErrors only."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from burster.errors import ProviderError

T = TypeVar("T")


def call_with_backoff(
    fn: Callable[[], T],
    *,
    attempts: int = 5,
    base_s: float = 0.2,
    cap_s: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """Call ``fn``; on a retryable ProviderError sleep and try again, up to ``attempts`` calls."""
    rng = rng or random.Random(0)
    for attempt in range(attempts):
        try:
            return fn()
        except ProviderError as err:
            if not err.retryable or attempt == attempts - 1:
                raise
            sleep(rng.uniform(0, min(cap_s, base_s * 2**attempt)))
    raise AssertionError("unreachable")  # pragma: no cover
