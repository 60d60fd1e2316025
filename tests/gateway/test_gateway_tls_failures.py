"""A provider whose TLS certificate does not verify (here: it names another host): the call
fails as a connect failure that says so, and says nothing of where the provider is (its host is
for the provider and admins; the TLS library's own words name it)."""

from __future__ import annotations

import contextlib
import datetime as dt
import socket
import ssl
import tempfile
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from adjudge.calls.tools import BuiltRequest
from adjudge.gateway import AddressGuard, Forwarder
from adjudge.gateway.forward import FailureKind, ForwardFailure

HOST = "localhost"  # stands for the provider's private host name


def _cert(
    name: str,
    issuer_key: ec.EllipticCurvePrivateKey,
    issuer_name: x509.Name | None,
    key: ec.EllipticCurvePrivateKey,
    ca: bool,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer_name or x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def test_a_certificate_for_another_name_is_said_without_the_providers_host() -> None:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test-ca", ca_key, None, ca_key, True)
    leaf = _cert("other.example", ca_key, ca.subject, leaf_key, False)
    d = Path(tempfile.mkdtemp())
    (d / "leaf.pem").write_bytes(
        leaf.public_bytes(serialization.Encoding.PEM)
        + leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(d / "leaf.pem")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with contextlib.suppress(ssl.SSLError, OSError):
            server_ctx.wrap_socket(conn, server_side=True)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    trusted = ca.public_bytes(serialization.Encoding.PEM).decode()
    client_ctx = ssl.create_default_context(cadata=trusted)
    with Forwarder(guard=AddressGuard(allow_private=True), verify=client_ctx) as f:
        outcome = f.forward(BuiltRequest("GET", f"https://{HOST}:{port}/x", (), None))
    listener.close()
    assert isinstance(outcome, ForwardFailure) and outcome.kind is FailureKind.CONNECT
    assert outcome.message == "the provider's TLS certificate does not verify"
    assert HOST not in outcome.message
