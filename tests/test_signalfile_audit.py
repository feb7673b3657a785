"""Audit of ``burster.signalfile`` (boundaries, the duplicate key, every optional column, order, the
unknown-column note) and of ``burster.shared_data``."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

import burster
from burster.errors import InputError
from burster.shared_data import ENV, shared_data_dir
from burster.signalfile import load_signals

HEADER = "source,gpu_hours,window_start,window_end,announced_at\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "signals.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("row", "where"),
    [
        (
            "S,5,2026-01-05T09:00:00Z,2026-01-05T09:00:00Z,",
            "row 2, column 'window_end': 2026-01-05 09:00:00 is not after window_start 2026-01-05 09:00:00",
        ),
        (
            "S,5,2026-01-05T09:00:00Z,2026-01-05T10:00:00+01:00,",  # the same instant, another offset
            "row 2, column 'window_end': 2026-01-05 09:00:00 is not after window_start",
        ),
        (
            "S,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,2026-01-05T13:00:00Z",
            "row 2, column 'announced_at': 2026-01-05 13:00:00 is not before window_end 2026-01-05 13:00:00: "
            "the signal would never be seen",
        ),
        ("S,nan,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,", "row 2, column 'gpu_hours': 'nan' is not a finite number"),
        ("S,5,2026-01-05T09:00:00Z,1969-12-31T23:00:00Z,", "row 2, column 'window_end': '1969-12-31T23:00:00Z' is out"),
        ("S,,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,", "row 2, column 'gpu_hours': '' is not a number"),
    ],
)
def test_boundaries_are_refused_naming_row_and_column(tmp_path: Path, row: str, where: str) -> None:
    with pytest.raises(InputError, match="signals.csv: " + where.replace("(", r"\(")):
        load_signals(write(tmp_path, HEADER + row + "\n"))


def test_a_window_of_any_length_and_an_announcement_inside_the_window_load(tmp_path: Path) -> None:
    [a] = load_signals(
        write(tmp_path, HEADER + "S,0.01,2026-01-05T09:00:00Z,2026-01-05T09:00:01Z,2026-01-05T09:00:00.5Z\n")
    )
    assert a.signal.gpu_hours == 0.01 and a.announced_at == datetime(2026, 1, 5, 9, 0, 0, 500000, tzinfo=UTC)


def test_the_duplicate_key_is_source_and_window_start(tmp_path: Path) -> None:
    """Same source and start with another end is the same signal twice; another start is another."""
    rows = (
        "S,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,\n"
        "S,5,2026-01-05T10:00:00+01:00,2026-01-05T14:00:00Z,\n"
    )  # 09:00 UTC again
    with pytest.raises(InputError, match="row 3, column 'source': 'S' with the same window_start as row 2"):
        load_signals(write(tmp_path, HEADER + rows))
    rows = (
        "S,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,\n"
        "S,5,2026-01-05T10:00:00Z,2026-01-05T13:00:00Z,\n"
        "T,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,\n"
    )
    assert len(load_signals(write(tmp_path, HEADER + rows))) == 3


def test_signals_come_by_window_start_then_source(tmp_path: Path) -> None:
    rows = (
        "A,5,2026-01-07T09:00:00Z,2026-01-07T13:00:00Z,\n"
        "C,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,\n"
        "B,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,\n"
    )
    assert [a.signal.source for a in load_signals(write(tmp_path, HEADER + rows))] == ["B", "C", "A"]


def test_every_optional_column_is_read_and_stripped(tmp_path: Path) -> None:
    """project and sprint go onto pre-warm launches and so into the ledger's attribution."""
    text = (
        "source , gpu_hours,window_start,window_end,gpu_model,team,project,sprint\n"
        " SPRINT-7 ,200,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z, V100 , vision , det , 2026-S1 \n"
    )
    [a] = load_signals(write(tmp_path, text))
    s = a.signal
    assert (s.source, s.gpu_model, s.team, s.project, s.sprint) == ("SPRINT-7", "V100", "vision", "det", "2026-S1")
    assert a.announced_at is None  # no announced_at column: seen from the start


def test_a_short_row_and_a_blank_source_are_refused(tmp_path: Path) -> None:
    """A row cut short (a file cut off mid-row) used to load with its last cells read as not given."""
    text = "source,gpu_hours,window_start,window_end,team,sprint\nS,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z\n"
    with pytest.raises(InputError, match=r"row 2, column 'team': missing value \(4 cells for 6 header columns\)"):
        load_signals(write(tmp_path, text))
    with pytest.raises(InputError, match="row 2, column 'source': empty"):
        load_signals(write(tmp_path, HEADER + "   ,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,\n"))


def test_unknown_columns_are_noted_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rows = "".join(f"S{i},5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,,x\n" for i in range(3))
    with caplog.at_level(logging.WARNING, logger="burster.signals"):
        assert len(load_signals(write(tmp_path, HEADER.replace("\n", ",note\n") + rows))) == 3
    assert [r.getMessage() for r in caplog.records] == [
        f"{tmp_path / 'signals.csv'}: column(s) note not read (known: source, gpu_hours, window_start, window_end, "
        "gpu_model, team, project, sprint, announced_at)"
    ]


# --- shared_data -----------------------------------------------------------------------------------


def test_shared_data_is_beside_the_checkout_unless_the_variable_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    beside = Path(burster.__file__).resolve().parents[2] / "shared" / "data"
    monkeypatch.delenv(ENV, raising=False)
    assert shared_data_dir() == beside
    monkeypatch.setenv(ENV, "")  # set but empty: as if unset
    assert shared_data_dir() == beside
    monkeypatch.setenv(ENV, str(tmp_path))
    assert shared_data_dir() == tmp_path
