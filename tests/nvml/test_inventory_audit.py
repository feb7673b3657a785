"""Audit of ``providers.nvml`` and the agent around it: the test double against the real
nvidia-ml-py, older pynvml shapes, NVML errors at each step, whole-MiB memory, and the agent's URL,
credentials and pacing."""

from __future__ import annotations

import base64
import json
import re
import socket
import sys
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from burster.cli import main
from burster.cli.agent import Controller, run_agent
from burster.errors import ProviderError
from providers.nvml import GpuProcess, GpuUnavailableError, read_inventory
from providers.nvml.inventory import _INIT_FAILURES
from tests.nvml import fake_pynvml

MIB = fake_pynvml.MIB
CALLS_USED = (
    "nvmlInit",
    "nvmlShutdown",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetComputeRunningProcesses_v2",
)


def install(monkeypatch: pytest.MonkeyPatch, mod: Any) -> Any:
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return mod


# --- the double has the real module's shape -------------------------------------------------------


def test_the_double_and_the_messages_use_the_real_error_classes_and_codes() -> None:
    """A misspelt class name (NVMLError_LibRMVersionMismatch) would never match a real error and fall
    back to the generic message; a wrong code would make the double lie."""
    import pynvml as real

    for name, code in fake_pynvml.ERRORS.items():
        cls = getattr(real, name)
        assert issubclass(cls, real.NVMLError) and real.nvmlExceptionClass(code) is cls, name
    assert set(_INIT_FAILURES) <= set(fake_pynvml.ERRORS)
    assert not issubclass(real.NVMLLibraryMismatchError, real.NVMLError)
    fake = fake_pynvml.make()
    for name in CALLS_USED:
        assert callable(getattr(real, name)) and callable(getattr(fake, name)), name
    assert {f[0] for f in real.c_nvmlMemory_t._fields_} == {"total", "free", "used"}
    assert "gpu" in {f[0] for f in real.c_nvmlUtilization_t._fields_}
    assert {"pid", "usedGpuMemory"} <= {f[0] for f in real.c_nvmlProcessInfo_v2_t._fields_}


# --- read_inventory -----------------------------------------------------------------------------


def test_names_and_uuids_in_bytes_from_an_older_pynvml_are_text(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = fake_pynvml.default_gpus()
    gpus[1].uuid = b"GPU-bbbb-0002"
    install(monkeypatch, fake_pynvml.make(gpus))
    assert [(g.uuid, g.model) for g in read_inventory()] == [
        ("GPU-aaaa-0001", "NVIDIA H100 80GB HBM3"),
        ("GPU-bbbb-0002", "NVIDIA A100-SXM4-40GB"),
    ]


def test_bytes_become_whole_mib_rounded_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """NVML gives bytes; the report has whole MiB as ints (a part MiB is not rounded up)."""
    mod = install(monkeypatch, fake_pynvml.make())
    mod.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(
        total=81559 * MIB + MIB - 1, used=40 * MIB + MIB - 1, free=0
    )
    mod.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=7, usedGpuMemory=3 * MIB - 1)]
    first = read_inventory()[0]
    assert (first.memory_total_mib, first.memory_used_mib) == (81559, 40)
    assert type(first.memory_total_mib) is int and type(first.memory_used_mib) is int
    assert first.processes == (GpuProcess(7, 2),) and type(first.processes[0].used_memory_mib) is int


