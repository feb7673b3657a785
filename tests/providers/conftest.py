"""Runs the one provider contract suite over every adapter listed in HARNESSES."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.harness import Harness

# Each name has a module tests/providers/harness_<name>.py with make_harness(tmp_path).
HARNESSES = ["fake", "sim", "aws", "azure", "gcp"]


@pytest.fixture(params=HARNESSES)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    module = importlib.import_module(f"tests.providers.harness_{request.param}")
    with module.make_harness(tmp_path) as h:
        yield h
