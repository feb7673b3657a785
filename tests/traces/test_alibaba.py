"""The Alibaba cluster-trace-gpu-v2023 pod list loader: good pods, skip rules, every row error, the real file."""

from __future__ import annotations

import csv
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from burster.app import shared_data_dir
from burster.errors import InputError
from burster.traces import TRACE_EPOCH, load_trace
from burster.traces.alibaba import gpu_model_of, load_alibaba
from burster.traces.registry import detect_format

HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
          "scheduled_time\n")
GOOD = "p-good,8000,16384,2,1000,V100M16,LS,Succeeded,100,4100,600\n"


def write(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "openb_pod_list_test.csv"
    path.write_text(HEADER + rows)
    return path


def test_pods_become_demands(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "p-shared,4000,8192,1,300,,BE,Running,50,950,50\n"
                                  "p-gang,8000,16384,16,1000,A100|A800-SXM4-80GB,Burstable,Running,200,1200,300\n")
    assert detect_format(path) == "alibaba"
    trace = load_trace(path)
    assert [j.job_id for j in trace.jobs] == ["alibaba-p-shared", "alibaba-p-good", "alibaba-p-gang"]
    shared, good, gang = trace.jobs
    assert good.gpus == 2 and good.nodes == 1 and good.gpu_model == "V100" and good.priority == 1
    assert good.submitted_at == TRACE_EPOCH + timedelta(seconds=100) and good.est_runtime_s == 3500
    assert shared.gpus == 1 and shared.priority == 0 and shared.est_runtime_s == 900
    assert gang.nodes == 2 and gang.gpus_per_node == 8 and gang.gpu_model == ""  # A100 vs A100-80GB differ


def test_skip_rules_are_counted(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD
                 + "p-cpu,1000,1024,0,0,,BE,Succeeded,10,20,10\n"
                 + "p-never,1000,1024,1,1000,,BE,Pending,10,20,\n"
                 + "p-open,1000,1024,1,1000,,BE,Running,10,,10\n"
                 + "p-zero,1000,1024,1,1000,,BE,Failed,10,10,10\n"
                 + "p-shared,1000,1024,1,500,,BE,Running,10,70,10\n")
    counts: Counter[str] = Counter()
    trace = load_alibaba(path, shared="skip", counts=counts)
    assert [j.job_id for j in trace.jobs] == ["alibaba-p-good"]
    assert counts == Counter({"skipped: CPU-only pods": 1, "skipped: never-scheduled pods": 1,
                              "skipped: pods without deletion_time": 1, "skipped: pods that ran 0 s": 1,
                              "skipped: shared-GPU pods": 1})
    whole: Counter[str] = Counter()
    assert len(load_alibaba(path, counts=whole).jobs) == 2
    assert whole["shared-GPU pods rounded up to 1 GPU"] == 1


@pytest.mark.parametrize(("row", "column", "problem"), [
    ("p-x,1,1,-1,1000,,LS,Running,1,5,2", "num_gpu", "below the minimum"),
    ("p-x,1,1,1.5,1000,,LS,Running,1,5,2", "num_gpu", "not a whole number"),
    ("p-x,1,1,one,1000,,LS,Running,1,5,2", "num_gpu", "not a number"),
    ("p-x,1,1,1,1200,,LS,Running,1,5,2", "gpu_milli", "above 1000"),
    ("p-x,1,1,1,nan,,LS,Running,1,5,2", "gpu_milli", "not a finite number"),
    ("p-x,1,1,1,1000,,LS,Running,soon,5,2", "creation_time", "not a number"),
    ("p-x,1,1,1,1000,,LS,Running,10,5,", "deletion_time", "before creation_time"),
    ("p-x,1,1,1,1000,,LS,Running,10,50,5", "scheduled_time", "before creation_time"),
    ("p-x,1,1,1,1000,,LS,Running,10,50,60", "scheduled_time", "after deletion_time"),
    ("p-x,1,1,1,1000,,Gold,Running,10,50,20", "qos", "not one of LS, Guaranteed, BE, Burstable"),
    (",1,1,1,1000,,LS,Running,10,50,20", "name", "empty pod name"),
    ("p-good,1,1,1,1000,,LS,Running,10,50,20", "name", "duplicate of row 2"),
    ("p-x,1,1,1,1000,,LS,Running,10", "deletion_time", "missing value"),
])
def test_bad_rows_name_file_row_and_column(tmp_path: Path, row: str, column: str, problem: str) -> None:
    path = write(tmp_path, GOOD + row + "\n")
    with pytest.raises(InputError) as info:
        load_trace(path, "alibaba")
    msg = str(info.value)
    assert f"{path}: row 3, column '{column}'" in msg and problem in msg


def test_missing_columns_empty_trace_and_bad_option(tmp_path: Path) -> None:
    path = tmp_path / "openb_pod_list_cut.csv"
    path.write_text("name,num_gpu\np,1\n")
    with pytest.raises(InputError, match=r"row 1 \(header\): missing column\(s\) gpu_milli, creation_time"):
        load_trace(path)
    only_cpu = write(tmp_path, "p-cpu,1000,1024,0,0,,BE,Succeeded,10,20,10\n")
    with pytest.raises(InputError, match="holds no jobs"):
        load_trace(only_cpu)
    with pytest.raises(ValueError, match="shared must be one of whole, skip"):
        load_alibaba(only_cpu, shared="half")


def test_gpu_spec_maps_to_catalog_names() -> None:
    assert gpu_model_of("V100M16|V100") == "V100"
    assert gpu_model_of("V100M16|V100M32") == ""
    assert gpu_model_of("A800-SXM4-80GB") == "A100-80GB"
    assert gpu_model_of("") == "" and gpu_model_of("Unknown-X") == ""


def test_real_openb_pod_list() -> None:
    path = shared_data_dir() / "alibaba_gpu_v2023" / "openb_pod_list_default.csv"
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared data folder holds the Alibaba v2023 subset)")
    counts: Counter[str] = Counter()
    trace = load_alibaba(path, counts=counts)
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    # README: 4383 pods, 3738 of them request >= 1 GPU; every pod is a job or a counted skip.
    assert len(rows) == 4383
    skipped = sum(n for why, n in counts.items() if why.startswith("skipped"))
    assert len(trace.jobs) + skipped == len(rows)
    assert counts["skipped: CPU-only pods"] == 4383 - 3738
    assert all(1 <= j.gpus <= 8 and j.nodes == 1 and j.est_runtime_s > 0 for j in trace.jobs)
    assert trace.end < TRACE_EPOCH + timedelta(days=135)  # the subset keeps creation_time < 135 days
    by_name = {r["name"]: r for r in rows}
    for job in trace.jobs[:: max(len(trace.jobs) // 50, 1)]:
        row = by_name[job.job_id.removeprefix("alibaba-")]
        assert job.est_runtime_s == float(row["deletion_time"]) - float(row["scheduled_time"])
