"""The testbed's SASL_SSL listener (`kafkatune testbed up --security sasl_ssl`): a self-signed certificate,
SCRAM-SHA-512 and PLAIN for one user, and the generated secrets, all under `<state>/security/`, readable by
the owner only. Brokers talk to each other over PLAINTEXT; the listener is for clients.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from cluster import admin as kadmin
from cluster import inventory
from core.errors import EnvironmentProblem
from records.testbed import TestbedState

SASL_USER = "kafkatune"


class Security:
    def __init__(self, state_dir: Path, java: Path) -> None:
        self.dir = state_dir / "security"
        self.java = java

    def secret(self, name: str) -> str:
        """A generated secret kept in the security folder as `name` (made on first use)."""
        p = self.dir / name
        if not p.exists():
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(24))
        return p.read_text().strip()

    def make_keystore(self, st: TestbedState) -> None:
        """A self-signed certificate for every node address (keytool, PKCS12), and its PEM for clients."""
        ks, pem = self.dir / "broker.p12", self.dir / "ca.pem"
        if ks.exists() and pem.exists():
            return
        keytool = str(self.java.with_name("keytool"))
        env = {**os.environ, "KT_STOREPASS": self.secret("store-password")}  # never on a command line
        san = ",".join(["dns:localhost", *sorted({f"ip:{n.host}" for n in st.nodes})])
        for cmd in (
            [
                keytool,
                "-genkeypair",
                "-alias",
                "broker",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-validity",
                "3650",
                "-dname",
                "CN=kafkatune-testbed",
                "-ext",
                f"SAN={san}",
                "-ext",
                "BC:c=ca:true",
                "-keystore",
                str(ks),
                "-storetype",
                "PKCS12",
                "-storepass:env",
                "KT_STOREPASS",
            ],
            [
                keytool,
                "-exportcert",
                "-rfc",
                "-alias",
                "broker",
                "-keystore",
                str(ks),
                "-storetype",
                "PKCS12",
                "-storepass:env",
                "KT_STOREPASS",
                "-file",
                str(pem),
            ],
        ):
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            if proc.returncode != 0:
                raise EnvironmentProblem(f"keytool failed: {(proc.stdout + proc.stderr).strip()[-500:]}")
        ks.chmod(0o600)

    def broker_props(self) -> dict[str, str]:
        """What a node's server.properties needs for the listener (passwords included: the file is 0600)."""
        user, pw = SASL_USER, self.secret("password")
        return {
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}="{pw}";'
            ),
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(self.dir / "broker.p12"),
            "ssl.keystore.password": self.secret("store-password"),
        }

    def add_scram_user(self, st: TestbedState) -> None:
        """The SCRAM-SHA-512 credential of the testbed's user (through the PLAINTEXT listener, as an operator
        would with kafka-configs); PLAIN checks the same password from the listener's JAAS config."""
        a = kadmin.admin_client(st.bootstrap_servers)
        up = UserScramCredentialUpsertion(
            SASL_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), self.secret("password").encode()
        )
        for fut in a.alter_user_scram_credentials([up], request_timeout=30).values():
            fut.result(timeout=60)

    def client_security(self, mechanism: str = "SCRAM-SHA-512") -> inventory.Security:
        """An inventory's `security` block for the SASL_SSL listener (the password by file reference), validated as
        every inventory's is."""
        return inventory.Security.model_validate(
            {
                "protocol": "SASL_SSL",
                "sasl_mechanism": mechanism,
                "username": SASL_USER,
                "password": {"file": str(self.dir / "password")},
                "ca_file": str(self.dir / "ca.pem"),
            }
        )
