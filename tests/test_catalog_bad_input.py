"""A bad price catalog gives an InputError naming the file (and row and column), never a traceback."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from burster.catalog import BUNDLED_DIR, FILES, SHARED_SUBDIR, catalog_dir, load_catalog
from burster.cli import main
from burster.errors import InputError
from burster.model import Market, Offering
from burster.offer_query import OfferFilter, query_offers

AWS = FILES["aws"]
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n"
GOOD = "p3.2xlarge,V100,1.0,8,61,3.06,0.9,us-east-1,use1-az1\n"


def _aws(folder: Path, *rows: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / AWS
    path.write_text(HEADER + GOOD + "".join(rows))
    return path


@pytest.mark.parametrize(("row", "column", "message"), [
    ("p3.2xlarge,V100,1.0,8,61,nan,0.9,us-east-1,use1-az2\n", "Price", "'nan' is not a finite number"),
    ("p3.2xlarge,V100,1.0,8,61,3.06,inf,us-east-1,use1-az2\n", "SpotPrice", "'inf' is not a finite number"),
    ("p3.2xlarge,V100,-inf,8,61,3.06,0.9,us-east-1,use1-az2\n", "AcceleratorCount", "'-inf' is not a finite number"),
    ("p3.2xlarge,V100,nan,8,61,3.06,0.9,us-east-1,use1-az2\n", "AcceleratorCount", "'nan' is not a finite number"),
    ("p3.2xlarge,V100,inf,8,61,3.06,0.9,us-east-1,use1-az2\n", "AcceleratorCount", "'inf' is not a finite number"),
    ("p3.2xlarge,V100,1e300,8,61,3.06,0.9,us-east-1,use1-az2\n", "AcceleratorCount", "1e300 is above the maximum 64"),
    ("p3.2xlarge,V100,1.0,8,61,1e300,0.9,us-east-1,use1-az2\n", "Price", "1e300 is above the maximum 10000"),
])
def test_a_non_finite_or_absurd_number_is_refused_at_its_row_and_column(tmp_path: Path, row: str, column: str,
                                                                        message: str) -> None:
    path = _aws(tmp_path, row)
    with pytest.raises(InputError) as info:
        load_catalog(tmp_path)
    assert f"{path}: row 3, column {column!r}: {message}" in str(info.value)


def test_offerings_json_never_prints_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _aws(tmp_path, "p3.2xlarge,V100,1.0,8,61,NaN,0.9,us-east-1,use1-az2\n")
    assert main(["offerings", "--prices", str(tmp_path), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("burster: error: ") and "row 3, column 'Price'" in err


def test_a_short_row_names_its_row(tmp_path: Path) -> None:
    path = _aws(tmp_path, "p3.2xlarge,V100\n")
    with pytest.raises(InputError, match=r"row 3: 2 cells for 9 header columns") as info:
        load_catalog(tmp_path)
    assert str(path) in str(info.value)


def test_a_catalog_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / AWS
    path.write_bytes((HEADER + "p3.2xlarge,V\xe9100,1,8,61,3,1,us-east-1,use1-az1\n").encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8") as info:
        load_catalog(tmp_path)
    assert str(path) in str(info.value)


def test_a_folder_where_a_catalog_file_should_be_names_the_path(tmp_path: Path) -> None:
    (tmp_path / AWS).mkdir()
    with pytest.raises(InputError, match="is a folder, not a price catalog") as info:
        load_catalog(tmp_path)
    assert str(tmp_path / AWS) in str(info.value)


def test_a_gzipped_catalog_loads_and_a_damaged_one_names_the_file(tmp_path: Path) -> None:
    whole = gzip.compress((BUNDLED_DIR / AWS).read_bytes())
    good = tmp_path / "good" / f"{AWS}.gz"
    good.parent.mkdir()
    good.write_bytes(whole)
    assert load_catalog(good) == load_catalog(good.parent) == load_catalog(BUNDLED_DIR, providers=["aws"])
    for name, data in (("cut", whole[: len(whole) // 2]), ("junk", b"not gzip at all")):
        bad = tmp_path / name / f"{AWS}.gz"
        bad.parent.mkdir()
        bad.write_bytes(data)
        with pytest.raises(InputError, match=r"damaged or truncated gzip data|not gzip data") as info:
            load_catalog(bad.parent)
        assert str(bad) in str(info.value)


@pytest.mark.parametrize(("row", "why"), [
    ("p3.2xlarge,V100,0.5,8,61,3.06,0.9,us-east-1,use1-az1\n", "AcceleratorCount empty or not a whole number >= 1"),
    ("p3.2xlarge,V100,1,8,61,0,,us-east-1,use1-az1\n", "neither Price nor SpotPrice above 0"),
])
def test_a_file_with_no_usable_row_says_which_file_and_why(tmp_path: Path, row: str, why: str) -> None:
    path = tmp_path / AWS
    path.write_text(HEADER + row)
    with pytest.raises(InputError) as info:
        load_catalog(tmp_path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: no usable price rows (1 row(s) with {why} (skipped))")
    assert "no price catalog files" not in msg


def test_a_fractional_gpu_count_is_skipped_not_truncated(tmp_path: Path) -> None:
    _aws(tmp_path, "p3.8xlarge,V100,1.5,32,244,12.24,3.6,us-east-1,use1-az1\n")
    assert {o.instance_type for o in load_catalog(tmp_path)} == {"p3.2xlarge"}


def test_a_gcp_file_of_accelerator_rows_only_says_it_lacks_host_rows(tmp_path: Path) -> None:
    path = tmp_path / FILES["gcp"]
    path.write_text("InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,"
                    "AvailabilityZone,Price,SpotPrice\n,,,A100,1,,us-central1,us-central1-a,2.9,1.1\n")
    with pytest.raises(InputError, match=r"no usable price rows \(1 row\(s\) of accelerators but no host-VM row"):
        load_catalog(tmp_path)


def test_the_default_catalog_honours_burster_shared_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    staged = tmp_path / SHARED_SUBDIR
    _aws(staged)
    monkeypatch.setenv("BURSTER_SHARED_DATA", str(tmp_path))
    assert catalog_dir() == staged
    assert [o.instance_type for o in load_catalog(providers=["aws"])] == ["p3.2xlarge", "p3.2xlarge"]
    monkeypatch.setenv("BURSTER_SHARED_DATA", str(tmp_path / "empty"))
    assert catalog_dir() == BUNDLED_DIR


@pytest.mark.parametrize("name", [FILES["gcp"], f"{FILES['azure']}.gz", f"{FILES['aws']}.gz"])
def test_a_shared_catalog_of_any_cloud_or_compressed_is_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    staged = tmp_path / SHARED_SUBDIR
    staged.mkdir()
    (staged / name).write_bytes(b"")
    monkeypatch.setenv("BURSTER_SHARED_DATA", str(tmp_path))
    assert catalog_dir() == staged


@pytest.mark.parametrize("bound", [float("nan"), float("inf"), -1.0])
def test_max_price_must_be_finite_and_not_negative(bound: float) -> None:
    offers = [Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.SPOT, 1.0)]
    with pytest.raises(InputError, match="--max-price: must be 0 or more"):
        query_offers(offers, OfferFilter(max_price=bound), lambda o: o.price_per_gpu_hour_usd)


def test_rows_left_out_of_a_usable_file_are_reported_on_stderr(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A partial-GPU row beside good ones used to vanish without a word (the count was told only
    when no row was usable)."""
    (tmp_path / AWS).write_text(HEADER + "p3.2xlarge,V100,1,8,61,3.06,0.9,us-east-1,use1-az1\n"
                                "g4ad.xlarge,V520,0.5,4,16,0.38,0.1,us-east-1,use1-az1\n")
    assert main(["offerings", "--prices", str(tmp_path), "--json"]) == 0
    err = capsys.readouterr().err
    said = (f"burster: {tmp_path / AWS}: 2 offerings; "
            "1 row(s) with AcceleratorCount empty or not a whole number >= 1 (skipped)")
    assert said in err


