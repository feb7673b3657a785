"""Damaged trace files (bad gzip, non-UTF-8, huge CSV fields, deep JSON, folders) stop with an error naming the file."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from burster.cli import main
from burster.errors import InputError
from burster.traces import load_trace

GENERIC = b"job_id,submit_time,gpus,runtime_s\na,2026-03-02T09:00:00Z,2,600\n"
PHILLY = b"job_id,user,num_gpu,submit_time,duration,expect_time_list,job_type\n1,vc,2,5,30,60,strict\n"
SACCT = (b'{"jobs": [\n{"job_id": 1, "time": {"submission": 1772442000, "start": 1772442060, "end": 1772445660},'
         b' "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 4}]}}]}')
# a good file of each format read as text: format -> (file name, contents)
TEXT_FORMATS = {"generic": ("jobs.csv", GENERIC), "philly": ("trace_job_Philly_t.csv", PHILLY),
                "sacct": ("history.json", SACCT)}


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_a_gz_file_that_is_not_gzip_names_the_file(tmp_path: Path, fmt: str) -> None:
    name, good = TEXT_FORMATS[fmt]
    path = tmp_path / f"{name}.gz"
    path.write_bytes(good)
    with pytest.raises(InputError, match="not gzip data") as info:
        load_trace(path, fmt)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_a_truncated_gz_file_names_the_file(tmp_path: Path, fmt: str) -> None:
    name, good = TEXT_FORMATS[fmt]
    path = tmp_path / f"{name}.gz"
    whole = gzip.compress(good * 50)
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match="damaged or truncated gzip data") as info:
        load_trace(path, fmt)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_a_byte_that_is_not_utf8_is_named_with_its_line(tmp_path: Path, fmt: str) -> None:
    name, good = TEXT_FORMATS[fmt]
    path = tmp_path / name
    first, rest = good.split(b"\n", 1)
    path.write_bytes(first + b"\n\xff" + rest)
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 0xff at line 2, byte 1 of the line\)") as info:
        load_trace(path, fmt)
    assert str(info.value).startswith(f"{path}: ")


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    for fmt, (name, good) in TEXT_FORMATS.items():
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + good)
        assert len(load_trace(path, fmt).jobs) == 1
    path.write_bytes(b"\xef\xbb\xbf" + GENERIC)
    path = path.rename(tmp_path / "detected.csv")
    assert load_trace(path).jobs[0].job_id == "a"  # the header is read without the BOM for detection too


def test_a_csv_field_over_the_csv_limit_names_the_file_and_row(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_bytes(GENERIC + b'b,2026-03-02T09:00:00Z,1,60,"' + b"x" * 200_000 + b'\n')
    with pytest.raises(InputError, match=r"row 3: not readable as CSV \(field larger than field limit") as info:
        load_trace(path)
    assert str(info.value).startswith(f"{path}: ")


def test_json_nested_too_deeply_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_text('{"jobs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match=re.escape(f"{path}: JSON nested too deeply")):
        load_trace(path)


@pytest.mark.parametrize("fmt", [None, "generic", "philly", "alibaba", "helios", "sacct"])
def test_a_folder_given_as_the_trace_is_named(tmp_path: Path, fmt: str | None) -> None:
    folder = tmp_path / "jobs.csv"
    folder.mkdir()
    with pytest.raises(InputError, match=re.escape(f"{folder} is a folder, not a trace file")):
        load_trace(folder, fmt)


def test_the_cli_prints_the_error_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.csv.gz"
    path.write_bytes(GENERIC)
    assert main(["simulate", "--trace", str(path), "--trace-format", "generic"]) == 2
    err = capsys.readouterr().err
    assert f"burster: error: {path}: not gzip data" in err and "Traceback" not in err


def test_a_bad_byte_far_into_a_gzip_file_is_found(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv.gz"
    rows = b"".join(b"j%d,2026-03-02T09:00:00Z,1,60\n" % k for k in range(5000))
    path.write_bytes(gzip.compress(GENERIC + rows + b"late,2026-03-02T09:00:00Z,1,6\xe90\n"))
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 0xe9 at line 5003, byte 30 of the line\)"):
        load_trace(path)
