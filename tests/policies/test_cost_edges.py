"""Edges of the cost model, the billing rules, the price catalog and the offer query that a mutation
audit found unpinned: gang sizes in every rate, the memo keys, boundaries of the notice, the boot and
the wait, the floor, reserved offerings, zero and negative prices, duplicate rows, ties and limits."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from burster.billing import billing_rule
from burster.catalog import FILES, gcp_gpu_of, load_catalog
from burster.errors import InputError
from burster.model import Demand, JobClass, Market, Offering
from burster.offer_query import OfferFilter, query_offers
from policies.cost import CostModel, CostParams, amortized_usd_per_gpu_hour, exposed_s

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
# GCP: its 30 s notice is too short for the 60 s write, so an interruption loses half an interval
SPOT = Offering("gcp", "us-west1", "us-west1-b", "n1-highmem-64-v100x8", "V100", 8, Market.SPOT, 8.0)
OD = Offering("aws", "us-west-2", "usw2-az1", "p3.16xlarge", "V100", 8, Market.ON_DEMAND, 24.48)
RESERVED = Offering("onprem", "dc", "dc", "dgx", "V100", 8, Market.RESERVED, 9.6)
FLAKY = CostParams(spot_interruptions_per_hour=0.2, restart_overhead_s=300)  # 1800 s interval: 0.2/3 rework


def test_amortizing_needs_a_lifetime_and_gpus() -> None:
    for lifetime, gpus in ((0, 8), (4, 0)):
        with pytest.raises(ValueError, match="must be positive"):
            amortized_usd_per_gpu_hour(240_000, lifetime, 20_000, gpus)


def test_a_zone_rate_applies_where_the_offering_has_none_and_reserved_is_never_interrupted() -> None:
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.2, interruption_rates={SPOT.zone: 0.7}))
    assert cost.interruption_rate(SPOT) == 0.7
    keyed = CostModel(CostParams(interruption_rates={SPOT.zone: 0.7, SPOT.key: 0.4}))
    assert keyed.interruption_rate(SPOT) == 0.4  # the offering's own rate first
    assert cost.interruption_rate(RESERVED) == 0.0 and cost.rework_fraction(RESERVED, 1800) == 0.0
    assert cost.effective_price_per_gpu_hour(RESERVED) == 0.0  # marginal cost of owned GPUs


def test_a_notice_exactly_as_long_as_the_write_saves_and_an_unknown_cloud_has_none() -> None:
    cost = CostModel(CostParams(checkpoint_write_s=30.0))
    assert cost.saves_on_notice(SPOT)  # GCP's 30 s notice, a 30 s write
    other = Offering("lambda", "us-tx", "us-tx-1", "gpu_8x_v100", "V100", 8, Market.SPOT, 8.0)
    assert not CostModel().saves_on_notice(other) and CostModel().notice_loss_s(other, 1800) == 900
    assert CostModel().pause_s == 60 + 300  # the write and the restart


def test_the_run_rate_prices_every_node_of_the_gang_and_its_rework() -> None:
    """32 GPUs on 8-GPU nodes: 4 nodes, interrupted 4 x 0.2/h, each losing 900 + 300 s."""
    cost = CostModel(FLAKY)
    job = Demand("g", 32, NOW, 3600)
    assert cost.nodes_for(job, SPOT) == 4
    assert cost.run_rate_usd_per_hour(job, SPOT) == pytest.approx(4 * 8.0 * (1 + 4 * 0.2 * 1200 / 3600))
    # the memo keeps apart prices, gang shapes and checkpoint intervals of one offering key
    cheaper = Offering(SPOT.provider, SPOT.region, SPOT.zone, SPOT.instance_type, "V100", 8, Market.SPOT, 4.0)
    assert cost.run_rate_usd_per_hour(job, cheaper) == pytest.approx(4 * 4.0 * (1 + 4 * 0.2 * 1200 / 3600))
    assert cost.run_rate_usd_per_hour(Demand("o", 8, NOW, 3600), SPOT) == pytest.approx(8.0 * (1 + 0.2 / 3))
    often = Demand("c", 32, NOW, 3600, checkpoint_interval_s=600)
    assert cost.run_rate_usd_per_hour(often, SPOT) == pytest.approx(32.0 * (1 + 4 * 0.2 * 600 / 3600))
    assert cost.rework_fraction(SPOT, 600) == pytest.approx(0.2 * 600 / 3600)


def test_a_member_wider_than_a_node_rounds_its_nodes_up() -> None:
    gang = Demand("g", 24, NOW, 3600, nodes=2)  # 12 GPUs a member: two 8-GPU nodes each
    assert CostModel().nodes_for(gang, SPOT) == 4


def test_reserved_work_costs_nothing_more() -> None:
    assert CostModel().job_cost_usd(Demand("j", 8, NOW, 3600), RESERVED) == 0.0


def test_a_job_cost_for_part_of_the_work() -> None:
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.0, launch_latency_s=180))
    job = Demand("j", 8, NOW, 3600)
    # 1800 s of the work + the 180 s boot, half a second of per-second rounding
    assert cost.job_cost_usd(job, OD, work_s=1800) == pytest.approx(24.48 * 1980.5 / 3600)


def test_the_floor_is_the_rate_over_the_work_less_half_an_azure_minute() -> None:
    cost = CostModel(FLAKY)
    rate = 8.0 * (1 + 0.2 / 3)
    assert cost.job_cost_floor_usd(Demand("j", 8, NOW, 3630), SPOT) == pytest.approx(rate * 3600 / 3600)
    assert cost.job_cost_floor_usd(Demand("s", 8, NOW, 20), SPOT) == 0.0  # never below nothing


def test_deadline_risk_counts_the_gang_the_part_of_the_work_and_not_best_effort() -> None:
    cost = CostModel(CostParams(spot_interruptions_per_hour=0.5, restart_overhead_s=300, launch_latency_s=180))
    spot = Offering("azure", "r", "z", "t", "V100", 1, Market.SPOT, 1.0)
    job = Demand("j", 2, NOW, 3_600, nodes=2, job_class=JobClass.STRICT, deadline=NOW + timedelta(hours=2))
    # room 1000 - 480 = 520 s: exposed 2 x 1280 s, at 2 nodes x 0.5/h
    assert cost.deadline_risk_usd(job, spot, 1_000) == pytest.approx(500 * (1 - math.exp(-1.0 * 2_560 / 3_600)))
    # 1800 s of it: one interval, 1280 s exposed
    assert cost.deadline_risk_usd(job, spot, 1_000, work_s=1_800) == \
        pytest.approx(500 * (1 - math.exp(-1.0 * 1_280 / 3_600)))
    best = Demand("b", 2, NOW, 3_600, nodes=2, deadline=NOW + timedelta(hours=2))
    assert cost.deadline_risk_usd(best, spot, 1_000) == 0.0


def test_the_boot_risk_at_its_edges() -> None:
    cost = CostModel(CostParams(launch_latency_s=180.0, launch_latency_sigma=0.25))
    no_time = Demand("d", 1, NOW, 1200.0, deadline=NOW + timedelta(seconds=1200), job_class=JobClass.STRICT)
    assert cost.boot_miss_usd(no_time, NOW) == 0.0  # late even on an immediate start
    exact = CostModel(CostParams(launch_latency_s=180.0, launch_latency_sigma=0.0))
    just = Demand("d", 1, NOW, 1200.0, deadline=NOW + timedelta(seconds=1380), job_class=JobClass.STRICT)
    assert exact.boot_miss_usd(just, NOW) == 0.0  # the boot ends exactly at the start-by time


def test_the_wait_cost_at_the_deadlines_edges() -> None:
    cost = CostModel(CostParams(wait_value_usd_per_gpu_hour=2.0, deadline_miss_usd=500))
    on_time = Demand("s", 1, NOW, 3600, job_class=JobClass.STRICT, deadline=NOW + timedelta(hours=1))
    # starting now ends exactly at the deadline; a minute's wait misses it
    assert cost.wait_cost_usd(on_time, 60, NOW) == pytest.approx(60 / 3600 * 2.0 + 500)
    assert cost.wait_cost_usd(on_time, 60, NOW, deadline=False) == pytest.approx(60 / 3600 * 2.0)
    spare = Demand("m", 1, NOW, 3600, job_class=JobClass.STRICT, deadline=NOW + timedelta(seconds=3660))
    assert cost.wait_cost_usd(spare, 60, NOW) == pytest.approx(60 / 3600 * 2.0)  # ends exactly at it
    best = Demand("b", 1, NOW, 3600, deadline=NOW + timedelta(hours=1))
    assert cost.wait_cost_usd(best, 60, NOW) == pytest.approx(60 / 3600 * 2.0)
    gang = Demand("g", 16, NOW, 3600, nodes=2)
    assert cost.wait_cost_usd(gang, 1800, NOW) == pytest.approx(16 * 0.5 * 2.0)  # every GPU of the gang


def test_idle_cost_is_the_whole_node() -> None:
    assert CostModel().idle_cost_usd(OD, 1800) == pytest.approx(24.48 / 2)


def test_a_job_that_never_checkpoints_is_one_interval() -> None:
    assert exposed_s(4_000, 0, 1_000) == 3_000
    assert exposed_s(0, 0, 1_000) == 0


def test_a_cloud_without_a_rule_bills_per_second_with_a_minute_minimum() -> None:
    rule = billing_rule("lambda")
    assert rule.billed_s(20) == 60 and rule.billed_s(61.2) == 62 and rule.expected_billed_s(20) == 60


# --- the catalog -----------------------------------------------------------------------------------
AWS_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone\n"
AZURE_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"
GCP_HEADER = ("InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,"
              "SpotPrice\n")


def _prices(path: Path, header: str, *rows: str) -> list[tuple[str, float]]:
    path.write_text(header + "".join(rows))
    return sorted((o.key, round(o.price_per_hour_usd, 6)) for o in load_catalog(path))  # host + accelerator


def test_a_negative_price_is_refused_at_its_row_and_column(tmp_path: Path) -> None:
    path = tmp_path / FILES["aws"]
    path.write_text(AWS_HEADER + "p3.2xlarge,V100,1,8,61,-0.5,0.9,us-east-1,use1-az1\n")
    with pytest.raises(InputError, match=r"row 2, column 'Price': negative value -0.5") as info:
        load_catalog(path)
    assert str(path) in str(info.value)


def test_64_gpus_a_machine_are_the_most(tmp_path: Path) -> None:
    path = tmp_path / FILES["aws"]
    assert _prices(path, AWS_HEADER, "x.big,V100,64,8,61,64,,us-east-1,use1-az1\n") == \
        [("aws/use1-az1/x.big/on_demand", 64.0)]
    with pytest.raises(InputError, match=r"row 2, column 'AcceleratorCount': 65 is above the maximum 64"):
        _prices(path, AWS_HEADER, "x.big,V100,65,8,61,64,,us-east-1,use1-az1\n")


def test_blank_lines_are_skipped_and_aws_duplicate_rows_keep_the_first(tmp_path: Path) -> None:
    assert _prices(tmp_path / FILES["aws"], AWS_HEADER, "p3.2xlarge,V100,1,8,61,3.06,0.9,us-east-1,use1-az1\n\n",
                   "p3.2xlarge,V100,1,8,61,4.00,0.5,us-east-1,use1-az1\n") == \
        [("aws/use1-az1/p3.2xlarge/on_demand", 3.06), ("aws/use1-az1/p3.2xlarge/spot", 0.9)]


def test_a_zero_price_is_no_offer_in_that_market_alone(tmp_path: Path) -> None:
    """Price 0 means no on-demand offer: the spot offer stays (it was compared with 0 and dropped on
    Azure; on GCP a 0 accelerator price made the VM's on-demand price its host's alone)."""
    assert _prices(tmp_path / FILES["azure"], AZURE_HEADER, "Standard_NC6s_v3,V100,1,6,112,0,0.9,eastus\n") == \
        [("azure/eastus/Standard_NC6s_v3/spot", 0.9)]
    assert _prices(tmp_path / FILES["gcp"], GCP_HEADER, "a2-highgpu-1g,12,85,,,,us-central1,us-central1-a,0.7,0.3\n",
                   ",,,A100,1,,us-central1,us-central1-a,0,1.1\n") == \
        [("gcp/us-central1-a/a2-highgpu-1g/spot", 1.4)]


def test_gcp_prices_from_the_first_of_duplicate_accelerator_rows(tmp_path: Path) -> None:
    assert _prices(tmp_path / FILES["gcp"], GCP_HEADER, "a2-highgpu-1g,12,85,,,,us-central1,us-central1-a,0.7,0.3\n",
                   ",,,A100,1,,us-central1,us-central1-a,2.9,1.1\n",
                   ",,,A100,1,,us-central1,us-central1-a,5.0,2.0\n") == \
        [("gcp/us-central1-a/a2-highgpu-1g/on_demand", 3.6),
         ("gcp/us-central1-a/a2-highgpu-1g/spot", 1.4)]


def test_gcp_needs_both_rows_priced_in_a_market_and_spot_below_on_demand(tmp_path: Path) -> None:
    path = tmp_path / FILES["gcp"]
    # no accelerator spot price: no spot offer; host + accelerator spot equal to on-demand: none either
    assert _prices(path, GCP_HEADER, "a2-highgpu-1g,12,85,,,,us-central1,us-central1-a,0.7,0.3\n",
                   ",,,A100,1,,us-central1,us-central1-a,2.9,\n",
                   "a2-highgpu-2g,24,170,,,,us-central1,us-central1-a,1.0,2.0\n",
                   ",,,A100,2,,us-central1,us-central1-a,4.0,3.0\n",
                   "a2-highgpu-4g,48,340,,,,us-central1,us-central1-a,2.0,\n",  # nor without a host spot price
                   ",,,A100,4,,us-central1,us-central1-a,8.0,1.0\n") == \
        [("gcp/us-central1-a/a2-highgpu-1g/on_demand", 3.6),
         ("gcp/us-central1-a/a2-highgpu-2g/on_demand", 5.0), ("gcp/us-central1-a/a2-highgpu-4g/on_demand", 10.0)]
    assert gcp_gpu_of("a2-highgpu-4x") is None and gcp_gpu_of("a2-highgpu-g") is None


@pytest.mark.parametrize(("name", "header", "rows", "why"), [
    ("azure", AZURE_HEADER, "Standard_NC6s_v3,V100,1,6,112,,,eastus\n", "1 row(s) with neither Price nor SpotPrice"),
    ("gcp", GCP_HEADER, "a2-highgpu-1g,12,85,,,,us-central1,us-central1-a,,\n,,,A100,1,,us-central1,us-central1-a,,\n",
     "1 row(s) with neither Price nor SpotPrice"),
    ("gcp", GCP_HEADER, "a2-highgpu-1g,12,85,,,,us-central1,us-central1-a,0.7,0.3\n"
     ",,,A100,1,,us-central1,us-central1-b,2.9,1.1\n", "1 row(s) of host VMs with no accelerator row for their zone"),
])
def test_a_file_without_offers_says_why(tmp_path: Path, name: str, header: str, rows: str, why: str) -> None:
    with pytest.raises(InputError, match=r"no usable price rows \(" + re.escape(why)):
        _prices(tmp_path / FILES[name], header, rows)


def test_a_long_row_names_its_row_and_an_empty_folder_names_the_files_it_wants(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"row 2: 10 cells for 9 header columns"):
        _prices(tmp_path / FILES["aws"], AWS_HEADER, "p3.2xlarge,V100,1,8,61,3.06,0.9,us-east-1,use1-az1,x\n")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no price catalog files in .*empty; expected aws_v7_vms_gpu_subset.csv"):
        load_catalog(tmp_path / "empty")


def test_one_file_of_a_cloud_left_out_gives_nothing(tmp_path: Path) -> None:
    path = tmp_path / FILES["aws"]
    path.write_text(AWS_HEADER + "p3.2xlarge,V100,1,8,61,3.06,0.9,us-east-1,use1-az1\n")
    assert load_catalog(path, providers=["gcp"]) == []


# --- the offer query -------------------------------------------------------------------------------
def _od(provider: str, region: str, gpus: int, price: float) -> Offering:
    return Offering(provider, region, f"{region}-a", "t", "V100", gpus, Market.ON_DEMAND, price)


def test_ties_go_to_the_cheaper_node_then_provider_region_and_zone() -> None:
    offers = [_od("gcp", "a", 1, 1.0), _od("aws", "b", 1, 1.0), _od("aws", "a", 8, 8.0), _od("aws", "a", 1, 1.0)]
    ranked = query_offers(offers, OfferFilter(), lambda o: o.price_per_gpu_hour_usd)
    assert [(o.offering.provider, o.offering.region, o.offering.gpus_per_node) for o in ranked] == \
        [("aws", "a", 1), ("aws", "b", 1), ("gcp", "a", 1), ("aws", "a", 8)]
    assert len(query_offers(offers, OfferFilter(), lambda o: o.price_per_gpu_hour_usd, limit=2)) == 2


def test_the_price_bound_is_inclusive_and_may_be_zero_and_spellings_are_forgiven() -> None:
    offers = [_od("aws", "us-east-1", 1, 1.0), _od("aws", "us-east-1", 1, 2.0)]
    kept = query_offers(offers, OfferFilter(max_price=1.0, market=" On Demand ", region=" US-EAST-1 "),
                        lambda o: o.price_per_gpu_hour_usd)
    assert [r.effective_usd_per_gpu_hour for r in kept] == [1.0]
    assert query_offers(offers, OfferFilter(max_price=0.0), lambda o: o.price_per_gpu_hour_usd) == []
