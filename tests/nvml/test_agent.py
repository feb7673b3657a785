"""`burster agent` end to end: the real no-driver path, and the real agent over a pynvml test double
posting to a real local HTTP server."""

from __future__ import annotations

import base64
import ctypes.util
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from burster.cli import main
from burster.cli.agent import run_agent
from burster.errors import ProviderError
from providers.nvml import read_inventory
from tests.nvml import fake_pynvml
from tests.nvml.recorder import Recorder

BURSTER = Path(sys.executable).with_name("burster")
NO_LIBRARY = ("no NVIDIA driver found on this host (libnvidia-ml.so could not be loaded); "
              "install the driver or run the agent on a GPU node")


def _real_nvml_works() -> bool:
    import pynvml
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


def test_real_nvml_through_the_installed_command() -> None:
    """No fakes: on a host without a driver it exits 3 with the plain message; on a GPU host it reports."""
    done = subprocess.run([str(BURSTER), "agent", "--once"], capture_output=True, text=True, timeout=60)
    if _real_nvml_works():
        assert done.returncode == 0, done.stderr
        gpus = json.loads(done.stdout)["gpus"]
        assert gpus and all(g["uuid"].startswith(("GPU-", "MIG-")) for g in gpus)
        return
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    if ctypes.util.find_library("nvidia-ml") is None:
        assert done.stderr == f"burster: error: {NO_LIBRARY}\n"
    else:
        assert done.stderr.startswith("burster: error: ") and "NVIDIA" in done.stderr


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> Any:
    mod = fake_pynvml.make()
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return mod


EXPECTED_GPUS = [
    {"index": 0, "uuid": "GPU-aaaa-0001", "model": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559,
     "memory_used_mib": 40960, "utilization_pct": 87,
     "processes": [{"pid": 4242, "used_memory_mib": 40000}, {"pid": 4343, "used_memory_mib": None}]},
    {"index": 1, "uuid": "GPU-bbbb-0002", "model": "NVIDIA A100-SXM4-40GB", "memory_total_mib": 40960,
     "memory_used_mib": 0, "utilization_pct": None, "processes": []},
]


def test_once_prints_one_json_report(nvml: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--once"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["host"] == socket.gethostname()
    assert report["time"].endswith("+00:00")
    assert report["gpus"] == EXPECTED_GPUS
    assert nvml.calls == ["init", "shutdown"]


@pytest.mark.parametrize(("error", "words"), [
    ("NVMLError_LibraryNotFound", NO_LIBRARY),
    ("NVMLError_DriverNotLoaded", "driver is installed but not loaded"),
    ("NVMLError_NoPermission", "no permission to use NVML"),
    ("NVMLError_Unknown", "NVML could not start on this host (NVMLError_Unknown"),
])
def test_nvml_that_cannot_start_exits_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                         error: str, words: str) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml.make(init_error=error))
    assert main(["agent", "--once"]) == 3
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("burster: error: ") and words in out.err


def _second_gpu_lost(monkeypatch: pytest.MonkeyPatch) -> tuple[list[fake_pynvml.FakeGpu], Any]:
    """The fake pynvml installed with GPU 1 failing its memory query (NVMLError_GpuIsLost)."""
    gpus = fake_pynvml.default_gpus()
    gpus[1].lost = True
    mod = fake_pynvml.make(gpus)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return gpus, mod


