"""The AWS slice of the offline catalog, region/zone checks and instance -> Offering mapping.

The catalog names zones by AWS zone *ID* (``use1-az1``), which is the same physical zone in every
account; EC2 instances report zone *names* (``us-east-1b``), which differ per account. ``Zones``
keeps the per-region map from DescribeAvailabilityZones.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from burster.errors import ConfigError, NotFoundError
from burster.model import Market, Offering

PROVIDER = "aws"
OfferKey = tuple[str, str, Market]  # (zone id, instance type, market)


def close(word: str, choices: Iterable[str], n: int = 3) -> str:
    """'did you mean ...' text listing close matches, or '' when none."""
    matches = difflib.get_close_matches(word, sorted(set(choices)), n=n, cutoff=0.5)
    return f"; did you mean {', '.join(matches)}?" if matches else ""


class Inventory:
    """Catalog offerings of the configured regions, indexed for lookups."""

    def __init__(self, catalog: Sequence[Offering], regions: Sequence[str]) -> None:
        self.all = [o for o in catalog if o.provider == PROVIDER]
        self.regions = tuple(regions)
        self.offerings = [o for o in self.all if o.region in self.regions]
        self.by_key: dict[OfferKey, Offering] = {(o.zone, o.instance_type, o.market): o
                                                 for o in self.offerings}
        self.shapes: dict[str, tuple[str, int]] = {o.instance_type: (o.gpu_model, o.gpus_per_node)
                                                   for o in self.all}

    def types_in(self, region: str) -> list[str]:
        return sorted({o.instance_type for o in self.offerings if o.region == region})

    def check_regions(self, known_regions: Iterable[str]) -> None:
        """ConfigError for a region that is neither an AWS region nor in the catalog."""
        known = set(known_regions) | {o.region for o in self.all}
        for region in self.regions:
            if region not in known:
                raise ConfigError(
                    f"clouds.aws.regions: unknown AWS region {region!r}{close(region, known)} "
                    f"(regions in the price catalog: {', '.join(sorted({o.region for o in self.all}))})")

    def check_offering(self, offering: Offering) -> None:
        """Raise when ``offering`` cannot be launched by this adapter, naming close matches."""
        if offering.provider != PROVIDER:
            raise ConfigError(f"aws adapter asked to launch {offering.key}, an offering of "
                              f"{offering.provider!r}")
        if offering.market not in (Market.SPOT, Market.ON_DEMAND):
            raise ConfigError(f"aws launches spot or on_demand offerings, not {offering.market.value} "
                              f"({offering.key})")
        if offering.region not in self.regions:
            raise ConfigError(f"aws: region {offering.region!r} of {offering.key} is not in "
                              f"clouds.aws.regions ({', '.join(self.regions)}); add it there")
        if offering.instance_type not in self.shapes:
            raise NotFoundError(
                f"aws: unknown GPU instance type {offering.instance_type!r}"
                f"{close(offering.instance_type, self.shapes)}; the catalog lists "
                f"{len(self.shapes)} GPU types (burster/data/prices)",
                provider=PROVIDER, offering_key=offering.key)

    def lookup(self, region: str, zone_id: str, instance_type: str, market: Market,
               view: dict[OfferKey, Offering] | None = None) -> Offering:
        """The Offering an instance runs as; unknown shapes get price 0 (and a 1-GPU placeholder)."""
        key = (zone_id, instance_type, market)
        if view and key in view:
            return view[key]
        if key in self.by_key:
            return self.by_key[key]
        same = next((o for o in self.all if o.instance_type == instance_type and o.market == market
                     and o.region == region), None)
        if same is not None:
            return replace(same, zone=zone_id)
        gpu, gpus = self.shapes.get(instance_type, ("", 1))
        return Offering(PROVIDER, region, zone_id, instance_type, gpu, gpus, market, 0.0)


class Zones:
    """Zone name <-> zone id per region, from DescribeAvailabilityZones (cached for the process)."""

    def __init__(self, describe: Callable[[str], list[dict[str, str]]]) -> None:
        self._describe = describe
        self._by_region: dict[str, dict[str, str]] = {}  # region -> name -> id

    def _load(self, region: str) -> dict[str, str]:
        if region not in self._by_region:
            zones = self._describe(region)
            self._by_region[region] = {z["ZoneName"]: z["ZoneId"] for z in zones
                                       if "ZoneName" in z and "ZoneId" in z}
        return self._by_region[region]

    def id_of(self, region: str, zone_name: str) -> str:
        """Zone id for a zone name; the name itself when the map does not know it."""
        return self._load(region).get(zone_name, zone_name)

    def name_of(self, region: str, zone_id: str) -> str:
        names = {zid: name for name, zid in self._load(region).items()}
        if zone_id in names:
            return names[zone_id]
        if zone_id in self._load(region):  # already a zone name
            return zone_id
        raise NotFoundError(
            f"aws: zone {zone_id!r} does not exist in {region}{close(zone_id, names)} "
            f"(zone ids there: {', '.join(sorted(names))})", provider=PROVIDER)
