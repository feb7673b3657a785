"""What the GCP and Azure SDKs raise becomes a Burster error naming the call and the fix, never a raw
exception or a secret: settings the SDK refuses, answers that are not the API's JSON, credentials that
cannot be built or refreshed, and the offline catalog the GCP live prices read (plain or gzip)."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from google.auth.credentials import AnonymousCredentials, Credentials

from burster.catalog import BUNDLED_DIR, FILES, SHARED_SUBDIR
from burster.config import GcpConfig
from burster.errors import AuthError, ConfigError, TransientError
from burster.model import Market
from providers.azure.power import power_state
from providers.azure.pricing import PriceBook
from providers.gcp import from_config as gcp_from_config
from providers.gcp.pricing import machine_shapes
from tests.fakes.azure_tls import LocalTls, make_tls
from tests.providers import harness_azure as az
from tests.providers.harness_gcp import GcpBackend, gcp_backend

Answer = tuple[int, str, bytes]  # status, content type, body


@pytest.fixture
def b() -> Iterator[GcpBackend]:
    with gcp_backend() as backend:
        yield backend


@pytest.fixture(scope="module")
def tls() -> LocalTls:
    return make_tls(Path(tempfile.mkdtemp(prefix="burster-audit-")))


def serve(answer: Callable[[str, str], Answer], tls: LocalTls | None = None) -> str:
    """A server answering every request with ``answer(method, path)``: what a proxy or a wrong endpoint
    says, not the API. Over TLS when ``tls`` is given."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _serve(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, kind, data = answer(self.command, self.path)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data) + (100 if kind == "cut" else 0)))
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = kind == "cut"

        do_GET = do_POST = do_PUT = do_DELETE = _serve

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.server_context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"{'https://localhost' if tls else 'http://127.0.0.1'}:{server.server_address[1]}"


def gcp(endpoint: str, **kw: Any) -> Any:
    cfg = GcpConfig(enabled=True, project="p", zones=("us-central1-a",), api_endpoint=endpoint)
    kw.setdefault("credentials", AnonymousCredentials())
    return gcp_from_config(cfg, cluster="c1", user_data=lambda o: "", sleep=lambda s: None, base_s=0.0, **kw)


# --- GCP: settings and credentials ------------------------------------------------------------
@pytest.mark.parametrize(
    "endpoint",
    [
        "http://127.0.0.1:99999",
        "htp://compute.example",
        "compute example",
        "http://[::1",
        "http://",
        "https://user:hunter2@host:0",
    ],
)
def test_an_unusable_api_endpoint_is_a_config_error_naming_the_key(endpoint: str) -> None:
    with pytest.raises(ConfigError, match=r"clouds\.gcp\.api_endpoint") as info:
        gcp(endpoint)
    assert "hunter2" not in str(info.value)


def test_a_credentials_path_that_is_a_folder_is_an_auth_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    with pytest.raises(AuthError, match="GOOGLE_APPLICATION_CREDENTIALS=") as info:
        gcp_from_config(GcpConfig(project="p"), cluster="c1", user_data=lambda o: "")
    assert str(tmp_path) in str(info.value)


def test_an_mtls_setting_the_sdk_refuses_is_a_config_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_USE_MTLS_ENDPOINT", "sometimes")
    with pytest.raises(ConfigError, match="GOOGLE_API_USE_MTLS_ENDPOINT"):
        gcp("")


class Refused(Credentials):
    """Credentials whose token service refuses them (a revoked refresh token)."""

    def refresh(self, request: object) -> None:
        from google.auth.exceptions import RefreshError

        raise RefreshError(
            "invalid_grant: Token has been expired or revoked. access_token=ya29.LEAKED", {"error": "invalid_grant"}
        )


def test_a_refused_refresh_says_why_without_the_token(b: GcpBackend) -> None:
    with pytest.raises(AuthError, match="invalid_grant: Token has been expired") as info:
        b.provider(credentials=Refused()).list_nodes()
    assert "ya29" not in str(info.value) and "LEAKED" not in str(info.value)


# --- GCP: answers that are not the API's ------------------------------------------------------
def test_an_answer_that_is_not_json_is_transient_and_points_at_the_endpoint(caplog: pytest.LogCaptureFixture) -> None:
    url = serve(lambda m, p: (200, "text/html", b"<html>Sign in to the proxy</html>"))
    p = gcp(url, billing_endpoint=url, attempts=2)
    for call in (p.list_nodes, p.interruptions):
        with pytest.raises(TransientError, match=r"not the API's JSON.*clouds\.gcp\.api_endpoint"):
            call()
    assert p.offerings()  # the offline prices, with a warning
    assert "Cloud Billing Catalog failed" in caplog.text


