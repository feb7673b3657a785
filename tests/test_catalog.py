"""The offline price catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from burster.catalog import BUNDLED_DIR, gcp_gpu_of, load_catalog, load_gcp
from burster.errors import InputError
from burster.model import Market


def test_bundled_catalog_has_all_three_clouds_and_both_markets() -> None:
    offs = load_catalog(BUNDLED_DIR)
    assert {o.provider for o in offs} == {"aws", "gcp", "azure"}
    assert {o.market for o in offs} == {Market.SPOT, Market.ON_DEMAND}
    assert all(o.price_per_hour_usd > 0 and o.gpus_per_node > 0 for o in offs)


def test_gcp_price_is_host_plus_accelerator() -> None:
    offs = load_gcp(BUNDLED_DIR / "gcp_v7_vms_gpu_subset.csv")
    a2 = {(o.market, o.zone): o for o in offs if o.instance_type == "a2-highgpu-1g"}
    assert a2[(Market.ON_DEMAND, "us-central1-a")].price_per_hour_usd == pytest.approx(0.73948 + 2.93391)
    assert a2[(Market.SPOT, "us-central1-a")].price_per_hour_usd == pytest.approx(0.29576 + 1.1472)
    assert gcp_gpu_of("a3-megagpu-8g") == ("H100-MEGA", 8)
    assert gcp_gpu_of("n1-standard-4") is None


def test_known_quirks_are_corrected() -> None:
    offs = load_catalog(BUNDLED_DIR)
    nd = [o for o in offs if o.instance_type == "Standard_ND96isr_H100_v5"]
    assert nd and all(o.gpus_per_node == 8 for o in nd)
    # no spot offer when spot >= on-demand (GCP asia-northeast1 H100, Azure H100 rows)
    by = {(o.provider, o.zone, o.instance_type, o.market): o.price_per_hour_usd for o in offs}
    for (prov, zone, itype, market), price in by.items():
        if market is Market.SPOT and (prov, zone, itype, Market.ON_DEMAND) in by:
            assert price < by[(prov, zone, itype, Market.ON_DEMAND)]


def test_bad_rows_name_file_row_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "aws_v7_vms_gpu_subset.csv"
    bad.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
                   "AvailabilityZone\np3.2xlarge,V100,1.0,8,61,3.06,0.5,us-east-1,use1-az1\n"
                   "p3.2xlarge,V100,1.0,8,61,three,0.5,us-east-1,use1-az2\n")
    with pytest.raises(InputError, match=r"aws_v7_vms_gpu_subset.csv: row 3, column 'Price'"):
        load_catalog(tmp_path)
    bad.write_text("InstanceType,Price\np3,1\n")
    with pytest.raises(InputError, match="header lacks column"):
        load_catalog(tmp_path)


def test_unknown_provider_lists_valid_ones() -> None:
    with pytest.raises(InputError, match="valid: aws, gcp, azure"):
        load_catalog(BUNDLED_DIR, providers=["oracle"])


def test_a_missing_catalog_path_says_it_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"price catalog .*nowhere does not exist"):
        load_catalog(tmp_path / "nowhere")


def test_rows_giving_the_same_offering_keep_the_first_on_every_cloud(tmp_path: Path) -> None:
    """A simulated cloud keys its offerings by ``Offering.key``: an Azure row repeated with another
    price gave two offerings of one key, and the simulation swapped one's price for the other's."""
    azure = tmp_path / "azure_v6_vms_gpu_subset.csv"
    header = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region\n"
    azure.write_text(header + "Standard_NC6s_v3,V100,1,6,112,V100,3.06,0.3978,eastus\n"
                     "Standard_NC6s_v3,V100,1,6,112,V100,3.06,0.9,eastus\n")
    offs = load_catalog(azure)
    assert sorted((o.market.value, o.price_per_hour_usd) for o in offs) == [("on_demand", 3.06), ("spot", 0.3978)]
