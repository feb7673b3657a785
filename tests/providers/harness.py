"""What the provider contract suite needs from each adapter's test setup."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from burster.interfaces import CloudProvider
from burster.model import Offering


@dataclass
class Harness:
    """An adapter wired to its backend (fake, simulator, moto, local REST fake) with fault knobs.

    - ``fail_capacity()``: the backend answers the next launch with its real capacity error.
    - ``throttle(n)``: the backend answers the next ``n`` API calls with its real throttling error.
    - ``partial(k)``: the backend fulfils only ``k`` nodes of the next launch.
    """

    provider: CloudProvider
    offering: Offering
    fail_capacity: Callable[[], None]
    throttle: Callable[[int], None]
    partial: Callable[[int], None]
