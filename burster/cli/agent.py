"""``burster agent``: report this host's NVIDIA GPUs (via NVML) as JSON, to stdout or a controller."""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Any

from burster.cli import finite_float
from burster.clock import utc_now
from burster.errors import ConfigError, ProviderError, TransientError
from burster.redact import redact_url

EXIT_NO_GPU = 3
MAX_AGENT_SECONDS = 86_400.0  # --interval and --timeout: at most a day
INVENTORY_PATH = "/v1/inventory"
EPILOG = """\
exit codes:
  0    the report(s) were printed or sent (with --count N: at least one of them)
  2    bad option, an NVML query failed or the controller was unreachable or rejected the report
       (with --once, or every one of --count N)
  3    NVML cannot be used on this host: no NVIDIA driver, driver not loaded, or no permission
  130  interrupted (Ctrl-C)
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "agent", help="report this host's NVIDIA GPUs (pynvml) to the controller",
        description="Read this host's GPUs with NVML (model, memory, utilization, compute processes) and print\n"
                    "one JSON report, or POST it to a controller's URL/v1/inventory, every --interval seconds.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--once", action="store_true", help="send or print one report and exit")
    p.add_argument("--controller", metavar="URL",
                   help="controller base URL; reports are POSTed as JSON to URL/v1/inventory "
                        "(user:password@ in the URL is sent as HTTP basic auth); default: print to stdout")
    p.add_argument("--interval", type=finite_float, default=30.0, metavar="SECONDS",
                   help="seconds between reports when not --once (default: 30)")
    p.add_argument("--count", type=int, metavar="N", help="stop after N reports (default: until interrupted)")
    p.add_argument("--timeout", type=finite_float, default=10.0, metavar="SECONDS",
                   help="HTTP timeout for each POST (default: 10)")
    p.set_defaults(func=main)


def build_report(gpus: tuple[Any, ...], now: datetime | None = None) -> dict[str, Any]:
    """The JSON document the agent sends: host name, UTC time and one record per GPU."""
    stamp = (now or utc_now()).isoformat(timespec="seconds")
    return {"host": socket.gethostname(), "time": stamp, "gpus": [asdict(g) for g in gpus]}


class Controller:
    """Where reports go: URL/v1/inventory. Credentials in the URL become a basic-auth header and never
    appear in messages; neither does the query string."""

    def __init__(self, url: str, timeout_s: float) -> None:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError:  # urllib's text may quote a piece of the password
            raise ConfigError(f"--controller {redact_url(url)!r} is not a valid URL "
                              "(bad port or IPv6 address)") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--controller must be an http:// or https:// URL with a host, got {redact_url(url)!r}")
        if any(c.isspace() or ord(c) < 32 for c in parts.path + parts.query):
            raise ConfigError(f"--controller {redact_url(url)!r}: a space or control character in the URL; "
                              "percent-encode it (%20)")
        name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # an IPv6 address keeps its []
        host = name + (f":{port}" if port else "")
        path = parts.path.rstrip("/") + INVENTORY_PATH
        self.url = urllib.parse.urlunsplit((parts.scheme, host, path, parts.query, ""))
        self.shown = urllib.parse.urlunsplit((parts.scheme, host, path, "", ""))
        self.headers = {"Content-Type": "application/json"}
        if parts.username is not None:
            token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self.headers["Authorization"] = "Basic " + base64.b64encode(token.encode()).decode()
        self.timeout_s = timeout_s

    def post(self, report: dict[str, Any]) -> None:
        body = json.dumps(report).encode()
        request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        try:
            with _NO_REDIRECTS.open(request, timeout=self.timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as err:
            if 300 <= err.code < 400:  # followed, it would turn the POST into a GET, credentials and all
                raise ProviderError(f"controller at {self.shown} redirected the report (HTTP {err.code}); give "
                                    "--controller the URL it redirects to", provider="controller") from None
            raise ProviderError(f"controller at {self.shown} rejected the report: HTTP {err.code} {err.reason}; "
                                "check the URL and the agent's credentials", provider="controller") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            reason = getattr(err, "reason", None) or type(err).__name__
            raise TransientError(f"cannot reach the controller at {self.shown}: {reason}; check --controller "
                                 "and that the controller is running", provider="controller") from None


class _Refuse(urllib.request.HTTPRedirectHandler):
    """No redirect is followed: urllib would re-send a POST as a GET, Authorization header included,
    to whatever host the Location names."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_NO_REDIRECTS = urllib.request.build_opener(_Refuse)


def _emit(controller: Controller | None) -> Callable[[dict[str, Any]], None]:
    if controller is not None:
        return controller.post

    def to_stdout(report: dict[str, Any]) -> None:
        print(json.dumps(report, indent=2), flush=True)
    return to_stdout


def run_agent(read: Callable[[], tuple[Any, ...]], emit: Callable[[dict[str, Any]], None], *, count: int | None,
              interval_s: float, sleep: Callable[[float], None] = time.sleep) -> None:
    """Read and emit ``count`` reports (None: forever), ``interval_s`` apart. In a repeating run a failed
    read or send is a warning and the next report tries again; when every one of ``count`` failed, the
    last failure is raised. A host without NVML stops the agent."""
    from providers.nvml import GpuUnavailableError

    sent = failed = 0
    while count is None or sent < count:
        try:
            emit(build_report(read()))
        except GpuUnavailableError:
            raise
        except ProviderError as err:
            failed += 1
            if failed == count:
                raise
            print(f"burster: warning: {err}", file=sys.stderr, flush=True)
        sent += 1
        if count is None or sent < count:
            sleep(interval_s)


def main(args: argparse.Namespace) -> int:
    from providers.nvml import GpuUnavailableError, read_inventory

    if not (0 < args.interval <= MAX_AGENT_SECONDS and 0 < args.timeout <= MAX_AGENT_SECONDS):
        raise ConfigError(f"--interval and --timeout must be seconds in (0, {MAX_AGENT_SECONDS:g}]")
    if args.count is not None and args.count < 1:
        raise ConfigError(f"--count must be at least 1, got {args.count}")
    count = 1 if args.once else args.count
    controller = Controller(args.controller, args.timeout) if args.controller else None
    try:
        run_agent(read_inventory, _emit(controller), count=count, interval_s=args.interval)
    except GpuUnavailableError as err:
        print(f"burster: error: {err}", file=sys.stderr)
        return EXIT_NO_GPU
    return 0

