"""``burster offerings``: list catalog offerings, filtered, cheapest effective $/GPU-hour first."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from burster.cli import finite_float
from burster.errors import ConfigError
from burster.offer_query import MARKETS, OfferFilter, RankedOffer, query_offers


def register(sub: Any) -> None:
    p = sub.add_parser(
        "offerings", help="list catalog offerings, filtered, sorted by effective $/GPU-h",
        description="List GPU offerings of the offline price catalog (SkyPilot-derived: ../shared/data's when\n"
                    "present, else the bundled copy), cheapest effective $ per useful GPU-hour first. The effective\n"
                    "price is the cost model's: price per GPU-hour plus expected spot rework\n"
                    "(cost.spot_interruptions_per_hour x (15-minute half checkpoint + cost.restart_overhead_s);\n"
                    "where the notice leaves time to checkpoint, e.g. AWS's two minutes, the checkpoint write\n"
                    "(cost.checkpoint_write_s) in place of the half checkpoint).",
        epilog="examples:\n  burster offerings --gpu h100 --market spot --limit 5\n"
               "  burster offerings --provider gcp --region us-central1 --max-price 2.5 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--gpu", metavar="MODEL", help="GPU model, case-insensitive (e.g. A100, A100-80GB, H100, T4)")
    p.add_argument("--market", metavar="MARKET", help=f"market: {' or '.join(MARKETS)}")
    p.add_argument("--region", metavar="REGION", help="cloud region (e.g. us-east-1, us-central1, eastus)")
    p.add_argument("--provider", metavar="CLOUD", help="cloud: aws, gcp or azure")
    p.add_argument("--max-price", type=finite_float, metavar="USD",
                   help="keep offerings at most this effective $/GPU-hour")
    p.add_argument("--prices", type=Path, metavar="PATH", help="price catalog folder or file (default: as above)")
    p.add_argument("--config", type=Path, metavar="PATH",
                   help="burster TOML config whose [cost] section prices spot rework")
    p.add_argument("--limit", type=int, default=50, metavar="N", help="show at most N rows; 0 for all (default: 50)")
    p.add_argument("--json", action="store_true", help="print a JSON list of records instead of the table")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from burster.app import cost_model
    from burster.catalog import load_catalog
    from burster.config import load_config

    if args.limit < 0:
        raise ConfigError(f"--limit must be 0 (all) or more, got {args.limit}")
    if args.prices is not None and not args.prices.exists():
        raise ConfigError(f"--prices: {args.prices} does not exist; give a catalog folder or one of its CSV files "
                          "(aws_v7_vms_gpu_subset.csv, gcp_v7_vms_gpu_subset.csv, azure_v6_vms_gpu_subset.csv)")
    cost = cost_model(load_config(args.config))
    offerings = load_catalog(args.prices)
    flt = OfferFilter(gpu=args.gpu, market=args.market, region=args.region, provider=args.provider,
                      max_price=args.max_price)
    matching = query_offers(offerings, flt, cost.effective_price_per_gpu_hour)
    shown = matching[:args.limit] if args.limit else matching
    if args.json:
        print(json.dumps([r.record() for r in shown], indent=2))
    elif not shown:
        print("no offerings match these filters", file=sys.stderr)
    else:
        _print_table(shown, f"{len(shown)} of {len(matching)} matching offerings ({len(offerings)} in the catalog), "
                            "cheapest effective $/GPU-h first")
    return 0


_WIDE = ("provider", "region", "zone", "instance type", "GPU", "GPUs", "market", "$/h", "$/GPU-h", "effective $/GPU-h")
_NARROW = ("offering", "GPUs", "$/h", "eff. $/GPU-h")
_LEFT = {"provider", "region", "zone", "instance type", "GPU", "market", "offering"}


def _cells(r: RankedOffer) -> dict[str, str]:
    o = r.offering
    return {"provider": o.provider, "region": o.region, "zone": o.zone, "instance type": o.instance_type,
            "GPU": o.gpu_model, "GPUs": str(o.gpus_per_node), "market": o.market.value, "offering": o.key,
            "$/h": f"{o.price_per_hour_usd:,.3f}", "$/GPU-h": f"{o.price_per_gpu_hour_usd:,.3f}",
            "effective $/GPU-h": f"{r.effective_usd_per_gpu_hour:,.3f}",
            "eff. $/GPU-h": f"{r.effective_usd_per_gpu_hour:,.3f}"}


def _print_table(ranked: list[RankedOffer], title: str, console: Any = None) -> None:
    """Every column on a wide console; on a narrow one (an 80-column terminal) the offering's key
    (provider/zone/instance type/market), its GPUs and prices, so that no value is cut short."""
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # piped: do not squeeze the table into 80 columns
            console = Console(width=200)
    rows = [_cells(r) for r in ranked]
    widths = {c: max(len(c), *(len(row[c]) for row in rows)) for c in (*_WIDE, *_NARROW)}
    columns = _WIDE if 1 + sum(widths[c] + 3 for c in _WIDE) <= console.width else _NARROW
    t = Table(title=title)
    for c in columns:  # the key folds onto a second line on a very narrow console; a price never does
        t.add_column(c, justify="left" if c in _LEFT else "right", min_width=widths[c] if c != "offering" else None,
                     no_wrap=c != "offering", overflow="fold")
    for row in rows:
        t.add_row(*(row[c] for c in columns))
    console.print(t)
    if columns is _NARROW:
        console.print("(narrow terminal: region, GPU, list $/GPU-h left out; --json has all)")
