"""Every start-up failure of ``taskgate proxy`` and ``taskgate mcp`` is one line naming what
failed and the option that changes it, and the process exits without serving: a port in use (the
proxy's, the MCP gate's, the stdio gate's ``--status-port``), an upstream that refuses the
connection or whose certificate does not verify, a host name that is not one. Real processes,
real sockets: what a person at the terminal reads is the whole of standard error."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from plans import tool_chain
from taskgate import FakeServer, script

UPSTREAM_MCP = [sys.executable, "-m", "taskgate.integrations.mcp.testing"]


def _taskgate(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "taskgate", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)  # fmt: skip


def _one_line(done: subprocess.CompletedProcess[str], *said: str) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(lines) == 1, done.stderr  # no traceback, no server log, nothing said to serve
    assert "Traceback" not in done.stderr and not done.stdout.strip(), done.stdout
    for part in said:
        assert part in lines[0], lines[0]
    return lines[0]


@contextmanager
def _taken() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield int(s.getsockname()[1])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def plan_file(tmp_path: Path) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(tool_chain(2).model_dump(mode="json")))
    return str(path)


def test_the_proxys_port_in_use_is_one_line_naming_port() -> None:
    with FakeServer(script([])) as upstream, _taken() as port:
        done = _taskgate("proxy", "--upstream", upstream.base_url, "--port", str(port))
    _one_line(done, f"port {port} on 127.0.0.1 is in use", "--port")


def test_an_upstream_that_refuses_is_one_line_saying_refused() -> None:
    port = _closed_port()
    done = _taskgate(
        "proxy", "--upstream", f"http://127.0.0.1:{port}/v1", "--port", str(_closed_port())
    )
    line = _one_line(done, "refused the connection", "--upstream", "--wait-for-upstream")
    assert "ssl:default" not in line and "Timeout" not in line


def test_an_upstream_whose_certificate_does_not_verify_is_one_line(tmp_path: Path) -> None:
    with _tls_server(tmp_path) as port:
        done = _taskgate("proxy", "--upstream", f"https://127.0.0.1:{port}/v1")
    _one_line(done, "certificate does not verify", "--upstream")


def test_a_bad_allowed_host_is_one_line() -> None:
    with FakeServer(script([])) as upstream:
        done = _taskgate("proxy", "--upstream", upstream.base_url, "--allowed-host", "a b:x")
    _one_line(done, "--allowed-host")


def test_the_stdio_gates_status_port_in_use_is_one_line(plan_file: str) -> None:
    """It printed the console's address, then ``[Errno 98]``, then that the upstream "closed its
    output", then an 87-line traceback."""
    with _taken() as port:
        done = _taskgate(
            "mcp", "--plan", plan_file, "--status-port", str(port), "--", *UPSTREAM_MCP
        )
    _one_line(done, f"port {port} on 127.0.0.1 is in use", "--status-port")


def test_the_mcp_gates_http_port_in_use_is_one_line(plan_file: str) -> None:
    with _taken() as port:
        done = _taskgate("mcp", "--plan", plan_file, "--http", "--port", str(port), "--",
                         *UPSTREAM_MCP)  # fmt: skip
    _one_line(done, f"port {port} on 127.0.0.1 is in use", "--port")


def test_an_mcp_upstream_url_that_refuses_is_one_line_saying_refused(plan_file: str) -> None:
    port = _closed_port()
    done = _taskgate("mcp", "--plan", plan_file, "--http", "--port", str(_closed_port()), "--upstream-url",
                     f"http://127.0.0.1:{port}/mcp")  # fmt: skip
    _one_line(done, "refused the connection", f"127.0.0.1:{port}")


@contextmanager
def _tls_server(tmp: Path) -> Iterator[int]:
    """An HTTPS server on loopback with a self-signed certificate (which nothing trusts)."""
    pytest.importorskip("cryptography", reason="makes the test's self-signed certificate")
    cert, key = _self_signed(tmp)

    class Quiet(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Quiet)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ))  # fmt: skip
    return cert_path, key_path
