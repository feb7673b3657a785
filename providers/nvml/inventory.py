"""Read this host's NVIDIA GPUs with NVML: model, memory, utilization and compute processes.

NVML failures become Burster errors at this boundary: a host where NVML cannot start (no driver,
driver not loaded, no permission) raises ``GpuUnavailableError`` with a plain message; a failing
query on a GPU raises ``ProviderError``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from burster.errors import ProviderError

MIB = 1024 * 1024

# NVML error class name -> what it means on this host and what to do.
_INIT_FAILURES = {
    "NVMLError_LibraryNotFound": "no NVIDIA driver found on this host (libnvidia-ml.so could not be loaded); "
                                 "install the driver or run the agent on a GPU node",
    "NVMLError_DriverNotLoaded": "the NVIDIA driver is installed but not loaded on this host; "
                                 "load the kernel module (nvidia-smi should work) or reboot the node",
    "NVMLError_NoPermission": "no permission to use NVML on this host; run the agent as a user that can "
                              "open /dev/nvidia* (nvidia-smi should work for it)",
    "NVMLError_LibRmVersionMismatch": "the NVIDIA driver library and kernel module versions differ on this host; "
                                      "reboot the node or reinstall the driver",
    "NVMLError_FunctionNotFound": "the NVIDIA driver on this host is too old for NVML queries the agent needs; "
                                  "upgrade the driver",
}


class GpuUnavailableError(ProviderError):
    """NVML cannot start on this host, so there are no GPUs to report."""


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A compute process on a GPU; ``used_memory_mib`` is None where the driver does not say."""

    pid: int
    used_memory_mib: int | None


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One GPU as NVML reports it now; ``utilization_pct`` is None where the GPU does not support it."""

    index: int
    uuid: str
    model: str
    memory_total_mib: int
    memory_used_mib: int
    utilization_pct: int | None
    processes: tuple[GpuProcess, ...]


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _load() -> Any:
    try:
        import pynvml
    except ImportError:
        raise GpuUnavailableError("the nvidia-ml-py package is not installed; pip install nvidia-ml-py",
                                  provider="nvml") from None
    return pynvml


def _start(nvml: Any) -> None:
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        name = type(err).__name__
        message = _INIT_FAILURES.get(name, f"NVML could not start on this host ({name}: {err})")
        raise GpuUnavailableError(message, provider="nvml") from None


def _utilization(nvml: Any, handle: Any) -> int | None:
    try:
        return int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    except nvml.NVMLError_NotSupported:
        return None


def _older_driver(nvml: Any, err: Exception) -> bool:
    """Whether ``err`` says the driver lacks the v3 process query: NVMLLibraryMismatchError (no NVMLError)
    from nvidia-ml-py 12.550+, or NVMLError_FunctionNotFound from 12.535, which calls v3 unguarded."""
    mismatch = getattr(nvml, "NVMLLibraryMismatchError", None)
    return isinstance(err, nvml.NVMLError_FunctionNotFound) or (mismatch is not None and isinstance(err, mismatch))


def _processes(nvml: Any, handle: Any) -> tuple[GpuProcess, ...]:
    try:
        procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except nvml.NVMLError_NotSupported:
        return ()
    except Exception as err:
        if not _older_driver(nvml, err):
            raise
        v2 = getattr(nvml, "nvmlDeviceGetComputeRunningProcesses_v2", None)  # (12.535 has none)
        if v2 is None:
            return ()
        try:  # e.g. an R470 driver: the v2 call it has
            procs = v2(handle)
        except nvml.NVMLError:
            return ()
    return tuple(GpuProcess(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory) // MIB)
                 for p in procs)


def _gpu(nvml: Any, index: int) -> GpuInfo:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    return GpuInfo(index=index, uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
                   model=_text(nvml.nvmlDeviceGetName(handle)), memory_total_mib=int(memory.total) // MIB,
                   memory_used_mib=int(memory.used) // MIB, utilization_pct=_utilization(nvml, handle),
                   processes=_processes(nvml, handle))


def read_inventory() -> tuple[GpuInfo, ...]:
    """Every GPU NVML sees on this host, in index order."""
    nvml = _load()
    _start(nvml)
    index = -1
    try:
        gpus = []
        for index in range(nvml.nvmlDeviceGetCount()):
            gpus.append(_gpu(nvml, index))
        return tuple(gpus)
    except nvml.NVMLError as err:
        where = f"GPU {index}" if index >= 0 else "the GPU count"
        raise ProviderError(f"NVML failed reading {where}: {type(err).__name__}: {err}", provider="nvml") from None
    finally:
        _stop(nvml)


def _stop(nvml: Any) -> None:
    """Shut NVML down; a failure there changes nothing read, so it neither hides the read's error nor
    turns a good read into a traceback."""
    with contextlib.suppress(nvml.NVMLError):
        nvml.nvmlShutdown()
