"""How each cloud turns seconds run into seconds billed (contract module: standard library only).

AWS and GCP bill Linux VMs per second with a 60 s minimum. Azure bills per full minute a VM runs,
extra seconds free: "If my virtual machine ran for 6 minutes and 45 seconds, how much will I be
billed? We bill for each full minute your VM runs ... you'll be billed for 6 minutes"
(azure.microsoft.com/en-us/resources/knowledge-center/if-my-virtual-machine-ran-for-6-minutes-and-45/).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BillingRule:
    increment_s: float
    minimum_s: float
    round_up: bool = True

    def billed_s(self, run_s: float) -> float:
        if run_s <= 0:
            return 0.0
        units = run_s / self.increment_s
        whole = math.ceil(units - 1e-9) if self.round_up else math.floor(units + 1e-9)
        return max(whole * self.increment_s, self.minimum_s)

    def expected_billed_s(self, run_s: float) -> float:
        """The bill of a run of about ``run_s`` seconds, priced before it happens. Where it will end
        within its last increment is not known ahead, so the rounding is priced at its mean: half
        an increment more when rounded up, half less when rounded down (Azure's free extra
        seconds); at least the minimum. Linear in the run, a comparison of two forecasts does not
        flip back and forth as the clock crosses each increment."""
        if run_s <= 0:
            return 0.0
        half = self.increment_s / 2
        return max(run_s + (half if self.round_up else -half), self.minimum_s, 0.0)


BILLING: dict[str, BillingRule] = {
    "aws": BillingRule(increment_s=1, minimum_s=60),
    "gcp": BillingRule(increment_s=1, minimum_s=60),
    "azure": BillingRule(increment_s=60, minimum_s=0, round_up=False),
}
DEFAULT_BILLING = BillingRule(increment_s=1, minimum_s=60)


def billing_rule(provider: str) -> BillingRule:
    return BILLING.get(provider, DEFAULT_BILLING)


# AWS does not charge for a (Linux) Spot Instance that EC2 itself interrupts within its first hour;
# one the customer stops or terminates is billed per second as usual (EC2 User Guide, "Billing for
# interrupted Spot Instances").
INTERRUPTED_SPOT_FREE_S: dict[str, float] = {"aws": 3600.0}


def interrupted_spot_billed_s(provider: str, run_s: float) -> float:
    """Seconds billed for a spot node its cloud took back after ``run_s`` seconds."""
    if run_s < INTERRUPTED_SPOT_FREE_S.get(provider, 0.0):
        return 0.0
    return billing_rule(provider).billed_s(run_s)
