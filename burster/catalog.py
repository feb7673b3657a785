"""The offline price catalog: SkyPilot catalog CSVs (AWS, GCP, Azure) turned into Offerings.

Format notes (see burster/data/prices/NOTICE.md): AWS and Azure rows price the whole instance;
GCP GPU machine types are priced as the host-VM row plus the accelerator row of the same zone.
An empty (or zero) price means no offer in that market; a row whose AcceleratorCount is empty (a
CPU-only VM of a full SkyPilot vms.csv) or not a whole number >= 1 (a partial-GPU VM) is skipped.
A file may be gzip-compressed (``*.csv.gz``).
Known catalog quirks are corrected here and listed in ``QUIRKS``.
"""

from __future__ import annotations

import csv
import logging
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from burster.config import PROVIDERS
from burster.errors import InputError
from burster.model import Market, Offering
from burster.shared_data import shared_data_dir
from burster.textfile import text_lines

_log = logging.getLogger("burster.catalog")

BUNDLED_DIR = Path(__file__).parent / "data" / "prices"
SHARED_SUBDIR = "cloud_gpu_prices_skypilot_catalog"
FILES = {"aws": "aws_v7_vms_gpu_subset.csv", "gcp": "gcp_v7_vms_gpu_subset.csv",
         "azure": "azure_v6_vms_gpu_subset.csv"}

# GCP machine type prefix -> (accelerator name in the catalog, GPU model we report)
GCP_FAMILIES = {
    "a2-highgpu": "A100", "a2-megagpu": "A100", "a2-ultragpu": "A100-80GB",
    "a3-highgpu": "H100", "a3-megagpu": "H100-MEGA", "a3-ultragpu": "H200",
}
QUIRKS = {
    ("azure", "Standard_ND96isr_H100_v5"): 8,  # catalog says 12 GPUs; the VM has 8
}


MAX_PRICE_USD_PER_HOUR = 10_000.0  # the dearest GPU machines list near $100/h
MAXIMA = {"AcceleratorCount": 64.0}  # GPUs per machine (pool.gpus_per_node has the same cap)


@dataclass(frozen=True)
class _Row:
    file: Path
    line: int
    cells: dict[str, str]

    def text(self, column: str) -> str:
        if column not in self.cells:
            raise InputError(f"{self.file}: row {self.line}: missing column {column!r}")
        return (self.cells[column] or "").strip()

    def number(self, column: str, *, optional: bool = False) -> float | None:
        raw = self.text(column)
        if raw == "" and optional:
            return None
        try:
            value = float(raw)
        except ValueError:
            raise InputError(
                f"{self.file}: row {self.line}, column {column!r}: {raw!r} is not a number"
            ) from None
        if not math.isfinite(value):
            raise InputError(f"{self.file}: row {self.line}, column {column!r}: {raw!r} is not a finite number")
        if value < 0:
            raise InputError(f"{self.file}: row {self.line}, column {column!r}: negative value {value}")
        top = MAXIMA.get(column, MAX_PRICE_USD_PER_HOUR)
        if value > top:
            raise InputError(f"{self.file}: row {self.line}, column {column!r}: {raw} is above the maximum {top:g}")
        return value

    def price(self, column: str) -> float | None:
        """A price cell: None where it is empty or 0 (no offer in that market)."""
        return self.number(column, optional=True) or None

    def gpus(self) -> int:
        """AcceleratorCount as a whole number; 0 when it is empty or not a whole number >= 1 (row skipped)."""
        count = self.number("AcceleratorCount", optional=True) or 0.0
        return int(count) if count >= 1 and count.is_integer() else 0


