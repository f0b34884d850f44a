"""A real OpenSSH server for tests: its own host key, config, port and authorized key, on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from core import procs

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def keygen(path: Path, comment: str = "kafkatune-test") -> Path:
    """A new ed25519 key pair without passphrase at `path` (and `path`.pub)."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True, timeout=30
    )
    return path


def fingerprint_of(pub: Path) -> str:
    """OpenSSH's own idea of the key's fingerprint (`ssh-keygen -lf`), to compare with ours."""
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], check=True, capture_output=True, text=True).stdout
    return out.split()[1]


@dataclass
class Sshd:
    dir: Path
    port: int
    host_key: Path  # the server's private host key; .pub beside it
    client_key: Path  # a private key the server accepts for the current user
    proc: subprocess.Popen[bytes]

    @property
    def host_pub(self) -> Path:
        return self.host_key.with_suffix(".pub")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def start_sshd(
    d: Path,
    *,
    address: str = "127.0.0.1",
    netns: str | None = None,
    client_key: Path | None = None,
    timeout_s: float = 30,
) -> Sshd:
    """`client_key`: the key it accepts (default: a new one in `d`), so several servers can share one."""
    d.mkdir(parents=True, exist_ok=True)
    host_key = keygen(d / "ssh_host_ed25519_key", "host")
    if client_key is None:
        client_key = keygen(d / "client_key", "client")
    (d / "authorized_keys").write_text(Path(f"{client_key}.pub").read_text())
    port = procs.free_port() if netns is None else 22
    cfg = d / "sshd_config"
    cfg.write_text(
        "\n".join(
            [
                f"Port {port}",
                f"ListenAddress {address}",
                f"HostKey {host_key}",
                f"PidFile {d / 'sshd.pid'}",
                f"AuthorizedKeysFile {d / 'authorized_keys'}",
                "StrictModes no",  # the test folders live under /tmp
                "UsePAM no",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "Subsystem sftp internal-sftp",
                "LogLevel VERBOSE",
                "",
            ]
        )
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    cmd = [SSHD, "-D", "-e", "-f", str(cfg)]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    log = open(d / "sshd.log", "wb")  # noqa: SIM115 - the server's lifetime, closed with the process
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited {proc.returncode}: {(d / 'sshd.log').read_text()[-2000:]}")
        try:
            with socket.create_connection((address, port), timeout=2) as s:
                if s.recv(64).startswith(b"SSH-2.0"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"sshd not answering on {address}:{port} after {timeout_s:g} s")
        time.sleep(0.1)
    return Sshd(d, port, host_key, client_key, proc)
