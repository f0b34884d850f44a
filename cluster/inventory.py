"""A cluster kafkatune did not start: its hosts, how to reach them over SSH, and its security settings.

    name: prod-east
    bootstrap: b1.example:9092,b2.example:9092,b3.example:9092
    security:                          # every Kafka client and the admin client use these
      protocol: SASL_SSL               # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
      sasl_mechanism: SCRAM-SHA-512    # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
      username: tuner
      password: {env: KT_SASL_PASSWORD}    # secrets by reference only: {env: NAME} or {file: PATH}
      ca_file: /etc/kafkatune/ca.pem
    ssh:                               # defaults for every host; a host's own `ssh:` overrides fields
      user: kafka
      port: 22
      key_file: ~/.ssh/id_ed25519      # or agent: true
      known_hosts: ~/.ssh/known_hosts  # host keys are checked against it, never accepted silently
    brokers:
      - id: 1
        host: b1.example
        server_properties: /etc/kafka/server.properties
        restart: sudo systemctl restart kafka
        log_dirs: [/var/lib/kafka/data]
    clients:                           # hosts for load workers
      - host: c1.example

Everything is checked when the file is read, before any host is contacted: a bad field is one line
naming it. Secret values are read from their reference only when a connection needs them; the
inventory itself (and anything written from it) holds the references, never the values.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.errors import UserError, validated
from core.files import read_yaml

Name = Annotated[str, Field(min_length=1, max_length=60, pattern=r"^[A-Za-z0-9._-]+$")]
Host = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9._:%-]+$")]
Port = Annotated[int, Field(ge=1, le=65535)]
AbsPath = Annotated[str, Field(min_length=2, pattern=r"^/")]


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SecretRef(_M):
    """Where a secret is: an environment variable or a file (its first line). Never the value."""

    env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None
    file: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _not_inline(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise ValueError("secrets are given by reference, never inline: {env: VARIABLE} or {file: /path}")
        return v

    @model_validator(mode="after")
    def _one(self) -> SecretRef:
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of env (a variable name) or file (a path)")
        return self

    def describe(self) -> str:
        return f"environment variable {self.env}" if self.env else f"file {self.file}"

    def problem(self) -> str | None:
        """Why the secret cannot be read, or None."""
        if self.env is not None:
            return None if os.environ.get(self.env) else f"environment variable {self.env} is not set"
        p = Path(os.path.expanduser(str(self.file)))
        if not p.is_file() or not os.access(p, os.R_OK):
            return f"file {p} does not exist or is not readable"
        return None

    def reveal(self) -> str:
        if self.env is not None:
            return os.environ[self.env]
        text = Path(os.path.expanduser(str(self.file))).read_text()
        return text.splitlines()[0] if text else ""


class SshOverride(_M):
    """A host's own SSH settings; fields left out come from the inventory's `ssh`."""

    user: Annotated[str, Field(min_length=1)] | None = None
    port: Port | None = None
    key_file: str | None = None
    key_passphrase: SecretRef | None = None
    agent: bool | None = None
    known_hosts: str | None = None
    connect_timeout_s: Annotated[float, Field(gt=0, le=600)] | None = None
    command_timeout_s: Annotated[float, Field(gt=0, le=86400)] | None = None


class Ssh(_M):
    user: Annotated[str, Field(min_length=1)] = Field(default_factory=getpass.getuser)
    port: Port = 22
    key_file: str | None = None
    key_passphrase: SecretRef | None = None
    agent: bool = False
    known_hosts: str = "~/.ssh/known_hosts"
    connect_timeout_s: Annotated[float, Field(gt=0, le=600)] = 10
    command_timeout_s: Annotated[float, Field(gt=0, le=86400)] = 300

    def merged(self, o: SshOverride | None) -> Ssh:
        if o is None:
            return self
        return self.model_copy(update={k: getattr(o, k) for k in o.model_fields_set})

    @property
    def known_hosts_path(self) -> Path:
        return Path(os.path.expanduser(self.known_hosts))

    @property
    def key_path(self) -> Path | None:
        return Path(os.path.expanduser(self.key_file)) if self.key_file else None


class Security(_M):
    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    username: Annotated[str, Field(min_length=1)] | None = None
    password: SecretRef | None = None
    ca_file: str | None = None
    check_hostname: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> Security:
        sasl = self.protocol.startswith("SASL")
        if sasl:
            missing = [k for k in ("sasl_mechanism", "username", "password") if getattr(self, k) is None]
            if missing:
                raise ValueError(f"protocol {self.protocol} needs {', '.join(missing)}")
        else:
            extra = [k for k in ("sasl_mechanism", "username", "password") if getattr(self, k) is not None]
            if extra:
                raise ValueError(f"{', '.join(extra)}: only for protocol SASL_PLAINTEXT or SASL_SSL")
        if self.ca_file is not None and not self.protocol.endswith("SSL"):
            raise ValueError("ca_file: only for protocol SSL or SASL_SSL")
        return self

    def client_config(self) -> dict[str, str]:
        """librdkafka settings for producers, consumers and the admin client (the password included)."""
        out: dict[str, str] = {"security.protocol": self.protocol}
        if self.protocol.startswith("SASL"):
            assert self.password is not None
            out |= {
                "sasl.mechanism": str(self.sasl_mechanism),
                "sasl.username": str(self.username),
                "sasl.password": self.password.reveal(),
            }
        if self.protocol.endswith("SSL"):
            if self.ca_file:
                out["ssl.ca.location"] = os.path.expanduser(self.ca_file)
            out["ssl.endpoint.identification.algorithm"] = "https" if self.check_hostname else "none"
        return out


class Broker(_M):
    id: Annotated[int, Field(ge=0)]
    host: Host
    ssh: SshOverride | None = None
    server_properties: AbsPath
    restart: Annotated[str, Field(min_length=1)]
    log_dirs: Annotated[list[AbsPath], Field(min_length=1)]


class ClientHost(_M):
    host: Host
    ssh: SshOverride | None = None
    python: Annotated[str, Field(min_length=1)] = "python3"


class Inventory(_M):
    name: Name
    bootstrap: Annotated[str, Field(min_length=1)]
    security: Security = Field(default_factory=Security)
    ssh: Ssh = Field(default_factory=Ssh)
    brokers: Annotated[list[Broker], Field(min_length=1)]
    clients: list[ClientHost] = Field(default_factory=list)

    @field_validator("bootstrap")
    @classmethod
    def _hostports(cls, v: str) -> str:
        for hp in v.split(","):
            host, _, port = hp.strip().rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{hp!r} is not host:port")
        return v

    @model_validator(mode="after")
    def _unique(self) -> Inventory:
        ids = [b.id for b in self.brokers]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"brokers: broker id {dup[0]} appears more than once")
        files = [(b.host, b.server_properties) for b in self.brokers]
        same = sorted({f for f in files if files.count(f) > 1})
        if same:
            raise ValueError(f"brokers: two brokers share {same[0][1]} on {same[0][0]}")
        return self

    def ssh_of(self, entry: Broker | ClientHost) -> Ssh:
        return self.ssh.merged(entry.ssh)

    @staticmethod
    def label(entry: Broker | ClientHost) -> str:
        """How messages name a host: "broker 2 (10.0.0.2)", "client 10.0.0.9"."""
        return f"broker {entry.id} ({entry.host})" if isinstance(entry, Broker) else f"client {entry.host}"

    def hosts(self) -> list[tuple[str, Broker | ClientHost]]:
        """(label, entry) for every host to reach: brokers first, then client hosts."""
        entries: list[Broker | ClientHost] = [*self.brokers, *self.clients]
        return [(self.label(e), e) for e in entries]

    def public(self) -> dict[str, Any]:
        """The inventory as data, safe to write to runs/ (secrets are references only)."""
        return self.model_dump(mode="json", exclude_none=True)


def _where(b: Broker | ClientHost, inv: Inventory) -> str:
    if isinstance(b, Broker):
        return f"brokers[{inv.brokers.index(b)}]"
    return f"clients[{inv.clients.index(b)}]"


def _local_checks(inv: Inventory, source: str) -> None:
    """What can be checked on this machine: secrets resolvable, key files readable, known_hosts usable."""
    refs: list[tuple[str, SecretRef]] = []
    if inv.security.password is not None:
        refs.append(("security.password", inv.security.password))
    if inv.security.ca_file and not Path(os.path.expanduser(inv.security.ca_file)).is_file():
        raise UserError(f"{source}: security.ca_file: {inv.security.ca_file} does not exist")
    for label, entry in [("ssh", None), *[(_where(e, inv) + ".ssh", e) for _, e in inv.hosts()]]:
        s = inv.ssh if entry is None else inv.ssh_of(entry)
        if entry is not None and entry.ssh is None:
            continue  # the defaults, checked once under `ssh`
        if s.key_passphrase is not None:
            refs.append((f"{label}.key_passphrase", s.key_passphrase))
        kp = s.key_path
        if kp is not None and (not kp.is_file() or not os.access(kp, os.R_OK)):
            raise UserError(f"{source}: {label}.key_file: {kp} does not exist or is not readable")
        if kp is None and not s.agent:
            raise UserError(f"{source}: {label}: give key_file (a private key) or agent: true")
        if s.agent and not os.environ.get("SSH_AUTH_SOCK"):
            raise UserError(f"{source}: {label}.agent: no SSH agent (SSH_AUTH_SOCK is not set)")
        if not s.known_hosts_path.parent.is_dir():
            raise UserError(f"{source}: {label}.known_hosts: folder {s.known_hosts_path.parent} does not exist")
    for field, ref in refs:
        why = ref.problem()
        if why:
            raise UserError(f"{source}: {field}: {why}")


def parse_inventory(data: object, source: str = "inventory", *, check_local: bool = True) -> Inventory:
    # no input echoed: a wrongly inlined secret must not end up on a terminal or in a CI log
    inv = validated(Inventory, data, source, "a mapping (name, bootstrap, brokers, …)", show_input=False)
    if check_local:
        _local_checks(inv, source)
    return inv


def load_inventory(path: Path, *, check_local: bool = True) -> Inventory:
    return parse_inventory(read_yaml(path), str(path), check_local=check_local)
