"""SASL_SSL end to end on the testbed's second listener: SCRAM-SHA-512 and PLAIN, the password kept secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cluster.inventory import SecretRef, Security
from records.testbed import TestbedState
from testbed.lifecycle import Testbed
from tests.helpers import kafkatune, write_workload
from tests.sshd import keygen


def _inventory(tmp_path: Path, testbed: Testbed, security: Security) -> Path:
    """The testbed's SASL_SSL listener as an inventory (no SSH is used: bench only reaches client hosts)."""
    st = testbed.state()
    assert st.sasl_bootstrap_servers
    key = tmp_path / "id_ed25519"
    if not key.exists():
        keygen(key)
    inv = {
        "name": "testbed-sasl",
        "bootstrap": st.sasl_bootstrap_servers,
        "security": security.model_dump(mode="json", exclude_none=True),
        "ssh": {"key_file": str(key), "known_hosts": str(tmp_path / "known_hosts")},
        "brokers": [
            {
                "id": n.id,
                "host": n.host,
                "server_properties": str(testbed.node_dir(n.id) / "server.properties"),
                "restart": "true",
                "log_dirs": [str(testbed.node_dir(n.id) / "data")],
            }
            for n in st.nodes
        ],
    }
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(inv))
    return path


def _other_ca(path: Path) -> Path:
    """A self-signed CA certificate that signed nothing the testbed has."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not-the-testbed-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_a_sasl_ssl_bench_works_and_the_password_is_nowhere(
    healthy: TestbedState, testbed: Testbed, tmp_path: Path, unique: str, mechanism: str
) -> None:
    st = testbed.state()
    security = testbed.client_security(mechanism)
    inv = _inventory(tmp_path, testbed, security)
    assert security.password is not None and security.password.file is not None
    password = Path(security.password.file).read_text().strip()
    assert len(password) >= 24
    wl = write_workload(
        tmp_path / "w.yaml",
        name=f"sasl-{unique}",
        partitionsPerTopic=3,
        warmupDurationMinutes=0.02,  # what is checked is that it runs and leaks nothing: a few seconds of load
        testDurationMinutes=0.05,
        producerConfig={"acks": "all", "linger.ms": 5},
    )
    out = tmp_path / "run"
    p = kafkatune("bench", str(wl), "--no-scale-out", "--inventory", str(inv), "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads((out / "result.json").read_text())
    s = res["summary"]
    assert s["acknowledged"] > 0 and s["lost"] == 0
    # the admin client went over SASL_SSL too: the record has every broker's configs
    assert res["brokerConfig"] is not None and set(res["brokerConfig"]) == {"1", "2", "3"}
    said = p.stdout + p.stderr
    # grep: the password is in no output, record or broker log (only in the secret file itself and the brokers'
    # owner-only server.properties, which hold the PLAIN user list). The analysis and the report read nothing but
    # the run folder checked here (`kafkatune report RUN_DIR`); a report that hides the admin client's password is
    # tests/e2e/test_shaped.py's tuned sweep.
    assert password not in said
    files = [*out.rglob("*"), *testbed.state_dir.rglob("*.log"), testbed.state_file, inv]
    leaks = [f for f in files if f.is_file() and password.encode() in f.read_bytes()]
    assert leaks == []
    for n in st.nodes:
        assert (testbed.node_dir(n.id) / "server.properties").stat().st_mode & 0o077 == 0

    # the listener really checks it: a wrong password is refused at once, named as a refused login, before
    # any topic or client exists
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-the-password")
    bad = _inventory(tmp_path, testbed, security.model_copy(update={"password": SecretRef(file=str(wrong))}))
    p = kafkatune("bench", str(wl), "--inventory", str(bad), "--out", str(tmp_path / "bad"), timeout=120)
    assert p.returncode == 3 and not (tmp_path / "bad").exists(), p.stderr[-2000:]
    assert "refused the login" in p.stderr and "check security.username and security.password" in p.stderr
    assert "not-the-password" not in p.stdout + p.stderr
    # a CA that did not sign the broker's certificate: the TLS handshake is named, with the field to fix
    other_ca = str(_other_ca(tmp_path / "other-ca.pem"))
    bad = _inventory(tmp_path, testbed, security.model_copy(update={"ca_file": other_ca}))
    p = kafkatune("bench", str(wl), "--inventory", str(bad), "--out", str(tmp_path / "bad"), timeout=120)
    assert p.returncode == 3 and "certificate verify failed" in p.stderr and "check security.ca_file" in p.stderr
