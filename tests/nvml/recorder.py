"""A real local HTTP server standing in for the controller's /v1/inventory endpoint."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Recorder:
    """A real HTTP server on 127.0.0.1 that records each request and answers ``statuses`` in turn
    (a 3xx with ``Location: redirect_to``)."""

    def __init__(self, statuses: list[int], redirect_to: str = "") -> None:
        self.requests: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                recorder.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                          "body": body})
                status = statuses.pop(0) if statuses else 204
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", redirect_to)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
