"""A local certificate authority (trustme) and a threaded HTTPS server for the Azure fakes.

azure-core refuses to send bearer tokens over plain http, so the fakes speak TLS with a certificate
from a throwaway CA; clients trust it through ``connection_verify=<ca_path>``.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import trustme


@dataclass(frozen=True)
class LocalTls:
    ca_path: str  # PEM bundle for clients (connection_verify / cafile)
    server_context: ssl.SSLContext


def make_tls(directory: Path) -> LocalTls:
    """A CA and a server certificate for localhost / 127.0.0.1; the CA PEM is written to ``directory``."""
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    directory.mkdir(parents=True, exist_ok=True)
    ca_path = directory / "fake-azure-ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    return LocalTls(str(ca_path), context)


DROP = 0  # a status a fake answers to close the connection without a response (a lost answer)


class JsonFake(Protocol):
    def handle(self, method: str, target: str, headers: Mapping[str, str],
               raw: bytes) -> tuple[int, dict[str, str], Any]: ...


class JsonHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive handler: ``fake.handle`` answers (status, headers, JSON body or None)."""

    protocol_version = "HTTP/1.1"
    fake: JsonFake

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            status, headers, body = self.fake.handle(self.command, self.path, self.headers, raw)
        except Exception as err:  # a bug in the fake: answer like ARM's 500 so it shows
            status, headers = 500, {}
            body = {"error": {"code": "InternalServerError", "message": repr(err)}}
        if status == DROP:
            self.close_connection = True
            return
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class HttpsServer:
    """Serve ``fake`` over TLS on 127.0.0.1 (a free port) in a daemon thread."""

    def __init__(self, fake: JsonFake, tls: LocalTls) -> None:
        handler = type("Handler", (JsonHandler,), {"fake": fake})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = tls.server_context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://localhost:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="azure-fake", daemon=True)

    def start(self) -> HttpsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