def test_a_long_error_page_is_cut_short(b: GcpBackend) -> None:
    b.compute.fail_next("GET", 502, "backendError", "<html>" + "bad gateway " * 2000 + "</html>")
    with pytest.raises(TransientError) as info:
        b.provider(attempts=1).list_nodes()
    assert len(str(info.value)) < 700


# --- GCP: the offline catalog the live prices read --------------------------------------------
def shared_catalog(root: Path, gcp_text: bytes | None, *, packed: bool) -> Path:
    """A shared catalog folder: the bundled AWS and Azure files, and the GCP one as given."""
    folder = root / SHARED_SUBDIR
    folder.mkdir(parents=True)
    for cloud in ("aws", "azure"):
        shutil.copy(BUNDLED_DIR / FILES[cloud], folder / FILES[cloud])
    if gcp_text is not None:
        path = folder / (FILES["gcp"] + (".gz" if packed else ""))
        path.write_bytes(gzip.compress(gcp_text) if packed else gcp_text)
    return folder


def test_a_gzip_catalog_gives_the_same_shapes_and_live_prices(
    b: GcpBackend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plain = machine_shapes()
    shared_catalog(tmp_path, (BUNDLED_DIR / FILES["gcp"]).read_bytes(), packed=True)
    monkeypatch.setenv("BURSTER_SHARED_DATA", str(tmp_path))
    assert machine_shapes() == plain and plain["a2-highgpu-1g"] == (12.0, 85.0)
    offers = b.provider(zones=("us-central1-a",)).offerings()
    live = next(o for o in offers if (o.instance_type, o.market) == ("a2-highgpu-1g", Market.ON_DEMAND))
    assert live.price_per_hour_usd == pytest.approx(12 * 0.031611 + 85 * 0.004237 + 2.75, abs=1e-5)


def test_a_missing_or_headless_catalog_is_a_warning_naming_the_file(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    missing = tmp_path / FILES["gcp"]
    assert machine_shapes(missing) == {}
    assert str(missing) in caplog.text and "live Cloud Billing prices are off" in caplog.text
    missing.write_text("InstanceType,Price\na2-highgpu-1g,1.0\n")
    caplog.clear()
    assert machine_shapes(missing) == {}
    assert "lacks column(s) vCPUs, MemoryGiB" in caplog.text


def test_a_bad_shape_row_is_skipped_by_row_and_the_rest_kept(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    path = tmp_path / (FILES["gcp"] + ".gz")
    path.write_bytes(
        gzip.compress(
            b"InstanceType,vCPUs,MemoryGiB\na2-highgpu-1g,nan,85\n"
            b"a2-highgpu-2g,24,x\na2-highgpu-4g,48,340\na2-highgpu-8g,-96,680\na3-highgpu-8g,inf,1\n"
        )
    )
    with caplog.at_level(logging.WARNING):
        assert machine_shapes(path) == {"a2-highgpu-4g": (48.0, 340.0)}
    assert "rows 2, 3, 5, 6" in caplog.text


# --- Azure --------------------------------------------------------------------------------------
def azure(url: str, tls: LocalTls, **kw: Any) -> Any:
    from providers.azure import from_config

    opts: dict[str, Any] = {
        "credential": az.StaticToken(),
        "connection_verify": tls.ca_path,
        "prices_url": url + "/prices",
        "ssh_public_key": az.SSH_KEY,
        "attempts": 2,
        "polling_interval_s": 0.0,
        "launch_wait_s": 2.0,
        **kw,
    }
    return from_config(
        az.config("rg", base_url=url), cluster="c", user_data=lambda o: "#cloud-config", sleep=lambda s: None, **opts
    )


@pytest.mark.parametrize(
    "answer",
    [
        (200, "text/html", b"<html>proxy login</html>"),
        (200, "application/json", b"<html>proxy login</html>"),
        (200, "application/json", b'{"value": 5}'),
        (200, "application/json", b'{"value": [{"name": 5, "tags": "x", "properties": 7}]}'),
    ],
)
def test_an_arm_answer_that_is_not_arm_json_is_transient_and_points_at_base_url(tls: LocalTls, answer: Answer) -> None:
    url = serve(lambda m, p: answer, tls)
    p = azure(url, tls)
    offering = next(o for o in p.offerings() if o.instance_type == "Standard_NC24ads_A100_v4")
    calls = [
        p.list_nodes,
        lambda: p.terminate(["c-x-0"], request_id="t"),
        lambda: p.launch(offering, 1, request_id="r"),
    ]
    for call in calls:
        with pytest.raises(TransientError, match=r"not Azure Resource Manager JSON.*clouds\.azure\.base_url"):
            call()


def aad(tls: LocalTls) -> str:
    """The Microsoft identity platform's tenant metadata and a token endpoint that refuses the client."""

    def answer(method: str, path: str) -> Answer:
        if method == "GET":
            base = f"{url}/t"
            return (
                200,
                "application/json",
                json.dumps(
                    {
                        "token_endpoint": f"{base}/oauth2/v2.0/token",
                        "issuer": f"{base}/v2.0",
                        "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                    }
                ).encode(),
            )
        return (
            400,
            "application/json",
            json.dumps(
                {
                    "error": "unauthorized_client",
                    "error_codes": [700016],
                    "error_description": "AADSTS700016: Application with identifier 'c' was not found in the "
                    "directory 't'.",
                }
            ).encode(),
        )

    url = serve(answer, tls)
    return url


def test_a_client_the_token_service_refuses_is_an_auth_error_saying_why(tls: LocalTls) -> None:
    from azure.identity import ClientSecretCredential

    credential = ClientSecretCredential(
        "t", "c", "S3CRET-VALUE", authority=aad(tls), connection_verify=tls.ca_path, disable_instance_discovery=True
    )
    p = az.provider("rg-refused", credential=credential)
    with pytest.raises(AuthError, match="AADSTS700016") as info:
        p.list_nodes()
    assert "S3CRET" not in str(info.value)


def test_a_token_service_refusal_with_its_answer_is_an_auth_error() -> None:
    import requests
    from azure.core.exceptions import ClientAuthenticationError
    from azure.core.pipeline.transport import HttpRequest, RequestsTransportResponse

    from providers.azure.errors import translate

    raw = requests.Response()
    raw.status_code, raw.reason, raw._content = 400, "Bad Request", b'{"error": "invalid_client"}'
    response = RequestsTransportResponse(HttpRequest("POST", "https://login.example/t/token"), raw)
    err = ClientAuthenticationError(message="AADSTS7000215: Invalid client secret provided.", response=response)
    out = translate(err, doing="listing VMs")
    assert isinstance(out, AuthError) and "credentials were refused while listing VMs" in str(out)


def test_a_missing_client_certificate_is_an_auth_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from providers.azure import from_config

    monkeypatch.setenv("AZURE_TENANT_ID", "t")
    monkeypatch.setenv("AZURE_CLIENT_ID", "c")
    monkeypatch.setenv("AZURE_CLIENT_CERTIFICATE_PATH", "/nonexistent/burster.pem")
    with pytest.raises(AuthError, match="AZURE_CLIENT_CERTIFICATE_PATH") as info:
        from_config(az.config("rg"), cluster="c", user_data=lambda o: "", ssh_public_key=az.SSH_KEY)
    assert "/nonexistent/burster.pem" in str(info.value)


@pytest.mark.parametrize("base_url", ["https://", "https://localhost:99999", "https://[::1", "http://x"])
def test_an_unusable_base_url_is_a_config_error_naming_the_key(base_url: str) -> None:
    from providers.azure import from_config

    with pytest.raises(ConfigError, match=r"clouds\.azure\.base_url"):
        from_config(
            az.config("rg", base_url=base_url),
            cluster="c",
            user_data=lambda o: "",
            credential=az.StaticToken(),
            ssh_public_key=az.SSH_KEY,
        )


@pytest.mark.parametrize(
    "answer",
    [
        (200, "cut", b'{"Items": ['),  # the connection closes before Content-Length bytes came
        (200, "application/json", b'{"Items": [], "NextPageLink": 5}'),
    ],
)
def test_a_retail_prices_answer_cut_short_or_malformed_keeps_the_catalog(
    tls: LocalTls, answer: Answer, caplog: pytest.LogCaptureFixture
) -> None:
    url = serve(lambda m, p: answer, tls)
    catalog = az.fakes().catalog
    book = PriceBook(catalog, location=az.LOCATION, url=url, cafile=tls.ca_path)
    assert book.offerings() == catalog and not book.live
    assert "Retail Prices API unreachable" in caplog.text


def test_a_malformed_instance_view_has_no_power_state() -> None:
    assert power_state({"statuses": "PowerState/stopped"}) == ""
    assert power_state({"statuses": ["PowerState/stopped", {"code": "PowerState/deallocated"}]}) == "deallocated"


def test_a_credential_chain_that_failed_names_the_credential_that_failed_not_its_token() -> None:
    from providers.azure.errors import credential_error

    said = (
        "DefaultAzureCredential failed to retrieve a token from the included credentials.\nAttempted "
        "credentials:\n\tEnvironmentCredential: EnvironmentCredential authentication unavailable.\n\t"
        "AzureCliCredential: AADSTS70043: The refresh token has expired. Bearer eyJhbGci.eyJzdWIi.c2ln\n"
        "To mitigate this issue, please refer to the troubleshooting guidelines."
    )
    text = str(credential_error("sub", said))
    assert "Last tried: AzureCliCredential: AADSTS70043" in text and "eyJ" not in text
