"""Azure adapter. The Azure SDK (azure-mgmt-compute, azure-identity) is imported only when an adapter
is built or called, so Burster imports without it. See docs/providers/azure.md."""

from __future__ import annotations

from providers.azure.adapter import AzureProvider
from providers.azure.factory import from_config

__all__ = ["AzureProvider", "from_config"]
