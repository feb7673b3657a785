"""The simulated controller's warnings (logger ``burster.reconcile``) while a simulation runs.

A live controller logs each warning as it happens; a simulated week can log thousands (a join timeout
shorter than the boots, a cloud's API failing). ``burster simulate`` keeps them off stderr: under
``--explain`` each is printed at its simulated time after its pass's decisions, otherwise they are
counted and summarized once, by kind, at the end.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

LOGGER = "burster.reconcile"


class ControllerLog(logging.Handler):
    """Warnings of the simulated controller: kept as lines with their simulated time for ``take``
    (``echo``), or counted."""

    def __init__(self, now: Callable[[], datetime], *, echo: bool) -> None:
        super().__init__(logging.WARNING)
        self._now, self._echo = now, echo
        self.counts: Counter[str] = Counter()  # by message template
        self._first: dict[str, str] = {}  # template -> its first message
        self._lines: list[str] = []  # echoed, not yet taken

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if self._echo:
            self._lines.append(f"{self._now():%Y-%m-%d %H:%M:%S}  warning: {text}")
            return
        template = str(record.msg)
        self.counts[template] += 1
        self._first.setdefault(template, text)

    def take(self) -> list[str]:
        """The echoed lines logged since the last call."""
        lines, self._lines = self._lines, []
        return lines

    @contextmanager
    def attached(self) -> Iterator[ControllerLog]:
        """Route the controller's warnings here, and only here, for the ``with`` block."""
        logger = logging.getLogger(LOGGER)
        propagate = logger.propagate
        logger.addHandler(self)
        logger.propagate = False
        try:
            yield self
        finally:
            logger.removeHandler(self)
            logger.propagate = propagate

    def summary(self, kinds: int = 3) -> str | None:
        """One note of what was counted (the ``kinds`` most frequent, each with its first message);
        None if nothing was."""
        total = sum(self.counts.values())
        if not total:
            return None
        top = [f"{n}x like \"{self._first[t]}\"" for t, n in self.counts.most_common(kinds)]
        more = len(self.counts) - len(top)
        rest = f"; {more} other kind(s)" if more > 0 else ""
        return (f"note: the simulated controller logged {total} warning(s): {'; '.join(top)}{rest} "
                "(--explain prints each at its simulated time)")