def test_a_spot_price_not_below_on_demand_gives_no_spot_offer_and_no_line_on_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A documented correction of the SkyPilot catalog (its Azure and GCP H100 rows), not a row
    lost: every command would print it otherwise."""
    (tmp_path / FILES["azure"]).write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"
        "Standard_NC6s_v3,V100,1,6,112,3.06,3.50,eastus\nStandard_NC12s_v3,V100,2,12,224,6.12,1.2,eastus\n")
    offers = load_catalog(tmp_path, providers=["azure"])
    assert sorted((o.instance_type, o.market.value) for o in offers) == [
        ("Standard_NC12s_v3", "on_demand"), ("Standard_NC12s_v3", "spot"), ("Standard_NC6s_v3", "on_demand")]
    assert main(["offerings", "--prices", str(tmp_path), "--provider", "azure", "--json"]) == 0
    assert capsys.readouterr().err == ""


def test_cpu_only_rows_of_a_full_skypilot_file_are_skipped_and_counted(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """SkyPilot's unsubset vms.csv lists CPU-only VMs with empty AcceleratorName and AcceleratorCount;
    such a file was refused whole ("'' is not a number")."""
    _aws(tmp_path, "m5.large,,,2.0,8.0,0.096,0.0346,us-east-1,use1-az1\n",
         "c5.xlarge,,,4.0,8.0,0.17,0.06,us-east-1,use1-az2\n")
    (tmp_path / FILES["azure"]).write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,Generation\n"
        "Standard_D2s_v3,,,2.0,8,,0.096,0.0192,eastus,\"V1,V2\"\n"
        "Standard_NC6s_v3,V100,1,6.0,112,V100,3.06,0.6,eastus,\"V1,V2\"\n")
    with caplog.at_level("INFO", logger="burster.catalog"):
        offers = load_catalog(tmp_path, providers=["aws", "azure"])
    assert sorted({o.instance_type for o in offers}) == ["Standard_NC6s_v3", "p3.2xlarge"]
    assert "2 row(s) with AcceleratorCount empty or not a whole number >= 1 (skipped)" in caplog.text
    assert "1 row(s) with AcceleratorCount empty or not a whole number >= 1 (skipped)" in caplog.text


@pytest.mark.parametrize("provider", ["aws", "azure", "gcp"])
def test_a_header_naming_a_read_column_twice_is_refused(tmp_path: Path, provider: str) -> None:
    """csv rows became dicts, so the last of two 'Price' columns won without a word."""
    header = {"aws": HEADER, "azure": "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n",
              "gcp": "InstanceType,AcceleratorName,AcceleratorCount,Region,AvailabilityZone,Price,SpotPrice\n"}
    path = tmp_path / FILES[provider]
    path.write_text(header[provider].replace("Price,", "Price,Price,", 1) + "x\n")
    with pytest.raises(InputError) as info:
        load_catalog(tmp_path, providers=[provider])
    assert str(info.value) == f"{path}: header names column(s) Price more than once; keep one"
