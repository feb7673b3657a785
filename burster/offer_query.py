"""Filter and rank catalog offerings by effective $/GPU-hour (what ``burster offerings`` lists).

Pure: the caller passes the offerings and the pricing function (the cost model's
``effective_price_per_gpu_hour``). Filter values are matched case-insensitively against the
values present in the catalog; an unknown one is an ``InputError`` naming close matches.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from burster.errors import InputError
from burster.model import Market, Offering

MARKETS = (Market.SPOT.value, Market.ON_DEMAND.value)
SHOW_ALL_VALID = 40  # list every valid value when there are at most this many
# effective $/GPU-hour are rounded to this many decimals (and node prices compared so): a node's price
# split over its GPUs (GCP's catalog sums a VM's and its GPUs' prices) differs from the same price per
# GPU in the last bits of a float, which ordered equal prices at random and kept some from --max-price
PRICE_DECIMALS = 9


@dataclass(frozen=True, slots=True)
class OfferFilter:
    """What to keep; None keeps everything. ``max_price`` bounds the effective $/GPU-hour."""

    gpu: str | None = None
    market: str | None = None
    region: str | None = None
    provider: str | None = None
    max_price: float | None = None


@dataclass(frozen=True, slots=True)
class RankedOffer:
    """An offering with its effective $ per useful GPU-hour."""

    offering: Offering
    effective_usd_per_gpu_hour: float

    def record(self) -> dict[str, Any]:
        o = self.offering
        return {"provider": o.provider, "region": o.region, "zone": o.zone, "instance_type": o.instance_type,
                "gpu_model": o.gpu_model, "gpus_per_node": o.gpus_per_node, "market": o.market.value,
                "price_per_hour_usd": o.price_per_hour_usd, "price_per_gpu_hour_usd": o.price_per_gpu_hour_usd,
                "effective_usd_per_gpu_hour": self.effective_usd_per_gpu_hour}


def _fold(text: str) -> str:
    return text.strip().casefold()


def _resolve(what: str, flag: str, given: str, valid: Iterable[str], fold: Callable[[str], str] = _fold) -> str:
    """The catalog's spelling of ``given`` (equal once both are ``fold``-ed: case-insensitive), or an
    InputError that quotes ``given`` as typed, with close matches."""
    choices = sorted(set(valid))
    by_folded = {fold(v): v for v in choices}
    if fold(given) in by_folded:
        return by_folded[fold(given)]
    close = [by_folded[c] for c in difflib.get_close_matches(fold(given), list(by_folded), n=3, cutoff=0.5)]
    hint = f"; did you mean {' or '.join([', '.join(close[:-1]), close[-1]] if len(close) > 1 else close)}?" \
        if close else ""
    listed = f" Valid: {', '.join(choices)}." if len(choices) <= SHOW_ALL_VALID else ""
    raise InputError(f"{flag}: unknown {what} {given!r}{hint or '.'}{listed}")


def _market(given: str) -> str:
    """``on-demand`` and ``on demand`` are ``on_demand``."""
    return _resolve("market", "--market", given, MARKETS,
                    lambda text: _fold(text).replace("-", "_").replace(" ", "_"))


def resolve_filter(offerings: Sequence[Offering], flt: OfferFilter) -> OfferFilter:
    """``flt`` with each value spelled as in the catalog; raises InputError for unknown values."""
    if flt.max_price is not None and not (flt.max_price >= 0 and math.isfinite(flt.max_price)):
        raise InputError(f"--max-price: must be 0 or more $/GPU-hour, got {flt.max_price}; give a finite "
                         "number, or leave the flag out for no limit")
    return OfferFilter(
        gpu=None if flt.gpu is None else _resolve("GPU model", "--gpu", flt.gpu, (o.gpu_model for o in offerings)),
        market=None if flt.market is None else _market(flt.market),
        region=None if flt.region is None else _resolve("region", "--region", flt.region,
                                                          (o.region for o in offerings)),
        provider=None if flt.provider is None else _resolve("provider", "--provider", flt.provider,
                                                            (o.provider for o in offerings)),
        max_price=flt.max_price,
    )


def _keeps(flt: OfferFilter, o: Offering) -> bool:
    return ((flt.gpu is None or o.gpu_model == flt.gpu) and (flt.market is None or o.market.value == flt.market)
            and (flt.region is None or o.region == flt.region)
            and (flt.provider is None or o.provider == flt.provider))


def _order(r: RankedOffer) -> tuple[float, float, str, str, str, str]:
    o = r.offering
    return (r.effective_usd_per_gpu_hour, round(o.price_per_hour_usd, PRICE_DECIMALS), o.provider, o.region,
            o.zone, o.key)


def query_offers(offerings: Sequence[Offering], flt: OfferFilter, price: Callable[[Offering], float],
                 limit: int | None = None) -> list[RankedOffer]:
    """Offerings that pass ``flt``, cheapest effective $/GPU-hour first, at most ``limit`` of them."""
    flt = resolve_filter(offerings, flt)
    ranked = [RankedOffer(o, round(price(o), PRICE_DECIMALS)) for o in offerings if _keeps(flt, o)]
    if flt.max_price is not None:
        ranked = [r for r in ranked if r.effective_usd_per_gpu_hour <= flt.max_price]
    ranked.sort(key=_order)
    return ranked if limit is None else ranked[:limit]