def test_a_gpu_without_a_process_list_reports_none(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = install(monkeypatch, fake_pynvml.make())

    def not_supported(h: Any) -> list[Any]:
        raise mod.NVMLError_NotSupported()

    mod.nvmlDeviceGetComputeRunningProcesses = not_supported
    assert [g.processes for g in read_inventory()] == [(), ()]


def test_a_process_query_that_fails_otherwise_fails_the_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only "not supported" and an older driver mean "no list": a lost GPU is an error, not an idle GPU."""
    mod = install(monkeypatch, fake_pynvml.make())

    def lost(h: Any) -> list[Any]:
        raise mod.NVMLError_GpuIsLost()

    mod.nvmlDeviceGetComputeRunningProcesses = lost
    with pytest.raises(ProviderError, match="NVML failed reading GPU 0: NVMLError_GpuIsLost"):
        read_inventory()
    assert mod.calls == ["init", "shutdown"]


def test_an_older_driver_whose_v2_query_fails_too_reports_no_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = fake_pynvml.default_gpus()
    gpus[0].old_driver = True
    mod = install(monkeypatch, fake_pynvml.make(gpus))

    def v2_not_supported(h: Any) -> list[Any]:
        raise mod.NVMLError_NotSupported()

    mod.nvmlDeviceGetComputeRunningProcesses_v2 = v2_not_supported
    assert read_inventory()[0].processes == ()


def test_nvidia_ml_py_12_535_on_an_older_driver_still_reports(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """nvidia-ml-py 12.535.x (allowed by ``>=12``) calls the v3 process query unguarded: on an R470
    driver it raises NVMLError_FunctionNotFound, and it has no v2 wrapper to fall back on. The agent
    ended with "NVML failed reading GPU 0: NVMLError_FunctionNotFound" and sent nothing."""
    gpus = fake_pynvml.default_gpus()
    gpus[0].old_driver = True
    mod = install(monkeypatch, fake_pynvml.make(gpus, release="12.535"))
    assert main(["agent", "--once"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(g["uuid"], g["memory_used_mib"], g["processes"]) for g in report["gpus"]] == [
        ("GPU-aaaa-0001", 40960, []),
        ("GPU-bbbb-0002", 0, []),
    ]
    assert mod.calls == ["init", "shutdown"]


def test_12_535_reports_processes_where_the_driver_has_v3(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, fake_pynvml.make(release="12.535"))
    assert read_inventory()[0].processes == (GpuProcess(4242, 40000), GpuProcess(4343, None))


@pytest.mark.parametrize(("lost", "where"), [(0, "GPU 0"), (1, "GPU 1")])
def test_the_failing_gpu_is_named(monkeypatch: pytest.MonkeyPatch, lost: int, where: str) -> None:
    gpus = fake_pynvml.default_gpus()
    gpus[lost].lost = True
    install(monkeypatch, fake_pynvml.make(gpus))
    with pytest.raises(ProviderError, match=f"NVML failed reading {where}: NVMLError_GpuIsLost"):
        read_inventory()


def test_a_failing_count_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = install(monkeypatch, fake_pynvml.make())

    def unknown() -> int:
        raise mod.NVMLError_Unknown()

    mod.nvmlDeviceGetCount = unknown
    with pytest.raises(ProviderError, match="NVML failed reading the GPU count: NVMLError_Unknown"):
        read_inventory()
    assert mod.calls == ["init", "shutdown"]


def test_a_host_with_no_gpus_reports_an_empty_list(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = install(monkeypatch, fake_pynvml.make([]))
    assert main(["agent", "--once"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"] == []
    assert mod.calls == ["init", "shutdown"]


def test_a_failing_shutdown_neither_loses_the_read_nor_hides_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """pynvml's nvmlShutdown raises on a failure too (NVMLError_Uninitialized, _Unknown): raised from the
    ``finally``, it turned a good read into a traceback and replaced a GPU's error with its own."""
    install(monkeypatch, fake_pynvml.make(shutdown_error="NVMLError_Uninitialized"))
    assert [g.uuid for g in read_inventory()] == ["GPU-aaaa-0001", "GPU-bbbb-0002"]
    gpus = fake_pynvml.default_gpus()
    gpus[1].lost = True
    install(monkeypatch, fake_pynvml.make(gpus, shutdown_error="NVMLError_Unknown"))
    with pytest.raises(ProviderError, match="NVML failed reading GPU 1: NVMLError_GpuIsLost"):
        read_inventory()


@pytest.mark.parametrize(
    ("error", "words"),
    [
        ("NVMLError_LibRmVersionMismatch", "driver library and kernel module versions differ"),
        ("NVMLError_FunctionNotFound", "too old for NVML queries the agent needs; upgrade the driver"),
    ],
)
def test_init_failures_name_the_cause_and_nvml_is_not_shut_down(
    monkeypatch: pytest.MonkeyPatch, error: str, words: str
) -> None:
    mod = install(monkeypatch, fake_pynvml.make(init_error=error))
    with pytest.raises(GpuUnavailableError, match=words):
        read_inventory()
    assert mod.calls == ["init"]  # a failed nvmlInit holds nothing to shut down


def test_without_pynvml_the_agent_exits_3_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    assert main(["agent", "--once"]) == 3
    assert capsys.readouterr().err == (
        "burster: error: the nvidia-ml-py package is not installed; pip install nvidia-ml-py\n"
    )


# --- the agent around it ---------------------------------------------------------------------------


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> Any:
    return install(monkeypatch, fake_pynvml.make())


@pytest.fixture
def ipv6_server() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this host")
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append({"path": self.path, "host": self.headers.get("Host")})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6

    try:
        server = Server(("::1", 0), Handler)
    except OSError:
        pytest.skip("cannot listen on ::1")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def test_an_ipv6_controller_keeps_its_brackets(nvml: Any, ipv6_server: tuple[int, list[dict[str, Any]]]) -> None:
    """The URL was rebuilt from the bare host name: http://[::1]/ became http://::1/v1/inventory, which
    urllib reads as host ":" port 1 ("Name or service not known"), and with a port the Host header
    lost its brackets."""
    assert Controller("http://u:pw@[fd00::5]/burster", 5).shown == "http://[fd00::5]/burster/v1/inventory"
    port, seen = ipv6_server
    assert main(["agent", "--once", "--controller", f"http://[::1]:{port}/burster"]) == 0
    assert seen == [{"path": "/burster/v1/inventory", "host": f"[::1]:{port}"}]


def test_percent_encoded_credentials_are_decoded(nvml: Any) -> None:
    controller = Controller("http://ag%40ent:p%3As%2Fs@127.0.0.1:9", 5)
    token = controller.headers["Authorization"].removeprefix("Basic ")
    assert base64.b64decode(token) == b"ag@ent:p:s/s"
    assert "p%3A" not in controller.shown and "ag%40" not in controller.shown


def test_a_run_of_n_reports_waits_between_them_not_after(nvml: Any) -> None:
    sleeps: list[float] = []
    reports: list[dict[str, Any]] = []
    run_agent(read_inventory, reports.append, count=3, interval_s=7.5, sleep=sleeps.append)
    assert len(reports) == 3 and sleeps == [7.5, 7.5]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", r["time"]) for r in reports)


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--interval", "86400"], 0),
        (["--timeout", "86400"], 0),
        (["--interval", "86400.5"], 2),
        (["--timeout", "0"], 2),
        (["--interval", "-1"], 2),
    ],
)
def test_interval_and_timeout_bounds(nvml: Any, capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> None:
    assert main(["agent", "--once", *argv]) == code
    if code:
        assert "--interval and --timeout must be seconds in (0, 86400]" in capsys.readouterr().err