def _rows(path: Path, required: Iterable[str]) -> list[_Row]:
    """The data rows of a catalog CSV (``.gz`` read through gzip); a clear InputError if unreadable."""
    reader = csv.reader(text_lines(path, "price catalog"))
    try:
        header = next(reader, [])
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"{path}: header lacks column(s) {', '.join(missing)}")
        twice = [c for c in required if header.count(c) > 1]
        if twice:
            raise InputError(f"{path}: header names column(s) {', '.join(twice)} more than once; keep one")
        rows = []
        for cells in reader:
            if not cells:
                continue  # a blank line
            if len(cells) != len(header):
                raise InputError(f"{path}: row {reader.line_num}: {len(cells)} cells for {len(header)} "
                                 "header columns; give one cell per column")
            rows.append(_Row(path, reader.line_num, dict(zip(header, cells, strict=True))))
    except csv.Error as err:
        raise InputError(f"{path}: row {reader.line_num + 1}: not readable as CSV ({err})") from None
    return rows


def _pair(provider: str, region: str, zone: str, itype: str, gpu: str, gpus: int,
          on_demand: float | None, spot: float | None) -> list[Offering]:
    out = []
    if on_demand:
        out.append(Offering(provider, region, zone, itype, gpu, gpus, Market.ON_DEMAND, on_demand))
    if spot:
        out.append(Offering(provider, region, zone, itype, gpu, gpus, Market.SPOT, spot))
    return out


NO_GPUS = "with AcceleratorCount empty or not a whole number >= 1 (skipped)"
NO_PRICE = "with neither Price nor SpotPrice above 0 (skipped)"


def _usable(path: Path, offerings: list[Offering], skipped: Counter[str]) -> list[Offering]:
    """``offerings`` (the first of rows giving the same offering key: a simulated cloud keys its
    offerings by it; rows left out are logged in one line), or an InputError saying why none of
    ``path``'s rows gave one."""
    why = ", ".join(f"{n} row(s) {reason}" for reason, n in skipped.items())  # each reason says what was lost
    if offerings:
        usable = list({o.key: o for o in reversed(offerings)}.values())[::-1]
        if why:
            _log.info("%s: %d offerings; %s", path, len(usable), why)
        return usable
    why = why or "it has no data rows"
    raise InputError(f"{path}: no usable price rows ({why}); fix the rows or leave the file out")


def load_aws(path: Path) -> list[Offering]:
    cols = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region",
            "AvailabilityZone")
    seen: dict[tuple[str, str, str], Offering] = {}
    skipped: Counter[str] = Counter()
    for row in _rows(path, cols):
        gpus = row.gpus()
        if gpus <= 0:
            skipped[NO_GPUS] += 1
            continue
        pair = _pair("aws", row.text("Region"), row.text("AvailabilityZone"), row.text("InstanceType"),
                     row.text("AcceleratorName"), gpus, row.price("Price"), row.price("SpotPrice"))
        if not pair:
            skipped[NO_PRICE] += 1
        for o in pair:
            seen.setdefault((o.zone, o.instance_type, o.market.value), o)  # first of duplicate rows
    return _usable(path, list(seen.values()), skipped)


def load_azure(path: Path) -> list[Offering]:
    cols = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region")
    out: list[Offering] = []
    skipped: Counter[str] = Counter()
    for row in _rows(path, cols):
        itype = row.text("InstanceType")
        gpus = QUIRKS.get(("azure", itype)) or row.gpus()
        if gpus <= 0:
            skipped[NO_GPUS] += 1
            continue
        price = row.price("Price")
        spot = row.price("SpotPrice")
        if spot is not None and price is not None and spot >= price:
            spot = None  # no spot discount recorded: treat as no spot offer (documented, not reported)
        region = row.text("Region")
        pair = _pair("azure", region, region, itype, row.text("AcceleratorName"), gpus, price, spot)
        if not pair:
            skipped[NO_PRICE] += 1
        out += pair
    return _usable(path, out, skipped)


def gcp_gpu_of(machine_type: str) -> tuple[str, int] | None:
    """``a2-highgpu-4g`` -> ("A100", 4); None for a machine type we do not price."""
    family, _, size = machine_type.rpartition("-")
    if family not in GCP_FAMILIES or not size.endswith("g") or not size[:-1].isdigit():
        return None
    return GCP_FAMILIES[family], int(size[:-1])


