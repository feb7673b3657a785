"""The offline price catalog: SkyPilot catalog CSVs (AWS, GCP, Azure) turned into Offerings.

Format notes (see burster/data/prices/NOTICE.md): AWS and Azure rows price the whole instance;
GCP GPU machine types are priced as the host-VM row plus the accelerator row of the same zone.
An empty SpotPrice means no spot offer. Known catalog quirks are corrected here and listed in
``QUIRKS``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from burster.errors import InputError
from burster.model import Market, Offering

BUNDLED_DIR = Path(__file__).parent / "data" / "prices"
SHARED_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "cloud_gpu_prices_skypilot_catalog"
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
        if value < 0:
            raise InputError(f"{self.file}: row {self.line}, column {column!r}: negative value {value}")
        return value


def _rows(path: Path, required: Iterable[str]) -> list[_Row]:
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise InputError(f"{path}: header lacks column(s) {', '.join(missing)}")
            return [_Row(path, i + 2, row) for i, row in enumerate(reader)]
    except FileNotFoundError:
        raise InputError(f"price catalog {path} does not exist") from None


def _pair(provider: str, region: str, zone: str, itype: str, gpu: str, gpus: int,
          on_demand: float | None, spot: float | None) -> list[Offering]:
    out = []
    if on_demand:
        out.append(Offering(provider, region, zone, itype, gpu, gpus, Market.ON_DEMAND, on_demand))
    if spot:
        out.append(Offering(provider, region, zone, itype, gpu, gpus, Market.SPOT, spot))
    return out


def load_aws(path: Path) -> list[Offering]:
    cols = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region",
            "AvailabilityZone")
    seen: dict[tuple[str, str, str], Offering] = {}
    for row in _rows(path, cols):
        gpus = int(row.number("AcceleratorCount") or 0)
        if gpus <= 0:
            continue
        for o in _pair("aws", row.text("Region"), row.text("AvailabilityZone"), row.text("InstanceType"),
                       row.text("AcceleratorName"), gpus, row.number("Price", optional=True),
                       row.number("SpotPrice", optional=True)):
            seen.setdefault((o.zone, o.instance_type, o.market.value), o)  # first of duplicate rows
    return list(seen.values())


def load_azure(path: Path) -> list[Offering]:
    cols = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region")
    out: list[Offering] = []
    for row in _rows(path, cols):
        itype = row.text("InstanceType")
        gpus = QUIRKS.get(("azure", itype)) or int(row.number("AcceleratorCount") or 0)
        price = row.number("Price", optional=True)
        spot = row.number("SpotPrice", optional=True)
        if spot is not None and price is not None and spot >= price:
            spot = None  # no spot discount recorded: treat as no spot offer
        region = row.text("Region")
        out += _pair("azure", region, region, itype, row.text("AcceleratorName"), gpus, price, spot)
    return out


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
    for row in _rows(path, cols):
        if row.text("InstanceType"):
            hosts.append(row)
        else:
            key = (row.text("AvailabilityZone"), row.text("AcceleratorName"),
                   int(row.number("AcceleratorCount") or 0))
            accel[key] = (row.number("Price", optional=True), row.number("SpotPrice", optional=True))
    out: list[Offering] = []
    for row in hosts:
        itype, zone = row.text("InstanceType"), row.text("AvailabilityZone")
        gpu = gcp_gpu_of(itype)
        if gpu is None or (zone, gpu[0], gpu[1]) not in accel:
            continue
        a_od, a_spot = accel[(zone, gpu[0], gpu[1])]
        h_od, h_spot = row.number("Price", optional=True), row.number("SpotPrice", optional=True)
        od = h_od + a_od if h_od is not None and a_od is not None else None
        spot = h_spot + a_spot if h_spot is not None and a_spot is not None else None
        if spot is not None and od is not None and spot >= od:
            spot = None  # catalog quirk: spot above on-demand
        out += _pair("gcp", row.text("Region"), zone, itype, gpu[0], gpu[1], od, spot)
    return out


LOADERS = {"aws": load_aws, "gcp": load_gcp, "azure": load_azure}


def catalog_dir() -> Path:
    """../shared/data's catalog when present (the full staged subset), else the bundled copy."""
    return SHARED_DIR if (SHARED_DIR / FILES["aws"]).exists() else BUNDLED_DIR


def load_catalog(directory: Path | None = None, providers: Sequence[str] = ("aws", "gcp", "azure"),
                 ) -> list[Offering]:
    """All offerings of ``providers`` from a folder holding the SkyPilot-format CSVs."""
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
        return LOADERS[name](directory)
    offerings: list[Offering] = []
    for name in providers:
        path = directory / FILES[name]
        if path.exists():
            offerings += LOADERS[name](path)
    if not offerings:
        raise InputError(f"no price catalog files in {directory}; expected {', '.join(FILES.values())}")
    return offerings
