"""Where the staged data sets live: $BURSTER_SHARED_DATA, else ../shared/data beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "BURSTER_SHARED_DATA"


def shared_data_dir() -> Path:
    """$BURSTER_SHARED_DATA when set (and not empty), else ../shared/data beside the checkout."""
    env = os.environ.get(ENV)
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
