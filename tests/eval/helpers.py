"""Small hand-made instances for the bound tests: a tiny catalog, a spot series, jobs from offsets."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from burster.eval.instance import Instance, build_instance
from burster.model import Demand, Market, Offering
from burster.traces import TRACE_EPOCH
from providers.sim.spot import SpotSeries

START = TRACE_EPOCH  # a midnight: the simulator starts its clock here for jobs submitted that day


def offering(market: Market, price: float, *, gpus: int = 1, zone: str = "use1-az1",
             itype: str = "p3.2xlarge") -> Offering:
    return Offering("aws", "us-east-1", zone, itype, "V100", gpus, market, price)


def job(name: str, at_s: float, gpus: int, runtime_s: float, nodes: int = 1) -> Demand:
    return Demand(name, gpus, START + timedelta(seconds=at_s), runtime_s, nodes=nodes, gpu_model="V100")


def series(data: Sequence[int], gap_s: float = 300.0) -> SpotSeries:
    # SpotSeries caches its drops by name: a name per content keeps examples apart
    return SpotSeries(f"test/{gap_s:g}/{''.join(map(str, data))}", "aws", "V100", gap_s, tuple(data))


def instance(jobs: Sequence[Demand], offerings: Sequence[Offering], *, pool_gpus: int = 0,
             spot: Sequence[SpotSeries] = (), slot_s: float = 300.0, budget_s: float | None = None,
             node_gpus: int = 0) -> Instance:
    return build_instance(jobs, start=START, pool_gpus=pool_gpus, pool_model="V100", offerings=offerings,
                          series=spot, slot_s=slot_s, pool_node_gpus=node_gpus,
                          **({"wait_budget": lambda d: budget_s} if budget_s is not None else {}))


def write_catalog(folder: Path, on_demand: float, spot: float | None, gpus: int = 1) -> Path:
    """A one-row AWS price catalog in the SkyPilot format ``burster.catalog`` reads."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,AvailabilityZone",
            f"p3.test,V100,{gpus}.0,8.0,61.0,{on_demand},{'' if spot is None else spot},us-east-1,use1-az1"]
    (folder / "aws_v7_vms_gpu_subset.csv").write_text("\n".join(rows) + "\n")
    return folder
