"""Which of our Azure VMs are stopped: their instance views, read a few at a time.

A resource group's VM list carries ``provisioningState`` only; whether a VM runs is in its instance
view (GET ``.../virtualMachines/{name}/instanceView``: ``statuses`` holds ``PowerState/<state>``).
A VM stopped outside the controller (a user in the portal, a guest shutdown) still exists: a
stopped one bills its compute, a deallocated one its disks, and neither runs jobs. The list with
``$expand=instanceView`` needs a scale-set filter, and the subscription-wide ``statusOnly`` list
needs a subscription-wide role (Burster's terraform role is scoped to its resource group), so the
views are read one VM at a time: at most ``per_pass`` a listing, the least recently read first,
and each VM's at most every ``interval_s``, to stay well inside Compute's GetVM throttle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from burster.errors import NotFoundError, ProviderError

log = logging.getLogger("burster.providers.azure")
POWERED_DOWN = frozenset({"stopping", "stopped", "deallocating", "deallocated"})
INTERVAL_S = 300.0
PER_PASS = 4


def power_state(view: Mapping[str, Any]) -> str:
    """``running``, ``deallocated``, ... from an instance view's statuses; "" when none says."""
    statuses = view.get("statuses")
    for status in statuses if isinstance(statuses, list) else []:
        code = str(status.get("code") or "") if isinstance(status, Mapping) else ""
        if code.lower().startswith("powerstate/"):
            return code.split("/", 1)[1].lower()
    return ""


class PowerWatch:
    """Remembers each VM's last read power state and reads the views that are due."""

    def __init__(self, read_view: Callable[[str], Mapping[str, Any]], now: Callable[[], datetime], *,
                 interval_s: float = INTERVAL_S, per_pass: int = PER_PASS) -> None:
        self._read, self._now = read_view, now
        self._interval_s, self._per_pass = interval_s, per_pass
        self._seen: dict[str, tuple[datetime, str]] = {}  # VM name -> (read at, power state)

    def stopped(self, names: Sequence[str]) -> set[str]:
        """Those of ``names`` (VMs provisioned and not being deleted) last read as powered down."""
        now = self._now()
        listed = set(names)
        self._seen = {n: seen for n, seen in self._seen.items() if n in listed}
        due = sorted((n for n in names if self._due(n, now)), key=self._last_read)
        for name in due[:self._per_pass]:
            try:
                self._seen[name] = (now, power_state(self._read(name)))
            except NotFoundError:
                continue  # deleted since the listing: the next one leaves it out
            except ProviderError as err:
                log.warning("azure: could not read the power state of VM %s (%s); trying again later", name, err)
                break
        return {n for n in names if n in self._seen and self._seen[n][1] in POWERED_DOWN}

    def _due(self, name: str, now: datetime) -> bool:
        seen = self._seen.get(name)
        return seen is None or (now - seen[0]).total_seconds() >= self._interval_s

    def _last_read(self, name: str) -> tuple[float, str]:
        """Never read first, then the least recently read."""
        seen = self._seen.get(name)
        return (seen[0].timestamp() if seen else float("-inf"), name)
