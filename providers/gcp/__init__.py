"""GCP adapter: Compute Engine GPU instances (A2/A3), Spot or standard, priced from the Billing Catalog.

Importing this package needs no Google SDK; ``from_config`` imports google-cloud-compute and
google-cloud-billing when it builds the clients.
"""

from providers.gcp.adapter import GcpProvider, from_config

__all__ = ["GcpProvider", "from_config"]
