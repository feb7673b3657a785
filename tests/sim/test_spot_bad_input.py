"""A bad spot trace gives an InputError naming the file and what a valid one holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from burster.errors import InputError
from providers.sim.spot import load_series_path, read_series


@pytest.mark.parametrize(("text", "expected"), [
    ('{"metadata": {"gap_seconds": NaN}, "data": [1, 0]}', "metadata.gap_seconds is NaN; it must be seconds per "
                                                          "value in (0, 86400]"),
    ('{"metadata": {"gap_seconds": 1e300}, "data": [1, 0]}', "metadata.gap_seconds is 1e+300;"),
    ("[" * 100_000 + "]" * 100_000, "not a spot trace ({metadata: {gap_seconds: G}, data: [n0, n1, ...]}): JSON "
                                    "nested too deeply"),
    ('{"metadata": {"gap_seconds": Infinity}, "data": [1, 0]}', "metadata.gap_seconds is Infinity"),
    ('{"metadata": {"gap_seconds": 0}, "data": [1, 0]}', "metadata.gap_seconds is 0;"),
    ('{"metadata": {"gap_seconds": "600"}, "data": [1, 0]}', 'metadata.gap_seconds is "600"'),
    ('{"metadata": {"gap_seconds": 600}, "data": "1010"}', 'data must be a non-empty list of instance counts '
                                                           '(integers >= 0), not "1010"'),
    ('{"metadata": {"gap_seconds": 600}, "data": []}', "data must be a non-empty list"),
    ('{"metadata": {"gap_seconds": 600}, "data": [0.5, 0.2]}', "data[0] is 0.5; every value must be"),
    ('{"metadata": {"gap_seconds": 600}, "data": [1, -1]}', "data[1] is -1"),
    ('{"metadata": {"gap_seconds": 600}, "data": [1, true]}', "data[1] is true"),
    ('{"data": [1]}', "not a spot trace ({metadata: {gap_seconds: G}, data: [n0, n1, ...]}): no key 'metadata'"),
])
def test_a_bad_trace_names_the_file_and_the_fix(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "aws_v100.json"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_series(path, "aws", "V100")
    assert str(info.value).startswith(f"{path}: ") and expected in str(info.value)


def test_whole_float_counts_are_read_as_counts(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"metadata": {"gap_seconds": 60.0}, "data": [1.0, 0, 2]}')
    series = read_series(path, "", "")
    assert series.gap_s == 60.0 and series.data == (1, 0, 2)


def test_a_trace_that_is_not_utf8_or_is_a_folder_names_it(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b'{"metadata": {"gap_seconds": 60}, "data": [1], "note": "\xe9"}')
    with pytest.raises(InputError, match="not a spot trace") as info:
        load_series_path(path)
    assert str(path) in str(info.value)
    folder = tmp_path / "traces" / "x.json"
    folder.mkdir(parents=True)
    with pytest.raises(InputError, match="not a spot trace") as info:
        load_series_path(tmp_path / "traces")
    assert str(folder) in str(info.value)
