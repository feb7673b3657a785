"""What a mutation audit of the trace loaders found unpinned: a column named twice (refused by every
reader of the shared CSV code, signals files too), the rows a CSV parse error names, padded optional
cells, and the Helios and Slurm rules for values the main tests do not use."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from burster.errors import InputError
from burster.signalfile import load_signals
from burster.traces import load_trace
from burster.traces.helios import COLUMNS as HELIOS_COLUMNS
from burster.traces.helios import _groups, job_sizes
from burster.traces.registry import detect_format
from tests.traces.test_helios import gpu_seconds
from tests.traces.test_helios import write as write_helios
from tests.traces.test_loader_edges import write
from tests.traces.test_sacct import NEW_STYLE, OLD_STYLE, job
from tests.traces.test_sacct import write as write_sacct

GENERIC = "job_id,submit_time,gpus,runtime_s,nodes,gpu_model,team\n"
PHILLY = "job_id,user,num_gpu,submit_time,duration,expect_time_list,job_type\n"
ALIBABA = "name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
SIGNALS = "source,gpu_hours,window_start,window_end\n"


def error_of(path: Path, fmt: str | None = None) -> str:
    with pytest.raises(InputError) as info:
        load_trace(path, fmt)
    return str(info.value)


# --- a column named twice -------------------------------------------------------------------------


def _twice(header: str, column: str) -> str:
    return header.rstrip("\n") + f",{column}\n"


@pytest.mark.parametrize(
    ("name", "fmt", "text", "column", "places"),
    [
        ("jobs.csv", "generic", _twice(GENERIC, "gpus") + "a,0,1,10,,,,64\n", "gpus", "3, 8"),
        (
            "trace_job_Philly_t.csv",
            "philly",
            _twice(PHILLY, "num_gpu") + "0,vc,1,10,30,60,strict,0\n",
            "num_gpu",
            "3, 8",
        ),
        (
            "openb_pod_list_t.csv",
            "alibaba",
            _twice(ALIBABA, "deletion_time") + "p,1,1000,0,50,10,90\n",
            "deletion_time",
            "5, 7",
        ),
    ],
)
def test_a_trace_column_named_twice_is_refused(
    tmp_path: Path, name: str, fmt: str, text: str, column: str, places: str
) -> None:
    """It used to load, each row keeping the last of the two cells (64 GPUs where 1 was meant)."""
    path = write(tmp_path, text, name)
    msg = error_of(path, fmt)
    assert msg.startswith(f"{path}: row 1 (header): column {column!r} appears 2 times (columns {places})")


def test_a_helios_column_named_twice_is_refused(tmp_path: Path) -> None:
    path = write_helios(tmp_path)
    with gzip.open(path, "rt", newline="") as fh:
        header, *rows = fh.readlines()
    with gzip.open(path, "wt", newline="") as fh:
        fh.write(header.rstrip("\r\n") + ",running_gpu_num\r\n" + "".join(r.rstrip("\r\n") + ",0\r\n" for r in rows))
    msg = error_of(path)
    assert msg.startswith(f"{path}: row 1 (header): column 'running_gpu_num' appears 2 times")
    assert set(HELIOS_COLUMNS) <= set(header.strip().split(","))  # the rest of the header was right


def test_a_signals_column_named_twice_is_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path, _twice(SIGNALS, "gpu_hours") + "S-1,200,2026-01-05T09:00:00Z,2026-01-05T13:00:00Z,2\n", "signals.csv"
    )
    with pytest.raises(InputError, match=r"column 'gpu_hours' appears 2 times \(columns 2, 5\)") as info:
        load_signals(path)
    assert str(info.value).startswith(f"{path}: row 1 (header)")


def test_names_that_are_the_same_once_stripped_of_spaces_are_a_column_named_twice(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, "job_id, gpus,submit_time,gpus ,runtime_s\na,1,0,64,10\n"))
    assert "column 'gpus' appears 2 times (columns 2, 4)" in msg


def test_unnamed_columns_may_repeat(tmp_path: Path) -> None:
    """A spreadsheet's export may end its header in empty names; Burster reads no unnamed column."""
    (only,) = load_trace(write(tmp_path, "job_id,submit_time,gpus,runtime_s,,\na,0,8,10,,\n")).jobs
    assert only.gpus == 8