def test_a_gpu_failing_a_query_is_an_error_and_nvml_is_shut_down(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _, mod = _second_gpu_lost(monkeypatch)
    assert main(["agent", "--once"]) == 2
    assert "NVML failed reading GPU 1: NVMLError_GpuIsLost" in capsys.readouterr().err
    assert mod.calls == ["init", "shutdown"]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder([])
    yield rec
    rec.close()


def test_controller_receives_the_report(nvml: Any, recorder: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://agent:s3cret@127.0.0.1:{recorder.port}/burster/?cluster=a"
    assert main(["agent", "--once", "--controller", url]) == 0
    assert capsys.readouterr().out == ""
    [req] = recorder.requests
    assert req["path"] == "/burster/v1/inventory?cluster=a"
    assert req["headers"]["Content-Type"] == "application/json"
    assert base64.b64decode(req["headers"]["Authorization"].removeprefix("Basic ")) == b"agent:s3cret"
    report = json.loads(req["body"])
    assert report["gpus"] == EXPECTED_GPUS and report["host"] == socket.gethostname()


def test_controller_rejecting_the_report(nvml: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rec = Recorder([500])
    try:
        code = main(["agent", "--once", "--controller", f"http://u:pw@127.0.0.1:{rec.port}?token=t0k"])
    finally:
        rec.close()
    err = capsys.readouterr().err
    assert code == 2
    assert f"controller at http://127.0.0.1:{rec.port}/v1/inventory rejected the report: HTTP 500" in err
    assert "pw" not in err and "t0k" not in err


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_controller_names_the_url_without_secrets(nvml: Any,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    port = _closed_port()
    code = main(["agent", "--once", "--timeout", "5", "--controller", f"http://ops:hunter2@127.0.0.1:{port}/?key=k3y"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"burster: error: cannot reach the controller at http://127.0.0.1:{port}/v1/inventory: ")
    assert "hunter2" not in err and "k3y" not in err and "ops" not in err


def test_repeating_agent_warns_on_a_failed_send_and_keeps_reporting(nvml: Any,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    rec = Recorder([503])
    try:
        code = main(["agent", "--count", "3", "--interval", "0.01", "--controller", f"http://127.0.0.1:{rec.port}"])
    finally:
        rec.close()
    assert code == 0
    assert len(rec.requests) == 3 and all(r["path"] == "/v1/inventory" for r in rec.requests)
    err = capsys.readouterr().err
    assert err.count("burster: warning: controller at") == 1 and "HTTP 503" in err
    assert nvml.calls == ["init", "shutdown"] * 3


def test_a_repeating_agent_warns_on_a_failed_read_and_keeps_reporting(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """One GPU briefly unreadable stopped a long-running agent (exit 2) where a failed send only warned."""
    gpus, mod = _second_gpu_lost(monkeypatch)
    sent: list[dict[str, Any]] = []

    def recover(_: float) -> None:
        gpus[1].lost = False

    run_agent(read_inventory, sent.append, count=2, interval_s=5.0, sleep=recover)
    assert [len(r["gpus"]) for r in sent] == [2]
    assert capsys.readouterr().err == "burster: warning: NVML failed reading GPU 1: NVMLError_GpuIsLost: " \
        "fake NVML error 15\n"
    gpus[1].lost = True
    with pytest.raises(ProviderError, match="NVML failed reading GPU 1"):  # every one of --count N failed
        run_agent(read_inventory, sent.append, count=2, interval_s=5.0, sleep=lambda _: None)
    assert mod.calls == ["init", "shutdown"] * 4


def test_repeating_to_stdout_prints_one_document_per_report(nvml: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--count", "2", "--interval", "0.01"]) == 0
    docs = json.JSONDecoder()
    out, reports = capsys.readouterr().out.strip(), []
    while out:
        report, end = docs.raw_decode(out)
        reports.append(report)
        out = out[end:].strip()
    assert [r["gpus"] for r in reports] == [EXPECTED_GPUS, EXPECTED_GPUS]


@pytest.mark.parametrize(("argv", "words"), [
    (["--controller", "ftp://host"], "--controller must be an http:// or https:// URL"),
    (["--controller", "http://:pw@/x"], "--controller must be an http:// or https:// URL"),
    (["--controller", "admin:pw@10.0.0.5:8080"], "--controller must be an http:// or https:// URL with a host, "
                                                 "got '***@10.0.0.5:8080'"),
    (["--controller", "http://u:pw@host:99999"], "--controller 'http://***@host:99999' is not a valid URL (bad port"),
    (["--controller", "http://u:p?pw@host"], "--controller 'http://***@host' is not a valid URL (bad port"),
    (["--controller", "http://u:p/pw@host:x"], "--controller 'http://***@host:x' is not a valid URL (bad port"),
    (["--controller", "http://[::1"], "is not a valid URL (bad port or IPv6 address)"),
    (["--interval", "0"], "--interval and --timeout must be seconds in (0, 86400]"),
    (["--timeout", "1e20"], "--interval and --timeout must be seconds in (0, 86400]"),
    (["--count", "0"], "--count must be at least 1"),
])
def test_bad_options(nvml: Any, capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    assert main(["agent", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and "pw" not in err
    assert nvml.calls == []


def test_a_controller_redirect_is_refused_and_the_credentials_go_nowhere(nvml: Any,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Followed, urllib re-sends a POST as a bodiless GET to any host the Location names, with the
    Authorization header: the report was lost, the exit was 0, and the credentials went along."""
    elsewhere = Recorder([200])
    moved = Recorder([301], redirect_to=f"http://localhost:{elsewhere.port}/other")
    try:
        code = main(["agent", "--once", "--controller", f"http://agent:s3cret@127.0.0.1:{moved.port}"])
    finally:
        moved.close()
        elsewhere.close()
    err = capsys.readouterr().err
    assert code == 2 and elsewhere.requests == []
    assert f"controller at http://127.0.0.1:{moved.port}/v1/inventory redirected the report (HTTP 301)" in err
    assert "s3cret" not in err


def test_a_reply_that_is_not_http_is_a_send_failure_not_a_traceback(nvml: Any,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def banner() -> None:
        conn, _ = server.accept()
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
        conn.close()
    threading.Thread(target=banner, daemon=True).start()
    try:
        code = main(["agent", "--once", "--controller", f"http://127.0.0.1:{port}"])
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"burster: error: cannot reach the controller at http://127.0.0.1:{port}/")
    assert "Traceback" not in err


def test_a_space_in_the_controller_url_is_refused_without_showing_the_token(nvml: Any,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--once", "--controller", "http://127.0.0.1:9/?token=s3cr3t tok"]) == 2
    err = capsys.readouterr().err
    assert "a space or control character in the URL; percent-encode it" in err
    assert "s3cr3t" not in err and "tok" not in err


def test_an_older_driver_without_the_v3_process_query_still_reports(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """pynvml 12+ asks for nvmlDeviceGetComputeRunningProcesses_v3, which an R470 driver lacks: its
    NVMLLibraryMismatchError (no NVMLError) ended the agent in a traceback. The v2 call answers."""
    gpus = fake_pynvml.default_gpus()
    gpus[0].old_driver = True
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml.make(gpus))
    assert main(["agent", "--once"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"] == EXPECTED_GPUS


def test_a_repeating_agent_whose_every_send_failed_exits_2(nvml: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Three reports, all rejected: a warning for each but the last, which is the error (it exited 0,
    "the reports were sent")."""
    rec = Recorder([503, 503, 503])
    try:
        code = main(["agent", "--count", "3", "--interval", "0.01", "--controller", f"http://127.0.0.1:{rec.port}"])
    finally:
        rec.close()
    err = capsys.readouterr().err
    assert code == 2 and len(rec.requests) == 3
    assert err.count("burster: warning: controller at") == 2 and err.count("burster: error: controller at") == 1
