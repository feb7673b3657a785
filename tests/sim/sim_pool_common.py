"""The start time and the two burst offerings the simulated pool's tests share."""

from __future__ import annotations

from datetime import UTC, datetime

from burster.model import Market, Offering

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SPOT = Offering("azure", "eastus", "eastus", "Standard_NC6s_v3", "V100", 1, Market.SPOT, 0.9)
ON_DEMAND = Offering("aws", "us-east-1", "use1-az1", "p3.2xlarge", "V100", 1, Market.ON_DEMAND, 3.06)