def load_gcp(path: Path) -> list[Offering]:
    cols = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "AvailabilityZone",
            "Price", "SpotPrice")
    hosts: list[_Row] = []
    accel: dict[tuple[str, str, int], tuple[float | None, float | None]] = {}
    skipped: Counter[str] = Counter()
    for row in _rows(path, cols):
        if row.text("InstanceType"):
            hosts.append(row)
        else:
            key = (row.text("AvailabilityZone"), row.text("AcceleratorName"), row.gpus())
            accel.setdefault(key, (row.price("Price"), row.price("SpotPrice")))  # first of duplicate rows
    out: list[Offering] = []
    for row in hosts:
        itype, zone = row.text("InstanceType"), row.text("AvailabilityZone")
        gpu = gcp_gpu_of(itype)
        if gpu is None or (zone, gpu[0], gpu[1]) not in accel:
            skipped["of host VMs that are not a2/a3 GPU machine types (skipped)" if gpu is None
                    else "of host VMs with no accelerator row for their zone (skipped)"] += 1
            continue
        a_od, a_spot = accel[(zone, gpu[0], gpu[1])]
        h_od, h_spot = row.price("Price"), row.price("SpotPrice")
        od = h_od + a_od if h_od is not None and a_od is not None else None
        spot = h_spot + a_spot if h_spot is not None and a_spot is not None else None
        if spot is not None and od is not None and spot >= od:
            spot = None  # catalog quirk: spot above on-demand (documented, not reported)
        pair = _pair("gcp", row.text("Region"), zone, itype, gpu[0], gpu[1], od, spot)
        if not pair:
            skipped[NO_PRICE] += 1
        out += pair
    if not hosts:
        skipped["of accelerators but no host-VM row to add them to (skipped)"] += len(accel)
    return _usable(path, out, skipped)


LOADERS = {"aws": load_aws, "gcp": load_gcp, "azure": load_azure}


def catalog_dir() -> Path:
    """The staged catalog under the shared data folder when it holds any cloud's file (plain or
    gzip-compressed), else the bundled copy."""
    shared = shared_data_dir() / SHARED_SUBDIR
    staged = any((shared / f).exists() or (shared / f"{f}.gz").exists() for f in FILES.values())
    return shared if staged else BUNDLED_DIR


def load_catalog(directory: Path | None = None, providers: Sequence[str] = PROVIDERS,
                 ) -> list[Offering]:
    """All offerings of ``providers`` from a folder holding the SkyPilot-format CSVs (or one such file).

    A folder's file may be gzip-compressed (``aws_v7_vms_gpu_subset.csv.gz``); each file read must
    yield at least one offering. One file of a cloud not in ``providers`` gives no offerings.
    """
    directory = directory or catalog_dir()
    unknown = [p for p in providers if p not in LOADERS]
    if unknown:
        raise InputError(f"unknown provider(s) {', '.join(unknown)}; valid: {', '.join(LOADERS)}")
    if not directory.exists():
        raise InputError(f"price catalog {directory} does not exist; give a catalog folder or one of "
                         f"{', '.join(FILES.values())}")
    if directory.is_file():
        name = next((p for p, f in FILES.items() if directory.name == f or directory.name.startswith(p)),
                    None)
        if name is None:
            raise InputError(f"{directory}: cannot tell which cloud it prices; name it like "
                             f"{', '.join(FILES.values())}")
        return LOADERS[name](directory) if name in providers else []
    offerings: list[Offering] = []
    for name in providers:
        path = next((p for p in (directory / FILES[name], directory / f"{FILES[name]}.gz") if p.exists()), None)
        if path is not None:
            offerings += LOADERS[name](path)
    if not offerings:
        raise InputError(f"no price catalog files in {directory}; expected {', '.join(FILES.values())}")
    return offerings
