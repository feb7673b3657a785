"""Live GCE prices from the Cloud Billing Catalog API (service 6F81-5844-456A), cached.

A GPU machine type's hourly price is (vCPUs x the series' Core SKU) + (GiB x its Ram SKU) + (GPUs x the
GPU SKU), on-demand from ``usageType`` OnDemand SKUs and Spot from ``Preemptible`` ones -- the same
rule the SkyPilot catalog (our offline prices) is built with. vCPUs and memory come from the offline
catalog CSV. Any failure leaves the offline price in place, with a logged warning.
"""

from __future__ import annotations

import csv
import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from burster.catalog import FILES, catalog_dir
from burster.errors import InputError
from burster.model import Market, Offering
from burster.textfile import text_lines

log = logging.getLogger(__name__)
COMPUTE_SERVICE = "services/6F81-5844-456A"
# Machine family -> SKU description stems of its host, most specific first.
HOST_SERIES = {"a2": ("A2 Instance",), "a3-megagpu": ("A3Plus Instance", "A3 Instance"),
               "a3-ultragpu": ("A3Ultra Instance", "A3 Instance"), "a3": ("A3 Instance",)}
# GPU model (as burster.catalog names it) -> how GPU SKU descriptions name it.
GPU_SKU_NAMES = {"A100": ("A100 GPU",), "A100-80GB": ("A100 80GB GPU",), "H100": ("H100 80GB GPU",),
                 "H100-MEGA": ("H100 80GB Mega GPU", "H100 Mega 80GB GPU", "H100 80GB Plus GPU"),
                 "H200": ("H200 141GB GPU",)}
SHAPE_COLUMNS = ("InstanceType", "vCPUs", "MemoryGiB")
_SKIP = ("custom", "commitment", "reserved", "sole tenancy", "premium", "extended")


@dataclass(frozen=True)
class SkuPrice:
    description: str
    group: str  # CPU / RAM / GPU
    spot: bool
    regions: frozenset[str]
    usd: float  # per hour (CPU, GPU) or per GiB-hour (RAM)


def unit_price_usd(sku: Any) -> float | None:
    """The first-tier unit price of a SKU's latest pricingInfo (``units`` + ``nanos`` / 1e9)."""
    infos = list(sku.pricing_info)
    if not infos:
        return None
    latest = max(infos, key=lambda p: str(p.effective_time or ""))
    rates = sorted(latest.pricing_expression.tiered_rates, key=lambda r: r.start_usage_amount)
    if not rates:
        return None
    money = rates[0].unit_price
    return int(money.units) + int(money.nanos) / 1e9


def parse_skus(skus: Iterable[Any]) -> list[SkuPrice]:
    out = []
    for sku in skus:
        cat = sku.category
        desc = str(sku.description)
        if cat.resource_family != "Compute" or cat.usage_type not in ("OnDemand", "Preemptible"):
            continue
        if cat.resource_group not in ("CPU", "RAM", "GPU") or any(s in desc.lower() for s in _SKIP):
            continue
        usd = unit_price_usd(sku)
        if usd is not None:
            out.append(SkuPrice(desc, cat.resource_group, cat.usage_type == "Preemptible",
                                frozenset(sku.service_regions), usd))
    return out


def catalog_file() -> Path:
    """The offline GCP catalog CSV: ``gcp_v7_vms_gpu_subset.csv``, else its ``.csv.gz``."""
    plain = catalog_dir() / FILES["gcp"]
    packed = plain.with_name(plain.name + ".gz")
    return packed if not plain.exists() and packed.exists() else plain


def _shape(cpus: str, mem: str) -> tuple[float, float] | None:
    try:
        shape = (float(cpus), float(mem))
    except ValueError:
        return None
    return shape if all(math.isfinite(v) and v > 0 for v in shape) else None


