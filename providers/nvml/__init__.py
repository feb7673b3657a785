"""On-prem GPU inventory through NVIDIA's management library (NVML, the ``pynvml`` package).

Importing this package does not load NVML; ``read_inventory`` does, and shuts it down again.
"""

from providers.nvml.inventory import GpuInfo, GpuProcess, GpuUnavailableError, read_inventory

__all__ = ["GpuInfo", "GpuProcess", "GpuUnavailableError", "read_inventory"]
