"""The Helios VC series loader: jobs inferred by the documented rule match the series in aggregate."""

from __future__ import annotations

import csv
import gzip
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from burster.app import shared_data_dir
from burster.errors import InputError
from burster.traces import load_trace
from burster.traces.helios import COLUMNS, helios_capacity, job_sizes, load_helios
from burster.traces.registry import detect_format

START = datetime(2020, 5, 1, 23, 57, tzinfo=UTC)
# (running GPUs, running jobs, pending GPUs, pending jobs) of the >=8 class, then of the <8 class, per minute
SERIES = [
    ((8, 1, 0, 0), (2, 2, 0, 0)),    # 23:57 day 0: the VC's first jobs arrive: one 8-GPU, two 1-GPU
    ((8, 1, 0, 0), (2, 2, 0, 0)),    # 23:58 nothing new
    ((8, 1, 0, 0), (2, 2, 3, 1)),    # 23:59 a 3-GPU job arrives and queues
    ((0, 0, 0, 0), (5, 3, 0, 0)),    # 00:00 day 1: the 8-GPU job ends, the 3-GPU job starts
    ((0, 0, 0, 0), (5, 3, 0, 0)),    # 00:01
    ((0, 0, 16, 1), (5, 3, 0, 0)),   # 00:02 a 16-GPU gang arrives and queues (no >=8 GPUs run on day 1)
]


def write(tmp_path: Path, series: Sequence[tuple[tuple[int, ...], tuple[int, ...]]] = SERIES,
          name: str = "vcTest_cluster_sequence_vc.csv.gz", capacity: int = 16,
          running: list[int] | None = None) -> Path:
    """A gzipped series; ``running`` overrides running_gpu_num (else the sum of the two classes)."""
    path = tmp_path / name
    with gzip.open(path, "wt", newline="") as fh:
        out = csv.DictWriter(fh, ["time", "total_job_num", "gpu_utilization", *COLUMNS[1:]])
        out.writeheader()
        for k, (big, small) in enumerate(series):
            row = {"time": f"{START + timedelta(minutes=k):%Y-%m-%d %H:%M:%S}", "total_gpu_num": capacity,
                   "running_gpu_num": running[k] if running else big[0] + small[0],
                   "pending_gpu_num": big[2] + small[2],
                   "total_job_num": big[1] + big[3] + small[1] + small[3], "gpu_utilization": 0.5}
            for cls, (rg, rj, pg, pj) in (("noless_8", big), ("less_8", small)):
                row |= {f"running_gpu_num_{cls}": rg, f"running_job_num_{cls}": rj,
                        f"pending_gpu_num_{cls}": pg, f"pending_job_num_{cls}": pj}
            out.writerow(row)
    return path


def gpu_seconds(jobs: object) -> float:
    return sum(j.gpus * j.est_runtime_s for j in jobs)  # type: ignore[attr-defined]


def test_synthetic_series_becomes_jobs_by_the_rule(tmp_path: Path) -> None:
    path = write(tmp_path)
    assert detect_format(path) == "helios" and helios_capacity(path) == 16
    trace = load_trace(path)
    sizes = sorted((j.submitted_at - START, j.gpus, j.nodes) for j in trace.jobs)
    minute = timedelta(minutes=1)
    assert sizes == [(0 * minute, 1, 1), (0 * minute, 1, 1), (0 * minute, 8, 1), (2 * minute, 3, 1),
                     (5 * minute, 16, 2)]
    assert all(j.team == "vcTest" and j.deadline is None and j.est_runtime_s > 0 for j in trace.jobs)
    # Per class, GPU-seconds equal the class's running GPU-minutes x 60; day 1's >=8 arrival has no
    # budget of its own and joins day 0's group; day 1's <8 budget (no <8 arrivals) goes back to day 0.
    big = [j for j in trace.jobs if j.gpus >= 8]
    small = [j for j in trace.jobs if j.gpus < 8]
    assert gpu_seconds(big) == pytest.approx(8 * 3 * 60)
    assert gpu_seconds(small) == pytest.approx((2 + 2 + 2 + 5 + 5 + 5) * 60)
    assert gpu_seconds(trace.jobs) / 3600 == pytest.approx(sum(b[0] + s[0] for b, s in SERIES) / 60, rel=1e-9)


def test_seed_changes_the_split_not_the_total(tmp_path: Path) -> None:
    path = write(tmp_path)
    first, again, other = load_helios(path), load_helios(path), load_helios(path, seed=7)
    assert first == again
    assert [j.est_runtime_s for j in first.jobs] != [j.est_runtime_s for j in other.jobs]
    assert gpu_seconds(first.jobs) == pytest.approx(gpu_seconds(other.jobs))


@pytest.mark.parametrize(("cls", "gpus", "jobs", "limit", "sizes"), [
    ("noless_8", 24, 2, 0, [16, 8]),
    ("noless_8", 20, 2, 0, [8, 12]),   # the remainder joins the last (smallest) job
    ("noless_8", 4, 3, 0, [4]),        # a rise below 8 in the >=8 class is one job
    ("noless_8", 64, 1, 32, [32, 32]),  # no job larger than the VC
    ("noless_8", 36, 1, 32, [32, 4]),
    ("less_8", 5, 0, 0, [5]),
    ("less_8", 10, 1, 0, [5, 5]),      # a <8 job has at most 7 GPUs
    ("less_8", 3, 9, 0, [1, 1, 1]),    # at most one job per GPU
])
def test_job_sizes(cls: str, gpus: int, jobs: int, limit: int, sizes: list[int]) -> None:
    assert job_sizes(cls, gpus, jobs, limit) == sizes
    assert sum(sizes) == gpus