def machine_shapes(path: Path | None = None) -> dict[str, tuple[float, float]]:
    """Machine type -> (vCPUs, memory GiB) from the offline GCP catalog CSV (plain or gzip); empty,
    with a warning naming the file, when it cannot be read (live prices are then off)."""
    path = path or catalog_file()
    shapes: dict[str, tuple[float, float]] = {}
    bad: list[int] = []
    try:
        reader = csv.DictReader(text_lines(path, "GCP price catalog"))
        missing = [c for c in SHAPE_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise InputError(f"{path}: header lacks column(s) {', '.join(missing)}")
        for row in reader:
            itype, cpus, mem = row.get("InstanceType"), row.get("vCPUs"), row.get("MemoryGiB")
            if not (itype and cpus and mem):
                continue
            shape = _shape(cpus, mem)
            if shape is None:
                bad.append(reader.line_num)
            else:
                shapes.setdefault(itype, shape)
    except (InputError, csv.Error) as err:
        log.warning("gcp: cannot read machine shapes (%s); live Cloud Billing prices are off, the offline "
                    "catalog's prices are used", err)
        return {}
    if bad:
        log.warning("gcp: %s: rows %s: vCPUs or MemoryGiB is not a positive number; those machine types "
                    "keep their offline catalog prices", path, ", ".join(map(str, bad[:10])))
    return shapes


def _find(prices: Sequence[SkuPrice], group: str, spot: bool, region: str,
          stems: Sequence[str]) -> float | None:
    for stem in stems:  # most specific stem first
        for p in prices:
            if p.group == group and p.spot == spot and region in p.regions and stem in p.description:
                return p.usd
    return None


def machine_price(prices: Sequence[SkuPrice], offering: Offering,
                  shape: tuple[float, float] | None) -> float | None:
    """Live hourly USD of ``offering``, or None when a needed SKU or the shape is missing."""
    family = offering.instance_type.rpartition("-")[0]
    stems = HOST_SERIES.get(family) or HOST_SERIES.get(family.split("-")[0])
    gpu_names = GPU_SKU_NAMES.get(offering.gpu_model)
    if shape is None or stems is None or gpu_names is None:
        return None
    spot = offering.market is Market.SPOT
    core = _find(prices, "CPU", spot, offering.region, stems)
    ram = _find(prices, "RAM", spot, offering.region, stems)
    gpu = _find(prices, "GPU", spot, offering.region, gpu_names)
    if core is None or ram is None or gpu is None:
        return None
    return round(core * shape[0] + ram * shape[1] + gpu * offering.gpus_per_node, 5)


class PriceBook:
    """Fetches SKUs at most once per ``ttl_s`` and merges them into catalog offerings."""

    def __init__(self, fetch: Callable[[], Iterable[Any]], *, ttl_s: float = 3600.0,
                 retry_s: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._ttl_s = ttl_s
        self._retry_s = retry_s
        self._clock = clock
        self._prices: list[SkuPrice] | None = None
        self._next_refresh: float | None = None
        self._shapes: dict[str, tuple[float, float]] | None = None
        self.fetches = 0

    def _current(self) -> list[SkuPrice] | None:
        now = self._clock()
        if self._next_refresh is not None and now < self._next_refresh:
            return self._prices
        self.fetches += 1
        try:
            self._prices = parse_skus(self._fetch())
            self._next_refresh = now + self._ttl_s
        except Exception as err:  # any SDK/transport failure: keep the last prices or the catalog
            from providers.gcp.errors import from_api_error

            log.warning("gcp: price refresh from the Cloud Billing Catalog failed, using %s: %s",
                        "the last fetched prices" if self._prices else "offline catalog prices",
                        from_api_error(err, "list SKUs"))
            self._next_refresh = now + min(self._retry_s, self._ttl_s)  # do not hammer a failing API
        return self._prices

    def merge(self, offerings: Sequence[Offering]) -> list[Offering]:
        prices = self._current()
        if not prices:
            return list(offerings)
        if self._shapes is None:
            self._shapes = machine_shapes()
        out = []
        for o in offerings:
            live = machine_price(prices, o, self._shapes.get(o.instance_type))
            out.append(replace(o, price_per_hour_usd=live) if live else o)
        return out
