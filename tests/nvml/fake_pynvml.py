"""A small test double of NVIDIA's ``pynvml`` module (a third-party library): two GPUs by default.

Installed into ``sys.modules['pynvml']`` by the tests so the real agent code runs against it. It
mirrors the library's shape: error classes named ``NVMLError_*`` deriving from ``NVMLError``,
memory in bytes, utilization as ``.gpu``, processes with ``.pid`` and ``.usedGpuMemory`` (None
when the driver does not say).
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

MIB = 1024 * 1024


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return f"fake NVML error {self.value}"


ERRORS = {"NVMLError_LibraryNotFound": 12, "NVMLError_DriverNotLoaded": 9, "NVMLError_NoPermission": 4,
          "NVMLError_NotSupported": 3, "NVMLError_GpuIsLost": 15, "NVMLError_Unknown": 999,
          "NVMLError_LibRmVersionMismatch": 18, "NVMLError_FunctionNotFound": 13, "NVMLError_Uninitialized": 1}


@dataclass
class FakeGpu:
    name: str | bytes
    uuid: str | bytes
    total_mib: int
    used_mib: int
    util_pct: int | None  # None: NVMLError_NotSupported
    procs: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, used MiB or None)
    lost: bool = False  # memory query raises NVMLError_GpuIsLost
    old_driver: bool = False  # the unversioned (v3) process query raises NVMLLibraryMismatchError; v2 works
    # (with make(release="12.535"): it raises NVMLError_FunctionNotFound, and there is no v2 wrapper)


def default_gpus() -> list[FakeGpu]:
    return [FakeGpu("NVIDIA H100 80GB HBM3", "GPU-aaaa-0001", 81559, 40960, 87, [(4242, 40000), (4343, None)]),
            FakeGpu(b"NVIDIA A100-SXM4-40GB", "GPU-bbbb-0002", 40960, 0, None)]


def make(gpus: list[FakeGpu] | None = None, init_error: str | None = None, shutdown_error: str | None = None,
         release: str = "13") -> Any:
    """A module object standing in for ``pynvml``; ``mod.calls`` records init/shutdown. ``release="12.535"``
    has that nvidia-ml-py's shape: no NVMLLibraryMismatchError and no ``_v2`` process query."""
    mod: Any = types.ModuleType("pynvml")
    mod.NVMLError = NVMLError
    legacy = release == "12.535"
    if not legacy:
        mod.NVMLLibraryMismatchError = type("NVMLLibraryMismatchError", (Exception,), {})
    for name, code in ERRORS.items():
        setattr(mod, name, type(name, (NVMLError,), {"__init__": lambda self, c=code: NVMLError.__init__(self, c)}))
    devices = default_gpus() if gpus is None else gpus
    mod.calls = []

    def init() -> None:
        mod.calls.append("init")
        if init_error:
            raise getattr(mod, init_error)()

    def utilization(h: FakeGpu) -> Any:
        if h.util_pct is None:
            raise mod.NVMLError_NotSupported()
        return types.SimpleNamespace(gpu=h.util_pct, memory=0)

    def memory(h: FakeGpu) -> Any:
        if h.lost:
            raise mod.NVMLError_GpuIsLost()
        return types.SimpleNamespace(total=h.total_mib * MIB, used=h.used_mib * MIB,
                                     free=(h.total_mib - h.used_mib) * MIB)

    def processes_v2(h: FakeGpu) -> list[Any]:
        return [types.SimpleNamespace(pid=pid, usedGpuMemory=None if mib is None else mib * MIB)
                for pid, mib in h.procs]

    def processes(h: FakeGpu) -> list[Any]:
        if h.old_driver and legacy:  # 12.535 calls v3 unguarded: the driver has no such function
            raise mod.NVMLError_FunctionNotFound()
        if h.old_driver:  # pynvml's throwOnVersionMismatch: a plain Exception, not an NVMLError
            raise mod.NVMLLibraryMismatchError("Unversioned function called and the pyNVML version does not match")
        return processes_v2(h)

    def shutdown() -> None:
        mod.calls.append("shutdown")
        if shutdown_error:
            raise getattr(mod, shutdown_error)()

    mod.nvmlInit = init
    mod.nvmlShutdown = shutdown
    mod.nvmlDeviceGetCount = lambda: len(devices)
    mod.nvmlDeviceGetHandleByIndex = lambda i: devices[i]
    mod.nvmlDeviceGetName = lambda h: h.name
    mod.nvmlDeviceGetUUID = lambda h: h.uuid
    mod.nvmlDeviceGetMemoryInfo = memory
    mod.nvmlDeviceGetUtilizationRates = utilization
    mod.nvmlDeviceGetComputeRunningProcesses = processes
    if not legacy:
        mod.nvmlDeviceGetComputeRunningProcesses_v2 = processes_v2
    return mod
