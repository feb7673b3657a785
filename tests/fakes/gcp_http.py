"""The local HTTP server of the Compute and Billing fakes (gcp_compute.py, gcp_billing.py): each
GET, POST or DELETE goes to a ``handle(method, path, body)`` and its answer goes back as a JSON body."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handle = Callable[[str, str, dict[str, Any] | None], tuple[int, dict[str, Any]]]


def serve_json(handle: Handle) -> ThreadingHTTPServer:
    """A started server on a free port of 127.0.0.1 answering every request with ``handle``."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            status, body = handle(method, self.path, json.loads(raw) if raw else None)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server