def test_a_class_without_arrivals_hands_its_budget_over(tmp_path: Path) -> None:
    # The <8 split columns say 0 while running_gpu_num says 4: the minutes go to the <8 class by rule,
    # and as it has no jobs, to the >=8 class, so nothing is lost.
    path = write(tmp_path, [((8, 1, 0, 0), (0, 0, 0, 0))] * 3, running=[12, 8, 8])
    trace = load_helios(path)
    assert [j.gpus for j in trace.jobs] == [8]
    assert gpu_seconds(trace.jobs) == pytest.approx((12 + 8 + 8) * 60)


@pytest.mark.parametrize(("column", "value", "problem"), [
    ("running_gpu_num", "-3", "below the minimum"),
    ("pending_job_num_less_8", "1.5", "not a whole number"),
    ("pending_gpu_num_noless_8", "many", "not a number"),
    ("time", "yesterday", "not an ISO-8601 time"),
    ("time", "2020-05-01 23:57:00", "not after the previous row"),
    ("time", "9999-12-31 23:00:00", "times must be from 1970 to before 9000"),
    ("running_gpu_num_noless_8", "1000000", "1000000 is above 4 x the VC's 16 GPUs (its largest total_gpu_num)"),
    ("pending_gpu_num_less_8", "65", "65 is above 4 x the VC's 16 GPUs"),
    ("pending_gpu_num", "1000000000", "is above 4 x the VC's 16 GPUs"),
    ("total_gpu_num", "1000000000", "1000000000 is above 100000, more GPUs than a VC has"),
])
def test_bad_rows_name_file_row_and_column(tmp_path: Path, column: str, value: str, problem: str) -> None:
    path = tmp_path / "vcBad_cluster_sequence_vc.csv"
    with gzip.open(write(tmp_path), "rt") as fh:
        rows = list(csv.DictReader(fh))
    rows[2][column] = value
    with path.open("w", newline="") as fh:
        out = csv.DictWriter(fh, list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    with pytest.raises(InputError) as info:
        load_trace(path)
    msg = str(info.value)
    assert f"{path}: row 4, column '{column}'" in msg and problem in msg


def test_missing_column_empty_series_and_zero_capacity(tmp_path: Path) -> None:
    path = tmp_path / "vcCut_cluster_sequence_vc.csv"
    path.write_text("time,total_gpu_num,running_gpu_num\n2020-05-01 00:00:00,8,4\n")
    with pytest.raises(InputError, match=r"row 1 \(header\): missing column\(s\) pending_gpu_num, "):
        load_trace(path)
    empty = tmp_path / "vcNone_cluster_sequence_vc.csv"
    empty.write_text(",".join(COLUMNS) + "\n")
    with pytest.raises(InputError, match="the series holds no rows"):
        load_trace(empty)
    with pytest.raises(InputError, match="'total_gpu_num' is never above 0"):
        helios_capacity(write(tmp_path, name="vcZero_cluster_sequence_vc.csv.gz", capacity=0))


def test_gpu_counts_may_reach_four_times_the_vc(tmp_path: Path) -> None:
    path = write(tmp_path, [((64, 8, 0, 0), (0, 0, 0, 0)), ((64, 8, 64, 8), (0, 0, 0, 0))])  # 16-GPU VC
    assert sum(j.gpus for j in load_helios(path).jobs) == 128


def test_inferred_runtimes_above_ten_years_are_rejected(tmp_path: Path) -> None:
    # running_gpu_num far above the per-class columns for long: one 1-GPU job would run 11 years
    path = write(tmp_path, [((0, 0, 0, 0), (1, 1, 0, 0))] * 15, capacity=100_000, running=[400_000] * 15)
    with pytest.raises(InputError, match=r"an inferred runtime of 3.6e\+08 s is out of range") as info:
        load_helios(path)
    assert str(info.value).startswith(f"{path}: ")


def test_real_vcpdc_series_matches_in_aggregate() -> None:
    path = shared_data_dir() / "helios_earth_vc_timeseries" / "vcpDC_cluster_sequence_vc.csv.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared data folder holds the Helios Earth VC series)")
    with gzip.open(path, "rt") as fh:
        rows = list(csv.DictReader(fh))
    trace = load_trace(path)
    capacity = helios_capacity(path)
    assert capacity == 56  # README: vcpDC has 56 GPUs
    source_gpu_hours = sum(int(r["running_gpu_num"]) for r in rows) / 60
    assert gpu_seconds(trace.jobs) / 3600 == pytest.approx(source_gpu_hours, rel=1e-6)
    first, last = (datetime.fromisoformat(rows[i]["time"]).replace(tzinfo=UTC) for i in (0, -1))
    assert first == trace.start and trace.end <= last
    assert all(1 <= j.gpus <= capacity and j.nodes == -(-j.gpus // 8) for j in trace.jobs)
    # The first minute's jobs are the running + pending ones the series starts with.
    opening = sum(j.gpus for j in trace.jobs if j.submitted_at == first)
    assert opening == int(rows[0]["running_gpu_num_noless_8"]) + int(rows[0]["pending_gpu_num_noless_8"]) \
        + int(rows[0]["running_gpu_num_less_8"]) + int(rows[0]["pending_gpu_num_less_8"])
