"""Naming the default spot folder explicitly (``--spot ../shared/data``) gives the default's series."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from burster.app import spot_series
from providers.sim.spot import load_series, load_series_path


def _trace(path: Path, data: list[int], gap: int = 600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"metadata": {"gap_seconds": gap}, "data": data}))


@pytest.fixture()
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    sky = root / "skypilot_spot_traces"
    _trace(sky / "availability/1-node/aws-02-15-2023/us-east-1a_v100_1.json", [1, 1, 0, 1], gap=195)
    _trace(sky / "availability/1-node/aws-10-26-2022/us-west-2a_k80_1.json", [1, 0, 0, 1])
    _trace(root / "spothedge_gcp_a100/GCP1/us-central1-a.json", [0, 1, 1, 1])
    # a CPU instance's preemption trace: not GPU availability, and not in the default set
    _trace(sky / "preemption/1-node/gcp-04-30-2023/us-central1-a_c3.json", [0, 0, 0, 0], gap=30)
    return root


def _described(series: list) -> list[tuple[str, str, str, float, tuple[int, ...]]]:
    return [(s.name, s.provider, s.gpu_model, s.gap_s, s.data) for s in series]


def test_the_shared_layout_named_explicitly_loads_the_default_series(shared: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURSTER_SHARED_DATA", str(shared))
    default, _ = spot_series(0)
    named, source = spot_series(0, shared)
    assert _described(named) == _described(default) == _described(load_series(shared))
    assert {s.provider for s in named} == {"aws", "gcp"} and "K80" in {s.gpu_model for s in named}
    assert not any("preemption" in s.name or s.name.endswith("_c3") for s in named)
    assert source == f"traces in {shared}"


def test_a_folder_of_the_users_own_traces_loads_every_file_with_names_read_from_paths(tmp_path: Path) -> None:
    _trace(tmp_path / "mine/azure_h100_eastus.json", [1, 0, 1])
    _trace(tmp_path / "mine/anything.json", [1, 1, 1])
    got = {s.name: (s.provider, s.gpu_model) for s in load_series_path(tmp_path / "mine")}
    assert got == {"mine/azure_h100_eastus": ("azure", "H100"), "mine/anything": ("", "")}


def test_a_staged_subfolder_keeps_the_defaults_mapping_and_leaves_out_cpu_traces(shared: Path) -> None:
    sky = shared / "skypilot_spot_traces"
    got = _described(load_series_path(sky))
    assert got == [d for d in _described(load_series(shared)) if not d[0].startswith("GCP1/")]
    assert not any("_c3" in d[0] for d in got)


def test_two_series_of_the_same_name_are_told_apart() -> None:
    """Files of two months under one layout share a name ("aws_v100/us-east-1a"): the world's next
    availability change and the cost model's interruption rates kept only one of them, so skipped
    passes missed the other's flips and its offerings got the other's rate."""
    from datetime import UTC, datetime, timedelta

    from burster.app import interruption_rates
    from burster.catalog import load_catalog
    from burster.clock import FakeClock
    from providers.sim.spot import SpotSeries, series_for
    from providers.sim.world import SimWorld

    calm = SpotSeries("aws_v100/us-east-1a", "aws", "V100", 600.0, (1,) * 99 + (0,))
    flappy = SpotSeries("aws_v100/us-east-1a", "aws", "V100", 600.0, (1, 0) * 50)
    offs = load_catalog(providers=["aws"])
    rates = interruption_rates(offs, [calm, flappy])
    by_series = {id(s): {rates[o.key] for o in offs if o.key in rates and series_for(o, [calm, flappy]) is s}
                 for s in (calm, flappy)}
    assert by_series[id(calm)] and by_series[id(flappy)] and by_series[id(calm)] != by_series[id(flappy)]
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    world = SimWorld(clock=FakeClock(t0), jobs=[], offerings=offs, providers=["aws"], pool_nodes=0,
                     gpus_per_node=8, gpu_model="V100", series=[calm, flappy])
    assert world.clouds["aws"].next_availability_change(t0) == t0 + timedelta(seconds=600)  # flappy's first


def test_cloud_and_gpu_are_read_from_whole_words_below_the_folder_given(tmp_path: Path) -> None:
    """"us-east4-c" holds no T4, and a parent folder such as /home/dawson names no AWS: only whole
    words of the path below the --spot folder count."""
    root = tmp_path / "dawson"  # "aws" inside a word above the folder given
    _trace(root / "gcp/us-east4-c.json", [1, 0, 1])
    _trace(root / "gcp_t4/us-west4-a.json", [1, 1, 0])
    got = {s.name: (s.provider, s.gpu_model) for s in load_series_path(root)}
    assert got == {"gcp/us-east4-c": ("gcp", ""), "gcp_t4/us-west4-a": ("gcp", "T4")}


def test_a_folder_inside_a_staged_data_set_is_used_whole(shared: Path) -> None:
    """The V100 preemption traces' own folder, named on purpose: its files are the series (they
    used to be filtered out as "elsewhere", and the folder was reported empty); naming the data
    set's root still leaves them out."""
    folder = shared / "skypilot_spot_traces/preemption/1-node/aws-04-22-2023"
    _trace(folder / "us-east-1c_v100_1.json", [1, 1, 0, 1], gap=32)
    got = _described(load_series_path(folder))
    named = [(name, provider, gpu) for name, provider, gpu, _, _ in got]
    assert named == [("aws-04-22-2023/us-east-1c_v100_1", "aws", "V100")]
    assert not any("us-east-1c_v100" in d[0] for d in _described(load_series_path(shared / "skypilot_spot_traces")))
