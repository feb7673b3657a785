"""`burster offerings` through the real CLI: filters, sort order by effective $/GPU-h (checked against
prices computed here from the CSV rows), --json records, the table, and each bad-input error."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from burster.catalog import BUNDLED_DIR
from burster.cli import main

KEYS = {"provider", "region", "zone", "instance_type", "gpu_model", "gpus_per_node", "market",
        "price_per_hour_usd", "price_per_gpu_hour_usd", "effective_usd_per_gpu_hour"}
BUNDLED = ["--prices", str(BUNDLED_DIR)]
# default [cost]: 0.05 interruptions/h x (1800 s checkpoint / 2 + 300 s restart) / 3600 s; on AWS the
# two-minute notice covers the 60 s checkpoint write, so only the write and the restart are lost
SPOT_REWORK = 1 + 0.05 * (900 + 300) / 3600
AWS_SPOT_REWORK = 1 + 0.05 * (60 + 300) / 3600


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["offerings", *argv, "--json"]) == 0
    records: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return records


def _azure_rows(gpu: str) -> list[dict[str, str]]:
    with (BUNDLED_DIR / "azure_v6_vms_gpu_subset.csv").open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["AcceleratorName"] == gpu]


def test_azure_on_demand_order_matches_prices_from_the_csv(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _azure_rows("A100-80GB")
    expected = sorted((float(r["Price"]) / int(r["AcceleratorCount"]), r["InstanceType"], r["Region"]) for r in rows)
    got = _json(capsys, *BUNDLED, "--provider", "azure", "--gpu", "A100-80GB", "--market", "on_demand",
                "--limit", "0")
    assert len(got) == len(rows) == 24
    assert [r["effective_usd_per_gpu_hour"] for r in got] == pytest.approx([e[0] for e in expected])
    assert {(r["instance_type"], r["region"]) for r in got} == {(e[1], e[2]) for e in expected}
    assert (got[0]["instance_type"], got[0]["region"]) == (expected[0][1], expected[0][2])


def test_azure_spot_adds_expected_rework(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for r in _azure_rows("A100-80GB") if r["SpotPrice"] and float(r["SpotPrice"]) < float(r["Price"])]
    expected = sorted(float(r["SpotPrice"]) / int(r["AcceleratorCount"]) * SPOT_REWORK for r in rows)
    got = _json(capsys, *BUNDLED, "--provider", "AZURE", "--gpu", "a100-80gb", "--market", "spot", "--limit", "0")
    assert [r["effective_usd_per_gpu_hour"] for r in got] == pytest.approx(expected)
    cheapest = got[0]
    assert (cheapest["instance_type"], cheapest["region"], cheapest["price_per_hour_usd"]) == \
        ("Standard_NC24ads_A100_v4", "westus3", 0.40403)
    assert cheapest["price_per_gpu_hour_usd"] == pytest.approx(0.40403)


def test_filters_keep_only_matching_offerings(capsys: pytest.CaptureFixture[str]) -> None:
    got = _json(capsys, *BUNDLED, "--gpu", "v100", "--region", "US-EAST-1", "--market", "on-demand",
                "--max-price", "3.1", "--limit", "0")
    assert got and all(r.keys() == KEYS for r in got)
    assert {(r["provider"], r["region"], r["gpu_model"], r["market"]) for r in got} == \
        {("aws", "us-east-1", "V100", "on_demand")}
    assert all(r["effective_usd_per_gpu_hour"] == pytest.approx(r["price_per_hour_usd"] / r["gpus_per_node"])
               and r["effective_usd_per_gpu_hour"] <= 3.1 for r in got)
    prices = [r["effective_usd_per_gpu_hour"] for r in got]
    assert prices == sorted(prices)


def test_limit_defaults_to_50_and_0_shows_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(_json(capsys, *BUNDLED)) == 50
    everything = _json(capsys, *BUNDLED, "--limit", "0")
    assert len(everything) > 50
    assert len(_json(capsys, *BUNDLED, "--limit", "7")) == 7
    prices = [r["effective_usd_per_gpu_hour"] for r in everything]
    assert prices == sorted(prices)


def _catalog(tmp_path: Path) -> Path:
    (tmp_path / "aws_v7_vms_gpu_subset.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n"
        "g.one,L4,1,8,32,1.00,0.80,us-east-1,use1-az1\n"     # spot 0.80, on-demand 1.00
        "g.four,L4,4,32,128,3.60,,us-east-1,use1-az2\n"      # on-demand 0.90/GPU-h, no spot
    )
    return tmp_path


def test_spot_rework_from_the_config_can_put_on_demand_first(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    prices = ["--prices", str(_catalog(tmp_path))]
    default = _json(capsys, *prices)
    assert [(r["instance_type"], r["market"]) for r in default] == \
        [("g.one", "spot"), ("g.four", "on_demand"), ("g.one", "on_demand")]
    assert default[0]["effective_usd_per_gpu_hour"] == pytest.approx(0.80 * AWS_SPOT_REWORK)
    config = tmp_path / "burster.toml"
    # a checkpoint slower than AWS's notice loses half an interval: rework x (1 + 1200/3600)
    config.write_text("[cost]\nspot_interruptions_per_hour = 1.0\ncheckpoint_write_s = 150\n")
    reworked = _json(capsys, *prices, "--config", str(config))
    assert [(r["instance_type"], r["market"], round(r["effective_usd_per_gpu_hour"], 4)) for r in reworked] == \
        [("g.four", "on_demand", 0.9), ("g.one", "on_demand", 1.0), ("g.one", "spot", round(0.8 * 4 / 3, 4))]


def test_table_lists_the_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offerings", "--prices", str(_catalog(tmp_path)), "--market", "spot"]) == 0
    out = capsys.readouterr().out
    assert "effective $/GPU-h" in out and "1 of 1 matching offerings (3 in the catalog)" in out
    assert "g.one" in out and "g.four" not in out and f"{0.8 * AWS_SPOT_REWORK:.3f}" in out


def test_no_match_is_not_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = ["--prices", str(_catalog(tmp_path))]
    assert _json(capsys, *prices, "--max-price", "0.5") == []
    assert main(["offerings", *prices, "--max-price", "0.5"]) == 0
    assert "no offerings match these filters" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--gpu", "A1OO"], "--gpu: unknown GPU model 'A1OO'; did you mean A10, A10G or A100? Valid: "),
    (["--gpu", "B200"], "--gpu: unknown GPU model 'B200'"),
    (["--region", "us-est-1"], "--region: unknown region 'us-est-1'; did you mean us-east-1"),
    (["--provider", "ibm"], "--provider: unknown provider 'ibm'. Valid: aws, azure, gcp."),
    (["--provider", "azur"], "--provider: unknown provider 'azur'; did you mean azure?"),
    (["--market", "reserved"], "--market: unknown market 'reserved'. Valid: on_demand, spot."),
    (["--market", "ondemand"], "--market: unknown market 'ondemand'; did you mean on_demand?"),
    (["--market", "cheap"], "--market: unknown market 'cheap'. Valid: on_demand, spot."),
    (["--max-price", "-1"], "--max-price: must be 0 or more $/GPU-hour, got -1.0"),
    (["--limit", "-3"], "--limit must be 0 (all) or more, got -3"),
    (["--prices", "/nonexistent/prices"], "--prices: /nonexistent/prices does not exist; give a catalog folder"),
    (["--config", "/nonexistent/burster.toml"], "config file /nonexistent/burster.toml does not exist"),
])
def test_bad_input_says_what_to_fix(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(["offerings", *BUNDLED, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("burster: error: ") and message in err


def test_catalog_file_of_unknown_cloud_and_bad_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    odd = tmp_path / "prices.csv"
    odd.write_text("x\n")
    assert main(["offerings", "--prices", str(odd)]) == 2
    assert f"{odd}: cannot tell which cloud it prices" in capsys.readouterr().err
    bad = _catalog(tmp_path) / "aws_v7_vms_gpu_subset.csv"
    bad.write_text(bad.read_text().replace("3.60", "3.6O"))
    assert main(["offerings", "--prices", str(tmp_path / "aws_v7_vms_gpu_subset.csv")]) == 2
    assert f"{bad}: row 3, column 'Price': '3.6O' is not a number" in capsys.readouterr().err


def test_unknown_gpu_lists_every_valid_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offerings", *BUNDLED, "--gpu", "B200"]) == 2
    err = capsys.readouterr().err
    assert "Valid: A10, A100, A100-80GB, A10G, H100, H100-MEGA, H200, T4, V100, V100-32GB." in err


@pytest.mark.parametrize("width", [80, 200])
def test_table_cuts_no_value_short_on_a_narrow_terminal(width: int) -> None:
    """80 columns: the offering's key, GPUs and prices, whole; 200: every column."""
    from rich.console import Console

    from burster.cli.offerings import _print_table
    from burster.model import Market, Offering
    from burster.offer_query import RankedOffer

    ranked = [RankedOffer(Offering("azure", region, region, "Standard_ND96amsr_A100_v4", "A100-80GB", 8, market,
                                   price), price / 8 * 1.02)
              for region, market, price in (("southcentralus", Market.SPOT, 3.589), ("eastus", Market.ON_DEMAND, 32.77),
                                            ("westus2", Market.SPOT, 12_345.678))]
    out = io.StringIO()
    _print_table(ranked, "A100", Console(file=out, width=width, color_system=None))
    text = out.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    first_column = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│"))
    for r in ranked:
        o = r.offering
        assert o.key in first_column if width == 80 else o.instance_type in text  # a long key folds, whole
        assert f"{o.price_per_hour_usd:,.3f}" in text and f"{r.effective_usd_per_gpu_hour:,.3f}" in text
    assert ("--json has all" in text) == (width == 80)
