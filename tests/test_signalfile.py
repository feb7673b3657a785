"""Signals files (``burster.signalfile``) and ``burster simulate --signals``: what a Jira sprint
would announce, read from a CSV; bad rows name the file, row and column."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest

from burster.cli import main
from burster.errors import InputError
from burster.signalfile import load_signals

HEADER = "source,gpu_hours,window_start,window_end,gpu_model,team,announced_at\n"
GOOD = "SPRINT-7,200,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,V100,vision,2026-01-05T08:00:00\n"


def write(tmp_path: Path, text: str, name: str = "signals.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_signals_file_loads_by_window_start_with_its_optional_columns(tmp_path: Path) -> None:
    later = "SPRINT-8,50.5,2026-01-12T09:00:00+01:00,2026-01-12T17:00:00+01:00,,,\n"
    sprint7, sprint8 = load_signals(write(tmp_path, HEADER + later + GOOD))
    assert sprint7.signal.source == "SPRINT-7" and sprint7.signal.gpu_hours == 200.0
    assert sprint7.signal.gpu_model == "V100" and sprint7.signal.team == "vision"
    assert sprint7.announced_at == datetime(2026, 1, 5, 8, tzinfo=UTC)  # a naive time is UTC
    assert sprint8.signal.window_start == datetime(2026, 1, 12, 8, tzinfo=UTC) and sprint8.announced_at is None
    assert sprint8.signal.gpu_model == ""  # empty: the pool's model
    packed = tmp_path / "signals.csv.gz"
    packed.write_bytes(gzip.compress((HEADER + GOOD).encode()))
    assert load_signals(packed)[0] == sprint7


@pytest.mark.parametrize(("row", "where"), [
    ("SPRINT-7,-5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,,,",
     "row 2, column 'gpu_hours': -5 is below the minimum 0"),
    ("SPRINT-7,0,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,,,", "row 2, column 'gpu_hours': 0 is not above 0"),
    ("SPRINT-7,lots,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,,,", "row 2, column 'gpu_hours': 'lots' is not a number"),
    ("SPRINT-7,5,monday,2026-01-05T13:00:00Z,,,", "row 2, column 'window_start': 'monday' is not an ISO-8601 time"),
    ("SPRINT-7,5,2026-01-05T13:00:00Z,2026-01-05T09:00:00Z,,,",
     "row 2, column 'window_end': 2026-01-05 09:00:00 is not after window_start 2026-01-05 13:00:00"),
    ("SPRINT-7,5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,,,2026-01-05T14:00:00Z",
     "row 2, column 'announced_at': 2026-01-05 14:00:00 is not before window_end"),
    (",5,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,,,", "row 2, column 'source': empty"),
])
def test_a_bad_row_names_the_file_row_and_column(tmp_path: Path, row: str, where: str) -> None:
    path = write(tmp_path, HEADER + row + "\n")
    with pytest.raises(InputError, match="signals.csv: " + where.replace("(", r"\(")):
        load_signals(path)


def test_a_missing_column_a_duplicate_an_empty_file_and_a_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"row 1 \(header\): missing column\(s\) window_end"):
        load_signals(write(tmp_path, "source,gpu_hours,window_start\nS,5,2026-01-05T09:00:00Z\n"))
    with pytest.raises(InputError, match="row 3, column 'source': 'SPRINT-7' with the same window_start as row 2"):
        load_signals(write(tmp_path, HEADER + GOOD + GOOD))
    with pytest.raises(InputError, match="holds no signals"):
        load_signals(write(tmp_path, HEADER))
    with pytest.raises(InputError, match="is a folder, not a signals file"):
        load_signals(tmp_path)
    with pytest.raises(InputError, match=r"signals file .* does not exist"):
        load_signals(tmp_path / "nope.csv")


def test_simulate_pre_warms_for_a_signal_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A one-node pool cannot take a sprint's 50 GPUs: nodes are launched before its window opens. A
    column it does not know is named on stderr, as the trace and catalog loaders' notes are."""
    path = write(tmp_path, HEADER.replace("\n", ",note\n") + GOOD.replace(",V100,", ",,").replace("\n", ",hi\n"))
    assert main(["simulate", "--demo", "--days", "1", "--pool-nodes", "1", "--signals", str(path), "--explain"]) == 0
    out, err = capsys.readouterr()
    assert f"burster: {path}: column(s) note not read" in err
    warm = [line for line in out.splitlines() if "pre-warm" in line]
    assert warm and warm[0].startswith("2026-01-05 08:5") and "for signal SPRINT-7: 200 GPU-h from" in warm[0]


def test_simulate_refuses_a_bad_signals_file_or_model_before_simulating(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, HEADER + "SPRINT-7,5,soon,2026-01-05T13:00:00Z,,,\n")
    assert main(["simulate", "--demo", "--days", "1", "--signals", str(bad), "--json"]) == 2
    err = capsys.readouterr()
    assert "signals.csv: row 2, column 'window_start'" in err.err and err.out == ""
    unknown = write(tmp_path, HEADER + GOOD.replace("V100", "B300"), "models.csv")
    assert main(["simulate", "--demo", "--days", "1", "--signals", str(unknown), "--json"]) == 2
    assert "signal 'SPRINT-7' needs GPU model 'B300', which neither the pool" in capsys.readouterr().err