def test_a_parquet_column_named_twice_is_an_error_naming_the_file_and_column(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "jobs.parquet"
    pq.write_table(
        pa.table(
            [pa.array(["a"]), pa.array([0]), pa.array([1]), pa.array([10.0]), pa.array([64])],
            names=["job_id", "submit_time", "gpus", "runtime_s", "gpus"],
        ),
        path,
    )
    msg = error_of(path)
    assert msg.startswith(f"{path}: not a readable Parquet file") and "gpus" in msg


def test_a_missing_parquet_file_is_named_as_missing(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "jobs.parquet"
    assert error_of(path) == f"trace file {path} does not exist"


# --- the rows a CSV parse error names -------------------------------------------------------------


def test_an_unclosed_quote_that_breaks_the_csv_limit_names_the_rows_it_ran_over(tmp_path: Path) -> None:
    path = write(tmp_path, 'job_id,submit_time,gpus,runtime_s\na,0,1,10\nb,"0,1,10\n' + ("x" * 1000 + "\n") * 200)
    assert "rows 3-134: not readable as CSV (field larger than field limit" in error_of(path)


def test_a_csv_parse_error_after_blank_lines_names_a_range_that_holds_its_row(tmp_path: Path) -> None:
    """It named row 3, a blank line: the DictReader's line count stays at the last row it gave."""
    path = write(tmp_path, "job_id,submit_time,gpus,runtime_s\na,0,1,10\n\n\nb," + "x" * 200_000 + ",1,10\n")
    assert f"{path}: rows 3-5: not readable as CSV" in error_of(path)


# --- cells and times the shared readers take ------------------------------------------------------


def test_the_first_instant_of_1970_is_a_time(tmp_path: Path) -> None:
    (only,) = load_trace(write(tmp_path, GENERIC + "a,1970-01-01T00:00:00Z,1,10,,,\n")).jobs
    assert only.submitted_at.timestamp() == 0


def test_padded_or_blank_optional_cells_are_read_stripped_or_as_not_given(tmp_path: Path) -> None:
    (only,) = load_trace(write(tmp_path, GENERIC + "a,0,16,10,  , H100 , vision \n")).jobs
    assert (only.nodes, only.gpu_model, only.team) == (2, "H100", "vision")


def test_a_philly_job_is_attributed_to_its_user(tmp_path: Path) -> None:
    (only,) = load_trace(write(tmp_path, PHILLY + "0,vc7,1,10,30,60,strict\n", "trace_job_Philly_t.csv")).jobs
    assert only.team == "vc7"


def test_formats_are_detected_from_a_padded_header_and_a_gzipped_json_name(tmp_path: Path) -> None:
    assert detect_format(write(tmp_path, "job_id, submit_time, gpus, runtime_s\n", "mine.csv")) == "generic"
    path = tmp_path / "history.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"jobs": [OLD_STYLE]}).encode()))
    assert detect_format(path) == "sacct" and len(load_trace(path).jobs) == 1


# --- Helios rules ---------------------------------------------------------------------------------


def test_small_jobs_of_a_vc_under_seven_gpus_are_no_larger_than_the_vc() -> None:
    assert job_sizes("less_8", 6, 1, limit=4) == [3, 3]


def test_a_class_running_gpus_with_no_arrivals_gives_its_gpu_minutes_to_the_other(tmp_path: Path) -> None:
    """Minute 1 reports 8 running GPUs but none in either class: its GPU-minutes go to the <8 class by
    the rule, which has no jobs, so they move to the >=8 jobs and the trace keeps every GPU-hour."""
    big, idle = (8, 1, 0, 0), (0, 0, 0, 0)
    path = write_helios(tmp_path, [(big, idle), (idle, idle), (big, idle)], running=[8, 8, 8])
    trace = load_trace(path)
    assert {j.gpus for j in trace.jobs} == {8}
    assert gpu_seconds(trace.jobs) == pytest.approx(3 * 8 * 60)


def test_budget_before_the_first_arrival_day_and_arrivals_on_an_unfunded_day_by_the_rule() -> None:
    """Day 0's budget has no earlier arrival day, so it funds day 1; day 2's arrivals have no budget
    and join the nearest later funded day (3), not the earlier one (1)."""
    arrivals = {1: [(10, 8)], 2: [(20, 8)], 3: [(30, 8)]}
    assert _groups(arrivals, {0: 5.0, 1: 1.0, 3: 7.0}) == [(6.0, [(10, 8)]), (7.0, [(20, 8), (30, 8)])]


# --- Slurm values ---------------------------------------------------------------------------------


def test_slurm_counts_may_be_numeric_strings_but_not_booleans(tmp_path: Path) -> None:
    loaded = load_trace(write_sacct(tmp_path, [job(OLD_STYLE, job_id="7", allocation_nodes="1")]))
    assert [j.job_id for j in loaded.jobs] == ["slurm-7"]
    msg = error_of(write_sacct(tmp_path, [job(OLD_STYLE, allocation_nodes=True)], "bool.json"))
    assert "jobs[0] (job_id 102), field 'allocation_nodes': True is not a whole number" in msg


def test_slurm_gpu_memory_and_utilisation_tres_are_not_gpus(tmp_path: Path) -> None:
    """Slurm's gres/gpumem and gres/gpuutil TRES count MiB and percent, not GPUs."""
    tres = [
        {"type": "gres", "name": "gpu:a100", "count": 2},
        {"type": "gres", "name": "gpumem", "count": 81920},
        {"type": "gres", "name": "gpuutil", "count": 90},
    ]
    (only,) = load_trace(write_sacct(tmp_path, [job(OLD_STYLE, tres__allocated=tres)])).jobs
    assert (only.gpus, only.gpu_model) == (2, "A100")


def test_a_slurm_gres_gpu_entry_names_its_model_and_a_numeric_host_count_is_read(tmp_path: Path) -> None:
    tres = [{"type": "gres/gpu", "name": "a100", "count": 16}]
    (only,) = load_trace(
        write_sacct(tmp_path, [job(NEW_STYLE, tres__allocated=tres, allocation_nodes=..., nodes=4)])
    ).jobs
    assert (only.gpus, only.gpu_model, only.nodes) == (16, "A100", 4)


def test_a_file_cut_off_mid_row_is_refused_not_read_with_its_last_cells_not_given(tmp_path: Path) -> None:
    """The last row of a truncated file lost its deadline and job class: a strict job loaded as best
    effort, without a word (too many cells were refused; too few were read as values not given)."""
    head = "job_id,submit_time,gpus,runtime_s,deadline,job_class\n"
    whole = "a,2026-03-02T09:00:00Z,8,3600,2026-03-02T12:00:00Z,strict\n"
    assert load_trace(write(tmp_path, head + whole), "generic").jobs[0].deadline is not None
    cut = write(tmp_path, head + whole + "b,2026-03-02T09:05:00Z,8,3600\n")
    assert error_of(cut, "generic") == (f"{cut}: row 3, column 'deadline': missing value (4 cells for 6 header "
                                        "columns); give one cell per column, empty for a value not given")
    padded = write(tmp_path, head + whole + "b,2026-03-02T09:05:00Z,8,3600,,\n")
    assert [j.deadline is None for j in load_trace(padded, "generic").jobs] == [False, True]
